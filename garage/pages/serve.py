"""The pages served on their own, in a thread of this process, behind the loopback guard: what
the browser tests, ``bench/pages.py`` and ``scripts/screenshots`` run, without the Dagster
webserver and daemon that ``garage up`` starts beside them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from garage.config import GarageConfig
from garage.loopback import is_loopback_address
from garage.webguard import LoopbackGuard, loopback_hosts


@contextmanager
def serving(
    config: GarageConfig, database_url: str | None, *, host: str = "127.0.0.1", port: int
) -> Iterator[str]:
    """Serve the pages on ``host:port`` until the block ends; yields the pages' base URL."""
    import uvicorn

    from garage.pages import create_app

    if not is_loopback_address(host):
        raise ValueError(f"the pages are served on loopback only, not {host}")
    app: Any = LoopbackGuard(create_app(config, database_url), loopback_hosts(host, port))
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, name="garage-pages", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the pages did not start on {host}:{port}")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}/garage"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
