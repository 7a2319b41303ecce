"""Ingest a Messages source: each chat of its ``chat.db`` is one communication document.

The document is keyed ``<chat.db path>#<chat GUID>`` and has one chunk per message (chunker
``message``), each recording its direction (``sent`` by the owner or ``received``), its sender,
date and GUID in the chunk's metadata, which search filters on. The database is read whole
every run (a copy, see ``garage.extract.messages``) — it is one file, and telling which threads
changed needs their messages — but only threads whose text changed are written, each in its own
transaction, and chunk reuse keeps every unchanged message's chunk and vectors: a thread that
gains a message inserts exactly one chunk.

A chat.db that cannot be read (locked, corrupt, of an older schema) is a failure of that root
only: it is reported, nothing stored from it earlier is touched, and the run is not complete, so
nothing is deleted. Chats that vanished from a database that was read are deleted under the same
25% guard as files.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import psycopg

from garage.config import GarageConfig, SourceConfig
from garage.extract.messages import Chat, MessagesError, database_path, read_chat_database
from garage.ingest import lifecycle, outcomes
from garage.ingest.report import IngestReport
from garage.ingest.run import IngestRun, Progress
from garage.ingest.store import DocumentRecord, NewChunk, sha256_text, store_document
from garage.quality import exceeds_chunk_cap
from garage.stopping import StopSignal

log = logging.getLogger(__name__)

EXTRACTOR, EXTRACTOR_VERSION = "messages", 1
MESSAGE_CHUNKER = "message"


def ingest_messages(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    source: SourceConfig,
    *,
    limit: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
) -> IngestReport:
    """One pass over every ``chat.db`` of ``source``; ``limit`` caps the chats looked at (a
    limited run is incomplete and deletes nothing)."""
    databases = [database_path(root) for root in source.root_paths()]
    lifecycle.require_present(source, databases)
    run = lifecycle.begin(conn, config, source, progress, stop)
    with lifecycle.concluding(run, force=force):
        if _read_databases(run, databases, limit):
            lifecycle.exhausted(run)
    return run.report


def _read_databases(run: IngestRun, databases: list[Path], limit: int | None) -> bool:
    """Store every chat; True only when every database was read and every chat looked at."""
    whole = True
    for database in databases:
        try:
            chats = read_chat_database(database)
        except MessagesError as error:
            # Unread is not empty: nothing stored from it may be judged missing.
            log.warning("%s", error)
            run.report.errors.append(str(error))
            run.report.failed += 1
            lifecycle.incomplete(run, f"{database} could not be read")
            run.progress("failed", str(database))
            whole = False
            continue
        log.info("%s", chats.summary())
        # The run's row notes what each chat.db held (chats, messages, orphans).
        run.notes.append(chats.summary())
        stat = database.stat()
        for chat in chats.chats:
            if run.check_stop():
                lifecycle.incomplete(run, run.stop.reason or "stop requested")
                return False
            if limit is not None and run.report.seen >= limit:
                lifecycle.incomplete(run, f"--limit {limit} reached")
                return False
            uri = f"{database}#{chat.guid}"
            run.seen.append(uri)
            run.report.seen += 1
            with outcomes.document(run, uri, f"{database} ({chat.title})"):
                _store_chat(run, uri, chat, stat, database)
    return whole


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


def _store_chat(run: IngestRun, uri: str, chat: Chat, stat: Any, database: Path) -> None:
    content, chunks = thread_chunks(chat, run.identity.self_name or "Me")
    content_sha = sha256_text(content)
    known = run.known.get(uri)
    if (
        known is not None
        and known.content_sha256 == content_sha
        and known.extractor == EXTRACTOR
        and known.extractor_version == EXTRACTOR_VERSION
        and known.chunker == MESSAGE_CHUNKER
    ):
        return run.count("unchanged", uri)
    cap = run.config.limits.max_chunks_per_document
    if exceeds_chunk_cap(len(chunks), cap):
        # The same backstop as for files: no one document may dominate the index. The reason
        # names the limit to raise for a thread the owner wants kept whole.
        reason = f"{len(chunks)} messages, over limits.max_chunks_per_document ({cap})"
        label = f"{database} ({chat.title})"
        return outcomes.remember(run, uri, label, "rejected", reason, None, None, drop_older=True)
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
    with run.authors.transaction():
        author_id = None
        if peer is not None:
            author_id = run.authors.id_for(peer, peer if "@" in peer else None, False)
        record = DocumentRecord(
            source_id=run.source_id,
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
        result = store_document(run.conn, record, chunks)
        outcomes.stored(run, uri)
    run.add_chunk_counts(result.chunks_kept, result.chunks_new, result.chunks_deleted)
    run.count("indexed", uri)
