"""Stopping long work cleanly: a signal asks, the work stops at its next safe point.

``kill``, systemd and ``garage down`` send SIGTERM. Left to its default, SIGTERM ends the
process mid-statement; the database rolls the statement back, but the run never records that it
stopped. Instead the handler only raises a flag, and ingest (between documents) and the
embedding backfill (between batches) look at it, stop, and record an incomplete run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType


class StopSignal:
    """A request to stop at the next safe point; ``reason`` says who asked. ``event`` is set
    with it, for work that can be cut short in the middle (a model's reply in flight)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.event = threading.Event()

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.event.set()


@contextmanager
def stop_on_signal(signum: int, reason: str) -> Iterator[StopSignal]:
    """Turn ``signum`` into a stop request for the duration of the block.

    A second signal, while the first is still being honoured, takes the signal's previous
    course (for SIGTERM, the default: the process ends; whoever sends it twice means it).
    Outside the main thread (where Python cannot install handlers) nothing is installed.
    """
    stop = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signum)

    def handler(number: int, frame: FrameType | None) -> None:
        if stop.requested:
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        stop.request(reason)

    signal.signal(signum, handler)
    try:
        yield stop
    finally:
        signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


def stop_on_sigterm() -> AbstractContextManager[StopSignal]:
    """What ``kill``, systemd and ``garage down`` send, as a stop request."""
    return stop_on_signal(signal.SIGTERM, "terminated (SIGTERM)")
