"""One ingest pass: what it knows, what it saw, each document as its own unit of failure, and
how the pass ends.

Two rules from the guide live here:

- **Each document is its own unit of failure.** Everything ingest writes for a document happens
  in a transaction of its own, inside ``IngestRun.document``: when anything fails for that
  document (an extractor, attribution, the chunker, a store statement PostgreSQL refuses), its
  transaction rolls back, so its older rows stay exactly as they were; a ``failed`` outcome with
  the error is recorded in a new transaction, and the walk goes on to the next file.
- **Only a walk that reached its end may decide that something is missing.** ``conclude``
  deletes only when told, positively, that the walk was exhausted. An exception, a signal, a
  Dagster termination, ``--limit``: the run is recorded as incomplete with its reason, and
  nothing is deleted. The deletion is decided from the run's own ``ingest_seen`` rows, in the
  same transaction that marks the run complete, so the record and the decision cannot diverge.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from garage.attribute import GitAuthorIndex, Identity, attribute
from garage.config import GarageConfig, SourceConfig
from garage.extract import Extraction, ExtractorSpec
from garage.extract.ocr import OcrBudget
from garage.ingest import state
from garage.ingest.deletion import plan_deletions
from garage.ingest.report import IngestReport
from garage.ingest.store import (
    DocumentRecord,
    NewChunk,
    delete_documents,
    sha256_text,
    store_document,
)
from garage.materialize import MaterializationBudget, ReadTimeout, read_bytes
from garage.printable import printable, printable_tree
from garage.stopping import StopSignal
from garage.walk import WalkEntry, WalkError

log = logging.getLogger(__name__)

Progress = Callable[[str, str], None]  # (event, path): "indexed", "stat_skipped", …


class IngestError(Exception):
    """The run could not start or go on (a missing root, a source kind not handled here)."""


def describe(error: BaseException) -> str:
    """A one-line reason for a run's row: the exception's type and message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class IngestRun:
    """The state of one pass over a source: what the database knew when it started, what the
    walk has seen, what the run cost so far."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        config: GarageConfig,
        source: SourceConfig,
        progress: Progress | None = None,
        stop: StopSignal | None = None,
    ):
        self.conn = conn
        self.config = config
        self.source = source
        self.progress: Progress = progress or (lambda event, path: None)
        self.stop = stop or StopSignal()
        self.started = time.monotonic()
        self.report = IngestReport(source=source.name)
        self.source_id = state.upsert_source(conn, source)
        self.known = state.known_documents(conn, self.source_id)
        # Only what existed when the run began is this run's to delete: a document stored
        # after that (by a run before this one took the lock, or any writer at all) was not
        # in the walk's view when it passed that name.
        self.known_at_start = frozenset(doc.id for doc in self.known.values())
        self.parts = state.group_parts(self.known)
        self.outcomes = state.known_outcomes(conn, self.source_id)
        self.files_with_failed_parts = {
            uri.partition("#")[0] for uri in self.outcomes if uri.startswith("file:") and "#" in uri
        }
        self.authors = state.AuthorCache(conn)
        self.git = GitAuthorIndex()
        self.identity = Identity(
            self_name=config.identity.self_name, emails=tuple(config.identity.emails)
        )
        limits = config.limits
        self.budget = MaterializationBudget(
            max_files=limits.materialize_max_files, max_bytes=limits.materialize_max_bytes
        )
        self.ocr = OcrBudget(limits.ocr_max_pages_per_run)
        self.seen: list[str] = []
        self.unreadable_dirs: list[str] = []
        self.report.run_id = state.start_run(conn, self.source_id)

    # -- the unit of failure ------------------------------------------------------------

    @contextmanager
    def document(
        self,
        uri: str,
        label: str,
        *,
        size: int | None = None,
        mtime_ns: int | None = None,
        source_sha256: str | None = None,
    ) -> Iterator[None]:
        """Run one document's work; a failure of any stage costs that document only.

        The failure is recorded with no extractor version, so the file is tried again on the
        next run (a refused statement may be Garage's fault, or the database's, and be gone by
        then), and reported each time until it succeeds. Only an ``Exception`` is a document's
        failure: KeyboardInterrupt, SystemExit and Dagster's interruption are not, and stop the
        run. A connection that broke stops the run too: nothing more could be recorded.
        """
        try:
            yield
        except Exception as error:
            if self.conn.broken:
                raise
            log.warning("%s: failed: %s", label, describe(error), exc_info=True)
            reason = f"failed while indexing ({describe(error)})"
            self.remember(uri, label, "failed", reason, size, mtime_ns, source_sha256)

    def check_stop(self) -> bool:
        """True when a stop was requested: the caller ends its walk there (incomplete)."""
        return self.stop.requested

    # -- outcomes -----------------------------------------------------------------------

    def count(self, counter: str, label: str) -> None:
        setattr(self.report, counter, getattr(self.report, counter) + 1)
        self.progress(counter, label)

    def fail(
        self,
        entry: WalkEntry,
        uri: str,
        reason: str,
        sha: str | None = None,
        spec: ExtractorSpec | None = None,
    ) -> None:
        """The file could not be read or extracted. Any older document for it stays."""
        log.warning("%s: %s", entry.path, reason)
        self.remember(uri, entry.path_str, "failed", reason, entry.size, entry.mtime_ns, sha, spec)

    def crashed(
        self, entry: WalkEntry, uri: str, error: Exception, sha: str, spec: ExtractorSpec
    ) -> None:
        """An extractor bug (not a declared ExtractionError): remembered under the extractor's
        version, so it is tried again when the extractor changes."""
        # Raised in the worker that prepared the file: its traceback travels with it.
        log.error("extractor %s crashed on %s", spec.name, entry.path, exc_info=error)
        reason = f"{entry.path.name}: {spec.name} extractor crashed ({describe(error)})"
        self.fail(entry, uri, reason, sha, spec)

    def reject(
        self, entry: WalkEntry, uri: str, reason: str, sha: str, spec: ExtractorSpec
    ) -> None:
        """No document for text nobody wrote, and an older row for it goes."""
        log.info("%s: rejected (%s)", entry.path, reason)
        self.remember(
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
        self,
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
            self.report.errors.append(f"{label}: {reason}")
        with self.conn.transaction():
            state.record_outcome(
                self.conn,
                self.source_id,
                uri,
                outcome,
                reason,
                size=size,
                mtime_ns=mtime_ns,
                source_sha256=sha,
                extractor=spec.name if spec else None,
                extractor_version=spec.version if spec else None,
            )
            known = self.known.get(uri) if drop_older else None
            if known is not None:
                delete_documents(self.conn, [known.id])
        if drop_older:
            self.known.pop(uri, None)
        self.count(outcome, label)

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

    def judged_same_bytes(self, entry: WalkEntry, uri: str, sha: str, spec: ExtractorSpec) -> bool:
        """Rejected or failed for these very bytes under this extractor version, though the
        stat changed (a touch, a copy back from a backup): remember the new stat, and do not
        extract again — the guide's ``source_sha256`` skip, for files that have no document."""
        outcome = self.outcomes.get(uri)
        if not (
            outcome is not None
            and outcome.source_sha256 == sha
            and outcome.extractor == spec.name
            and outcome.extractor_version == spec.version
        ):
            return False
        with self.conn.transaction():
            state.refresh_outcome_stat(self.conn, self.source_id, uri, entry.size, entry.mtime_ns)
        return True

    def walk_error(self, error: WalkError) -> None:
        log.warning("%s: %s", error.path, error.reason)
        # Whatever lies under an unreadable folder is not missing, just unseen this time.
        self.unreadable_dirs.append(str(error.path).rstrip(os.sep) + os.sep)
        uri = error.path.as_uri()
        self.seen.append(uri)
        self.remember(uri, str(error.path), "failed", error.reason, None, None)

    # -- reading and storing one file ---------------------------------------------------

    def read(self, entry: WalkEntry, uri: str, placeholder: bool) -> bytes | None:
        """The file's bytes, within the budget and the size limit; None when it was not read
        (counted as a placeholder left for later, or as a failure)."""
        limits = self.config.limits
        if placeholder and not self.budget.try_spend(entry.size):
            # Left for a later run: ingest is idempotent, so bounded runs converge.
            self.count("placeholders", entry.path_str)
            return None
        if entry.size > limits.max_file_bytes:
            reason = (
                f"too large ({entry.size} bytes, limit {limits.max_file_bytes}: "
                "limits.max_file_bytes)"
            )
            self.fail(entry, uri, reason)
            return None
        try:
            timeout = limits.materialize_timeout_seconds if placeholder else None
            return read_bytes(entry.path, timeout=timeout, max_bytes=limits.max_file_bytes)
        except ReadTimeout as error:
            log.warning("%s", error)
            self.report.errors.append(str(error))
            self.count("placeholders", entry.path_str)
        except OSError as error:
            self.fail(entry, uri, f"cannot read: {error.strerror or error}")
        return None

    def store(
        self,
        entry: WalkEntry,
        uri: str,
        extraction: Extraction,
        source_sha: str,
        content: str,
        chunks: list[NewChunk],
    ) -> None:
        """Attribute the file and write its document and chunks, in one transaction."""
        # What a run stores it has seen (an mbox's new message is a URI of its own).
        self.seen.append(uri)
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
        with self.authors.transaction():
            author_id = None
            if attribution.author:
                email = _credited_email(attribution.evidence)
                author_id = self.authors.id_for(
                    printable(attribution.author),
                    printable(email) if email else email,
                    attribution.relation == "authored"
                    and self.identity.is_self(attribution.author, email),
                )
            record = DocumentRecord(
                source_id=self.source_id,
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
                author_id=author_id,
                attribution=attribution.relation,
                attribution_signal=attribution.signal,
                attribution_evidence=printable_tree(dict(attribution.evidence)),
            )
            result = store_document(self.conn, record, chunks)
            if uri in self.outcomes:
                state.clear_outcome(self.conn, self.source_id, uri)
        self.add_chunk_counts(result.chunks_kept, result.chunks_new, result.chunks_deleted)
        self.count("indexed", entry.path_str)

    def add_chunk_counts(self, kept: int, new: int, deleted: int) -> None:
        self.report.chunks_kept += kept
        self.report.chunks_new += new
        self.report.chunks_deleted += deleted

    def _root_of(self, path: Path) -> Path | None:
        for root in self.source.root_paths():
            if path.is_relative_to(root):
                return root
        return None

    # -- the end ------------------------------------------------------------------------

    @contextmanager
    def concluding(self, *, force: bool) -> Iterator[None]:
        """Wrap the walk; the walk calls ``exhausted()`` when it positively reached its end.

        Whatever else happens — an exception, KeyboardInterrupt, a Dagster interruption, a stop
        request the walk honoured, ``--limit`` — the run is recorded as incomplete with its
        reason, nothing is deleted, and the exception still propagates."""
        self._exhausted = False
        self._stop_reason: str | None = None
        try:
            yield
        except BaseException as error:
            self._stop_reason = describe(error)
            self.report.errors.append(f"stopped: {self._stop_reason}; nothing was deleted")
            self._record(completed=False)
            raise
        if self._exhausted:
            self._record(completed=True, force=force)
        else:
            self._record(completed=False)

    def exhausted(self) -> None:
        """The walk reached its end: the only fact that allows deletion."""
        self._exhausted = True

    def incomplete(self, reason: str) -> None:
        """The walk stopped early for ``reason`` (a limit, a stop request, an unreadable root)."""
        if self._stop_reason is None:
            self._stop_reason = reason

    def _record(self, *, completed: bool, force: bool = False) -> None:
        report = self.report
        report.budget_files = self.budget.files_used
        report.budget_bytes = self.budget.bytes_used
        report.seconds = time.monotonic() - self.started
        report.stop_reason = None if completed else (self._stop_reason or "stopped")
        try:
            self._write_end(self.conn, completed, force)
        except Exception:
            report.completed = False
            if report.stop_reason is None:
                raise
            # Stopping already, perhaps interrupted mid-statement: the connection may be in no
            # state to say so. A new one can; and if that fails too, the run stays recorded as
            # unfinished, which is the truth.
            try:
                with _reconnect(self.conn) as fresh:
                    self._write_end(fresh, False, False)
            except Exception:
                log.exception("source %s: could not record the run", self.source.name)

    def _write_end(self, conn: psycopg.Connection[Any], completed: bool, force: bool) -> None:
        report = self.report
        assert report.run_id is not None
        # One transaction: the seen record, the deletions it decides, and the run's row marked
        # complete land together or not at all (a kill -9 here leaves the run incomplete and
        # every document in place).
        with conn.transaction():
            state.record_seen(conn, report.run_id, self.seen)
            if completed:
                self._delete_unseen(force)
            report.completed = completed
            counts = report.as_dict() | {"note": report.deletion_refused or self.note()}
            state.finish_run(conn, report.run_id, counts, report.stop_reason)
            if completed:
                state.prune_seen(conn, self.source_id, report.run_id)

    def note(self) -> str | None:
        """A line for the run's row beyond its counts; overridden by kinds that have one."""
        return None

    def _delete_unseen(self, force: bool) -> None:
        assert self.report.run_id is not None
        unseen, total = state.unseen_documents(self.conn, self.source_id, self.report.run_id)
        unseen = {uri: doc_id for uri, doc_id in unseen.items() if doc_id in self.known_at_start}
        plan = plan_deletions(
            unseen,
            total,
            protected_prefixes=[Path(p).as_uri() for p in self.unreadable_dirs],
            ratio=self.config.limits.deletion_guard_ratio,
        )
        if plan.refused and not force:
            self.report.deletion_refused = plan.reason
            self.report.errors.append(plan.reason or "")
            log.warning("source %s: %s", self.source.name, plan.reason)
            return
        self.report.deleted += delete_documents(self.conn, plan.document_ids)
        state.forget_unseen_outcomes(self.conn, self.source_id, self.report.run_id)


def _reconnect(conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    """A new autocommit connection to the same database, as the same user."""
    info = conn.info
    return psycopg.connect(info.dsn, password=info.password or None, autocommit=True)


def _credited_email(evidence: dict[str, Any]) -> str | None:
    # The credited author's address (not necessarily the top committer's).
    email = evidence.get("email")
    return email if isinstance(email, str) and email else None
