"""Which PostgreSQL Garage talks to, and connections to it.

An explicit URL (``GARAGE_DATABASE_URL`` or ``database.url``) names any external server; with
none, Garage starts or reuses its embedded cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from garage.config import GarageConfig, data_dir
from garage.db import embedded


class DatabaseError(Exception):
    """A database problem a person can act on."""


def resolve_url(config: GarageConfig, *, start: bool = True) -> str:
    if config.database.url:
        return config.database.url
    directory: Path = data_dir(config)
    if not start:
        current = embedded.status(directory)
        if not current.url:
            raise DatabaseError(
                f"the embedded PostgreSQL in {current.pgdata} is not running; `garage db start`"
            )
        return current.url
    try:
        return embedded.start(directory)
    except embedded.EmbeddedError as error:
        raise DatabaseError(str(error)) from error


Conn = psycopg.Connection[dict[str, Any]]


def connect(url: str, *, autocommit: bool = False) -> Conn:
    """Open a connection with dict rows; the error names the server, never a password."""
    try:
        conn: Conn = psycopg.connect(
            url, autocommit=autocommit, row_factory=dict_row, connect_timeout=10
        )
        return conn
    except psycopg.OperationalError as error:
        raise DatabaseError(f"cannot connect to PostgreSQL at {redact(url)}: {error}") from error
    except psycopg.ProgrammingError as error:
        # A URL libpq cannot parse: say which setting holds it, not a traceback.
        raise DatabaseError(
            f"database.url (or GARAGE_DATABASE_URL) is not a PostgreSQL URL libpq can read: "
            f"{redact(url)} ({str(error).strip()})"
        ) from error


def redact(url: str) -> str:
    """Hide a password in a URL before it reaches a log or an error."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def scalar(conn: psycopg.Connection[Any], query: Any, params: Any = None) -> Any:
    """The first column of the first row (None for no row), whatever the row factory."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        return None
    return next(iter(row.values())) if isinstance(row, dict) else row[0]
