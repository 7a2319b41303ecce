"""Reading the graph back: its labels with counts, a search for a starting vertex, and a
vertex's neighbourhood a few hops out.

The reads go over AGE's label tables with bound parameters, never through ``cypher()`` with
text pasted in, so what a person types is only ever a value. Labels come from AGE's catalog,
so a label added later (a configured one, a new kind of edge) shows with no change here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

from garage.db.graph import GRAPH_NAME
from garage.graph.age import GraphUnavailable, age_session

MAX_FIND = 200
MAX_HOPS = 4
MAX_VERTICES = 500  # a neighbourhood larger than this is cut (and says so): nobody reads more


@dataclass(frozen=True)
class LabelCount:
    label: str
    kind: str  # 'vertex' | 'edge'
    count: int


@dataclass(frozen=True)
class Vertex:
    vid: str  # AGE's graphid, as text (it exceeds a JSON number's safe range)
    label: str
    id: int | None  # the relational id
    title: str | None
    properties: dict[str, Any]
    ring: int = 0  # hops from the start of a neighbourhood


@dataclass(frozen=True)
class Edge:
    eid: str
    label: str
    start: str
    end: str


@dataclass
class Neighbourhood:
    start: Vertex
    hops: int
    vertices: list[Vertex] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    truncated: bool = False


@dataclass(frozen=True)
class _Label:
    name: str
    kind: str
    id: int


def _labels(conn: psycopg.Connection[Any]) -> list[_Label]:
    with conn.cursor(row_factory=tuple_row) as cur:
        rows = cur.execute(
            "SELECT l.name, l.kind, l.id FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g"
            " ON g.graphid = l.graph WHERE g.name = %s AND l.name NOT LIKE '\\_ag\\_%%'"
            " ORDER BY l.kind DESC, l.name",
            (GRAPH_NAME,),
        ).fetchall()
    if not rows:
        raise GraphUnavailable(
            f"the graph {GRAPH_NAME!r} has not been built yet: run `garage graph rebuild`"
        )
    return [_Label(name, "vertex" if kind == "v" else "edge", int(lid)) for name, kind, lid in rows]


def _table(label: str) -> sql.Composable:
    return sql.Identifier(GRAPH_NAME, label)


def graph_labels(conn: psycopg.Connection[Any]) -> list[LabelCount]:
    with age_session(conn):
        counts = []
        for label in _labels(conn):
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(_table(label.name)))
            counts.append(LabelCount(label.name, label.kind, int(_one(row.fetchone()))))
        return counts


def _one(row: Any) -> Any:
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _vertex(label: str, vid: str, properties: str, ring: int = 0) -> Vertex:
    values = json.loads(properties)
    relational = values.get("id")
    title = values.get("title")
    return Vertex(
        vid,
        label,
        relational if isinstance(relational, int) else None,
        title if isinstance(title, str) else None,
        values,
        ring,
    )


def find_vertices(
    conn: psycopg.Connection[Any],
    text: str,
    *,
    labels: tuple[str, ...] = (),
    limit: int = 20,
) -> list[Vertex]:
    """Vertices whose title or name contains ``text`` (case-insensitive): documents' titles,
    authors' names, potential facts' words, distilled facts' statements, a configured label's
    title. ``labels`` narrows the search to those labels."""
    if not text.strip():
        raise ValueError("text: give some words to look for")
    limit = max(1, min(limit, MAX_FIND))
    pattern = _like(text.strip())
    found: list[Vertex] = []
    with age_session(conn):
        catalog = [label for label in _labels(conn) if label.kind == "vertex"]
        unknown = set(labels) - {label.name for label in catalog}
        if unknown:
            known = ", ".join(label.name for label in catalog)
            raise ValueError(f"labels: no vertex label {sorted(unknown)} (labels: {known})")
        for label in catalog:
            if labels and label.name not in labels:
                continue
            statement = sql.SQL(
                "SELECT id::text, agtype_out(properties)::text FROM {}"
                " WHERE agtype_access_operator(properties, '\"title\"'::agtype)::text"
                " ILIKE %s OR agtype_access_operator(properties, '\"name\"'::agtype)::text"
                " ILIKE %s ORDER BY id LIMIT %s"
            ).format(_table(label.name))
            with conn.cursor(row_factory=tuple_row) as cur:
                for vid, properties in cur.execute(statement, (pattern, pattern, limit)):
                    found.append(_vertex(label.name, vid, properties))
    # Shorter titles first: the closer the title is to what was typed, the likelier it is meant.
    found.sort(key=lambda v: (len(v.title or ""), v.label, v.vid))
    return found[:limit]


_REFERENCE = re.compile(r"^(?P<label>[A-Za-z][A-Za-z0-9_]{0,62}):(?P<id>[0-9]{1,19})$")


def _start(conn: psycopg.Connection[Any], reference: str, catalog: list[_Label]) -> Vertex:
    """``Label:id`` (the relational id) or a graphid."""
    reference = reference.strip()
    vertex_labels = {label.name: label for label in catalog if label.kind == "vertex"}
    match = _REFERENCE.match(reference)
    if match:
        label = vertex_labels.get(match.group("label"))
        if label is None:
            known = ", ".join(vertex_labels)
            raise ValueError(f"vertex: no vertex label {match.group('label')!r} (labels: {known})")
        condition = sql.SQL("agtype_access_operator(properties, '\"id\"'::agtype) = %s::agtype")
        value: Any = match.group("id")
        candidates = [label]
    elif reference.isdigit() and len(reference) <= 19:
        by_id = {label.id: label for label in vertex_labels.values()}
        owner = by_id.get(int(reference) >> 48)  # a graphid's top 16 bits are its label
        if owner is None:
            raise ValueError(f"vertex: no vertex with id {reference}")
        condition = sql.SQL("id = %s::text::graphid")
        value = reference
        candidates = [owner]
    else:
        raise ValueError(
            f"vertex: {reference[:80]!r} is neither Label:id (e.g. Document:12) nor a vertex id"
        )
    for label in candidates:
        statement = (
            sql.SQL("SELECT id::text, agtype_out(properties)::text FROM {} WHERE ").format(
                _table(label.name)
            )
            + condition
            + sql.SQL(" LIMIT 1")
        )
        with conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute(statement, (value,)).fetchone()
        if row is not None:
            return _vertex(label.name, row[0], row[1])
    raise ValueError(f"vertex: no vertex {reference}")


def neighbourhood(
    conn: psycopg.Connection[Any],
    reference: str,
    *,
    hops: int = 1,
    max_vertices: int = MAX_VERTICES,
) -> Neighbourhood:
    """The vertex ``reference`` names and everything within ``hops`` edges of it, each vertex
    with the ring (hop) it was first reached in."""
    if not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops: between 1 and {MAX_HOPS}")
    with age_session(conn):
        catalog = _labels(conn)
        start = _start(conn, reference, catalog)
        result = Neighbourhood(start, hops, [start])
        seen = {start.vid: start}
        edge_ids: set[str] = set()
        vertex_labels = {label.id: label.name for label in catalog if label.kind == "vertex"}
        frontier = [start.vid]
        for ring in range(1, hops + 1):
            reached: list[str] = []
            for label in (label for label in catalog if label.kind == "edge"):
                statement = sql.SQL(
                    "SELECT id::text, start_id::text, end_id::text FROM {}"
                    " WHERE start_id = ANY(%s::text[]::graphid[])"
                    " OR end_id = ANY(%s::text[]::graphid[]) ORDER BY id"
                ).format(_table(label.name))
                with conn.cursor(row_factory=tuple_row) as cur:
                    for eid, s, e in cur.execute(statement, (frontier, frontier)):
                        if eid in edge_ids:
                            continue
                        for other in (s, e):
                            if other not in seen and other not in reached:
                                reached.append(other)
                        edge_ids.add(eid)
                        result.edges.append(Edge(eid, label.name, s, e))
            if len(seen) + len(reached) > max_vertices:
                reached = reached[: max(0, max_vertices - len(seen))]
                result.truncated = True
            for vertex in _fetch(conn, reached, vertex_labels, ring):
                seen[vertex.vid] = vertex
                result.vertices.append(vertex)
            frontier = [v for v in reached if v in seen]
            if not frontier or result.truncated:
                break
        # Only edges whose two ends are shown.
        result.edges = [e for e in result.edges if e.start in seen and e.end in seen]
        return result


def _fetch(
    conn: psycopg.Connection[Any], vids: list[str], labels: dict[int, str], ring: int
) -> list[Vertex]:
    by_label: dict[str, list[str]] = {}
    for vid in vids:
        label = labels.get(int(vid) >> 48)
        if label is not None:
            by_label.setdefault(label, []).append(vid)
    vertices = []
    for label, members in by_label.items():
        statement = sql.SQL(
            "SELECT id::text, agtype_out(properties)::text FROM {}"
            " WHERE id = ANY(%s::text[]::graphid[]) ORDER BY id"
        ).format(_table(label))
        with conn.cursor(row_factory=tuple_row) as cur:
            for vid, properties in cur.execute(statement, (members,)):
                vertices.append(_vertex(label, vid, properties, ring))
    return vertices
