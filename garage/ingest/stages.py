"""A file's read and store steps (stages 2 and 6), shared by whole files (``pipeline.py``)
and the parts of multipart ones (``parts.py``).

``read`` spends the run's materialization budget and honours the size limit; ``store`` writes
the document and its chunks, with the author ``attribution.py`` decided, in one transaction.
"""

from __future__ import annotations

import logging

from garage.attribute import Attribution
from garage.extract import Extraction
from garage.ingest import outcomes
from garage.ingest.attribution import author_id
from garage.ingest.run import IngestRun
from garage.ingest.store import DocumentRecord, NewChunk, sha256_text, store_document
from garage.materialize import ReadTimeout, read_bytes
from garage.printable import printable, printable_tree
from garage.walk import WalkEntry

log = logging.getLogger(__name__)


def read(run: IngestRun, entry: WalkEntry, uri: str, placeholder: bool) -> bytes | None:
    """The file's bytes, within the budget and the size limit; None when it was not read
    (counted as a placeholder left for later, or as a failure)."""
    limits = run.config.limits
    if placeholder and not run.budget.try_spend(entry.size):
        # Left for a later run: ingest is idempotent, so bounded runs converge.
        run.count("placeholders", entry.path_str)
        return None
    if entry.size > limits.max_file_bytes:
        reason = (
            f"too large ({entry.size} bytes, limit {limits.max_file_bytes}: limits.max_file_bytes)"
        )
        outcomes.fail(run, entry, uri, reason)
        return None
    try:
        timeout = limits.materialize_timeout_seconds if placeholder else None
        return read_bytes(entry.path, timeout=timeout, max_bytes=limits.max_file_bytes)
    except ReadTimeout as error:
        log.warning("%s", error)
        run.report.errors.append(str(error))
        run.count("placeholders", entry.path_str)
    except OSError as error:
        outcomes.fail(run, entry, uri, f"cannot read: {error.strerror or error}")
    return None


def store(
    run: IngestRun,
    entry: WalkEntry,
    uri: str,
    extraction: Extraction,
    attribution: Attribution,
    source_sha: str,
    content: str,
    chunks: list[NewChunk],
) -> None:
    """Write the file's document and chunks, credited as ``attribution`` says, in one
    transaction."""
    # What a run stores it has seen (an mbox's new message is a URI of its own).
    run.seen.append(uri)
    spec = extraction.spec
    corpus_class = spec.corpus_class or ("code" if spec.kind == "code" else run.source.corpus_class)
    with run.authors.transaction():
        record = DocumentRecord(
            source_id=run.source_id,
            uri=uri,
            corpus_class=corpus_class,
            title=printable(extraction.title or entry.path.stem),
            content=content,
            source_sha256=source_sha,
            content_sha256=sha256_text(content),
            size_bytes=entry.size,
            mtime_ns=entry.mtime_ns,
            extractor=spec.name,
            extractor_version=spec.version,
            metadata=printable_tree(dict(extraction.metadata) | {"path": str(entry.path)}),
            author_id=author_id(run, attribution),
            attribution=attribution.relation,
            attribution_signal=attribution.signal,
            attribution_evidence=printable_tree(dict(attribution.evidence)),
        )
        result = store_document(run.conn, record, chunks)
        outcomes.stored(run, uri)
    run.add_chunk_counts(result.chunks_kept, result.chunks_new, result.chunks_deleted)
    run.count("indexed", entry.path_str)
