"""Embedding backfill: give every chunk of a model's modality a vector in its ``emb_<slug>``.

What to embed is an anti-join — chunks with no row in the model's table — so the backfill is
its own checkpoint: each batch is committed as it lands, and a crash or Ctrl-C loses at most
the batch in flight; the next run picks up exactly what is missing and embeds nothing twice. A
chunk kept across an edit (chunk reuse) keeps its row id and so its vector.

One batching producer, 64 chunks a request: Ollama runs one model at a time, so fanning
requests out buys contention, not throughput. The next batch is read from the database while
the server works on the current one, so the server never waits for PostgreSQL.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import psycopg
from psycopg import sql

from garage.db.connect import scalar
from garage.embed import backlog, runs
from garage.embed.inputs import SHORT_CHUNK_CHARS, embedding_input, input_sha256
from garage.embed.registry import RegisteredModel, table_dimensions
from garage.inference.client import InferenceClient
from garage.inference.egress import COMMUNICATION, is_loopback
from garage.inference.errors import InferenceError
from garage.locks import Waiting, source_names, writing
from garage.progress import Progress
from garage.stopping import StopSignal

# Which chunks a run embeds: every one, the content chunks (vectors in emb_<slug>) or the fact
# chunks (vectors in potential_fact_emb_<slug>). Dagster runs each as an asset of its own.
Chunks = Literal["all", "content", "facts"]
# chunk id, embedding input, corpus class, the input's hash, fact id, the chunk's own text,
# its source's id
Row = tuple[int, str, str, str, int | None, str, int]


class DimensionMismatch(InferenceError):
    pass


@dataclass
class BackfillReport:
    model: str
    table: str  # where the vectors went: potential_fact_emb_<slug> for a facts-only run
    source: str | None
    chunks: Chunks = "all"
    pending: int = 0  # chunks without a vector when the run started
    vectors_written: int = 0
    vectors_reused: int = 0  # of those, copied from a chunk with the same text: no model call
    skipped_modality: int = 0  # chunks of the other modality, in scope but not this model's
    skipped_blank: int = 0  # chunks with no text to embed
    skipped_egress: int = 0  # communications the egress rule keeps from a non-loopback host
    truncated: int = 0
    batches: int = 0
    seconds: float = 0.0
    stopped: str | None = None  # why the run ended before its last batch, when it did
    notes: list[str] = field(default_factory=list)

    @property
    def chunks_per_second(self) -> float:
        return self.vectors_written / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        line = (
            f"{self.model}: {self.vectors_written} vectors written to {self.table} "
            f"({self.chunks_per_second:.1f} chunks/s; {self.vectors_reused} reused from chunks "
            f"with the same text), {self.truncated} truncated, "
            f"{self.skipped_modality} skipped by modality"
        )
        if self.skipped_egress:
            line += f", {self.skipped_egress} communications kept from a non-loopback host"
        if self.stopped:
            line += f" (stopped: {self.stopped})"
        return line + "".join(f"; {note}" for note in self.notes)


def _scope(
    model: RegisteredModel, source: str | None, *, missing: bool, chunks: Chunks = "all"
) -> tuple[sql.Composable, list[Any]]:
    """FROM/WHERE over the ``chunks`` of this model's modality (optionally one source) that
    have (``missing``) no vector yet."""
    params: list[Any] = [model.modality]
    query: sql.Composable = sql.SQL(
        "FROM chunks c JOIN documents d ON d.id = c.document_id"
        " JOIN sources s ON s.id = d.source_id WHERE c.modality = %s"
    )
    if source is not None:
        query += sql.SQL(" AND s.name = %s")
        params.append(source)
    if chunks == "content":
        query += sql.SQL(" AND c.fact_id IS NULL")
    elif chunks == "facts":
        query += sql.SQL(" AND c.fact_id IS NOT NULL")
    if missing:
        query += _without_vector(model, chunks)
    return query, params


def _without_vector(model: RegisteredModel, chunks: Chunks) -> sql.Composable:
    """The anti-join: a content chunk's vector is in emb_<slug>, a fact chunk's in
    potential_fact_emb_<slug> (keyed on its fact). One CASE covers both, so a run of every
    chunk needs no embedding path for facts of its own."""
    content = sql.SQL("NOT EXISTS (SELECT 1 FROM {} e WHERE e.chunk_id = c.id)").format(
        sql.Identifier(model.table)
    )
    facts = sql.SQL("NOT EXISTS (SELECT 1 FROM {} p WHERE p.fact_id = c.fact_id)").format(
        sql.Identifier(model.fact_table)
    )
    if chunks == "content":
        return sql.SQL(" AND ") + content
    if chunks == "facts":
        return sql.SQL(" AND ") + facts
    return sql.SQL(" AND CASE WHEN c.fact_id IS NULL THEN {} ELSE {} END").format(content, facts)


def pending_count(
    conn: psycopg.Connection[Any],
    model: RegisteredModel,
    source: str | None = None,
    *,
    chunks: Chunks = "all",
) -> int:
    scope, params = _scope(model, source, missing=True, chunks=chunks)
    return int(scalar(conn, sql.SQL("SELECT count(*) ") + scope, params))


def backfill(
    conn: psycopg.Connection[Any],
    client: InferenceClient,
    model: RegisteredModel,
    *,
    source: str | None = None,
    batch_size: int = 64,
    batch_tokens: int = 4096,
    limit: int | None = None,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
    waiting: Waiting | None = None,
    chunks: Chunks = "all",
) -> BackfillReport:
    """Embed the chunks ``model`` has no vector for, holding the writer lock of ``source``
    (of every source, when none is named). ``chunks`` narrows the run to the content chunks
    or to the potential facts' chunks. ``conn`` must be in autocommit mode."""
    waiting = waiting or Waiting(stop=stop)
    with writing(conn, [source] if source else source_names(conn), "embed", waiting):
        return _backfill(
            conn,
            client,
            model,
            source=source,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            limit=limit,
            progress=progress,
            stop=stop,
            chunks=chunks,
        )


def _backfill(
    conn: psycopg.Connection[Any],
    client: InferenceClient,
    model: RegisteredModel,
    *,
    source: str | None,
    batch_size: int,
    batch_tokens: int,
    limit: int | None,
    progress: Progress | None,
    stop: StopSignal | None,
    chunks: Chunks = "all",
) -> BackfillReport:
    """The backfill itself, under the caller's locks.

    A ``stop`` request ends the run between batches (the batch in flight is written first).
    Communications are never sent to a model host that is not loopback (the egress rule): with
    such a host they are skipped and counted, and everything else is embedded."""
    table = model.fact_table if chunks == "facts" else model.table
    report = BackfillReport(model.name, table, source, chunks)
    started = time.monotonic()
    actual = table_dimensions(conn, model)
    if actual is None:
        raise InferenceError(f"{model.table} does not exist: register the model first")
    if actual != model.dimensions:
        raise DimensionMismatch(
            f"{model.table} holds {actual}-dimension vectors but {model.name} is registered "
            f"with {model.dimensions}"
        )
    other = "image" if model.modality == "text" else "text"
    other_scope, other_params = _scope(
        replace(model, modality=other), source, missing=False, chunks=chunks
    )
    report.skipped_modality = int(
        scalar(conn, sql.SQL("SELECT count(*) ") + other_scope, other_params)
    )
    scope, params = _scope(model, source, missing=True, chunks=chunks)
    # The exact count, under the writer locks, is also the backlog search reads; each batch
    # takes what it embedded off it as it lands (backlog.py).
    counted = backlog.count(conn, model, source).values()
    report.pending = sum(
        p.content if chunks == "content" else p.facts if chunks == "facts" else p.total
        for p in counted
    )
    if model.modality == "image":
        # Accepted by the registry, but nothing here can run it: say so, embed nothing, and
        # never hand pictures to a text model instead.
        if report.pending:
            report.notes.append(
                f"{model.name} is an image model, and no image embedding runs on this platform "
                f"yet: {report.pending} image chunks stay without a vector, findable by their "
                "text (OCR, file name, date) through full-text search"
            )
        report.seconds = time.monotonic() - started
        return report
    if progress is not None:
        progress(0, report.pending if limit is None else min(report.pending, limit))

    select = (
        sql.SQL(
            "SELECT c.id, c.text, d.corpus_class, c.text_sha256, c.fact_id, d.title, c.heading,"
            # The chunk after a short one, which a context input joins it with.
            " CASE WHEN length(c.text) < %s AND c.fact_id IS NULL THEN (SELECT n.text"
            "  FROM chunks n WHERE n.document_id = c.document_id AND n.ord = c.ord + 1"
            "  AND n.fact_id IS NULL) END AS next_text, d.source_id "
        )
        + scope
        + sql.SQL(" AND c.id > %s ORDER BY c.id LIMIT %s")
    )
    insert = sql.SQL(
        "INSERT INTO {} (chunk_id, embedding, truncated, input_sha256)"
        " VALUES (%s, %s::vector, %s, %s) ON CONFLICT (chunk_id) DO NOTHING"
    ).format(sql.Identifier(model.table))
    # A fact deleted while its vector was computed takes nothing with it: the SELECT finds no
    # row and nothing is inserted (a plain VALUES would fail the foreign key instead).
    insert_fact = sql.SQL(
        "INSERT INTO {} (fact_id, chunk_id, embedding, truncated)"
        " SELECT f.id, %s, %s::vector, %s FROM facts f WHERE f.id = %s"
        " ON CONFLICT (fact_id) DO NOTHING"
    ).format(sql.Identifier(model.fact_table))

    # The same input under the same model is the same vector: a chunk whose embedding input
    # some chunk already has a vector for (a quoted mail, a copied file, a repeated licence
    # header) gets a copy of it instead of a model call. The key is the hash of the input, not
    # of the chunk's text: under a context input one text in two documents is two inputs.
    # Only content chunks are copied into.
    copy_known = sql.SQL(
        "INSERT INTO {table} (chunk_id, embedding, truncated, input_sha256)"
        " SELECT x.id, known.embedding, known.truncated, x.sha"
        " FROM unnest(%s::bigint[], %s::text[]) AS x(id, sha)"
        " JOIN chunks target ON target.id = x.id AND target.fact_id IS NULL"
        " CROSS JOIN LATERAL (SELECT e.embedding, e.truncated FROM {table} e"
        "   WHERE e.input_sha256 = x.sha LIMIT 1) known"
        " ON CONFLICT (chunk_id) DO NOTHING RETURNING chunk_id"
    ).format(table=sql.Identifier(model.table))

    def as_row(raw: tuple[Any, ...]) -> Row:
        chunk_id, text, corpus_class, text_sha256, fact_id, title, heading, next_text, source_id = (
            raw
        )
        if fact_id is not None or model.input == "chunk":
            # A fact is embedded as its own statement under every input.
            return (chunk_id, text, corpus_class, text_sha256, fact_id, text, source_id)
        given = embedding_input(
            model.input, text, title=title, heading=heading, next_text=next_text
        )
        return (chunk_id, given, corpus_class, input_sha256(given), fact_id, text, source_id)

    def landed(rows: list[Row], ids: Iterable[int]) -> None:
        """Take the chunks just given a vector off their sources' backlog, in the transaction
        that wrote the vectors."""
        source_of = {row[0]: row[6] for row in rows}
        backlog.embedded(conn, model, Counter(source_of[i] for i in ids))

    def reuse_known(rows: list[Row]) -> set[int]:
        if not rows:
            return set()
        with conn.transaction():
            copied = conn.execute(
                copy_known, [[row[0] for row in rows], [row[3] for row in rows]]
            ).fetchall()
            ids = {next(iter(r.values())) if isinstance(r, dict) else r[0] for r in copied}
            landed(rows, ids)
        return ids

    def fetch(after: int) -> list[Row]:
        """The next request's chunks: at most ``batch_size``, and no more than ``batch_tokens``
        estimated tokens (always at least one chunk)."""
        # Counted when read, not when written: the next batch is read before this one lands.
        want = batch_size if limit is None else min(batch_size, limit - read[0])
        if want <= 0:
            return []
        rows = conn.execute(select, [SHORT_CHUNK_CHARS, *params, after, want]).fetchall()
        batch = [as_row(tuple(r.values()) if isinstance(r, dict) else tuple(r)) for r in rows]
        budget = batch_tokens
        for taken, row in enumerate(batch):
            budget -= estimate_tokens(row[1])
            if budget < 0 and taken > 0:
                batch = batch[:taken]
                break
        read[0] += len(batch)
        return batch  # type: ignore[return-value]

    read = [0]

    loopback = is_loopback(model.host)
    last_id = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="garage-embed") as pool:
        batch = fetch(last_id)
        while batch:
            last_id = batch[-1][0]
            blank = [row for row in batch if not row[5].strip()]
            work = [row for row in batch if row[5].strip()]
            report.skipped_blank += len(blank)
            skipped = len(blank)
            if not loopback:
                held = [row for row in work if row[2] == COMMUNICATION]
                work = [row for row in work if row[2] != COMMUNICATION]
                report.skipped_egress += len(held)
                skipped += len(held)
            if progress is not None and skipped:
                progress(skipped)
            reused = reuse_known(work)
            if reused:
                work = [row for row in work if row[0] not in reused]
                report.vectors_reused += len(reused)
                report.vectors_written += len(reused)
                if progress is not None:
                    progress(len(reused))
            # Repeats inside the batch go to the model once.
            texts = list(dict.fromkeys(row[1] for row in work))
            future: Future[Any] | None = None
            if work:
                future = pool.submit(
                    client.embed,
                    model.provider,  # type: ignore[arg-type]
                    model.host,
                    model.model_id,
                    texts,
                    corpus_classes={row[2] for row in work},
                )
            # Read the next batch while the server embeds this one.
            upcoming = fetch(last_id)
            if future is not None:
                result = future.result()
                for vector in result.vectors:
                    if len(vector) != model.dimensions:
                        raise DimensionMismatch(
                            f"{model.name} ({model.provider} at {model.host}, model "
                            f"{model.model_id}) returned {len(vector)}-dimension vectors; the "
                            f"registry says {model.dimensions}. Fix `dimensions` in the config "
                            "(under a new model name) or serve the right model"
                        )
                by_text = {
                    text: (_vector_literal(vector), cut)
                    for text, vector, cut in zip(
                        texts, result.vectors, result.truncated, strict=True
                    )
                }
                rows = [(row[0], *by_text[row[1]]) for row in work]
                report.vectors_reused += len(work) - len(texts)
                facts = {row[0]: row[4] for row in work if row[4] is not None}
                hashes = {row[0]: row[3] for row in work}
                with conn.transaction(), conn.cursor() as cur:
                    content_rows = [(*r, hashes[r[0]]) for r in rows if r[0] not in facts]
                    fact_rows = [(*r, facts[r[0]]) for r in rows if r[0] in facts]
                    if content_rows:
                        cur.executemany(insert, content_rows)
                    if fact_rows:
                        cur.executemany(insert_fact, fact_rows)
                    landed(work, (r[0] for r in rows))
                report.vectors_written += len(rows)
                report.truncated += sum(cut for _, _, cut in rows)
                report.batches += 1
                if progress is not None:
                    progress(len(rows))
            batch = upcoming
            if stop is not None and stop.requested and batch:
                report.stopped = stop.reason
                break
    if report.skipped_egress:
        report.notes.append(
            f"{report.skipped_egress} communication chunks were not sent to {model.host}: "
            "mail and chats go only to a model host on this machine"
        )
    if report.skipped_blank:
        report.notes.append(f"{report.skipped_blank} blank chunks have nothing to embed")
    report.seconds = time.monotonic() - started
    # What the time left is estimated from (runs.py): every run, measured whole.
    runs.record(
        conn,
        model=model.name,
        source=source,
        chunks=chunks,
        seconds=report.seconds,
        pending=report.pending,
        written=report.vectors_written,
        reused=report.vectors_reused,
        stopped=report.stopped,
    )
    return report


# Letter runs, digit runs, and each punctuation mark: how subword tokenizers first split text.
_PIECES = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")


def _piece_tokens(piece: str) -> int:
    if piece.isdigit():
        return 1 + (len(piece) - 1) // 3
    # A dictionary-shaped word is one or two tokens; a mixed-case run (base64, hashes,
    # identifiers) falls apart into pieces of about two characters.
    wordlike = (piece.islower() or piece.istitle() or piece.isupper()) and len(piece) <= 12
    return 1 + (len(piece) - 1) // (4 if wordlike else 2)


def estimate_tokens(text: str) -> int:
    """A cautious count of the tokens ``text`` is for a subword tokenizer, without asking the
    server. Against MiniLM's tokenizer on real prose, code, mail and PEM data the pieces alone
    came within 0.66-1.4x of the truth; the factor 1.4 keeps the estimate above it, so a
    budget in these units is not overrun (prose is overestimated, which costs only requests)."""
    return math.ceil(1.4 * sum(_piece_tokens(p) for p in _PIECES.findall(text)))


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
