"""The process ``garage up`` runs: the Dagster webserver behind Garage's loopback guard, with
the Dagster daemon beside it, and Garage's own pages (``garage.pages``) at ``/garage/`` on the
same address behind the same guard.

``dagster dev`` would do the same three things (a code server, the webserver, the daemon), but
its webserver answers any ``Host``, so a web page could reach it through DNS rebinding and read
run logs or launch and wipe runs (see ``garage.webguard``). Here the webserver's own ASGI app
is wrapped in the guard and served in this process by uvicorn; the code server and the daemon
are started as ``dagster dev`` starts them, sharing one code server over a Unix socket.

    python -m garage_assets.ui --host 127.0.0.1 --port 3000     (DAGSTER_HOME must be set)
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import click
import yaml

from garage.config import data_dir, load_config
from garage.loopback import NotLoopback, check_binding
from garage.owner_login import OwnerSession, secrets_folder
from garage.pages.html import PREFIX as PAGES_PREFIX
from garage.webguard import LoopbackGuard, loopback_hosts

DEFINITIONS_MODULE = "garage_assets.definitions"
DAEMON_STOP_SECONDS = 30
log = logging.getLogger("garage.ui")


@contextlib.contextmanager
def code_server_workspace(instance: Any) -> Iterator[Path]:
    """One code server for the definitions, on a Unix socket, and a workspace file naming it,
    as ``dagster dev`` makes them (its ProxyServerManager: internal to Dagster, and pinned with
    it in pyproject.toml), so the webserver and the daemon load the code once between them."""
    from dagster._cli.proxy_server_manager import ProxyServerManager
    from dagster._core.workspace.load_target import ModuleTarget

    target = ModuleTarget(DEFINITIONS_MODULE, None, None, None)
    with ProxyServerManager(instance=instance, workspace_load_target=target) as servers:
        with tempfile.TemporaryDirectory(prefix="garage-ui-") as folder:
            workspace = Path(folder) / "workspace.yaml"
            workspace.write_text(yaml.safe_dump({"load_from": servers.get_code_server_specs()}))
            yield workspace


@contextlib.contextmanager
def daemon_beside(workspace: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The Dagster daemon (sensors, schedules, the run queue), stopped when the UI stops: told
    over a pipe, as ``dagster dev`` tells it, then killed if it lingers."""
    from dagster_shared.ipc import (
        get_ipc_shutdown_pipe,
        open_ipc_subprocess,
        send_ipc_shutdown_message,
    )

    read_fd, write_fd = get_ipc_shutdown_pipe()
    command = [sys.executable, "-m", "dagster._daemon", "run", "--workspace", str(workspace)]
    daemon = open_ipc_subprocess([*command, "--shutdown-pipe", str(read_fd)], pass_fds=[read_fd])
    try:
        yield daemon
    finally:
        send_ipc_shutdown_message(write_fd)
        try:
            daemon.wait(timeout=DAEMON_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


class DaemonWatch:
    """A UI whose daemon died would look fine while no sensor or queued run ever moves: when
    the daemon exits on its own, the webserver is told to stop too (as Ctrl-C would), and the
    process then exits with an error."""

    def __init__(self, daemon: subprocess.Popen[bytes], server: Any):
        self.daemon = daemon
        self.server = server
        self.stopping = threading.Event()  # set when the UI itself is stopping the daemon
        self.died = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        code = self.daemon.wait()
        if not self.stopping.is_set():
            log.error("the Dagster daemon exited (status %s); stopping the UI", code)
            self.died.set()
            self.server.should_exit = True


@contextlib.asynccontextmanager
async def _lifespan(app: Any) -> AsyncIterator[None]:
    # As dagster-webserver's own: a cancelled lifespan is how uvicorn stops on Ctrl-C.
    with contextlib.suppress(Exception):
        yield


class WithPages:
    """Garage's own pages (``garage.pages``) at ``/garage/``, the Dagster UI everywhere else:
    one origin, so both sit behind the one guard and a page links into Dagster as a path."""

    def __init__(self, dagster: Any, pages: Any):
        self.dagster = dagster
        self.pages = pages

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (
            path == PAGES_PREFIX or path.startswith(PAGES_PREFIX + "/")
        ):
            await self.pages(scope, receive, send)
        else:
            await self.dagster(scope, receive, send)


def guarded_app(
    workspace_context: Any, host: str, port: int, secrets: Path, *, pages: Any | None = None
) -> LoopbackGuard:
    """dagster-webserver's ASGI app (as ``dagster-webserver`` builds it), with ``pages``
    beside it when given, behind the owner's session (garage.owner_login, its files in
    ``secrets``) inside the guard: the guard's Host and Origin checks come first."""
    from dagster_webserver.app import create_app_from_workspace_process_context

    app: Any = create_app_from_workspace_process_context(workspace_context, "", lifespan=_lifespan)
    if pages is not None:
        app = WithPages(app, pages)
    return LoopbackGuard(OwnerSession(app, secrets), loopback_hosts(host, port))


def pages_app() -> Any:
    """The pages over the config in ``GARAGE_CONFIG`` (its database resolved on first use)."""
    from garage.config import load_config
    from garage.pages import create_app

    return create_app(load_config())


def serve(host: str, port: int, *, with_pages: bool = True) -> None:
    """Run the code server, the daemon and the guarded webserver until SIGTERM or Ctrl-C."""
    import dagster as dg
    import uvicorn
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget
    from dagster_webserver.version import __version__

    # The Dagster UI has no login of its own: loopback only, and the owner's session.
    check_binding(host)
    # Everything this process creates (the code server's socket, temporary files) is for this
    # account alone.
    os.umask(0o077)
    with contextlib.ExitStack() as stack:
        instance = stack.enter_context(dg.DagsterInstance.get())
        workspace = stack.enter_context(code_server_workspace(instance))
        daemon = stack.enter_context(daemon_beside(workspace))
        context = stack.enter_context(
            WorkspaceProcessContext(
                instance,
                workspace_load_target=WorkspaceFileTarget(paths=[str(workspace)]),
                version=__version__,
            )
        )
        secrets = secrets_folder(data_dir(load_config()))
        app = guarded_app(context, host, port, secrets, pages=pages_app() if with_pages else None)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        watch = DaemonWatch(daemon, server)
        stack.callback(watch.stopping.set)  # runs first on the way out, before the daemon is told
        log.info("Dagster UI on http://%s:%s", host, port)
        if with_pages:
            log.info("Garage's pages on http://%s:%s%s/", host, port, PAGES_PREFIX)
        server.run()
    if watch.died.is_set():
        raise SystemExit(1)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="A loopback address.")
@click.option("--port", default=3000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--pages/--no-pages", default=True, show_default=True, help="Garage's pages too.")
def main(host: str, port: int, pages: bool) -> None:
    """Serve the Dagster UI (guarded) and run the daemon, with DAGSTER_HOME's instance."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        serve(host, port, with_pages=pages)
    except NotLoopback as error:
        raise click.ClickException(str(error)) from None


if __name__ == "__main__":
    main()
