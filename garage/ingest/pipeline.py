"""Ingest one source: walk, materialize, extract, quality gate, chunk, attribute, store.

Attribution comes after chunking and before the store, not before chunking as the stage list
of the original design has it: chunking runs in the lookahead worker while attribution's git
lookups stay on the walking thread, and nothing in a chunk depends on who wrote the file.

One file is stored at a time, one transaction per document, in walk order, so a crash leaves
every earlier document committed; the next files are extracted meanwhile (``lookahead.py``).
Most files are decided from a stat and what the database already knows (``known.py``); only
new or changed files are read, and only the budget's worth of cloud placeholders are
downloaded. Each stage is one call here: ``stages.read``; ``extract``, ``_gate`` and ``_chunk``
in the worker (``_prepare``); ``attribute_file`` and ``stages.store`` when the file is
finished. The run's state is ``run.py``, its beginning and end (and the deletion guard)
``lifecycle.py``, the per-document unit of failure and the outcomes of files that store nothing
``outcomes.py``.
"""

from __future__ import annotations

import hashlib
import logging
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import psycopg

from garage.chunk import chunker_for
from garage.config import GarageConfig, SourceConfig
from garage.extract import Extraction, ExtractionError, extract, extractor_for
from garage.extract.ocr import OcrBudget, OcrDeferred, ocr_budget
from garage.ingest import lifecycle, outcomes, stages
from garage.ingest.attribution import attribute_file
from garage.ingest.lookahead import DEPTH, Lookahead, lookahead
from garage.ingest.parts import handle_multipart
from garage.ingest.pictures import IMAGE_CHUNKER, plan_picture
from garage.ingest.report import IngestReport
from garage.ingest.run import IngestError, IngestRun, Progress
from garage.ingest.store import NewChunk, new_chunks, refresh_stat
from garage.locks import Waiting, writing
from garage.materialize import is_placeholder
from garage.printable import printable
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
    waiting: Waiting | None = None,
) -> IngestReport:
    """Run one ingest pass over ``source``. ``conn`` must be in autocommit mode.

    ``stop`` (set by a SIGTERM handler, say) ends the walk before the next file; the run is
    then incomplete and deletes nothing, like one cut short by ``limit`` or by any exception.

    The run holds the source's writer lock throughout (``garage.locks``): a second writer of
    the source waits for it, or with ``waiting.wait`` false raises ``Busy`` at once.
    """
    waiting = waiting or Waiting(stop=stop)
    with writing(conn, source.name, "ingest", waiting):
        return _ingest_source(conn, config, source, limit, force, progress, stop)


def _ingest_source(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    source: SourceConfig,
    limit: int | None,
    force: bool,
    progress: Progress | None,
    stop: StopSignal | None,
) -> IngestReport:
    if source.kind == "messages":
        # Not walked file by file: each chat in the database becomes one document.
        from garage.ingest.conversations import ingest_messages

        return ingest_messages(
            conn, config, source, limit=limit, force=force, progress=progress, stop=stop
        )
    roots = lifecycle.require_present(source, source.root_paths(), "root ")
    run = lifecycle.begin(conn, config, source, progress, stop)
    with lifecycle.concluding(run, force=force):
        if _walk(run, roots, limit):
            lifecycle.exhausted(run)
    return run.report


def _walk(run: IngestRun, roots: list[Any], limit: int | None) -> bool:
    """Handle every file under the roots; True only when the walk reached its end and every
    file it read was finished."""
    source = run.source
    with lookahead() as ahead:
        for root in roots:
            for item in walk(
                root,
                include=source.include,
                exclude=source.exclude,
                default_excludes=source.default_excludes,
            ):
                if run.check_stop():
                    lifecycle.incomplete(run, run.stop.reason or "stop requested")
                    return False
                if limit is not None and run.report.seen >= limit:
                    lifecycle.incomplete(run, f"--limit {limit} reached")
                    _finish_ready(run, ahead, 0)  # read within the limit: stored
                    return False
                if isinstance(item, WalkError):
                    outcomes.walk_error(run, item)
                else:
                    handle_file(run, item, ahead)
                if not _finish_ready(run, ahead, DEPTH):
                    return False
        return _finish_ready(run, ahead, 0)


def _finish_ready(run: IngestRun, ahead: Lookahead[_Read], depth: int) -> bool:
    """Store the prepared files beyond ``depth`` in flight; False when a stop was requested
    first (what is still in flight is dropped: the document in hand is the one finished)."""
    for read, prepared in ahead.ready(depth):
        if run.check_stop():
            lifecycle.incomplete(run, run.stop.reason or "stop requested")
            return False
        _finish(run, read, prepared)
    return True


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def handle_file(run: IngestRun, entry: WalkEntry, ahead: Lookahead[_Read]) -> None:
    """Decide one file; what must be extracted is prepared by ``ahead``'s worker and stored by
    ``_finish``. A failure of any stage costs the file alone."""
    spec = extractor_for(entry.path_str)
    uri = entry.uri
    # Recorded whatever comes next: every URI the walk yielded is in ingest_seen, candidates
    # or not, so the record says what the walk found.
    run.seen.append(uri)
    if spec is None:
        run.report.unsupported += 1
        return
    if spec.multipart:
        with outcomes.document(run, uri, entry.path_str, size=entry.size, mtime_ns=entry.mtime_ns):
            handle_multipart(run, entry, spec)
        return
    run.report.seen += 1
    read = None
    with outcomes.document(run, uri, entry.path_str, size=entry.size, mtime_ns=entry.mtime_ns):
        read = _decide(run, entry, uri, spec)
    if read is not None:
        cap = run.config.limits.max_chunks_per_document
        ahead.submit(read, _prepare, read, cap, run.ocr)


@dataclass(frozen=True)
class _Read:
    """A file that must be extracted: its bytes, read and hashed by the walking thread."""

    entry: WalkEntry
    uri: str
    spec: Any
    chunker: Any
    data: bytes
    source_sha: str


@dataclass(frozen=True)
class _Prepared:
    """What the worker made of a file: ``store`` (with its content and chunks), ``rejected``,
    ``failed`` (an ExtractionError), ``deferred`` (OCR left for a later run) or ``crashed``."""

    action: str
    reason: str = ""
    error: Exception | None = None
    extraction: Extraction | None = None
    content: str = ""
    chunks: list[NewChunk] = field(default_factory=list)


def _decide(run: IngestRun, entry: WalkEntry, uri: str, spec: Any) -> _Read | None:
    """Skip the file on what is known (its stat, then its bytes), or return it read."""
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
            run.count("stat_skipped", entry.path_str)
            return None
    if outcomes.judged_before(run, entry, uri, spec):
        run.count("stat_skipped", entry.path_str)
        return None
    data = stages.read(run, entry, uri, placeholder)
    if data is None:
        return None
    source_sha = _sha256(data)
    if current and known is not None and known.source_sha256 == source_sha:
        with run.conn.transaction():
            refresh_stat(run.conn, known.id, entry.size, entry.mtime_ns)
        run.count("unchanged", entry.path_str)
        return None
    if outcomes.judged_same_bytes(run, entry, uri, source_sha, spec):
        run.count("unchanged", entry.path_str)
        return None
    return _Read(entry, uri, spec, chunker, data, source_sha)


def _prepare(read: _Read, cap: int, ocr: OcrBudget) -> _Prepared:
    """Extract, judge and split one file: no database, no counters (the worker's part)."""
    try:
        with ocr_budget(ocr):
            extraction = extract(read.entry.path, read.data)
    except OcrDeferred as error:
        return _Prepared("deferred", str(error))
    except ExtractionError as error:
        return _Prepared("failed", str(error))
    except Exception as error:  # an extractor bug must not stop the source
        return _Prepared("crashed", error=error)
    chunker = read.chunker
    if extraction.picture is not None:
        plan = plan_picture(extraction, chunker, cap)
        if plan.rejected:
            return _Prepared("rejected", plan.rejected)
        content = printable(plan.content)
        return _Prepared("store", extraction=extraction, content=content, chunks=plan.chunks)
    text = printable(extraction.text)
    rejected = _gate(text)
    if rejected:
        return _Prepared("rejected", rejected)
    chunks = _chunk(text, chunker, cap)
    if isinstance(chunks, str):
        return _Prepared("rejected", chunks)
    return _Prepared("store", extraction=extraction, content=text, chunks=chunks)


def _gate(text: str) -> str | None:
    """Stage 4, the quality gate: why nobody wrote this text, or None when someone did."""
    if not text.strip():
        return "no text"
    verdict = assess(text)
    return None if verdict.accepted else verdict.reason or "machine text"


def _chunk(text: str, chunker: Any, cap: int) -> list[NewChunk] | str:
    """The text's chunks, or why there are too many for one document."""
    chunks = chunker.split(text)
    if exceeds_chunk_cap(len(chunks), cap):
        return f"{len(chunks)} chunks, over limits.max_chunks_per_document ({cap})"
    return new_chunks(chunks, chunker.signature)


def _finish(run: IngestRun, read: _Read, prepared: Future[_Prepared]) -> None:
    """Record what the worker made of ``read``, in the document's own transaction."""
    entry, uri, spec, sha = read.entry, read.uri, read.spec, read.source_sha
    with outcomes.document(run, uri, entry.path_str, size=entry.size, mtime_ns=entry.mtime_ns):
        done = prepared.result()  # the worker's exception, if it raised, is this file's
        if done.action == "store":
            assert done.extraction is not None
            attribution = attribute_file(run, entry, done.extraction)
            stages.store(
                run, entry, uri, done.extraction, attribution, sha, done.content, done.chunks
            )
        elif done.action == "rejected":
            outcomes.reject(run, entry, uri, done.reason, sha, spec)
        elif done.action == "failed":
            outcomes.fail(run, entry, uri, done.reason, sha, spec)
        elif done.action == "deferred":  # recorded with no extractor version: read next run
            outcomes.fail(run, entry, uri, done.reason, sha)
        else:
            assert done.error is not None
            outcomes.crashed(run, entry, uri, done.error, sha, spec)
