"""Pure decisions behind the sensors, testable without a Dagster instance."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from garage.watch import SourceFingerprint


@dataclass(frozen=True)
class PartitionChanges:
    add: list[str]
    remove: list[str]


def partition_changes(configured: Iterable[str], registered: Iterable[str]) -> PartitionChanges:
    """The partitions to add and delete so that they follow the configured sources."""
    configured_set, registered_set = set(configured), set(registered)
    return PartitionChanges(
        add=sorted(configured_set - registered_set),
        remove=sorted(registered_set - configured_set),
    )


# -- the file-change sensor --------------------------------------------------------------------

CURSOR_VERSION = 1


@dataclass(frozen=True)
class ChangeRequest:
    source: str
    run_key: str
    previous: str | None  # the digest remembered before, None for a source seen the first time
    current: str


@dataclass(frozen=True)
class ChangeDecision:
    requests: list[ChangeRequest]
    cursor: dict[str, dict[str, Any]]  # what to remember, per source, once the requests are out
    unchanged: list[str]
    waiting: dict[str, str]  # changed sources not requested this tick, and why


def parse_change_cursor(raw: str | None) -> dict[str, dict[str, Any]]:
    """The remembered fingerprints. A cursor from another version, or damaged, counts as empty:
    the worst that costs is one stat-skipping run per source."""
    if not raw:
        return {}
    try:
        document = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    if not isinstance(document, dict) or document.get("version") != CURSOR_VERSION:
        return {}
    sources = document.get("sources")
    if not isinstance(sources, dict):
        return {}
    return {
        name: entry
        for name, entry in sources.items()
        if isinstance(entry, dict) and isinstance(entry.get("digest"), str)
    }


def dump_change_cursor(sources: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps({"version": CURSOR_VERSION, "sources": sources}, sort_keys=True)


def change_run_key(source: str, previous: str | None, current: str) -> str:
    # The transition, not just the new state: a change reverted later (A -> B -> A) is new work
    # and must not be deduplicated against the first A, while two ticks that see the same
    # transition produce the same key and Dagster launches it once.
    return f"{source}:{(previous or 'new')[:12]}-{current[:12]}"


def changed_sources(
    current: Mapping[str, SourceFingerprint],
    remembered: Mapping[str, Mapping[str, Any]],
    *,
    registered: Iterable[str],
    in_progress: Iterable[str] = (),
) -> ChangeDecision:
    """Which sources to ingest now, and the cursor to keep.

    A source is requested when its fingerprint differs from the remembered one, its partition
    exists and no run of it is in progress. Anything else keeps its old cursor entry, so the
    change is still there to find on a later tick: the cursor moves only with a request.
    """
    registered_set, busy = set(registered), set(in_progress)
    requests: list[ChangeRequest] = []
    cursor: dict[str, dict[str, Any]] = {}
    unchanged: list[str] = []
    waiting: dict[str, str] = {}
    for name in sorted(current):
        fingerprint = current[name]
        before = remembered.get(name)
        previous = before.get("digest") if before else None
        if not fingerprint.available:
            waiting[name] = f"root missing: {', '.join(fingerprint.missing_roots)}"
        elif previous == fingerprint.digest:
            unchanged.append(name)
        elif name not in registered_set:
            waiting[name] = "its partition is not registered yet"
        elif name in busy:
            waiting[name] = "a run of it is still in progress"
        else:
            requests.append(
                ChangeRequest(
                    name, change_run_key(name, previous, fingerprint.digest), previous,
                    fingerprint.digest,
                )
            )  # fmt: skip
            cursor[name] = fingerprint.as_cursor()
            continue
        if before is not None:
            cursor[name] = dict(before)
    return ChangeDecision(requests, cursor, unchanged, waiting)


# -- the incremental schedule ------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduledPass:
    run: list[str]
    skipped: dict[str, str]  # source -> why


def scheduled_sources(
    configured: Iterable[str], registered: Iterable[str], in_progress: Iterable[str]
) -> ScheduledPass:
    """Every configured source with a partition, except those whose last run is still going:
    the next pass catches up with whatever that run missed."""
    registered_set, busy = set(registered), set(in_progress)
    run: list[str] = []
    skipped: dict[str, str] = {}
    for name in sorted(set(configured)):
        if name not in registered_set:
            skipped[name] = "its partition is not registered yet"
        elif name in busy:
            skipped[name] = "its last run is still in progress"
        else:
            run.append(name)
    return ScheduledPass(run, skipped)
