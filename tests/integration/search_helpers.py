"""A small real corpus for search tests: Python tutorial pages, CPython test modules as code,
and a Messages-like thread inserted row by row (as the Messages ingest stores one)."""

from __future__ import annotations

import math
import shutil
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from tests.material import material

TUTORIAL = "usr/share/doc/python3.11-doc/html/_sources/tutorial"
TESTSUITE = "usr/lib/python3.11/test"

# (direction, sender, date, text) — what a chat thread's chunks carry.
MESSAGES = [
    ("sent", "Jane Doe <jane@example.org>", "2024-03-02T09:15:00+00:00",
     "Did you book the train tickets to Lisbon for the conference in April?"),
    ("received", "Alice Martin <alice@example.net>", "2024-03-02T09:40:00+00:00",
     "Yes, the night train leaves Madrid at ten, I forwarded the booking to you."),
    ("received", "Bob Stone <bob@example.com>", "2024-05-20T18:05:00+00:00",
     "The firmware validation failed again on the second board, see the attached log."),
    ("sent", "Jane Doe <jane@example.org>", "2024-05-21T08:30:00+00:00",
     "I will rerun the secure boot checks on the spare board this afternoon."),
]  # fmt: skip


def tutorial(root: Path, names: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pages = material("python3.11-doc") / TUTORIAL
    for page in sorted(pages.glob("*.rst.txt")):
        name = page.name.removesuffix(".rst.txt")
        if names is None or name in names:
            shutil.copy(page, root / f"{name}.txt")
    return root


def code(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tests = material("libpython3.11-testsuite") / TESTSUITE
    for name in ("test_bisect.py", "test_heapq.py"):
        shutil.copy(tests / name, root / name)
    return root


def insert_thread(conn: psycopg.Connection[Any], *, chat_db: str = "/home/jane/chat.db") -> int:
    """One Messages thread, one chunk per message, with direction, sender and date."""
    source_id = conn.execute(
        "INSERT INTO sources (name, kind, corpus_class, roots) VALUES"
        " ('chats', 'messages', 'communication', ARRAY[%s]) RETURNING id",
        (chat_db,),
    ).fetchone()[0]  # type: ignore[index]
    content = "\n".join(text for *_, text in MESSAGES)
    document_id = conn.execute(
        "INSERT INTO documents (source_id, uri, corpus_class, title, content, source_sha256,"
        " content_sha256, size_bytes, mtime_ns, extractor, extractor_version)"
        " VALUES (%s, %s, 'communication', 'Alice, Bob', %s, 'x', 'y', %s, %s, 'messages', 1)"
        " RETURNING id",
        (source_id, f"{chat_db}#chat42", content, len(content), 1_717_000_000 * 10**9),
    ).fetchone()[0]  # type: ignore[index]
    offset = 0
    for ord_, (direction, sender, date, text) in enumerate(MESSAGES):
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset, end_offset,"
            " chunker, metadata) VALUES (%s, %s, %s, %s, %s, %s, 'message', %s)",
            (
                document_id,
                ord_,
                text,
                f"m{ord_}",
                offset,
                offset + len(text),
                Jsonb({"direction": direction, "sender": sender, "date": date}),
            ),
        )
        offset += len(text) + 1
    return document_id


# -- a reference BM25, computed in Python -----------------------------------------------------


@dataclass(frozen=True)
class ReferenceBM25:
    """Textbook BM25 (Lucene's idf) over token lists: what the SQL leg must reproduce."""

    docs: dict[int, Counter[str]]
    k1: float = 1.2
    b: float = 0.75

    @property
    def n(self) -> int:
        return len(self.docs)

    @property
    def total_tokens(self) -> int:
        return sum(sum(tf.values()) for tf in self.docs.values())

    def scores(self, terms: set[str]) -> dict[int, float]:
        avgdl = self.total_tokens / self.n
        df = Counter(t for tf in self.docs.values() for t in tf if t in terms)
        scores: dict[int, float] = {}
        for chunk_id, tf in self.docs.items():
            dl = sum(tf.values())
            matched = [t for t in terms if t in tf]
            if not matched:
                continue
            scores[chunk_id] = sum(
                math.log(1 + (self.n - df[t] + 0.5) / (df[t] + 0.5))
                * tf[t]
                * (self.k1 + 1)
                / (tf[t] + self.k1 * (1 - self.b + self.b * dl / avgdl))
                for t in matched
            )
        return scores


def tokens(conn: psycopg.Connection[Any], text: str) -> list[str]:
    """PostgreSQL's own tokens for ``text``: the parser and dictionaries through ts_debug,
    one lexeme per occurrence, stop words dropped — not read back from a tsvector."""
    rows = conn.execute(
        "SELECT lexemes FROM ts_debug('english', %s) WHERE lexemes IS NOT NULL", (text,)
    ).fetchall()
    return [lexeme for (lexemes,) in rows for lexeme in lexemes]


def reference(conn: psycopg.Connection[Any]) -> ReferenceBM25:
    rows = conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall()
    return ReferenceBM25({chunk_id: Counter(tokens(conn, text)) for chunk_id, text in rows})


def iso(value: str) -> datetime:
    return datetime.fromisoformat(value)
