"""How an ingest pass begins and ends: its ``ingest_runs`` row, the URIs it saw, and the
deletion a complete walk may decide (the guard itself is ``deletion.py``).

**Only a walk that reached its end may decide that something is missing.** ``concluding``
deletes only when told, positively, that the walk was exhausted. An exception, a signal, a
Dagster termination, ``--limit``: the run is recorded as incomplete with its reason, and nothing
is deleted. The deletion is decided from the run's own ``ingest_seen`` rows, in the same
transaction that marks the run complete, so the record and the decision cannot diverge.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from garage.attribute import GitAuthorIndex, Identity
from garage.config import GarageConfig, SourceConfig
from garage.extract.ocr import OcrBudget
from garage.ingest import known as known_rows
from garage.ingest.authors import AuthorCache
from garage.ingest.deletion import plan_deletions
from garage.ingest.report import IngestReport
from garage.ingest.run import IngestError, IngestRun, Progress, describe
from garage.ingest.store import delete_documents
from garage.materialize import MaterializationBudget
from garage.stopping import StopSignal

log = logging.getLogger(__name__)


def require_present(source: SourceConfig, paths: list[Path], noun: str = "") -> list[Path]:
    """``paths``, when every one exists. An unmounted volume looks exactly like a mass
    deletion: a run refuses before walking, and changes nothing."""
    for path in paths:
        if not path.exists():
            raise IngestError(
                f"source {source.name!r}: {noun}{path} does not exist (unmounted or moved?); "
                "nothing was changed"
            )
    return paths


def begin(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    source: SourceConfig,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
) -> IngestRun:
    """Load what the database knows about ``source`` and open the run's row."""
    started = time.monotonic()
    source_id = known_rows.upsert_source(conn, source)
    known = known_rows.known_documents(conn, source_id)
    outcomes = known_rows.known_outcomes(conn, source_id)
    limits = config.limits
    run = IngestRun(
        conn=conn,
        config=config,
        source=source,
        progress=progress or (lambda event, path: None),
        stop=stop or StopSignal(),
        report=IngestReport(source=source.name),
        source_id=source_id,
        known=known,
        known_at_start=frozenset(doc.id for doc in known.values()),
        parts=known_rows.group_parts(known),
        outcomes=outcomes,
        files_with_failed_parts={
            uri.partition("#")[0] for uri in outcomes if uri.startswith("file:") and "#" in uri
        },
        authors=AuthorCache(conn),
        git=GitAuthorIndex(),
        identity=Identity(
            self_name=config.identity.self_name, emails=tuple(config.identity.emails)
        ),
        budget=MaterializationBudget(
            max_files=limits.materialize_max_files, max_bytes=limits.materialize_max_bytes
        ),
        ocr=OcrBudget(limits.ocr_max_pages_per_run),
        started=started,
    )
    run.report.run_id = start_run(conn, source_id)
    return run


@contextmanager
def concluding(run: IngestRun, *, force: bool) -> Iterator[None]:
    """Wrap the walk; the walk calls ``exhausted(run)`` when it positively reached its end.

    Whatever else happens — an exception, KeyboardInterrupt, a Dagster interruption, a stop
    request the walk honoured, ``--limit`` — the run is recorded as incomplete with its reason,
    nothing is deleted, and the exception still propagates."""
    run.walk_exhausted = False
    run.stop_reason = None
    try:
        yield
    except BaseException as error:
        run.stop_reason = describe(error)
        run.report.errors.append(f"stopped: {run.stop_reason}; nothing was deleted")
        _record(run, completed=False)
        raise
    if run.walk_exhausted:
        _record(run, completed=True, force=force)
    else:
        _record(run, completed=False)


def exhausted(run: IngestRun) -> None:
    """The walk reached its end: the only fact that allows deletion."""
    run.walk_exhausted = True


def incomplete(run: IngestRun, reason: str) -> None:
    """The walk stopped early for ``reason`` (a limit, a stop request, an unreadable root)."""
    if run.stop_reason is None:
        run.stop_reason = reason


def _record(run: IngestRun, *, completed: bool, force: bool = False) -> None:
    report = run.report
    report.budget_files = run.budget.files_used
    report.budget_bytes = run.budget.bytes_used
    report.seconds = time.monotonic() - run.started
    report.stop_reason = None if completed else (run.stop_reason or "stopped")
    try:
        _write_end(run, run.conn, completed, force)
    except Exception:
        report.completed = False
        if report.stop_reason is None:
            raise
        # Stopping already, perhaps interrupted mid-statement: the connection may be in no
        # state to say so. A new one can; and if that fails too, the run stays recorded as
        # unfinished, which is the truth.
        try:
            with _reconnect(run.conn) as fresh:
                _write_end(run, fresh, False, False)
        except Exception:
            log.exception("source %s: could not record the run", run.source.name)


def _write_end(run: IngestRun, conn: psycopg.Connection[Any], completed: bool, force: bool) -> None:
    report = run.report
    assert report.run_id is not None
    # One transaction: the seen record, the deletions it decides, and the run's row marked
    # complete land together or not at all (a kill -9 here leaves the run incomplete and
    # every document in place).
    with conn.transaction():
        record_seen(conn, report.run_id, run.seen)
        if completed:
            _delete_unseen(run, force)
        report.completed = completed
        note = "; ".join(run.notes)[:2000] or None
        counts = report.as_dict() | {"note": report.deletion_refused or note}
        finish_run(conn, report.run_id, counts, report.stop_reason)
        if completed:
            prune_seen(conn, run.source_id, report.run_id)


def _delete_unseen(run: IngestRun, force: bool) -> None:
    assert run.report.run_id is not None
    unseen, total = unseen_documents(run.conn, run.source_id, run.report.run_id)
    unseen = {uri: doc_id for uri, doc_id in unseen.items() if doc_id in run.known_at_start}
    plan = plan_deletions(
        unseen,
        total,
        protected_prefixes=[Path(p).as_uri() for p in run.unreadable_dirs],
        ratio=run.config.limits.deletion_guard_ratio,
    )
    if plan.refused and not force:
        run.report.deletion_refused = plan.reason
        run.report.errors.append(plan.reason or "")
        log.warning("source %s: %s", run.source.name, plan.reason)
        return
    run.report.deleted += delete_documents(run.conn, plan.document_ids)
    forget_unseen_outcomes(run.conn, run.source_id, run.report.run_id)


def _reconnect(conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    """A new autocommit connection to the same database, as the same user."""
    info = conn.info
    return psycopg.connect(info.dsn, password=info.password or None, autocommit=True)


# -- the ingest_runs and ingest_seen rows -----------------------------------------------------


def start_run(conn: psycopg.Connection[Any], source_id: int) -> int:
    row = conn.execute(
        "INSERT INTO ingest_runs (source_id) VALUES (%s) RETURNING id", (source_id,)
    ).fetchone()
    assert row is not None
    return int(row["id"] if isinstance(row, dict) else row[0])


_RUN_COUNTS = (
    "completed seen indexed stat_skipped unchanged rejected failed placeholders deleted "
    "chunks_kept chunks_new chunks_deleted budget_files budget_bytes"
).split()


def record_seen(conn: psycopg.Connection[Any], run_id: int, seen: list[str]) -> None:
    """Every URI the walk yielded, once each. The caller owns the transaction."""
    with conn.cursor() as cur:
        with cur.copy("COPY ingest_seen (run_id, uri) FROM STDIN") as copy:
            for uri in dict.fromkeys(seen):
                copy.write_row((run_id, uri))


def unseen_documents(
    conn: psycopg.Connection[Any], source_id: int, run_id: int
) -> tuple[dict[str, int], int]:
    """The source's documents that run ``run_id`` did not see (uri -> id), and how many
    documents the source has: what a deletion decision is made from."""
    rows = conn.execute(
        "SELECT d.uri, d.id FROM documents d WHERE d.source_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM ingest_seen s WHERE s.run_id = %s AND s.uri = d.uri)",
        (source_id, run_id),
    ).fetchall()
    total = conn.execute(
        "SELECT count(*) FROM documents WHERE source_id = %s", (source_id,)
    ).fetchone()
    assert total is not None
    unseen = {}
    for row in rows:
        uri, doc_id = list(row.values()) if isinstance(row, dict) else list(row)
        unseen[uri] = doc_id
    count = total["count"] if isinstance(total, dict) else total[0]
    return unseen, int(count)


def forget_unseen_outcomes(conn: psycopg.Connection[Any], source_id: int, run_id: int) -> None:
    """Outcomes of files a completed walk no longer found are forgotten (a message of an
    mbox is kept while its file is there)."""
    conn.execute(
        "DELETE FROM ingest_outcomes o WHERE o.source_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM ingest_seen s WHERE s.run_id = %s"
        "  AND s.uri IN (o.uri, split_part(o.uri, '#', 1)))",
        (source_id, run_id),
    )


def prune_seen(conn: psycopg.Connection[Any], source_id: int, run_id: int) -> None:
    """Once a run completed, the URIs earlier runs of its source saw decide nothing more."""
    conn.execute(
        "DELETE FROM ingest_seen WHERE run_id IN"
        " (SELECT id FROM ingest_runs WHERE source_id = %s AND id < %s)",
        (source_id, run_id),
    )


def finish_run(
    conn: psycopg.Connection[Any], run_id: int, counts: dict[str, Any], stop_reason: str | None
) -> None:
    """Write the run's counts. The caller owns the transaction."""
    values = {key: counts[key] for key in _RUN_COUNTS}
    conn.execute(
        "UPDATE ingest_runs SET finished_at = now(), completed = %(completed)s,"
        " seen_count = %(seen)s, indexed_count = %(indexed)s,"
        " stat_skipped_count = %(stat_skipped)s, unchanged_count = %(unchanged)s,"
        " rejected_count = %(rejected)s, failed_count = %(failed)s,"
        " placeholder_count = %(placeholders)s, deleted_count = %(deleted)s,"
        " chunks_kept = %(chunks_kept)s, chunks_new = %(chunks_new)s,"
        " chunks_deleted = %(chunks_deleted)s, budget_files = %(budget_files)s,"
        " budget_bytes = %(budget_bytes)s, note = %(note)s, stop_reason = %(stop_reason)s"
        " WHERE id = %(run_id)s",
        {**values, "note": counts.get("note"), "stop_reason": stop_reason, "run_id": run_id},
    )
