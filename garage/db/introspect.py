"""What the server offers: its version and which extensions it has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

EXTENSIONS = ("vector", "age")


@dataclass(frozen=True)
class ServerInfo:
    version: str  # e.g. "17.12"
    version_num: int  # e.g. 170012
    available: dict[str, str | None]  # extension -> default version, None when absent
    installed: dict[str, str | None]  # extension -> installed version in this database


def available_extensions(conn: psycopg.Connection[Any]) -> dict[str, str]:
    rows = conn.cursor(row_factory=dict_row).execute(
        "SELECT name, default_version FROM pg_available_extensions WHERE name = ANY(%s)",
        (list(EXTENSIONS),),
    )
    return {row["name"]: row["default_version"] for row in rows}


def server_info(conn: psycopg.Connection[Any]) -> ServerInfo:
    cur = conn.cursor(row_factory=dict_row)
    version = cur.execute("SHOW server_version").fetchone()["server_version"]  # type: ignore[index]
    version_num = int(cur.execute("SHOW server_version_num").fetchone()["server_version_num"])  # type: ignore[index]
    available = available_extensions(conn)
    installed = {
        row["extname"]: row["extversion"]
        for row in cur.execute(
            "SELECT extname, extversion FROM pg_extension WHERE extname = ANY(%s)",
            (list(EXTENSIONS),),
        )
    }
    return ServerInfo(
        version=version.split()[0],
        version_num=version_num,
        available={name: available.get(name) for name in EXTENSIONS},
        installed={name: installed.get(name) for name in EXTENSIONS},
    )
