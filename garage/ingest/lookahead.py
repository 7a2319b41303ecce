"""Work on the next files while PostgreSQL stores the last one.

A first ingest spends about half its time in Python (extracting, the quality gate, splitting)
and half waiting for PostgreSQL to write chunks and keep the keyword statistics. The two can
overlap: a single worker thread prepares the next files while this thread waits on the
database, which releases the interpreter while it waits. Only the pure part moves to the
worker; every decision and every write stays in the walking thread, in walk order, each
document in its own transaction, so the unit of failure and the deletion guard are unchanged.

``DEPTH`` files are prepared ahead at most (their bytes and text are held in memory meanwhile).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

DEPTH = 2

T = TypeVar("T")


class Lookahead(Generic[T]):
    """Items with work submitted to one worker thread, finished in the order they came."""

    def __init__(self, executor: ThreadPoolExecutor) -> None:
        self._executor = executor
        self._pending: deque[tuple[T, Future[Any]]] = deque()

    def submit(self, item: T, work: Callable[..., Any], *args: Any) -> None:
        self._pending.append((item, self._executor.submit(work, *args)))

    def ready(self, depth: int = DEPTH) -> Iterator[tuple[T, Future[Any]]]:
        """The oldest items while more than ``depth`` are in flight (``depth`` 0: all of them),
        one at a time, so that the caller can stop taking them between two."""
        while len(self._pending) > depth:
            yield self._pending.popleft()

    def discard(self) -> int:
        """Forget what is in flight (a stop or an error): nothing of it is stored."""
        dropped = len(self._pending)
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        return dropped


@contextmanager
def lookahead() -> Iterator[Lookahead[Any]]:
    # Not waiting for the worker on the way out: after an interruption the file it holds is
    # dropped anyway, and its thread ends when that one file is done.
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="garage-prepare")
    ahead: Lookahead[Any] = Lookahead(executor)
    try:
        yield ahead
    finally:
        ahead.discard()
        executor.shutdown(wait=False, cancel_futures=True)
