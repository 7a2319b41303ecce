"""One writer per source: the guide's concurrency rule, enforced where every door meets.

"One process handles a source; parallelism comes from separate sources." Dagster's run tags
cover Dagster runs only, so the rule lives in PostgreSQL: ingest, embed and enrich-facts hold
the source's advisory lock for their whole run, from the CLI and from Dagster alike, and
``cluster-facts`` and ``graph rebuild`` hold one corpus-wide lock. A second writer of the same
source waits (saying who holds it) or, asked not to wait, stops at once with ``Busy``.

Each lock is held by a connection of its own, opened for the purpose: a session-level advisory
lock ends with its session, so a holder that dies (kill -9 included) frees it without anyone
cleaning up, and the work's own connection stays free to roll back, reconnect or commit as it
needs. Who holds a lock is written to ``writer_locks`` beside it, and trusted only while
``pg_locks`` shows that very backend holding that very key.

Locks are re-entrant within a process: ``cluster-facts`` rebuilds the graph under the corpus
lock it already holds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from garage.stopping import StopSignal

log = logging.getLogger(__name__)

CORPUS = "corpus-wide"  # the scope of cluster-facts and graph rebuild
# Who waits says so again after this long, so a log shows the wait is still going on.
REMIND_SECONDS = 60.0


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: the command, its process, its machine and since when."""

    scope: str
    command: str
    door: str | None  # where the run came from, when not a terminal: "Dagster run 1a2b3c4d"
    pid: int | None
    host: str | None
    since: str | None
    backend_pid: int

    def describe(self) -> str:
        if not self.command:
            who = "another session"
        elif self.door:
            who = f"`{self.command}` in {self.door}"
        else:
            who = f"`garage {self.command}`"
        where = f"pid {self.pid}" if self.pid else f"database backend {self.backend_pid}"
        if self.host and self.host != socket.gethostname():
            where += f" on {self.host}"
        since = f", since {self.since}" if self.since else ""
        return f"{who} ({where}{since})"


class Busy(Exception):
    """Another process is writing this scope and the caller asked not to wait (or asked to
    stop while it waited: ``stopped`` says why)."""

    def __init__(self, scope: str, holder: Holder | None, *, stopped: str | None = None):
        self.scope = scope
        self.holder = holder
        self.stopped = stopped
        by = holder.describe() if holder else "another process"
        what = "the corpus-wide lock" if scope == CORPUS else f"source {scope!r}"
        if stopped:
            message = f"{stopped} while waiting for {what}, which {by} is writing"
        else:
            message = (
                f"{what} is being written by {by}; wait for it to finish or run again "
                "without --no-wait"
            )
        super().__init__(message)


@dataclass
class Waiting:
    """How a writer behaves when its scope is taken: wait (telling ``notify`` who holds it) or
    raise ``Busy`` at once. A ``stop`` request ends a wait the way it ends the work."""

    wait: bool = True
    notify: Callable[[str], None] = field(default=log.warning)
    door: str | None = None  # said to whoever waits behind this writer ("Dagster run …")
    stop: StopSignal | None = None
    poll_seconds: float = 0.5


def lock_key(scope: str) -> int:
    """A 64-bit advisory-lock key per scope (per source name, or ``CORPUS``); per database."""
    digest = hashlib.sha256(b"garage writer\0" + scope.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# Locks this thread already holds, by database and scope, with their depth: re-entry costs
# nothing. Per thread, not per process: two threads are two writers.
_local = threading.local()


def _held() -> dict[tuple[str, str], int]:
    held: dict[tuple[str, str], int] | None = getattr(_local, "held", None)
    if held is None:
        held = _local.held = {}
    return held


def _database_of(conn: psycopg.Connection[Any]) -> str:
    info = conn.info
    return f"{info.host}:{info.port}/{info.dbname}"


@contextmanager
def writing(
    conn: psycopg.Connection[Any],
    scopes: str | Iterable[str],
    command: str,
    waiting: Waiting | None = None,
) -> Iterator[None]:
    """Hold the writer lock of each scope for the block (taken in one fixed order, so two
    writers of several scopes cannot deadlock). ``conn`` names the database; the locks live on
    connections of their own."""
    names = [scopes] if isinstance(scopes, str) else list(dict.fromkeys(scopes))
    names.sort(key=lock_key)
    waiting = waiting or Waiting()
    with ExitStack() as stack:
        for scope in names:
            stack.enter_context(_hold(conn, scope, command, waiting))
        yield


@contextmanager
def _hold(
    conn: psycopg.Connection[Any], scope: str, command: str, waiting: Waiting
) -> Iterator[None]:
    held = (_database_of(conn), scope)
    if held in _held():
        _held()[held] += 1
        try:
            yield
        finally:
            _held()[held] -= 1
        return
    info = conn.info
    lock_conn = psycopg.connect(
        info.dsn,
        password=info.password or None,
        autocommit=True,
        application_name=f"garage {command}"[:63],
    )
    try:
        _acquire(lock_conn, scope, command, waiting)
        _held()[held] = 1
        try:
            yield
        finally:
            _held().pop(held, None)
    finally:
        # Closing the session releases the lock, whatever state the work left things in.
        lock_conn.close()


def _acquire(
    lock_conn: psycopg.Connection[Any], scope: str, command: str, waiting: Waiting
) -> None:
    key = lock_key(scope)
    told_at: float | None = None
    told: Holder | None = None
    while True:
        row = lock_conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if row is not None and row[0]:
            break
        holder = holder_of(lock_conn, scope)
        if not waiting.wait:
            raise Busy(scope, holder)
        if waiting.stop is not None and waiting.stop.requested:
            raise Busy(scope, holder, stopped=waiting.stop.reason or "stopped")
        now = time.monotonic()
        if told_at is None or holder != told or now - told_at >= REMIND_SECONDS:
            what = "the corpus-wide lock" if scope == CORPUS else f"source {scope!r}"
            by = holder.describe() if holder else "another process"
            waiting.notify(f"waiting for {what}: it is being written by {by}")
            told_at, told = now, holder
        time.sleep(waiting.poll_seconds)
    lock_conn.execute(
        "INSERT INTO writer_locks (lock_key, scope, command, door, pid, host, backend_pid, since)"
        " VALUES (%s, %s, %s, %s, %s, %s, pg_backend_pid(), now())"
        " ON CONFLICT (lock_key) DO UPDATE SET scope = EXCLUDED.scope,"
        " command = EXCLUDED.command, door = EXCLUDED.door, pid = EXCLUDED.pid,"
        " host = EXCLUDED.host, backend_pid = EXCLUDED.backend_pid, since = EXCLUDED.since",
        (key, scope, command, waiting.door, os.getpid(), socket.gethostname()),
    )


def holder_of(conn: psycopg.Connection[Any], scope: str) -> Holder | None:
    """Who holds ``scope``'s lock now, or None when nobody does."""
    key = lock_key(scope)
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    # A bigint advisory key shows in pg_locks as classid (high half) and objid (low half).
    row = conn.execute(
        "SELECT l.pid, w.command, w.door, w.pid AS client_pid, w.host,"
        " to_char(w.since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC' AS since"
        " FROM pg_locks l LEFT JOIN writer_locks w"
        "   ON w.lock_key = %s AND w.backend_pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.database ="
        "   (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid AND l.objsubid = 1",
        (key, unsigned >> 32, unsigned & 0xFFFFFFFF),
    ).fetchone()
    if row is None:
        return None
    values = list(row.values()) if isinstance(row, dict) else list(row)
    backend_pid, command, door, client_pid, host, since = values
    return Holder(scope, command or "", door, client_pid, host, since, int(backend_pid))


def source_names(conn: psycopg.Connection[Any]) -> list[str]:
    """Every source the database knows: what a writer of "all sources" locks."""
    rows = conn.execute("SELECT name FROM sources ORDER BY name").fetchall()
    return [str(r["name"] if isinstance(r, dict) else r[0]) for r in rows]
