"""What one ingest run did, counted the way ``ingest_runs`` and the Dagster metadata show it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class IngestReport:
    source: str
    run_id: int | None = None
    completed: bool = False
    seen: int = 0  # every file the walk yielded that Garage has an extractor for
    indexed: int = 0  # new or changed documents written
    stat_skipped: int = 0  # stat unchanged (or a remembered outcome): not opened
    unchanged: int = 0  # stat changed, bytes did not: stat refreshed, not re-extracted
    rejected: int = 0  # no text, or machine text, or too many chunks
    failed: int = 0  # unreadable, corrupt, too large, timed out
    placeholders: int = 0  # cloud placeholders left undownloaded
    unsupported: int = 0  # files with no extractor: not candidates
    deleted: int = 0  # documents whose files are gone
    chunks_kept: int = 0
    chunks_new: int = 0
    chunks_deleted: int = 0
    budget_files: int = 0
    budget_bytes: int = 0
    deletion_refused: str | None = None
    stop_reason: str | None = None  # why a run did not complete (None when it did)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # one line per problem, naming the file

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def summary(self) -> str:
        parts = [
            f"{self.seen} seen",
            f"{self.indexed} indexed",
            f"{self.stat_skipped} stat-skipped",
            f"{self.unchanged} unchanged",
            f"{self.rejected} rejected",
            f"{self.failed} failed",
            f"{self.placeholders} placeholders",
            f"{self.deleted} deleted",
            f"chunks {self.chunks_kept} kept / {self.chunks_new} new"
            f" / {self.chunks_deleted} deleted",
        ]
        state = "complete" if self.completed else f"partial: {self.stop_reason or 'stopped'}"
        return f"{self.source}: {', '.join(parts)} ({state}, {self.seconds:.1f}s)"
