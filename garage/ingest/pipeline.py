"""Ingest one source: walk, materialize, extract, quality gate, attribute, chunk, store.

A single process handles one file at a time, one transaction per document, so a crash leaves
every earlier document committed. Most files are decided from a stat and what the database
already knows (``state.py``); only new or changed files are read, and only the budget's worth of
cloud placeholders are downloaded. The run's state, the per-document unit of failure and the
deletion guard are in ``run.py``.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import psycopg

from garage.chunk import chunker_for
from garage.config import GarageConfig, SourceConfig
from garage.extract import ExtractionError, extract, extractor_for
from garage.extract.ocr import OcrDeferred, ocr_budget
from garage.ingest.parts import handle_multipart
from garage.ingest.pictures import IMAGE_CHUNKER, plan_picture
from garage.ingest.report import IngestReport
from garage.ingest.run import IngestError, IngestRun, Progress
from garage.ingest.store import new_chunks, refresh_stat
from garage.materialize import is_placeholder
from garage.quality import assess, exceeds_chunk_cap
from garage.stopping import StopSignal
from garage.walk import WalkEntry, WalkError, walk

log = logging.getLogger(__name__)

__all__ = ["IngestError", "ingest_source"]


def ingest_source(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    source: SourceConfig,
    *,
    limit: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
) -> IngestReport:
    """Run one ingest pass over ``source``. ``conn`` must be in autocommit mode.

    ``stop`` (set by a SIGTERM handler, say) ends the walk before the next file; the run is
    then incomplete and deletes nothing, like one cut short by ``limit`` or by any exception.
    """
    if source.kind == "messages":
        # Not walked file by file: each chat in the database becomes one document.
        from garage.ingest.conversations import ingest_messages

        return ingest_messages(
            conn, config, source, limit=limit, force=force, progress=progress, stop=stop
        )
    roots = source.root_paths()
    for root in roots:
        # An unmounted volume looks exactly like a mass deletion: refuse before walking.
        if not root.exists():
            raise IngestError(
                f"source {source.name!r}: root {root} does not exist (unmounted or moved?); "
                "nothing was changed"
            )
    run = IngestRun(conn, config, source, progress, stop)
    with run.concluding(force=force):
        if _walk(run, roots, limit):
            run.exhausted()
    return run.report


def _walk(run: IngestRun, roots: list[Any], limit: int | None) -> bool:
    """Handle every file under the roots; True only when the walk reached its end."""
    source = run.source
    for root in roots:
        for item in walk(
            root,
            include=source.include,
            exclude=source.exclude,
            default_excludes=source.default_excludes,
        ):
            if run.check_stop():
                run.incomplete(run.stop.reason or "stop requested")
                return False
            if limit is not None and run.report.seen >= limit:
                run.incomplete(f"--limit {limit} reached")
                return False
            if isinstance(item, WalkError):
                run.walk_error(item)
            else:
                handle_file(run, item)
    return True


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def handle_file(run: IngestRun, entry: WalkEntry) -> None:
    """Decide one file and store what it holds; a failure of any stage costs it alone."""
    spec = extractor_for(entry.path_str)
    uri = entry.uri
    # Recorded whatever comes next: every URI the walk yielded is in ingest_seen, candidates
    # or not, so the record says what the walk found.
    run.seen.append(uri)
    if spec is None:
        run.report.unsupported += 1
        return
    if spec.multipart:
        with run.document(uri, entry.path_str, size=entry.size, mtime_ns=entry.mtime_ns):
            handle_multipart(run, entry, spec)
        return
    run.report.seen += 1
    with run.document(uri, entry.path_str, size=entry.size, mtime_ns=entry.mtime_ns):
        _handle_single(run, entry, uri, spec)


def _handle_single(run: IngestRun, entry: WalkEntry, uri: str, spec: Any) -> None:
    known = run.known.get(uri)
    chunker = chunker_for(spec.kind, spec.language)
    current = (
        known is not None
        and known.extractor == spec.name
        and known.extractor_version == spec.version
        # A picture's only chunk is its image chunk.
        and known.chunker in (chunker.signature, IMAGE_CHUNKER if spec.kind == "image" else "")
    )
    placeholder = is_placeholder(entry)
    if current and known is not None and known.mtime_ns == entry.mtime_ns:
        # A placeholder reports its real size, except the old zero-byte stubs.
        if known.size_bytes == entry.size or (placeholder and entry.size == 0):
            return run.count("stat_skipped", entry.path_str)
    if run.judged_before(entry, uri, spec):
        return run.count("stat_skipped", entry.path_str)
    data = run.read(entry, uri, placeholder)
    if data is None:
        return
    source_sha = _sha256(data)
    if current and known is not None and known.source_sha256 == source_sha:
        with run.conn.transaction():
            refresh_stat(run.conn, known.id, entry.size, entry.mtime_ns)
        return run.count("unchanged", entry.path_str)
    if run.judged_same_bytes(entry, uri, source_sha, spec):
        return run.count("unchanged", entry.path_str)
    try:
        with ocr_budget(run.ocr):
            extraction = extract(entry.path, data)
    except OcrDeferred as error:  # recorded with no extractor version: the next run reads it
        return run.fail(entry, uri, str(error), source_sha)
    except ExtractionError as error:
        return run.fail(entry, uri, str(error), source_sha, spec)
    except Exception as error:  # an extractor bug must not stop the source
        return run.crashed(entry, uri, error, source_sha, spec)
    cap = run.config.limits.max_chunks_per_document
    if extraction.picture is not None:
        plan = plan_picture(extraction, chunker, cap)
        if plan.rejected:
            return run.reject(entry, uri, plan.rejected, source_sha, spec)
        return run.store(entry, uri, extraction, source_sha, plan.content, plan.chunks)
    text = extraction.text
    if not text.strip():
        return run.reject(entry, uri, "no text", source_sha, spec)
    verdict = assess(text)
    if not verdict.accepted:
        return run.reject(entry, uri, verdict.reason or "machine text", source_sha, spec)
    chunks = chunker.split(text)
    if exceeds_chunk_cap(len(chunks), cap):
        reason = f"{len(chunks)} chunks, over limits.max_chunks_per_document ({cap})"
        return run.reject(entry, uri, reason, source_sha, spec)
    run.store(entry, uri, extraction, source_sha, text, new_chunks(chunks, chunker.signature))
