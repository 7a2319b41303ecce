"""Where each source stands: files indexed, chunks, its last ingest run, and per embedding model
the chunks embedded and waiting, with the time left at the rate the backfill was measured at.

One function for every door that shows it (``garage status``, the Sources page). The waiting
chunks are the backlog search reads (``embed/backlog.py``); the rate is measured from the last
backfill runs (``embed/runs.py``) and never assumed: without a measured run the time left is
said to be unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from garage.embed import backlog, runs
from garage.embed.registry import registered_models
from garage.embed.runs import Rate


@dataclass(frozen=True)
class LastIngest:
    started_at: datetime
    finished_at: datetime | None  # None: still running, or killed before it could say
    completed: bool  # the walk reached its end
    stop_reason: str | None
    seen: int
    indexed: int
    failed: int


@dataclass(frozen=True)
class ModelStanding:
    """One model's vectors over one source (or over every source)."""

    model: str
    is_default: bool
    chunks: int  # chunks of the model's modality
    embedded: int
    pending: int
    rate: Rate | None  # measured over the model's last runs; None when none embedded anything
    seconds_left: float | None  # pending / rate; None when the rate is unknown

    @property
    def estimate(self) -> str:
        return estimate(self.pending, self.rate)


@dataclass(frozen=True)
class SourceStatus:
    name: str
    kind: str | None  # None for a configured source never ingested
    documents: int
    chunks: int
    documents_with_facts: int
    last_ingest: LastIngest | None
    models: list[ModelStanding] = field(default_factory=list)


def source_status(
    conn: psycopg.Connection[Any],
    names: Sequence[str] | None = None,
    *,
    configured: Sequence[str] = (),
) -> list[SourceStatus]:
    """The sources named, in that order, or else the ``configured`` ones and then the rest of
    the index; a name the index does not know yet is shown as never ingested."""
    with conn.cursor(row_factory=dict_row) as cur:
        sources = {
            row["name"]: row
            for row in cur.execute(
                """
                SELECT s.id, s.name, s.kind,
                       (SELECT count(*) FROM documents d WHERE d.source_id = s.id) AS documents,
                       (SELECT count(DISTINCT f.document_id) FROM facts f
                        JOIN documents d ON d.id = f.document_id WHERE d.source_id = s.id)
                           AS documents_with_facts
                FROM sources s ORDER BY s.name
                """
            ).fetchall()
        }
        chunks: dict[tuple[int, str], int] = {
            (row["source_id"], row["modality"]): int(row["n"])
            for row in cur.execute(
                "SELECT d.source_id, c.modality, count(*) AS n FROM chunks c"
                " JOIN documents d ON d.id = c.document_id GROUP BY d.source_id, c.modality"
            ).fetchall()
        }
        last = {
            row["source_id"]: LastIngest(
                row["started_at"],
                row["finished_at"],
                bool(row["completed"]),
                row["stop_reason"],
                int(row["seen_count"]),
                int(row["indexed_count"]),
                int(row["failed_count"]),
            )
            for row in cur.execute(
                "SELECT DISTINCT ON (source_id) source_id, started_at, finished_at, completed,"
                " stop_reason, seen_count, indexed_count, failed_count FROM ingest_runs"
                " ORDER BY source_id, started_at DESC, id DESC"
            ).fetchall()
        }
    models = registered_models(conn)
    waiting = backlog.by_source(conn)
    rates = runs.measured_rates(conn)
    result = []
    wanted = list(dict.fromkeys([*configured, *sources])) if names is None else names
    for name in wanted:
        row = sources.get(name)
        if row is None:
            result.append(SourceStatus(name, None, 0, 0, 0, None, []))
            continue
        standings = []
        for model in models:
            of_modality = chunks.get((row["id"], model.modality), 0)
            pending = waiting.get((model.name, name), 0)
            standings.append(_standing(model.name, model.is_default, of_modality, pending, rates))
        result.append(
            SourceStatus(
                name,
                row["kind"],
                int(row["documents"]),
                sum(n for (source_id, _), n in chunks.items() if source_id == row["id"]),
                int(row["documents_with_facts"]),
                last.get(row["id"]),
                standings,
            )
        )
    return result


def totals(statuses: Sequence[SourceStatus]) -> list[ModelStanding]:
    """Each model over the sources given: the chunks waiting in all of them, and their time."""
    by_model: dict[str, list[ModelStanding]] = {}
    for status in statuses:
        for standing in status.models:
            by_model.setdefault(standing.model, []).append(standing)
    result = []
    for name, standings in by_model.items():
        pending = sum(s.pending for s in standings)
        rate = standings[0].rate
        result.append(
            ModelStanding(
                name,
                standings[0].is_default,
                sum(s.chunks for s in standings),
                sum(s.embedded for s in standings),
                pending,
                rate,
                _seconds_left(pending, rate),
            )
        )
    return result


def _standing(
    model: str, is_default: bool, chunks: int, pending: int, rates: dict[str, Rate]
) -> ModelStanding:
    # The backlog can count a chunk deleted before it was embedded until the next backfill;
    # what is embedded is never shown below nothing for it.
    pending = min(pending, chunks)
    rate = rates.get(model)
    return ModelStanding(
        model, is_default, chunks, chunks - pending, pending, rate, _seconds_left(pending, rate)
    )


def _seconds_left(pending: int, rate: Rate | None) -> float | None:
    if rate is None or rate.chunks_per_second <= 0:
        return None
    return pending / rate.chunks_per_second


def estimate(pending: int, rate: Rate | None) -> str:
    """The time left, said as what it is: measured, or unknown."""
    if pending == 0:
        return "nothing waiting"
    if rate is None:
        return "time left unknown: no `garage embed` run has been measured yet (rate unknown)"
    left = duration(pending / rate.chunks_per_second)
    runs_measured = f"{rate.runs} run" + ("s" if rate.runs != 1 else "")
    return (
        f"{left if left.startswith('under') else 'about ' + left} left at "
        f"{rate.chunks_per_second:.1f} chunks/s (measured over the last {runs_measured})"
    )


def duration(seconds: float) -> str:
    """``2 h 10 min``: as close as an estimate deserves."""
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} days {hours} h" if hours else f"{days} days"


def expected_files(conn: psycopg.Connection[Any], source: str) -> int | None:
    """The files the source's last complete walk saw: what the next run will most likely walk
    (for a progress bar's time left); None before a walk has completed."""
    row = conn.execute(
        "SELECT r.seen_count FROM ingest_runs r JOIN sources s ON s.id = r.source_id"
        " WHERE s.name = %s AND r.completed ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
        (source,),
    ).fetchone()
    if row is None:
        return None
    return int(next(iter(row.values())) if isinstance(row, dict) else row[0])
