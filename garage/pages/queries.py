"""The few reads the pages need that no CLI command or MCP tool makes: a source's last run and
the files it could not index, distilled facts with their members. Plain SQL over the tables, on
the pages' read-only connection. (Embedding per source and model is ``garage.status``'s, what
`garage status` shows.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

MAX_OUTCOMES = 100  # files listed per source; the count says how many more there are


@dataclass(frozen=True)
class LastRun:
    started_at: datetime
    finished_at: datetime | None
    completed: bool
    stop_reason: str | None
    note: str | None
    counts: dict[str, int]


@dataclass(frozen=True)
class Outcome:
    uri: str
    outcome: str  # rejected | failed
    reason: str
    recorded_at: datetime


@dataclass
class SourceHealth:
    last_run: LastRun | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    outcome_counts: dict[str, int] = field(default_factory=dict)


_COUNTS = (
    "seen", "indexed", "stat_skipped", "unchanged", "rejected", "failed", "placeholder",
    "deleted",
)  # fmt: skip


def source_health(conn: psycopg.Connection[Any], source: str) -> SourceHealth:
    health = SourceHealth()
    with conn.cursor(row_factory=dict_row) as cur:
        run = cur.execute(
            "SELECT r.* FROM ingest_runs r JOIN sources s ON s.id = r.source_id"
            " WHERE s.name = %s ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
            (source,),
        ).fetchone()
        if run is not None:
            counts = {name: int(run[f"{name}_count"]) for name in _COUNTS}
            counts |= {
                name: int(run[name]) for name in ("chunks_kept", "chunks_new", "chunks_deleted")
            }
            health.last_run = LastRun(
                run["started_at"],
                run["finished_at"],
                bool(run["completed"]),
                run.get("stop_reason"),
                run["note"],
                counts,
            )
        rows = cur.execute(
            "SELECT o.uri, o.outcome, o.reason, o.recorded_at FROM ingest_outcomes o"
            " JOIN sources s ON s.id = o.source_id WHERE s.name = %s"
            " ORDER BY o.outcome, o.recorded_at DESC, o.uri LIMIT %s",
            (source, MAX_OUTCOMES),
        ).fetchall()
        health.outcomes = [Outcome(**row) for row in rows]
        for row in cur.execute(
            "SELECT o.outcome, count(*) AS n FROM ingest_outcomes o"
            " JOIN sources s ON s.id = o.source_id WHERE s.name = %s GROUP BY o.outcome",
            (source,),
        ).fetchall():
            health.outcome_counts[row["outcome"]] = int(row["n"])
    return health


@dataclass(frozen=True)
class Member:
    fact_id: int
    document_id: int
    title: str | None
    uri: str
    text: str
    start_offset: int
    end_offset: int


@dataclass(frozen=True)
class Distilled:
    id: int
    fact_class: str
    statement: str | None
    representative: str | None  # the representative member's words
    status: str
    nodes: int
    members: list[Member]


def distilled_facts(
    conn: psycopg.Connection[Any],
    *,
    ids: list[int] | None = None,
    text: str | None = None,
    limit: int = 20,
    members: int = 12,
) -> list[Distilled]:
    """Distilled facts of more than one member (or those ``ids``), the largest first, each
    with up to ``members`` of its potential facts."""
    where = ["true"]
    params: dict[str, Any] = {"limit": limit, "members": members}
    if ids is not None:
        where.append("g.id = ANY(%(ids)s)")
        params["ids"] = ids
    else:
        where.append("g.nodes > 1")
    if text:
        where.append("(coalesce(g.statement, '') ILIKE %(like)s OR r.text ILIKE %(like)s)")
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params["like"] = f"%{escaped}%"
    with conn.cursor(row_factory=dict_row) as cur:
        groups = cur.execute(
            "SELECT g.id, g.fact_class, g.statement, g.status, g.nodes, r.text AS representative"
            " FROM distilled_facts g LEFT JOIN facts r ON r.id = g.representative_fact_id"
            f" WHERE {' AND '.join(where)} ORDER BY g.nodes DESC, g.id LIMIT %(limit)s",
            params,
        ).fetchall()
        if not groups:
            return []
        rows = cur.execute(
            "SELECT * FROM (SELECT f.distilled_fact_id, f.id AS fact_id, f.document_id,"
            " d.title, d.uri, f.text, f.start_offset, f.end_offset, row_number() OVER"
            " (PARTITION BY f.distilled_fact_id ORDER BY f.document_id, f.ord) AS n"
            " FROM facts f JOIN documents d ON d.id = f.document_id"
            " WHERE f.distilled_fact_id = ANY(%(ids)s)) m WHERE n <= %(members)s"
            " ORDER BY distilled_fact_id, n",
            {"ids": [g["id"] for g in groups], "members": members},
        ).fetchall()
    by_group: dict[int, list[Member]] = {}
    for row in rows:
        group = row.pop("distilled_fact_id")
        row.pop("n")
        by_group.setdefault(group, []).append(Member(**row))
    return [Distilled(**g, members=by_group.get(g["id"], [])) for g in groups]


def distilled_of(conn: psycopg.Connection[Any], fact_ids: list[int]) -> dict[int, int]:
    """Each of these potential facts' distilled fact, where it has one."""
    if not fact_ids:
        return {}
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            "SELECT id, distilled_fact_id FROM facts WHERE id = ANY(%s)"
            " AND distilled_fact_id IS NOT NULL",
            (fact_ids,),
        ).fetchall()
    return {row["id"]: row["distilled_fact_id"] for row in rows}


def chunk_span(conn: psycopg.Connection[Any], chunk_id: int) -> tuple[int, int, int] | None:
    """(document id, start, end) of a chunk."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "SELECT document_id, start_offset, end_offset FROM chunks WHERE id = %s", (chunk_id,)
        ).fetchone()
    return None if row is None else (row["document_id"], row["start_offset"], row["end_offset"])


def source_names(conn: psycopg.Connection[Any]) -> list[str]:
    """The sources' names, for a filter (list_sources counts every chunk: too dear per page)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return [row["name"] for row in cur.execute("SELECT name FROM sources ORDER BY name")]
