"""The ``authors`` rows a run credits, found or created once per (name, address)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


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
