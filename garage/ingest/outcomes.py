"""What a file that stores nothing came to, and each document as its own unit of failure.

**Each document is its own unit of failure.** Everything ingest writes for a document happens in
a transaction of its own, inside ``document``: when anything fails for that document (an
extractor, attribution, the chunker, a store statement PostgreSQL refuses), its transaction
rolls back, so its older rows stay exactly as they were; a ``failed`` outcome with the error is
recorded in a new transaction, and the walk goes on to the next file.

An outcome (``failed`` or ``rejected``) is remembered in ``ingest_outcomes`` with the stat, hash
and extractor version it was judged at: the file is not read again until one of them changes
(``judged_before``, ``judged_same_bytes``). One recorded with no extractor is tried next run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from garage.extract import ExtractorSpec
from garage.ingest.run import IngestRun, describe
from garage.ingest.store import delete_documents
from garage.printable import printable
from garage.walk import WalkEntry, WalkError

log = logging.getLogger(__name__)


@contextmanager
def document(
    run: IngestRun,
    uri: str,
    label: str,
    *,
    size: int | None = None,
    mtime_ns: int | None = None,
    source_sha256: str | None = None,
) -> Iterator[None]:
    """Run one document's work; a failure of any stage costs that document only.

    The failure is recorded with no extractor version, so the file is tried again on the next
    run (a refused statement may be Garage's fault, or the database's, and be gone by then),
    and reported each time until it succeeds. Only an ``Exception`` is a document's failure:
    KeyboardInterrupt, SystemExit and Dagster's interruption are not, and stop the run. A
    connection that broke stops the run too: nothing more could be recorded.
    """
    try:
        yield
    except Exception as error:
        if run.conn.broken:
            raise
        log.warning("%s: failed: %s", label, describe(error), exc_info=True)
        reason = f"failed while indexing ({describe(error)})"
        remember(run, uri, label, "failed", reason, size, mtime_ns, source_sha256)


def fail(
    run: IngestRun,
    entry: WalkEntry,
    uri: str,
    reason: str,
    sha: str | None = None,
    spec: ExtractorSpec | None = None,
) -> None:
    """The file could not be read or extracted. Any older document for it stays."""
    log.warning("%s: %s", entry.path, reason)
    remember(run, uri, entry.path_str, "failed", reason, entry.size, entry.mtime_ns, sha, spec)


def crashed(
    run: IngestRun, entry: WalkEntry, uri: str, error: Exception, sha: str, spec: ExtractorSpec
) -> None:
    """An extractor bug (not a declared ExtractionError): remembered under the extractor's
    version, so it is tried again when the extractor changes."""
    # Raised in the worker that prepared the file: its traceback travels with it.
    log.error("extractor %s crashed on %s", spec.name, entry.path, exc_info=error)
    reason = f"{entry.path.name}: {spec.name} extractor crashed ({describe(error)})"
    fail(run, entry, uri, reason, sha, spec)


def reject(
    run: IngestRun, entry: WalkEntry, uri: str, reason: str, sha: str, spec: ExtractorSpec
) -> None:
    """No document for text nobody wrote, and an older row for it goes."""
    log.info("%s: rejected (%s)", entry.path, reason)
    remember(
        run,
        uri,
        entry.path_str,
        "rejected",
        reason,
        entry.size,
        entry.mtime_ns,
        sha,
        spec,
        drop_older=True,
    )


def remember(
    run: IngestRun,
    uri: str,
    label: str,
    outcome: str,
    reason: str,
    size: int | None,
    mtime_ns: int | None,
    sha: str | None = None,
    spec: ExtractorSpec | None = None,
    *,
    drop_older: bool = False,
) -> None:
    """Record the outcome with the stat and hash it was judged at, so the file is not read
    again until it or its extractor changes (an outcome with no extractor: next run)."""
    if outcome == "failed":
        run.report.errors.append(f"{label}: {reason}")
    with run.conn.transaction():
        record_outcome(
            run.conn,
            run.source_id,
            uri,
            outcome,
            reason,
            size=size,
            mtime_ns=mtime_ns,
            source_sha256=sha,
            extractor=spec.name if spec else None,
            extractor_version=spec.version if spec else None,
        )
        known = run.known.get(uri) if drop_older else None
        if known is not None:
            delete_documents(run.conn, [known.id])
    if drop_older:
        run.known.pop(uri, None)
    run.count(outcome, label)


def judged_before(run: IngestRun, entry: WalkEntry, uri: str, spec: ExtractorSpec) -> bool:
    """Rejected or failed at this very stat and extractor version: not read again."""
    outcome = run.outcomes.get(uri)
    return (
        outcome is not None
        and outcome.size_bytes == entry.size
        and outcome.mtime_ns == entry.mtime_ns
        and outcome.extractor == spec.name
        and outcome.extractor_version == spec.version
    )


def judged_same_bytes(
    run: IngestRun, entry: WalkEntry, uri: str, sha: str, spec: ExtractorSpec
) -> bool:
    """Rejected or failed for these very bytes under this extractor version, though the stat
    changed (a touch, a copy back from a backup): remember the new stat, and do not extract
    again — the guide's ``source_sha256`` skip, for files that have no document."""
    outcome = run.outcomes.get(uri)
    if not (
        outcome is not None
        and outcome.source_sha256 == sha
        and outcome.extractor == spec.name
        and outcome.extractor_version == spec.version
    ):
        return False
    with run.conn.transaction():
        refresh_outcome_stat(run.conn, run.source_id, uri, entry.size, entry.mtime_ns)
    return True


def walk_error(run: IngestRun, error: WalkError) -> None:
    """A folder the walk could not read: a failure, and what lies under it is not missing."""
    log.warning("%s: %s", error.path, error.reason)
    # Whatever lies under an unreadable folder is not missing, just unseen this time.
    run.unreadable_dirs.append(str(error.path).rstrip(os.sep) + os.sep)
    uri = error.path.as_uri()
    run.seen.append(uri)
    remember(run, uri, str(error.path), "failed", error.reason, None, None)


def stored(run: IngestRun, uri: str) -> None:
    """The URI has a document now: an outcome remembered for it is forgotten (inside the
    document's transaction)."""
    if uri in run.outcomes:
        clear_outcome(run.conn, run.source_id, uri)


# -- the ingest_outcomes rows -----------------------------------------------------------------


def record_outcome(
    conn: psycopg.Connection[Any],
    source_id: int,
    uri: str,
    outcome: str,
    reason: str,
    *,
    size: int | None,
    mtime_ns: int | None,
    source_sha256: str | None = None,
    extractor: str | None = None,
    extractor_version: int | None = None,
) -> None:
    conn.execute(
        "INSERT INTO ingest_outcomes (source_id, uri, outcome, reason, size_bytes, mtime_ns,"
        " source_sha256, extractor, extractor_version) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (source_id, uri) DO UPDATE SET outcome = EXCLUDED.outcome,"
        " reason = EXCLUDED.reason, size_bytes = EXCLUDED.size_bytes,"
        " mtime_ns = EXCLUDED.mtime_ns, source_sha256 = EXCLUDED.source_sha256,"
        " extractor = EXCLUDED.extractor, extractor_version = EXCLUDED.extractor_version,"
        " recorded_at = now()",
        (
            source_id,
            uri,
            outcome,
            printable(reason),
            size,
            mtime_ns,
            source_sha256,
            extractor,
            extractor_version,
        ),
    )


def refresh_outcome_stat(
    conn: psycopg.Connection[Any], source_id: int, uri: str, size: int, mtime_ns: int
) -> None:
    conn.execute(
        "UPDATE ingest_outcomes SET size_bytes = %s, mtime_ns = %s"
        " WHERE source_id = %s AND uri = %s",
        (size, mtime_ns, source_id, uri),
    )


def clear_outcome(conn: psycopg.Connection[Any], source_id: int, uri: str) -> None:
    conn.execute("DELETE FROM ingest_outcomes WHERE source_id = %s AND uri = %s", (source_id, uri))
