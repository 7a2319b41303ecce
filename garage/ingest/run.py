"""One ingest pass's state: what the database knew when it started, what the walk has seen, what
the run cost so far, and how far it got.

The pass itself reads as stages elsewhere: ``lifecycle.py`` begins and ends it (the deletion
decision beside ``deletion.py``), ``outcomes.py`` records what a file that stores nothing came
to and holds each document's unit of failure, ``attribution.py`` and ``stages.py`` are a
document's attribute, read and store steps. They all work on an ``IngestRun``, which does
nothing itself beyond keeping its counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from garage.attribute import GitAuthorIndex, Identity
from garage.config import GarageConfig, SourceConfig
from garage.extract.ocr import OcrBudget
from garage.ingest.authors import AuthorCache
from garage.ingest.known import KnownDocument, KnownOutcome
from garage.ingest.report import IngestReport
from garage.materialize import MaterializationBudget
from garage.stopping import StopSignal

Progress = Callable[[str, str], None]  # (event, path): "indexed", "stat_skipped", …


class IngestError(Exception):
    """The run could not start or go on (a missing root, a source kind not handled here)."""


def describe(error: BaseException) -> str:
    """A one-line reason for a run's row: the exception's type and message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


@dataclass(eq=False)
class IngestRun:
    """The state of one pass over a source (built by ``lifecycle.begin``)."""

    conn: psycopg.Connection[Any]
    config: GarageConfig
    source: SourceConfig
    progress: Progress
    stop: StopSignal
    report: IngestReport
    source_id: int
    known: dict[str, KnownDocument]
    # Only what existed when the run began is this run's to delete: a document stored after
    # that (by a run before this one took the lock, or any writer at all) was not in the
    # walk's view when it passed that name.
    known_at_start: frozenset[int]
    parts: dict[str, dict[str, KnownDocument]]  # multipart files' documents, by file URI
    outcomes: dict[str, KnownOutcome]
    files_with_failed_parts: set[str]
    authors: AuthorCache
    git: GitAuthorIndex
    identity: Identity
    budget: MaterializationBudget
    ocr: OcrBudget
    started: float = field(default_factory=time.monotonic)
    seen: list[str] = field(default_factory=list)
    unreadable_dirs: list[str] = field(default_factory=list)
    # Lines for the run's row beyond its counts (what each chat.db held, say).
    notes: list[str] = field(default_factory=list)
    walk_exhausted: bool = False  # the walk positively reached its end: deletion may follow
    stop_reason: str | None = None  # the first reason the walk stopped early

    def count(self, counter: str, label: str) -> None:
        setattr(self.report, counter, getattr(self.report, counter) + 1)
        self.progress(counter, label)

    def add_chunk_counts(self, kept: int, new: int, deleted: int) -> None:
        self.report.chunks_kept += kept
        self.report.chunks_new += new
        self.report.chunks_deleted += deleted

    def check_stop(self) -> bool:
        """True when a stop was requested: the caller ends its walk there (incomplete)."""
        return self.stop.requested

    def root_of(self, path: Path) -> Path | None:
        """The source root ``path`` lies under (a git repository is looked for up to it)."""
        for root in self.source.root_paths():
            if path.is_relative_to(root):
                return root
        return None
