"""Where the orchestrator keeps its state: ``DAGSTER_HOME`` and its ``dagster.yaml``.

By default the run, event-log and schedule storage live in the same PostgreSQL server as the
index, in a database of their own (``garage_dagster``) so that Dagster's tables never mix with
Garage's migrations. SQLite under ``DAGSTER_HOME`` is there for when it is asked for.

One writer for the file, used by ``garage dagster`` and by ``garage sources add`` alike, so the
two never disagree about where the partitions are. This module only writes YAML and talks to
PostgreSQL; it does not import Dagster.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import quote, urlencode

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

STORAGE_DATABASE = "garage_dagster"
INSTANCE_FILE = "dagster.yaml"
# Named so that a person who opens the file knows who rewrites it.
HEADER = "# Written by Garage (garage dagster); edits are replaced on the next start.\n"


def with_database(url: str, database: str, *, scheme: str = "postgresql") -> str:
    """The same server and credentials as ``url``, another database, as a URI (SQLAlchemy,
    which dagster-postgres uses, does not read libpq's ``key=value`` form). A Unix-socket host,
    like the embedded default's, goes in the query string."""
    params = {k: v for k, v in conninfo_to_dict(url).items() if v is not None}
    user = quote(str(params.pop("user", "postgres")), safe="")
    password = params.pop("password", "")
    host = str(params.pop("host", ""))
    port = params.pop("port", "")
    params.pop("dbname", None)
    auth = user + (":" + quote(str(password), safe="") if password else "") + "@"
    query: dict[str, str] = {}
    if host.startswith("/") or "," in host:
        query["host"] = host
        netloc = auth
    else:
        netloc = auth + (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    if port and "host" in query:
        query["port"] = str(port)
    query.update({key: str(value) for key, value in params.items()})
    return f"{scheme}://{netloc}/{quote(database, safe='')}" + (
        "?" + urlencode(query) if query else ""
    )


# dagster-postgres is written for psycopg2: under psycopg 3 (SQLAlchemy 2.1's default driver for
# a bare postgresql:// URL) its NOTIFY with a bound parameter is a syntax error and no run can
# be launched. The driver is therefore named in the URL.
STORAGE_SCHEME = "postgresql+psycopg2"


def ensure_database(server_url: str, database: str = STORAGE_DATABASE) -> str:
    """Create ``database`` on the server ``server_url`` names unless it exists; return the URL
    dagster-postgres should use for it."""
    with psycopg.connect(server_url, autocommit=True, connect_timeout=10) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            except psycopg.errors.DuplicateDatabase:
                pass  # another process created it between the check and here
    return with_database(server_url, database, scheme=STORAGE_SCHEME)


def instance_yaml(storage_url: str | None) -> str:
    """The instance config: Postgres storage at ``storage_url``, or SQLite when it is None."""
    lines = [HEADER, "telemetry:\n  enabled: false\n"]
    if storage_url:
        # A YAML double-quoted scalar: JSON escaping is a subset of it.
        import json

        lines.append(f"storage:\n  postgres:\n    postgres_url: {json.dumps(storage_url)}\n")
    # One run per source at a time (every partitioned run carries dagster/partition), and two
    # runs in all on a small machine: ingest of one source is already one busy process.
    lines.append(
        "run_queue:\n"
        "  max_concurrent_runs: 2\n"
        "  tag_concurrency_limits:\n"
        "    - key: dagster/partition\n"
        "      value:\n"
        "        applyLimitPerUniqueValue: true\n"
        "      limit: 1\n"
    )
    return "".join(lines)


def write_instance_config(home: Path, storage_url: str | None) -> Path:
    """Write ``home/dagster.yaml`` atomically (a half-written file would stop every run)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / INSTANCE_FILE
    text = instance_yaml(storage_url)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path
    fd, tmp = tempfile.mkstemp(prefix=".dagster-", suffix=".yaml", dir=home)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o600)  # it may hold a database password
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def storage_of(home: Path) -> str:
    """'postgres' or 'sqlite', as the instance file in ``home`` says (sqlite when none)."""
    path = home / INSTANCE_FILE
    if path.exists() and "postgres_url:" in path.read_text(encoding="utf-8"):
        return "postgres"
    return "sqlite"


def storage_problem(home: Path) -> str | None:
    """Why the instance in ``home`` cannot be opened now, or None. Checked with one quick
    connection: dagster-postgres itself retries for many seconds before giving up."""
    path = home / INSTANCE_FILE
    if not path.exists():
        return None
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        url = document["storage"]["postgres"]["postgres_url"]
    except (KeyError, TypeError):
        return None  # SQLite: nothing to reach
    except (OSError, yaml.YAMLError) as error:
        return f"{path} is unreadable: {error}"
    try:
        psycopg.connect(
            url.replace(f"{STORAGE_SCHEME}://", "postgresql://"), connect_timeout=3
        ).close()
    except psycopg.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"its PostgreSQL storage does not answer ({first})"
    return None
