"""What every page reads through: the config and a small pool of read-only, time-limited
connections, and the errors a page shows rather than fails on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg.errors import QueryCanceled

from garage.config import GarageConfig
from garage.db import DatabaseError
from garage.inference import InferenceError

# What a person can correct, shown on the page rather than as a server error.
EXPECTED = (ValueError, DatabaseError, InferenceError, QueryCanceled, LookupError)


def shown_error(error: BaseException) -> str:
    """The error as the page shows it: what a person can change to get past it."""
    if isinstance(error, QueryCanceled):
        return "the query took too long and was stopped; narrow it (fewer words, a filter)"
    return str(error)


IDLE_CONNECTIONS = 4  # kept open between requests: opening one costs more than a search


class Pages:
    """What every page reads through: the config, and read-only, time-limited connections
    (set up as the MCP tools' are, ``garage.db.runtime``) kept open between requests, since
    opening one (TCP, SCRAM) costs as much as the search a page shows. A connection that
    failed, or is not idle when its request ends, is closed rather than kept."""

    def __init__(self, config: GarageConfig, database_url: str | None = None):
        self.config = config
        self.database_url = database_url  # None: resolved from the config on first use
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._client: Any = None

    @property
    def url(self) -> str:
        if self.database_url is None:
            from garage.db import resolve_url

            self.database_url = resolve_url(self.config)
        return self.database_url

    def _open(self) -> Any:
        from garage.db import connect
        from garage.db.runtime import STATEMENT_TIMEOUT_MS

        conn = connect(self.url, autocommit=True)
        conn.execute("SET default_transaction_read_only = on")
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false)", (str(STATEMENT_TIMEOUT_MS),)
        )
        return conn

    @contextmanager
    def reader(self) -> Iterator[Any]:
        """A read-only connection with a statement timeout, for one request."""
        from psycopg.pq import TransactionStatus

        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed or conn.broken:
            conn = self._open()
        kept = False
        try:
            yield conn
            if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
                with self._lock:
                    if len(self._idle) < IDLE_CONNECTIONS:
                        self._idle.append(conn)
                        kept = True
        finally:
            if not kept:
                conn.close()

    @property
    def client(self) -> Any:
        """One inference client for every search's query embedding (its HTTP connections to
        the model server kept alive), set up as ``garage.search`` sets up its own."""
        with self._lock:
            if self._client is None:
                from garage.inference import EgressGuard, InferenceClient

                self._client = InferenceClient(
                    EgressGuard.from_config(self.config),
                    timeout=self.config.search.embed_timeout_seconds,
                    retries=1,
                    backoff=0.2,
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            client, self._client = self._client, None
        for conn in idle:
            conn.close()
        if client is not None:
            client.close()
