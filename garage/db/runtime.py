"""What a reader of the index runs against: the config, the database, and how each call connects.

Shared by the MCP server and ``garage ask`` (and any other front door that only reads): every
call opens its own short connection, read-only and with a statement timeout, so no argument
(however hostile) can write to the corpus or hold the server in a query forever. The schema
is migrated once, when the runtime is built, before anything is served.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from garage.config import GarageConfig
from garage.db import connect, resolve_url
from garage.db.connect import Conn
from garage.db.migrate import ensure_migrated

# Long enough for a hybrid search over a large corpus, short enough that a pathological
# query cannot pin a connection (the search engines answer in milliseconds).
STATEMENT_TIMEOUT_MS = 30_000


@dataclass
class Runtime:
    config: GarageConfig
    url: str

    @classmethod
    def from_config(cls, config: GarageConfig, *, migrate: bool = True) -> Runtime:
        url = resolve_url(config)
        if migrate:
            ensure_migrated(url)
        return cls(config, url)

    @contextmanager
    def reader(self) -> Iterator[Conn]:
        """A read-only connection for one call."""
        with connect(self.url, autocommit=True) as conn:
            conn.execute("SET default_transaction_read_only = on")
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false)", (str(STATEMENT_TIMEOUT_MS),)
            )
            yield conn
