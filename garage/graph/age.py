"""Where the graph lives: whether the server has Apache AGE, and a session that can use it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from garage.db.introspect import available_extensions

ABSENT = (
    "this PostgreSQL server has no Apache AGE extension, so there is no graph (the embedded "
    "default has none); everything else works. Point database.url at a server with AGE "
    "(scripts/pg-age runs one) to get `garage graph`"
)


class GraphUnavailable(Exception):
    """The server has no AGE, or the graph was never built; the message says what to do."""


def has_age(conn: psycopg.Connection[Any]) -> bool:
    return "age" in available_extensions(conn)


@contextmanager
def age_session(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """A transaction in which AGE's types and operators resolve (graphid's ``=`` lives in
    ag_catalog); the search path goes back when it ends."""
    if not has_age(conn):
        raise GraphUnavailable(ABSENT)
    if _missing(conn):
        conn.execute("CREATE EXTENSION IF NOT EXISTS age")
    conn.execute("LOAD 'age'")
    with conn.transaction():
        conn.execute("SELECT set_config('search_path', 'ag_catalog, public', true)")
        yield conn


def _missing(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'age'").fetchone()
    return row is None
