"""Ingest one source: walk, materialize, extract, quality gate, attribute, chunk, store.

A single process handles one file at a time, one transaction per document, so a crash leaves
every earlier document committed. Most files are decided from a stat and what the database
already knows (``state.py``); only new or changed files are read, and only the budget's worth of
cloud placeholders are downloaded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from garage.attribute import GitAuthorIndex, Identity, attribute
from garage.chunk import chunker_for
from garage.config import GarageConfig, SourceConfig
from garage.extract import ExtractionError, ExtractorSpec, extract, extractor_for
from garage.ingest import state
from garage.ingest.deletion import DeletionPlan, plan_deletions
from garage.ingest.parts import group_parts, handle_multipart
from garage.ingest.pictures import IMAGE_CHUNKER, plan_picture
from garage.ingest.report import IngestReport
from garage.ingest.store import (
    DocumentRecord,
    delete_documents,
    new_chunks,
    refresh_stat,
    store_document,
)
from garage.materialize import MaterializationBudget, ReadTimeout, is_placeholder, read_bytes
from garage.quality import assess, exceeds_chunk_cap
from garage.walk import WalkEntry, WalkError, walk

log = logging.getLogger(__name__)

Progress = Callable[[str, str], None]  # (event, path): "indexed", "stat_skipped", …


class IngestError(Exception):
    """The run could not start or go on (a missing root, a source kind not handled here)."""


def ingest_source(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    source: SourceConfig,
    *,
    limit: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> IngestReport:
    """Run one ingest pass over ``source``. ``conn`` must be in autocommit mode."""
    if source.kind == "messages":
        # Not walked file by file: each chat in the database becomes one document.
        from garage.ingest.conversations import ingest_messages

        return ingest_messages(conn, config, source, limit=limit, force=force, progress=progress)
    roots = source.root_paths()
    for root in roots:
        # An unmounted volume looks exactly like a mass deletion: refuse before walking.
        if not root.exists():
            raise IngestError(
                f"source {source.name!r}: root {root} does not exist (unmounted or moved?); "
                "nothing was changed"
            )
    started = time.monotonic()
    run = _Run(conn, config, source, progress or (lambda event, path: None))
    report = run.report
    report.run_id = state.start_run(conn, run.source_id)
    exhausted = True
    try:
        for root in roots:
            for item in walk(
                root,
                include=source.include,
                exclude=source.exclude,
                default_excludes=source.default_excludes,
            ):
                if limit is not None and report.seen >= limit:
                    exhausted = False
                    break
                if isinstance(item, WalkError):
                    run.walk_error(item)
                else:
                    run.handle(item)
            if not exhausted:
                break
    except KeyboardInterrupt:
        exhausted = False
        report.errors.append("interrupted: the walk did not finish, nothing was deleted")
        raise
    finally:
        report.completed = exhausted
        if exhausted:
            run.delete_missing(force=force)
        report.budget_files = run.budget.files_used
        report.budget_bytes = run.budget.bytes_used
        report.seconds = time.monotonic() - started
        state.finish_run(conn, report.run_id, _run_counts(report), run.seen)
    return report


def _run_counts(report: IngestReport) -> dict[str, Any]:
    keys = (
        "completed seen indexed stat_skipped unchanged rejected failed placeholders deleted "
        "chunks_kept chunks_new chunks_deleted budget_files budget_bytes"
    ).split()
    counts = {key: getattr(report, key) for key in keys}
    counts["note"] = report.deletion_refused
    return counts


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Run:
    """The state of one pass: what is known, what was seen, what it cost."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        config: GarageConfig,
        source: SourceConfig,
        progress: Progress,
    ):
        self.conn = conn
        self.config = config
        self.source = source
        self.progress = progress
        self.report = IngestReport(source=source.name)
        self.source_id = state.upsert_source(conn, source)
        self.known = state.known_documents(conn, self.source_id)
        # The documents of multipart files (mbox messages), by the file's URI.
        self.parts = group_parts(self.known)
        self.outcomes = state.known_outcomes(conn, self.source_id)
        self.authors = state.AuthorCache(conn)
        self.git = GitAuthorIndex()
        self.identity = Identity(
            self_name=config.identity.self_name, emails=tuple(config.identity.emails)
        )
        limits = config.limits
        self.budget = MaterializationBudget(
            max_files=limits.materialize_max_files, max_bytes=limits.materialize_max_bytes
        )
        self.seen: list[str] = []
        self.unreadable_dirs: list[str] = []

    # -- one file -------------------------------------------------------------------------

    def handle(self, entry: WalkEntry) -> None:
        spec = extractor_for(entry.path_str)
        if spec is None:
            self.report.unsupported += 1
            return
        if spec.multipart:
            return handle_multipart(self, entry, spec)
        uri = entry.uri
        self.seen.append(uri)
        self.report.seen += 1
        known = self.known.get(uri)
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
                return self._count("stat_skipped", entry)
        if self.judged_before(entry, uri, spec):
            return self._count("stat_skipped", entry)
        data = self.read(entry, uri, placeholder)
        if data is None:
            return
        source_sha = _sha256(data)
        if current and known is not None and known.source_sha256 == source_sha:
            with self.conn.transaction():
                refresh_stat(self.conn, known.id, entry.size, entry.mtime_ns)
            return self._count("unchanged", entry)
        try:
            extraction = extract(entry.path, data)
        except ExtractionError as error:
            return self._fail(entry, uri, str(error), source_sha, spec.name, spec.version)
        except Exception as error:  # an extractor bug must not stop the source
            return self._crashed(entry, uri, error, source_sha, spec)
        cap = self.config.limits.max_chunks_per_document
        if extraction.picture is not None:
            plan = plan_picture(extraction, chunker, cap)
            if plan.rejected:
                return self._reject(entry, uri, plan.rejected, source_sha, spec.name, spec.version)
            return self._store(entry, uri, extraction, source_sha, plan.content, plan.chunks)
        text = extraction.text
        if not text.strip():
            return self._reject(entry, uri, "no text", source_sha, spec.name, spec.version)
        verdict = assess(text)
        if not verdict.accepted:
            return self._reject(
                entry, uri, verdict.reason or "machine text", source_sha, spec.name, spec.version
            )
        chunks = chunker.split(text)
        if exceeds_chunk_cap(len(chunks), cap):
            reason = f"{len(chunks)} chunks, over limits.max_chunks_per_document ({cap})"
            return self._reject(entry, uri, reason, source_sha, spec.name, spec.version)
        self._store(entry, uri, extraction, source_sha, text, new_chunks(chunks, chunker.signature))

    def judged_before(self, entry: WalkEntry, uri: str, spec: ExtractorSpec) -> bool:
        """Rejected or failed at this very stat and extractor version: not read again."""
        outcome = self.outcomes.get(uri)
        return (
            outcome is not None
            and outcome.size_bytes == entry.size
            and outcome.mtime_ns == entry.mtime_ns
            and outcome.extractor == spec.name
            and outcome.extractor_version == spec.version
        )

    def read(self, entry: WalkEntry, uri: str, placeholder: bool) -> bytes | None:
        """The file's bytes, within the budget and the size limit; None when it was not read
        (counted as a placeholder left for later, or as a failure)."""
        if placeholder and not self.budget.try_spend(entry.size):
            # Left for a later run: ingest is idempotent, so bounded runs converge.
            self._count("placeholders", entry)
            return None
        if entry.size > self.config.limits.max_file_bytes:
            self._fail(
                entry,
                uri,
                f"too large ({entry.size} bytes, limit "
                f"{self.config.limits.max_file_bytes}: limits.max_file_bytes)",
            )
            return None
        try:
            timeout = self.config.limits.materialize_timeout_seconds if placeholder else None
            return read_bytes(
                entry.path, timeout=timeout, max_bytes=self.config.limits.max_file_bytes
            )
        except ReadTimeout as error:
            log.warning("%s", error)
            self.report.errors.append(str(error))
            self._count("placeholders", entry)
        except OSError as error:
            self._fail(entry, uri, f"cannot read: {error.strerror or error}")
        return None

    def _crashed(self, entry, uri, error, source_sha, spec) -> None:  # type: ignore[no-untyped-def]
        log.exception("extractor %s crashed on %s", spec.name, entry.path)
        crash = f"{type(error).__name__}: {error}"
        reason = f"{entry.path.name}: {spec.name} extractor crashed ({crash})"
        self._fail(entry, uri, reason, source_sha, spec.name, spec.version)

    def _store(self, entry, uri, extraction, source_sha, content, chunks) -> None:  # type: ignore[no-untyped-def]
        source = self.source
        spec = extraction.spec
        corpus_class = spec.corpus_class or ("code" if spec.kind == "code" else source.corpus_class)
        attribution = attribute(
            entry.path,
            identity=self.identity,
            git=self.git,
            embedded_author=extraction.embedded_author,
            source_default=source.default_author,
            sender=extraction.sender,
            root=self._root_of(entry.path),
        )
        with self.conn.transaction():
            author_id = None
            if attribution.author:
                email = _git_email(attribution.evidence)
                author_id = self.authors.id_for(
                    attribution.author,
                    email,
                    attribution.relation == "authored"
                    and self.identity.is_self(attribution.author, email),
                )
            record = DocumentRecord(
                source_id=self.source_id,
                uri=uri,
                corpus_class=corpus_class,
                title=extraction.title or entry.path.stem,
                content=content,
                source_sha256=source_sha,
                content_sha256=_sha256(content.encode("utf-8", "surrogatepass")),
                size_bytes=entry.size,
                mtime_ns=entry.mtime_ns,
                extractor=spec.name,
                extractor_version=spec.version,
                metadata=dict(extraction.metadata) | {"path": str(entry.path)},
                author_id=author_id,
                attribution=attribution.relation,
                attribution_signal=attribution.signal,
                attribution_evidence=dict(attribution.evidence),
            )
            result = store_document(self.conn, record, chunks)
            if uri in self.outcomes:
                state.clear_outcome(self.conn, self.source_id, uri)
        self.report.chunks_kept += result.chunks_kept
        self.report.chunks_new += result.chunks_new
        self.report.chunks_deleted += result.chunks_deleted
        self._count("indexed", entry)

    def _root_of(self, path: Path) -> Path | None:
        for root in self.source.root_paths():
            if path.is_relative_to(root):
                return root
        return None

    # -- outcomes ---------------------------------------------------------------------------

    def _count(self, counter: str, entry: WalkEntry) -> None:
        setattr(self.report, counter, getattr(self.report, counter) + 1)
        self.progress(counter, entry.path_str)

    def _fail(self, entry, uri, reason, sha=None, extractor=None, version=None) -> None:  # type: ignore[no-untyped-def]
        # A failure keeps any older document: nothing stored earlier is lost.
        log.warning("%s: %s", entry.path, reason)
        self.report.errors.append(f"{entry.path}: {reason}")
        self._remember(entry, uri, "failed", reason, sha, extractor, version, drop_older=False)

    def _reject(self, entry, uri, reason, sha, extractor, version) -> None:  # type: ignore[no-untyped-def]
        # No document for text nobody wrote, and an older row for it goes.
        log.info("%s: rejected (%s)", entry.path, reason)
        self._remember(entry, uri, "rejected", reason, sha, extractor, version, drop_older=True)

    def _remember(self, entry, uri, outcome, reason, sha, extractor, version, *, drop_older):  # type: ignore[no-untyped-def]
        """Record the outcome with the stat it was judged at, so the file is not read again
        until it or its extractor changes."""
        with self.conn.transaction():
            state.record_outcome(
                self.conn,
                self.source_id,
                uri,
                outcome,
                reason,
                size=entry.size,
                mtime_ns=entry.mtime_ns,
                source_sha256=sha,
                extractor=extractor,
                extractor_version=version,
            )
            known = self.known.pop(uri, None) if drop_older else None
            if known is not None:
                delete_documents(self.conn, [known.id])
        self._count(outcome, entry)

    def walk_error(self, error: WalkError) -> None:
        log.warning("%s: %s", error.path, error.reason)
        self.report.errors.append(f"{error.path}: {error.reason}")
        self.report.failed += 1
        # Whatever lies under an unreadable folder is not missing, just unseen this time.
        self.unreadable_dirs.append(str(error.path).rstrip(os.sep) + os.sep)
        uri = error.path.as_uri()
        self.seen.append(uri)
        with self.conn.transaction():
            state.record_outcome(
                self.conn, self.source_id, uri, "failed", error.reason, size=None, mtime_ns=None
            )
        self.progress("failed", str(error.path))

    # -- deletion -------------------------------------------------------------------------

    def delete_missing(self, *, force: bool) -> None:
        seen = set(self.seen)
        plan: DeletionPlan = plan_deletions(
            {uri: doc.id for uri, doc in self.known.items()},
            seen,
            protected_prefixes=[Path(p).as_uri() for p in self.unreadable_dirs],
            ratio=self.config.limits.deletion_guard_ratio,
        )
        if plan.refused and not force:
            self.report.deletion_refused = plan.reason
            self.report.errors.append(plan.reason or "")
            log.warning("source %s: %s", self.source.name, plan.reason)
            return
        with self.conn.transaction():
            self.report.deleted += delete_documents(self.conn, plan.document_ids)
            # Outcomes of files that are gone are forgotten too.
            self.conn.execute(
                "DELETE FROM ingest_outcomes WHERE source_id = %s AND NOT (uri = ANY(%s))",
                (self.source_id, list(seen)),
            )


def _git_email(evidence: dict[str, Any]) -> str | None:
    # The credited author's address (not necessarily the top committer's).
    email = evidence.get("email")
    return email if isinstance(email, str) and email else None
