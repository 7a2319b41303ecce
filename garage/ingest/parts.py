"""Files that hold many documents (an mbox): one document per part, keyed ``<file URI>#<key>``.

The file is still the unit of change — walked, stat-skipped, read and hashed once, its outcome
remembered under its own URI — but each part is stored in its own transaction, as any other
document is, so a bad message costs only itself. Every part records the file's stat and hash,
so an unchanged file is skipped from a stat alone and an appended message rewrites nothing but
itself. Parts that vanished from a file that was read whole are deleted right away; a file
that vanished altogether loses its parts through the run's guarded deletion.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from urllib.parse import quote

from garage.chunk import chunker_for
from garage.extract import ExtractionError, ExtractorSpec, extract_parts
from garage.ingest import outcomes, stages
from garage.ingest.attribution import attribute_file
from garage.ingest.known import KnownDocument
from garage.ingest.run import IngestRun
from garage.ingest.store import delete_documents, new_chunks, sha256_text
from garage.materialize import is_placeholder
from garage.printable import printable
from garage.quality import assess, exceeds_chunk_cap
from garage.walk import WalkEntry

log = logging.getLogger(__name__)


def part_uri(file_uri: str, key: str) -> str:
    # A file URI never holds a bare '#' (Path.as_uri escapes it), so the fragment is the key.
    return f"{file_uri}#{quote(key, safe='@.-_+=$!~*()/:')}"


def handle_multipart(run: IngestRun, entry: WalkEntry, spec: ExtractorSpec) -> None:
    uri = entry.uri
    parts = run.parts.get(uri, {})
    # Known parts count as seen until this file is read and found to lack them.
    run.seen.extend(parts)
    run.report.seen += 1
    chunker = chunker_for(spec.kind, spec.language)
    current = bool(parts) and all(
        p.extractor == spec.name
        and p.extractor_version == spec.version
        and p.chunker == chunker.signature
        for p in parts.values()
    )
    # A message that failed to store has no row to compare: its file is read again until it
    # stores (its outcome is cleared then).
    if (
        current
        and uri not in run.files_with_failed_parts
        and all(p.mtime_ns == entry.mtime_ns and p.size_bytes == entry.size for p in parts.values())
    ):
        return run.count("stat_skipped", entry.path_str)
    if outcomes.judged_before(run, entry, uri, spec):
        return run.count("stat_skipped", entry.path_str)
    data = stages.read(run, entry, uri, is_placeholder(entry))
    if data is None:
        return
    source_sha = hashlib.sha256(data).hexdigest()
    if current and all(p.source_sha256 == source_sha for p in parts.values()):
        with run.conn.transaction():
            for part in parts.values():
                _refresh(run, part.id, entry, source_sha)
        return run.count("unchanged", entry.path_str)
    try:
        documents = extract_parts(entry.path, data)
    except ExtractionError as error:
        return outcomes.fail(run, entry, uri, str(error), source_sha, spec)
    except Exception as error:  # an extractor bug must not stop the source
        return outcomes.crashed(run, entry, uri, error, source_sha, spec)
    if not documents:
        _drop(run, parts)
        return outcomes.reject(run, entry, uri, "no messages", source_sha, spec)

    cap = run.config.limits.max_chunks_per_document
    stored: set[str] = set()
    for key, extraction in documents:
        uri_of_part = part_uri(uri, key)
        text = printable(extraction.text)
        verdict = assess(text) if text.strip() else None
        if verdict is None or not verdict.accepted:
            reason = "no text" if verdict is None else verdict.reason or "machine text"
            log.info("%s#%s: rejected (%s)", entry.path, key, reason)
            continue
        known = parts.get(uri_of_part)
        if (
            known is not None
            and known.extractor == spec.name
            and known.extractor_version == spec.version
            and known.chunker == chunker.signature
            and known.content_sha256 == sha256_text(text)
        ):
            # The message is as it was; only the file around it changed.
            with run.conn.transaction():
                _refresh(run, known.id, entry, source_sha)
            stored.add(uri_of_part)
            continue
        chunks = chunker.split(text)
        if exceeds_chunk_cap(len(chunks), cap):
            log.info("%s#%s: rejected (%d chunks, over the cap)", entry.path, key, len(chunks))
            continue
        extraction_with_key = replace(extraction, metadata={**extraction.metadata, "part": key})
        chunks_new = new_chunks(chunks, chunker.signature)
        # Each message is its own unit of failure too: a bad one costs only itself, and its
        # older row (still listed in the file's parts) is kept rather than dropped below.
        with outcomes.document(
            run, uri_of_part, f"{entry.path_str}#{key}", source_sha256=source_sha
        ):
            attribution = attribute_file(run, entry, extraction_with_key)
            stages.store(
                run,
                entry,
                uri_of_part,
                extraction_with_key,
                attribution,
                source_sha,
                text,
                chunks_new,
            )
        stored.add(uri_of_part)
    _drop(run, {u: d for u, d in parts.items() if u not in stored})
    if uri in run.outcomes:
        with run.conn.transaction():
            outcomes.stored(run, uri)
    if not stored:
        run.count("rejected", entry.path_str)


def _refresh(run: IngestRun, document_id: int, entry: WalkEntry, source_sha: str) -> None:
    run.conn.execute(
        "UPDATE documents SET size_bytes = %s, mtime_ns = %s, source_sha256 = %s,"
        " updated_at = now() WHERE id = %s",
        (entry.size, entry.mtime_ns, source_sha, document_id),
    )


def _drop(run: IngestRun, parts: dict[str, KnownDocument]) -> None:
    """Delete parts the file no longer holds (a message expunged from the mbox)."""
    if not parts:
        return
    with run.conn.transaction():
        run.report.deleted += delete_documents(run.conn, [d.id for d in parts.values()])
    for uri in parts:
        run.known.pop(uri, None)
