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
from contextlib import contextmanager
from types import FrameType


class StopSignal:
    """A request to stop at the next safe point; ``reason`` says who asked."""

    def __init__(self) -> None:
        self.reason: str | None = None

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


class Stopped(Exception):
    """Raised by long work that stopped because it was asked to; carries the reason."""


@contextmanager
def stop_on_sigterm() -> Iterator[StopSignal]:
    """Turn SIGTERM into a stop request for the duration of the block.

    A second SIGTERM, while the first is still being honoured, ends the process the default way:
    whoever sends it twice means it. Outside the main thread (where Python cannot install
    handlers) the signal is simply never requested.
    """
    stop = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.requested:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
            return
        stop.request("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)
