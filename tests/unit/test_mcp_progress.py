"""Long MCP calls: progress relayed from the worker thread, and a cancelled call telling the
worker to stop (which stops the streamed generation and frees the model server)."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio

from garage.ask import Progress
from garage.mcp.progress import run_reporting


class FakeContext:
    """Stands in for the SDK's Context: records what report_progress is given."""

    def __init__(self) -> None:
        self.reports: list[tuple[float, float | None, str | None]] = []

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        self.reports.append((progress, total, message))


def test_progress_reaches_the_context_in_order() -> None:
    ctx = FakeContext()

    def work(progress: Progress, cancel: threading.Event) -> str:
        for step in range(3):
            progress(step, 3, f"step {step}")
        return "done"

    assert anyio.run(run_reporting, work, ctx) == "done"  # type: ignore[arg-type]
    assert ctx.reports == [(0, 3, "step 0"), (1, 3, "step 1"), (2, 3, "step 2")]


def test_a_cancelled_call_tells_the_worker_to_stop() -> None:
    seen: dict[str, Any] = {}
    started = threading.Event()

    def work(progress: Progress, cancel: threading.Event) -> str:
        started.set()
        seen["stopped"] = cancel.wait(10)  # a generation polls this between pieces
        return "late"

    async def main() -> None:
        with anyio.move_on_after(0.3):
            await run_reporting(work, None)
        seen["returned_at"] = time.monotonic()

    began = time.monotonic()
    anyio.run(main)
    assert started.is_set() and seen["returned_at"] - began < 2
    deadline = time.monotonic() + 5
    while "stopped" not in seen and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen["stopped"] is True
