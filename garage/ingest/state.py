"""What the database already knows about a source, loaded once per run.

Ingest decides most files from this snapshot and a stat alone: a no-change run over 100k files
must not cost 100k queries, let alone 100k reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from garage.config import SourceConfig
from garage.printable import printable


@dataclass(frozen=True)
class KnownDocument:
    id: int
    size_bytes: int
    mtime_ns: int
    source_sha256: str
    extractor: str
    extractor_version: int
    chunker: str | None  # of its first chunk: a text chunk when it has any (see pictures)
    content_sha256: str = ""


@dataclass(frozen=True)
class KnownOutcome:
    outcome: str
    size_bytes: int | None
    mtime_ns: int | None
    source_sha256: str | None
    extractor: str | None
    extractor_version: int | None


def upsert_source(conn: psycopg.Connection[Any], source: SourceConfig) -> int:
    row = conn.execute(
        "INSERT INTO sources (name, kind, corpus_class, roots) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind,"
        " corpus_class = EXCLUDED.corpus_class, roots = EXCLUDED.roots, updated_at = now()"
        " RETURNING id",
        (source.name, source.kind, source.corpus_class, [str(p) for p in source.root_paths()]),
    ).fetchone()
    assert row is not None
    return int(row["id"] if isinstance(row, dict) else row[0])


def known_documents(conn: psycopg.Connection[Any], source_id: int) -> dict[str, KnownDocument]:
    rows = conn.execute(
        "SELECT d.uri, d.id, d.size_bytes, d.mtime_ns, d.source_sha256, d.extractor,"
        " d.extractor_version, c.chunker, d.content_sha256"
        " FROM documents d LEFT JOIN LATERAL ("
        # The first by ord: text chunks come before a picture's image chunk.
        "   SELECT chunker FROM chunks WHERE document_id = d.id AND fact_id IS NULL"
        "   ORDER BY ord LIMIT 1"
        " ) c ON true WHERE d.source_id = %s",
        (source_id,),
    ).fetchall()
    known = {}
    for row in rows:
        values = list(row.values()) if isinstance(row, dict) else list(row)
        known[values[0]] = KnownDocument(*values[1:])
    return known


def known_outcomes(conn: psycopg.Connection[Any], source_id: int) -> dict[str, KnownOutcome]:
    rows = conn.execute(
        "SELECT uri, outcome, size_bytes, mtime_ns, source_sha256, extractor, extractor_version"
        " FROM ingest_outcomes WHERE source_id = %s",
        (source_id,),
    ).fetchall()
    known = {}
    for row in rows:
        values = list(row.values()) if isinstance(row, dict) else list(row)
        known[values[0]] = KnownOutcome(*values[1:])
    return known


def record_outcome(
    conn: psycopg.Connection[Any],
    source_id: int,
    uri: str,
    outcome: str,
    reason: str,
    *,
    size: int | None,
    mtime_ns: int | None,
    source_sha256: str | None = None,
    extractor: str | None = None,
    extractor_version: int | None = None,
) -> None:
    conn.execute(
        "INSERT INTO ingest_outcomes (source_id, uri, outcome, reason, size_bytes, mtime_ns,"
        " source_sha256, extractor, extractor_version) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (source_id, uri) DO UPDATE SET outcome = EXCLUDED.outcome,"
        " reason = EXCLUDED.reason, size_bytes = EXCLUDED.size_bytes,"
        " mtime_ns = EXCLUDED.mtime_ns, source_sha256 = EXCLUDED.source_sha256,"
        " extractor = EXCLUDED.extractor, extractor_version = EXCLUDED.extractor_version,"
        " recorded_at = now()",
        (
            source_id,
            uri,
            outcome,
            printable(reason),
            size,
            mtime_ns,
            source_sha256,
            extractor,
            extractor_version,
        ),
    )


def refresh_outcome_stat(
    conn: psycopg.Connection[Any], source_id: int, uri: str, size: int, mtime_ns: int
) -> None:
    conn.execute(
        "UPDATE ingest_outcomes SET size_bytes = %s, mtime_ns = %s"
        " WHERE source_id = %s AND uri = %s",
        (size, mtime_ns, source_id, uri),
    )


def clear_outcome(conn: psycopg.Connection[Any], source_id: int, uri: str) -> None:
    conn.execute("DELETE FROM ingest_outcomes WHERE source_id = %s AND uri = %s", (source_id, uri))


class AuthorCache:
    """authors rows by (name, email), created on first use.

    One author per mail address: "barry@python.org" alone and "Barry Warsaw
    <barry@python.org>" are the same person, as in any address book. A bare address takes the
    row that has a name; a name arriving for an address first seen bare names that row; another
    display name for a named address keeps the first name's row.
    """

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn
        self.ids: dict[tuple[str, str | None], int] = {}
        # Ids learnt inside the open document transaction: an author inserted there exists
        # only if that transaction commits, so they join ``ids`` only then.
        self.pending: dict[tuple[str, str | None], int] = {}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A document's transaction: the authors it learnt are remembered only when it
        commits, so a rolled-back insert never hands a later document a dangling id."""
        self.pending.clear()
        try:
            with self.conn.transaction():
                yield
        except BaseException:
            self.pending.clear()
            raise
        self.ids.update(self.pending)
        self.pending.clear()

    def id_for(self, name: str, email: str | None, is_self: bool) -> int:
        key = (name, email)
        known = self.ids.get(key, self.pending.get(key))
        if known is None:
            found = self._by_address(name, email, is_self) if email and "@" in email else None
            known = found if found is not None else self._insert(name, email, is_self)
            self.pending[key] = known
        return known

    def _by_address(self, name: str, email: str, is_self: bool) -> int | None:
        rows = [
            (int(r["id"]), str(r["name"])) if isinstance(r, dict) else (int(r[0]), str(r[1]))
            for r in self.conn.execute(
                "SELECT id, name FROM authors WHERE lower(email) = lower(%s)"
                " ORDER BY lower(name) = lower(email), id",  # named rows first
                (email,),
            ).fetchall()
        ]
        if not rows:
            return None
        exact = [author_id for author_id, known in rows if known == name]
        author_id, known = (exact[0], name) if exact else rows[0]
        named = name.strip().casefold() != email.strip().casefold()
        if named and known.strip().casefold() == email.strip().casefold():
            self.conn.execute("UPDATE authors SET name = %s WHERE id = %s", (name, author_id))
        if is_self:
            self.conn.execute("UPDATE authors SET is_self = true WHERE id = %s", (author_id,))
        return author_id

    def _insert(self, name: str, email: str | None, is_self: bool) -> int:
        row = self.conn.execute(
            "INSERT INTO authors (name, email, is_self) VALUES (%s, %s, %s)"
            " ON CONFLICT ON CONSTRAINT authors_name_email"
            " DO UPDATE SET is_self = authors.is_self OR EXCLUDED.is_self RETURNING id",
            (name, email, is_self),
        ).fetchone()
        assert row is not None
        return int(row["id"] if isinstance(row, dict) else row[0])


def start_run(conn: psycopg.Connection[Any], source_id: int) -> int:
    row = conn.execute(
        "INSERT INTO ingest_runs (source_id) VALUES (%s) RETURNING id", (source_id,)
    ).fetchone()
    assert row is not None
    return int(row["id"] if isinstance(row, dict) else row[0])


def group_parts(known: dict[str, KnownDocument]) -> dict[str, dict[str, KnownDocument]]:
    """The documents of multipart files (mbox messages), by the file's URI."""
    groups: dict[str, dict[str, KnownDocument]] = {}
    for uri, document in known.items():
        file_uri, hash_, _key = uri.partition("#")
        if hash_ and file_uri.startswith("file:"):
            groups.setdefault(file_uri, {})[uri] = document
    return groups


_RUN_COUNTS = (
    "completed seen indexed stat_skipped unchanged rejected failed placeholders deleted "
    "chunks_kept chunks_new chunks_deleted budget_files budget_bytes"
).split()


def record_seen(conn: psycopg.Connection[Any], run_id: int, seen: list[str]) -> None:
    """Every URI the walk yielded, once each. The caller owns the transaction."""
    with conn.cursor() as cur:
        with cur.copy("COPY ingest_seen (run_id, uri) FROM STDIN") as copy:
            for uri in dict.fromkeys(seen):
                copy.write_row((run_id, uri))


def unseen_documents(
    conn: psycopg.Connection[Any], source_id: int, run_id: int
) -> tuple[dict[str, int], int]:
    """The source's documents that run ``run_id`` did not see (uri -> id), and how many
    documents the source has: what a deletion decision is made from."""
    rows = conn.execute(
        "SELECT d.uri, d.id FROM documents d WHERE d.source_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM ingest_seen s WHERE s.run_id = %s AND s.uri = d.uri)",
        (source_id, run_id),
    ).fetchall()
    total = conn.execute(
        "SELECT count(*) FROM documents WHERE source_id = %s", (source_id,)
    ).fetchone()
    assert total is not None
    unseen = {}
    for row in rows:
        uri, doc_id = list(row.values()) if isinstance(row, dict) else list(row)
        unseen[uri] = doc_id
    count = total["count"] if isinstance(total, dict) else total[0]
    return unseen, int(count)


def forget_unseen_outcomes(conn: psycopg.Connection[Any], source_id: int, run_id: int) -> None:
    """Outcomes of files a completed walk no longer found are forgotten (a message of an
    mbox is kept while its file is there)."""
    conn.execute(
        "DELETE FROM ingest_outcomes o WHERE o.source_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM ingest_seen s WHERE s.run_id = %s"
        "  AND s.uri IN (o.uri, split_part(o.uri, '#', 1)))",
        (source_id, run_id),
    )


def prune_seen(conn: psycopg.Connection[Any], source_id: int, run_id: int) -> None:
    """Once a run completed, the URIs earlier runs of its source saw decide nothing more."""
    conn.execute(
        "DELETE FROM ingest_seen WHERE run_id IN"
        " (SELECT id FROM ingest_runs WHERE source_id = %s AND id < %s)",
        (source_id, run_id),
    )


def finish_run(
    conn: psycopg.Connection[Any], run_id: int, counts: dict[str, Any], stop_reason: str | None
) -> None:
    """Write the run's counts. The caller owns the transaction."""
    values = {key: counts[key] for key in _RUN_COUNTS}
    conn.execute(
        "UPDATE ingest_runs SET finished_at = now(), completed = %(completed)s,"
        " seen_count = %(seen)s, indexed_count = %(indexed)s,"
        " stat_skipped_count = %(stat_skipped)s, unchanged_count = %(unchanged)s,"
        " rejected_count = %(rejected)s, failed_count = %(failed)s,"
        " placeholder_count = %(placeholders)s, deleted_count = %(deleted)s,"
        " chunks_kept = %(chunks_kept)s, chunks_new = %(chunks_new)s,"
        " chunks_deleted = %(chunks_deleted)s, budget_files = %(budget_files)s,"
        " budget_bytes = %(budget_bytes)s, note = %(note)s, stop_reason = %(stop_reason)s"
        " WHERE id = %(run_id)s",
        {**values, "note": counts.get("note"), "stop_reason": stop_reason, "run_id": run_id},
    )
