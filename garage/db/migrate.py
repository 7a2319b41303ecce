"""Forward-only schema migrations from the numbered SQL files in ``schema/``.

The files live at the top of the project, where people look for them, and reach the package
as ``garage/schema``, a link to that folder: a wheel copies them in as package data, so an
install that is not a checkout migrates too.

Each file runs in its own transaction under an advisory lock (two processes migrating at once
take turns), and is recorded with its checksum in ``schema_migrations``. A file that was applied
and then edited is refused: the database would no longer match what the file says it holds.
Never edit a migration once it has landed; add the next one.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from garage.db.connect import DatabaseError
from garage.db.graph import GRAPH_NAME, ensure_graph
from garage.db.introspect import available_extensions

MIGRATION_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
# A fixed key for pg_advisory_lock: "garage" in ASCII.
LOCK_KEY = 0x676172616765


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class MigrationReport:
    applied: list[str]
    already: list[str]
    graph: str  # "created", "present" or why it is absent


def schema_dir() -> Path:
    override = os.environ.get("GARAGE_SCHEMA_DIR")
    if override:
        return Path(override)
    # Package data, found where the package is: a wheel installed anywhere migrates, not only
    # a checkout or an editable install (the files are shipped unzipped, so this is a path).
    return Path(str(resources.files("garage") / "schema"))


def discover(directory: Path | None = None) -> list[Migration]:
    directory = schema_dir() if directory is None else directory
    if not directory.is_dir():
        raise DatabaseError(
            f"schema folder {directory} not found; is the garage package installed whole?"
        )
    migrations = []
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        match = MIGRATION_FILE.match(path.name)
        if not match:
            raise DatabaseError(f"{path}: migration files are named NNN_name.sql")
        migrations.append(
            Migration(int(match.group(1)), match.group(2), path, path.read_text("utf-8"))
        )
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise DatabaseError(f"{directory}: two migrations share a number")
    return migrations


BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


def migrate(conn: psycopg.Connection[Any], directory: Path | None = None) -> MigrationReport:
    """Apply every pending migration. ``conn`` must be in autocommit mode."""
    migrations = discover(directory)
    if "vector" not in available_extensions(conn):
        raise DatabaseError(
            "the server has no pgvector extension ('vector' is not in pg_available_extensions); "
            "install it (Debian: postgresql-NN-pgvector) or use the embedded default"
        )
    applied: list[str] = []
    already: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    try:
        conn.execute(BOOKKEEPING)
        recorded = {
            row["version"]: row
            for row in conn.cursor(row_factory=dict_row).execute(
                "SELECT version, name, checksum FROM schema_migrations"
            )
        }
        for migration in migrations:
            label = migration.path.name
            done = recorded.get(migration.version)
            if done is not None:
                if done["checksum"] != migration.checksum:
                    raise DatabaseError(
                        f"{migration.path}: changed after it was applied (checksum "
                        f"{done['checksum'][:12]} recorded, {migration.checksum[:12]} now); "
                        "migrations are forward-only, add a new file instead"
                    )
                already.append(label)
                continue
            with conn.transaction():
                try:
                    conn.execute(migration.sql.encode("utf-8"))
                except psycopg.Error as error:
                    raise DatabaseError(f"{migration.path}: {error}") from error
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (migration.version, migration.name, migration.checksum),
                )
            applied.append(label)
        graph = ensure_graph(conn)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    return MigrationReport(applied, already, graph)


__all__ = ["GRAPH_NAME", "Migration", "MigrationReport", "discover", "migrate", "schema_dir"]


def ensure_migrated(url: str) -> MigrationReport:
    """What every command that needs the database calls first: apply what is pending."""
    from garage.db.connect import connect

    with connect(url, autocommit=True) as conn:
        return migrate(conn)
