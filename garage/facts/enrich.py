"""``enrich-facts``: run the fact prompts over stored documents, one document at a time.

For each document: the metadata facts (no model), then every selected prompt that applies to
it, each through LangExtract on the local chat model; then all of it is stored in one
transaction. ``stale_only`` skips a prompt whose last run over the document had the same
prompt hash, content hash and model. A communication is never sent to a model host that is
not loopback: its prompts are skipped and counted, before any connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import psycopg

from garage.config import GarageConfig
from garage.facts import metadata as metadata_facts
from garage.facts.extractor import choose_extractor
from garage.facts.grounding import PromptResult, extract_prompt
from garage.facts.language_model import GarageLanguageModel, extraction_schema
from garage.facts.prompts import FactPrompt, effective_prompts, select_prompts
from garage.facts.report import EnrichReport, FactsError
from garage.facts.store import (
    LANGEXTRACT_CHUNKER,
    METADATA_CHUNKER,
    PromptOutcome,
    current_runs,
    store_outcomes,
)
from garage.inference import EgressGuard, InferenceClient, LocalChatModel
from garage.inference.egress import COMMUNICATION, is_loopback
from garage.inference.errors import (
    EgressRefused,
    InferenceError,
    ModelNotLoaded,
    ServerUnavailable,
)
from garage.inference.stream import GenerationStopped
from garage.locks import Waiting, source_names, writing
from garage.progress import Progress
from garage.stopping import StopSignal

log = logging.getLogger(__name__)

METADATA = "metadata"
POLL_SECONDS = 0.1  # how soon a stop request reaches the replies in flight


@dataclass(frozen=True)
class _Document:
    id: int
    source: str
    corpus_class: str
    content_sha256: str
    size: int
    has_headers: bool  # a mail or a Messages thread: there are metadata facts to read


def _documents(
    conn: psycopg.Connection[Any], source: str | None, ids: Sequence[int] | None = None
) -> list[_Document]:
    rows = conn.execute(
        "SELECT d.id, s.name, d.corpus_class, d.content_sha256, length(d.content),"
        " (d.metadata ? 'chat_guid' AND d.metadata ? 'participants')"
        " OR (d.metadata ? 'message_id' AND d.metadata ? 'from')"
        " FROM documents d JOIN sources s ON s.id = d.source_id"
        " WHERE (%(source)s::text IS NULL OR s.name = %(source)s)"
        " AND (%(ids)s::bigint[] IS NULL OR d.id = ANY(%(ids)s)) ORDER BY d.id",
        {"source": source, "ids": None if ids is None else list(ids)},
    ).fetchall()
    return [_Document(*(tuple(r.values()) if isinstance(r, dict) else tuple(r))) for r in rows]


def enrich_facts(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    *,
    client: InferenceClient | None = None,
    source: str | None = None,
    prompt_names: Sequence[str] = (),
    stale_only: bool = False,
    model: str | None = None,
    provider: str | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
    schema_override: dict[str, Any] | None = None,
    document_ids: Sequence[int] | None = None,
    waiting: Waiting | None = None,
) -> EnrichReport:
    """Extract facts for the documents of ``source`` (default all). ``conn`` in autocommit.

    ``limit`` caps the documents worked on (those skipped as current do not count).
    ``schema_override`` replaces the output schema derived from each prompt's examples (the
    tests use it to make a real model quote text the document does not hold).

    Up to ``facts.parallel_documents`` documents are with the model at once, each on its own
    thread (a local server writes the replies of its slots together, for little more than
    the time of one); this thread alone reads and writes the database."""
    started = time.monotonic()
    wanted = [n for n in prompt_names if n != METADATA]
    run_metadata = not prompt_names or METADATA in prompt_names
    try:
        prompts = (
            select_prompts(effective_prompts(config), wanted) if wanted or not prompt_names else []
        )
    except KeyError as error:
        raise FactsError(str(error)) from None
    extractor = choose_extractor(config, model=model, provider=provider) if prompts else None
    if prompts and extractor is None:
        raise FactsError(
            "no model to extract facts with: set facts.model (and facts.provider) or "
            "inference.model in the config, or pass --model"
        )
    names = ([METADATA] if run_metadata else []) + [p.name for p in prompts]
    report = EnrichReport(source, extractor.label if extractor else None, names)
    own_client = client is None and extractor is not None
    if client is None and extractor is not None:
        client = InferenceClient(
            EgressGuard.from_config(config), timeout=config.inference.timeout_seconds
        )
    chat = (
        LocalChatModel(client, extractor.provider, extractor.host, extractor.model)
        if extractor is not None and client is not None
        else None
    )
    keys = metadata_facts.PersonKeys(conn, config.identity.emails)
    # One writer per source: a document's facts change under its source's writer lock.
    scopes = [source] if source else source_names(conn)
    settings = _Settings(
        config, prompts, run_metadata, stale_only, chat, keys, schema_override, stop
    )
    try:
        with writing(conn, scopes, "enrich-facts", waiting or Waiting(stop=stop)):
            _run(conn, settings, _documents(conn, source, document_ids), report, limit, progress)
    finally:
        if own_client and client is not None:
            client.close()
    report.seconds = time.monotonic() - started
    return report


@dataclass(frozen=True)
class _Settings:
    config: GarageConfig
    prompts: Sequence[FactPrompt]
    run_metadata: bool
    stale_only: bool
    chat: LocalChatModel | None
    keys: metadata_facts.PersonKeys
    schema_override: dict[str, Any] | None
    stop: StopSignal | None


@dataclass
class _Job:
    """One document to extract: read, with its metadata facts done and its prompts due."""

    document: _Document
    content: str
    due: list[FactPrompt]
    metadata: PromptOutcome | None


@dataclass
class _PromptRun:
    prompt: FactPrompt
    result: PromptResult | None = None
    error: str | None = None


def _run(
    conn: psycopg.Connection[Any],
    settings: _Settings,
    documents: Sequence[_Document],
    report: EnrichReport,
    limit: int | None,
    progress: Progress | None,
) -> None:
    """Read each document here, extract on up to ``parallel_documents`` threads, store here
    as each finishes. A stop request cuts the replies in flight (``GenerationStopped``,
    reason "cancelled"): the documents cut short store nothing and stay stale."""
    stop = settings.stop
    workers = max(1, settings.config.facts.parallel_documents) if settings.chat else 1
    # The replies in flight stop when this is set: on a stop request (passed on from
    # ``stop.event`` within POLL_SECONDS), or when the run ends in an exception.
    cancel = threading.Event()
    pending: dict[Future[list[_PromptRun]], _Job] = {}
    worked = 0
    # The documents the run expects to work on, for the progress bar's time left: every one in
    # scope (up to the limit), less those found current as they are read.
    candidates = len(documents)

    def expected() -> int:
        return candidates if limit is None else min(limit, candidates)

    if progress is not None:
        progress(0, expected())

    def settle(room: int) -> None:
        """Store what is done until at most ``room`` documents are in flight."""
        while len(pending) > room:
            if stop is not None and stop.event.is_set():
                cancel.set()
            done, _ = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                job = pending.pop(future)
                try:
                    runs = future.result()
                except GenerationStopped as stopped:
                    if stopped.reason != "cancelled":
                        raise
                    # Stopped mid-document: nothing of it is stored, so its prompts' runs
                    # stay stale and the next --stale-only run does it whole.
                    report.stopped = (stop.reason if stop else None) or "cancelled"
                    continue
                _store(conn, settings, job, runs, report)
                if progress is not None:
                    progress(1)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="facts") as pool:
        try:
            for document in documents:
                if stop is not None and stop.requested:
                    report.stopped = stop.reason
                    break
                if report.stopped or (limit is not None and worked >= limit):
                    break
                job = _read(conn, settings, document, report)
                if job is None:
                    before = expected()
                    candidates -= 1
                    if progress is not None and expected() != before:
                        progress(0, expected() - before)
                    continue
                worked += 1
                pending[pool.submit(_extract, settings, job, cancel)] = job
                settle(workers - 1)
            settle(0)
        except BaseException:
            # The run ends (the server is gone, an egress refusal, an interrupt): the
            # documents in flight are abandoned unstored, their replies cut.
            cancel.set()
            for future in pending:
                future.cancel()
            raise
    if stop is not None and stop.requested and report.stopped is None:
        report.stopped = stop.reason


def _read(
    conn: psycopg.Connection[Any],
    settings: _Settings,
    document: _Document,
    report: EnrichReport,
) -> _Job | None:
    """The document's text and its due prompts, with its metadata facts; None when nothing
    has to run."""
    chat = settings.chat
    runs = current_runs(conn, document.id) if settings.stale_only else {}
    label = chat and f"{chat.provider}:{chat.model}"

    def current(name: str, sha: str, model: str) -> bool:
        return runs.get(name) == (sha, document.content_sha256, model)

    due = [
        p
        for p in settings.prompts
        if p.applies_to(document.corpus_class, document.source)
        and not (settings.stale_only and current(p.name, p.sha256, label or ""))
    ]
    metadata_due = (
        settings.run_metadata
        and document.has_headers
        and not (
            settings.stale_only
            and current(METADATA, metadata_facts.METADATA_SHA256, metadata_facts.METADATA_MODEL)
        )
    )
    if (
        due
        and chat is not None
        and document.corpus_class == COMMUNICATION
        and not is_loopback(chat.host)
    ):
        # The egress rule, applied before any connection: mail and chats go only to a model
        # host on this machine. The client's guard would refuse it too; skipping here keeps
        # the rest of the run going and says how many were held back.
        report.refused_egress += 1
        due = []
    if not due and not metadata_due:
        report.documents_current += 1
        return None
    row = conn.execute(
        "SELECT content, metadata FROM documents WHERE id = %s", (document.id,)
    ).fetchone()
    if row is None:
        return None
    content, doc_metadata = (row["content"], row["metadata"]) if isinstance(row, dict) else row
    doc_metadata = doc_metadata or {}
    report.documents_read += 1
    report.characters += len(content)
    metadata: PromptOutcome | None = None
    if metadata_due:
        facts, dropped = metadata_facts.metadata_facts(content, doc_metadata, settings.keys)
        metadata = PromptOutcome(
            METADATA,
            metadata_facts.METADATA_SHA256,
            metadata_facts.METADATA_MODEL,
            METADATA_CHUNKER,
            facts,
            dropped,
        )
    return _Job(document, content, due, metadata)


def _extract(settings: _Settings, job: _Job, cancel: threading.Event) -> list[_PromptRun]:
    """Every due prompt over the document (on a worker thread: no database here). A
    prompt's own failure is recorded in its run; a failure of the server or the egress rule,
    or a stop request, ends the document (raised)."""
    runs: list[_PromptRun] = []
    facts = settings.config.facts
    for prompt in job.due:
        assert settings.chat is not None
        model = GarageLanguageModel(
            settings.chat,
            corpus_class=job.document.corpus_class,
            schema=settings.schema_override or _schema_for(prompt, facts.max_extractions),
            max_tokens=facts.max_tokens,
            cancel=cancel,
        )
        run = _PromptRun(prompt)
        runs.append(run)
        try:
            run.result = extract_prompt(
                job.content, prompt, model, max_char_buffer=facts.max_char_buffer
            )
        except (ServerUnavailable, ModelNotLoaded, EgressRefused):
            raise  # the same for every document: stop the run and say so
        except GenerationStopped as stopped:
            if stopped.reason == "cancelled":
                raise  # a stop request, not this document's failure
            run.error = str(stopped)
        except InferenceError as error:
            run.error = str(error)
    return runs


def _store(
    conn: psycopg.Connection[Any],
    settings: _Settings,
    job: _Job,
    runs: Sequence[_PromptRun],
    report: EnrichReport,
) -> None:
    document, chat = job.document, settings.chat
    label = chat and f"{chat.provider}:{chat.model}"
    outcomes: list[PromptOutcome] = [job.metadata] if job.metadata is not None else []
    for run in runs:
        prompt, result = run.prompt, run.result
        if result is None:
            report.failed += 1
            report.errors.append(f"document {document.id}, prompt {prompt.name}: {run.error}")
            log.warning("document %s, prompt %s: %s", document.id, prompt.name, run.error)
            continue
        assert chat is not None
        report.requests += result.requests
        report.unparsed_replies += result.unparsed
        report.cut_replies += result.cut
        report.dropped_not_claims += result.not_claims
        report.dropped_not_names += result.not_names
        report.dropped_ungrounded_attributes += result.dropped_attributes
        outcomes.append(
            PromptOutcome(
                prompt.name,
                prompt.sha256,
                label or "",
                LANGEXTRACT_CHUNKER.format(model=chat.model),
                result.facts,
                result.dropped,
            )
        )
    if not outcomes:
        return
    if not store_outcomes(conn, document.id, document.content_sha256, outcomes):
        report.documents_changed += 1
        return
    report.prompts_run += len(outcomes)
    for outcome in outcomes:
        report.facts_stored += len(outcome.facts)
        report.dropped_ungrounded += outcome.dropped
        if outcome.prompt_name == METADATA:
            report.metadata_facts += len(outcome.facts)


def _schema_for(prompt: FactPrompt, max_items: int) -> dict[str, Any]:
    attributes: dict[str, list[str]] = {}
    for example in prompt.examples:
        for extraction in example.extractions:
            keys = attributes.setdefault(extraction.fact_class, [])
            keys += [k for k in extraction.attributes if k not in keys]
    return extraction_schema(prompt.classes or ("fact",), attributes, max_items=max_items)
