"""Long generative calls over MCP: progress a client can show, and cancellation that reaches
the model server.

The work (search, then a generation of 20-40 s on a small machine) runs on a worker thread.
Progress goes back as the SDK's progress notifications, which it sends only when the client
asked for them with a progress token. When the client cancels the call (or its connection
goes), the awaiting task is cancelled: the worker is told through a threading.Event, which
stops the streamed generation and shuts its connection, so the model server stops as well
instead of finishing an answer nobody will read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context

from garage.ask import Progress

log = logging.getLogger(__name__)

T = TypeVar("T")


async def run_reporting(work: Callable[[Progress, threading.Event], T], ctx: Context | None) -> T:
    """Run ``work(progress, cancel)`` on a worker thread, relaying its progress to ``ctx``."""
    cancel = threading.Event()

    def progress(value: float, total: float | None, message: str) -> None:
        if ctx is None or cancel.is_set():
            return
        try:
            anyio.from_thread.run(ctx.report_progress, value, total, message)
        except Exception as error:  # noqa: BLE001 - progress is best effort, the answer is not
            log.debug("progress notification not sent: %s", error)

    try:
        # abandon_on_cancel: a cancelled call returns at once; the worker sees `cancel` within
        # a fraction of a second and stops the generation.
        return await anyio.to_thread.run_sync(work, progress, cancel, abandon_on_cancel=True)
    finally:
        cancel.set()
