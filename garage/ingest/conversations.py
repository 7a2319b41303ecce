"""Ingest a Messages source: each chat of its ``chat.db`` is one communication document.

The document is keyed ``<chat.db path>#<chat GUID>`` and has one chunk per message (chunker
``message``), each recording its direction (``sent`` by the owner or ``received``), its sender,
date and GUID in the chunk's metadata, which search filters on. The database is read whole every
run (a copy, see ``garage.messages``) — it is one file, and telling which threads changed needs
their messages — but only threads whose text changed are written, each in its own transaction,
and chunk reuse keeps every unchanged message's chunk and vectors: a thread that gains a message
inserts exactly one chunk.

A chat.db that cannot be read (locked, corrupt, of an older schema) is a failure of that root
only: it is reported, nothing stored from it earlier is touched, and the run is not complete, so
nothing is deleted. Chats that vanished from a database that was read are deleted under the same
25% guard as files.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from garage.attribute import Identity
from garage.config import GarageConfig, SourceConfig
from garage.ingest import state
from garage.ingest.deletion import plan_deletions
from garage.ingest.report import IngestReport
from garage.ingest.store import DocumentRecord, NewChunk, delete_documents, store_document
from garage.messages import Chat, MessagesError, database_path, read_chat_database

log = logging.getLogger(__name__)

EXTRACTOR, EXTRACTOR_VERSION = "messages", 1
MESSAGE_CHUNKER = "message"

Progress = Callable[[str, str], None]


def ingest_messages(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    source: SourceConfig,
    *,
    limit: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> IngestReport:
    """One pass over every ``chat.db`` of ``source``; ``limit`` caps the chats looked at (a
    limited run is incomplete and deletes nothing)."""
    from garage.ingest.pipeline import IngestError

    databases = [database_path(root) for root in source.root_paths()]
    for database in databases:
        if not database.exists():
            raise IngestError(
                f"source {source.name!r}: {database} does not exist (unmounted or moved?); "
                "nothing was changed"
            )
    notify = progress or (lambda event, path: None)
    started = time.monotonic()
    report = IngestReport(source=source.name)
    source_id = state.upsert_source(conn, source)
    known = state.known_documents(conn, source_id)
    report.run_id = state.start_run(conn, source_id)
    identity = Identity(config.identity.self_name, tuple(config.identity.emails))
    authors = state.AuthorCache(conn)
    seen: list[str] = []
    notes: list[str] = []
    completed = True
    try:
        for database in databases:
            try:
                chats = read_chat_database(database)
            except MessagesError as error:
                log.warning("%s", error)
                report.errors.append(str(error))
                report.failed += 1
                completed = False
                notify("failed", str(database))
                continue
            log.info("%s", chats.summary())
            notes.append(chats.summary())
            stat = database.stat()
            for chat in chats.chats:
                if limit is not None and report.seen >= limit:
                    completed = False
                    break
                uri = f"{database}#{chat.guid}"
                seen.append(uri)
                report.seen += 1
                event = _store_chat(
                    conn,
                    report,
                    source_id,
                    uri,
                    chat,
                    known.get(uri),
                    stat,
                    identity,
                    authors,
                    database,
                )
                notify(event, uri)
    finally:
        report.completed = completed
        if completed:
            _delete_vanished(conn, report, known, set(seen), config, force)
        report.seconds = time.monotonic() - started
        counts = {
            key: getattr(report, key)
            for key in (
                "completed seen indexed stat_skipped unchanged rejected failed placeholders "
                "deleted chunks_kept chunks_new chunks_deleted budget_files budget_bytes"
            ).split()
        }
        counts["note"] = report.deletion_refused or "; ".join(notes)[:2000] or None
        state.finish_run(conn, report.run_id, counts, seen)
    return report


def thread_chunks(chat: Chat, self_label: str) -> tuple[str, list[NewChunk]]:
    """The thread's content and one chunk per message (its offsets into the content)."""
    lines: list[str] = []
    chunks: list[NewChunk] = []
    offset = 0
    for ord_, message in enumerate(chat.messages):
        sender = self_label if message.is_from_me else (message.address or "unknown")
        line = f"{sender}: {message.text}"
        metadata = {
            "direction": "sent" if message.is_from_me else "received",
            "sender": sender,
            "sender_address": None if message.is_from_me else message.address,
            "date": message.date.isoformat() if message.date else None,
            "guid": message.guid,
            "service": message.service,
        }
        chunks.append(
            NewChunk(
                ord_, line, offset, offset + len(line), None, MESSAGE_CHUNKER, metadata=metadata
            )
        )
        lines.append(line)
        offset += len(line) + 1
    return "\n".join(lines), chunks


def _store_chat(
    conn: psycopg.Connection[Any],
    report: IngestReport,
    source_id: int,
    uri: str,
    chat: Chat,
    known: state.KnownDocument | None,
    stat: Any,
    identity: Identity,
    authors: state.AuthorCache,
    database: Path,
) -> str:
    content, chunks = thread_chunks(chat, identity.self_name or "Me")
    content_sha = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    if (
        known is not None
        and known.content_sha256 == content_sha
        and known.extractor == EXTRACTOR
        and known.extractor_version == EXTRACTOR_VERSION
        and known.chunker == MESSAGE_CHUNKER
    ):
        report.unchanged += 1
        return "unchanged"
    sent = sum(m.is_from_me for m in chat.messages)
    dates = [m.date for m in chat.messages if m.date is not None]
    # The thread is the owner's correspondence with the others in it; each message's own
    # direction is on its chunk. A one-to-one thread is credited to the other person.
    peer = chat.participants[0] if len(chat.participants) == 1 and not chat.is_group else None
    evidence: dict[str, object] = {
        "participants": list(chat.participants),
        "sent": sent,
        "received": len(chat.messages) - sent,
    }
    metadata: dict[str, object] = {
        "path": str(database),
        "chat_guid": chat.guid,
        "participants": list(chat.participants),
        "is_group": chat.is_group,
        "service": chat.service,
        "messages": len(chat.messages),
        "orphans_joined": chat.orphans,
        "first_date": min(dates).isoformat() if dates else None,
        "last_date": max(dates).isoformat() if dates else None,
    }
    with conn.transaction():
        author_id = None
        if peer is not None:
            author_id = authors.id_for(peer, peer if "@" in peer else None, False)
        record = DocumentRecord(
            source_id=source_id,
            uri=uri,
            corpus_class="communication",
            title=chat.title,
            content=content,
            source_sha256=content_sha,  # the thread's bytes are its messages
            content_sha256=content_sha,
            size_bytes=len(content.encode("utf-8", "surrogatepass")),
            mtime_ns=stat.st_mtime_ns,
            extractor=EXTRACTOR,
            extractor_version=EXTRACTOR_VERSION,
            metadata=metadata,
            author_id=author_id,
            attribution="received",
            attribution_signal="participants",
            attribution_evidence=evidence,
        )
        result = store_document(conn, record, chunks)
    report.indexed += 1
    report.chunks_kept += result.chunks_kept
    report.chunks_new += result.chunks_new
    report.chunks_deleted += result.chunks_deleted
    return "indexed"


def _delete_vanished(
    conn: psycopg.Connection[Any],
    report: IngestReport,
    known: dict[str, state.KnownDocument],
    seen: set[str],
    config: GarageConfig,
    force: bool,
) -> None:
    plan = plan_deletions(
        {uri: doc.id for uri, doc in known.items()},
        seen,
        ratio=config.limits.deletion_guard_ratio,
    )
    if plan.refused and not force:
        report.deletion_refused = plan.reason
        report.errors.append(plan.reason or "")
        return
    with conn.transaction():
        report.deleted = delete_documents(conn, plan.document_ids)
