"""The projection: the tables re-drawn as the AGE graph ``garage``.

Vertices Document, Chunk, Author, PotentialFact and Fact; edges HAS_CHUNK, WROTE/RECEIVED,
STATES (Document → PotentialFact), RESTATES (restatement → representative) and SUPPORTS
(representative → Fact), plus what the prompts' ``graph`` blocks configure. Vertices carry
the relational ids and a short title to show; text, spans and vectors stay in the tables.

A rebuild drops the graph and draws it again in one transaction, so readers see the old graph
or the new one. Vertex ids are AGE graphids made from the label and the relational id, and
edge ids from the label and the edge's rank, so rebuilding twice gives the same graph.
Rows go straight into AGE's label tables: one INSERT … SELECT per label, not a Cypher CREATE
per vertex.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from garage.config import GarageConfig
from garage.config.fact_prompts import (
    BUILTIN_EDGE_LABELS,
    BUILTIN_VERTEX_LABELS,
    GraphEdge,
    GraphVertex,
    edge_label,
)
from garage.db.graph import GRAPH_NAME
from garage.graph.age import age_session
from garage.locks import CORPUS, Waiting, writing

TITLE_CHARS = 160  # a title to show, not the text


@dataclass
class GraphReport:
    vertices: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    unresolved_edges: int = 0  # configured edge facts whose source or target named nothing
    seconds: float = 0.0

    def summary(self) -> str:
        def counts(d: dict[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in d.items())

        return (
            f"graph {GRAPH_NAME} rebuilt in {self.seconds:.1f} s: vertices {counts(self.vertices)}"
            f"; edges {counts(self.edges)}; {self.unresolved_edges} configured edges unresolved"
        )


@dataclass(frozen=True)
class GraphSchema:
    vertices: tuple[GraphVertex, ...]
    edges: tuple[GraphEdge, ...]

    @classmethod
    def from_config(cls, config: GarageConfig) -> GraphSchema:
        vertices: dict[str, GraphVertex] = {}
        edges: dict[str, GraphEdge] = {}
        for entry in config.facts.prompts:
            if entry.graph is not None:
                for vertex in entry.graph.vertices:
                    vertices.setdefault(vertex.vertex_class, vertex)
                for edge in entry.graph.edges:
                    edges.setdefault(edge.edge_class, edge)
        return cls(tuple(vertices.values()), tuple(edges.values()))

    def vertex_label(self, fact_class: str) -> str:
        for vertex in self.vertices:
            if vertex.vertex_class == fact_class:
                return vertex.label
        return "Fact"

    def edge_labels(self) -> list[str]:
        labels: dict[str, None] = {}
        for edge in self.edges:
            labels.setdefault(edge.label)
            for value in edge.labels:
                labels.setdefault(edge_label(value))
        return list(labels)


def _table(label: str) -> sql.Composable:
    return sql.Identifier(GRAPH_NAME, label)


def _label_ids(conn: psycopg.Connection[Any]) -> dict[str, int]:
    rows = conn.execute(
        "SELECT l.name, l.id FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g"
        " ON g.graphid = l.graph WHERE g.name = %s",
        (GRAPH_NAME,),
    ).fetchall()
    return {_first(r): int(_second(r)) for r in rows}


def _first(row: Any) -> Any:
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


def _second(row: Any) -> Any:
    return list(row.values())[1] if isinstance(row, dict) else row[1]


def _props(pairs: str) -> sql.Composable:
    """A jsonb_build_object(...) of ``pairs`` as agtype (its text form is agtype's input)."""
    return sql.SQL("(jsonb_build_object({}))::text::agtype").format(sql.SQL(pairs))


def _vertices(
    conn: psycopg.Connection[Any],
    label: str,
    label_id: int,
    pairs: str,
    source: str,
    params: Any = (),
) -> int:
    statement = sql.SQL(
        "INSERT INTO {table} (id, properties) SELECT _graphid({lid}, x.id), {props} {source}"
    ).format(
        table=_table(label), lid=sql.Literal(label_id), props=_props(pairs), source=sql.SQL(source)
    )
    return conn.execute(statement, params).rowcount


def _edges(
    conn: psycopg.Connection[Any],
    label: str,
    ids: dict[str, int],
    start: str,
    end: str,
    source: str,
    params: Any = (),
) -> int:
    """Edges from ``source`` (rows with columns s and e, the relational ids of the ends)
    between vertices of labels ``start`` and ``end``; ids numbered in (s, e) order."""
    statement = sql.SQL(
        "INSERT INTO {table} (id, start_id, end_id, properties)"
        " SELECT _graphid({lid}, row_number() OVER (ORDER BY x.s, x.e)),"
        " _graphid({sid}, x.s), _graphid({eid}, x.e), '{{}}'::agtype"
        " FROM (SELECT DISTINCT s, e FROM ({source}) y) x"
    ).format(
        table=_table(label),
        lid=sql.Literal(ids[label]),
        sid=sql.Literal(ids[start]),
        eid=sql.Literal(ids[end]),
        source=sql.SQL(source),
    )
    return conn.execute(statement, params).rowcount


def rebuild_graph(
    conn: psycopg.Connection[Any], config: GarageConfig, waiting: Waiting | None = None
) -> GraphReport:
    """Re-project the tables into the graph; ``conn`` in autocommit mode. Under the
    corpus-wide writer lock: two rebuilds would drop each other's graph midway."""
    with writing(conn, CORPUS, "graph rebuild", waiting):
        return _rebuild_graph(conn, config)


def _rebuild_graph(conn: psycopg.Connection[Any], config: GarageConfig) -> GraphReport:
    started = time.monotonic()
    schema = GraphSchema.from_config(config)
    report = GraphReport()
    with age_session(conn):
        exists = conn.execute(
            "SELECT 1 FROM ag_catalog.ag_graph WHERE name = %s", (GRAPH_NAME,)
        ).fetchone()
        if exists:
            conn.execute("SELECT drop_graph(%s, true)", (GRAPH_NAME,))
        conn.execute("SELECT create_graph(%s)", (GRAPH_NAME,))
        vertex_labels = [*BUILTIN_VERTEX_LABELS, *[v.label for v in schema.vertices]]
        edge_labels = [*BUILTIN_EDGE_LABELS, *schema.edge_labels()]
        for label in vertex_labels:
            conn.execute("SELECT create_vlabel(%s, %s)", (GRAPH_NAME, label))
        for label in edge_labels:
            conn.execute("SELECT create_elabel(%s, %s)", (GRAPH_NAME, label))
        ids = _label_ids(conn)
        _project_tables(conn, schema, ids, report)
        report.unresolved_edges = _project_configured_edges(conn, config, schema, ids, report)
        for label in edge_labels:
            for end in ("start_id", "end_id"):
                conn.execute(
                    sql.SQL("CREATE INDEX ON {} ({})").format(_table(label), sql.Identifier(end))
                )
        for label in [*vertex_labels, *edge_labels]:
            conn.execute(sql.SQL("ANALYZE {}").format(_table(label)))
    report.seconds = time.monotonic() - started
    return report


def _project_tables(
    conn: psycopg.Connection[Any], schema: GraphSchema, ids: dict[str, int], report: GraphReport
) -> None:
    comm = "x.corpus_class = 'communication'"
    report.vertices["Document"] = _vertices(
        conn, "Document", ids["Document"],
        "'id', x.id, 'title', coalesce(x.title, regexp_replace(x.uri, '^.*/', '')),"
        f" 'corpus_class', x.corpus_class, 'communication', {comm}",
        "FROM documents x",
    )  # fmt: skip
    report.vertices["Chunk"] = _vertices(
        conn, "Chunk", ids["Chunk"],
        "'id', x.id, 'document_id', x.document_id, 'ord', x.ord,"
        " 'title', coalesce(x.heading, 'chunk ' || x.ord), 'communication', "
        "x.corpus_class = 'communication'",
        "FROM (SELECT c.*, d.corpus_class FROM chunks c JOIN documents d"
        " ON d.id = c.document_id WHERE c.fact_id IS NULL) x",
    )  # fmt: skip
    report.vertices["Author"] = _vertices(
        conn, "Author", ids["Author"],
        "'id', x.id, 'title', x.name, 'name', x.name, 'email', x.email, 'is_self', x.is_self",
        "FROM authors x",
    )  # fmt: skip
    report.vertices["PotentialFact"] = _vertices(
        conn, "PotentialFact", ids["PotentialFact"],
        "'id', x.id, 'document_id', x.document_id, 'class', x.fact_class,"
        f" 'title', left(x.text, {TITLE_CHARS}), 'communication', {comm}",
        "FROM (SELECT f.*, d.corpus_class FROM facts f JOIN documents d"
        " ON d.id = f.document_id) x",
    )  # fmt: skip
    # Distilled facts: a configured class under its own label, titled by its attribute.
    distilled = (
        "FROM (SELECT g.*, coalesce(g.statement, left({title}, {chars})) AS shown,"
        " EXISTS (SELECT 1 FROM facts m JOIN documents d ON d.id = m.document_id"
        "  WHERE m.distilled_fact_id = g.id AND d.corpus_class = 'communication') AS comm"
        " FROM distilled_facts g LEFT JOIN facts r ON r.id = g.representative_fact_id"
        " LEFT JOIN documents rd ON rd.id = r.document_id"
        " WHERE {where}) x"
    )
    pairs = (
        "'id', x.id, 'class', x.fact_class, 'status', x.status, 'nodes', x.nodes,"
        " 'anchor_key', x.anchor_key, 'title', x.shown, 'communication', x.comm"
    )
    configured = [v.vertex_class for v in schema.vertices]
    report.vertices["Fact"] = _vertices(
        conn, "Fact", ids["Fact"], pairs,
        distilled.format(title="r.text", chars=TITLE_CHARS,
                         where="NOT (g.fact_class = ANY(%s))"),
        (configured,),
    )  # fmt: skip
    for vertex in schema.vertices:
        # The title attribute is the model's word, not the document's: it is shown only when
        # the document says it (a 1.5B model names "python" in an address the "Python Software
        # Foundation" of its instructions' example); else the grounded text is the title.
        title = (
            "CASE WHEN strpos(lower(rd.content), lower(nullif(btrim(r.attributes ->> %s), '')))"
            " > 0 THEN r.attributes ->> %s ELSE r.text END"
            if vertex.title
            else "r.text"
        )
        params: list[Any] = [vertex.title, vertex.title] if vertex.title else []
        report.vertices[vertex.label] = _vertices(
            conn, vertex.label, ids[vertex.label], pairs,
            distilled.format(title=title, chars=TITLE_CHARS, where="g.fact_class = %s"),
            (*params, vertex.vertex_class),
        )  # fmt: skip

    report.edges["HAS_CHUNK"] = _edges(
        conn, "HAS_CHUNK", ids, "Document", "Chunk",
        "SELECT document_id AS s, id AS e FROM chunks WHERE fact_id IS NULL",
    )  # fmt: skip
    report.edges["WROTE"] = _edges(
        conn, "WROTE", ids, "Author", "Document",
        "SELECT author_id AS s, id AS e FROM documents WHERE author_id IS NOT NULL",
    )  # fmt: skip
    # Received: the owner, for what was sent to them; and each recipient or participant the
    # headers name who has an authors row.
    report.edges["RECEIVED"] = _edges(
        conn, "RECEIVED", ids, "Author", "Document",
        "SELECT a.id AS s, d.id AS e FROM documents d JOIN authors a ON a.is_self"
        " WHERE d.attribution = 'received'"
        " UNION SELECT a.id, f.document_id FROM facts f"
        " JOIN authors a ON f.key = 'author:' || a.id"
        " WHERE f.prompt_name = 'metadata' AND f.fact_class IN ('recipient', 'participant')",
    )  # fmt: skip
    report.edges["STATES"] = _edges(
        conn, "STATES", ids, "Document", "PotentialFact",
        "SELECT document_id AS s, id AS e FROM facts",
    )  # fmt: skip
    report.edges["RESTATES"] = _edges(
        conn, "RESTATES", ids, "PotentialFact", "PotentialFact",
        "SELECT id AS s, restates_fact_id AS e FROM facts WHERE restates_fact_id IS NOT NULL",
    )  # fmt: skip
    # SUPPORTS: a representative to its distilled fact, under whichever label that has.
    supports = 0
    targets: list[tuple[str, str, tuple[Any, ...]]] = [
        ("Fact", "NOT (g.fact_class = ANY(%s))", (configured,)),
        *[(v.label, "g.fact_class = %s", (v.vertex_class,)) for v in schema.vertices],
    ]
    for label, where, where_params in targets:
        supports += _edges_to(conn, ids, label, where, where_params)
    report.edges["SUPPORTS"] = supports


def _edges_to(
    conn: psycopg.Connection[Any], ids: dict[str, int], label: str, where: str, params: Any
) -> int:
    # Numbered after the SUPPORTS edges already drawn, so each label's rows keep unique ids.
    offset = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(_table("SUPPORTS"))).fetchone()
    statement = sql.SQL(
        "INSERT INTO {table} (id, start_id, end_id, properties)"
        " SELECT _graphid({lid}, {offset} + row_number() OVER (ORDER BY f.id)),"
        " _graphid({sid}, f.id), _graphid({eid}, g.id), '{{}}'::agtype"
        " FROM facts f JOIN distilled_facts g ON g.id = f.distilled_fact_id"
        " WHERE f.restates_fact_id IS NULL AND " + where
    ).format(
        table=_table("SUPPORTS"),
        lid=sql.Literal(ids["SUPPORTS"]),
        offset=sql.Literal(int(_first(offset))),
        sid=sql.Literal(ids["PotentialFact"]),
        eid=sql.Literal(ids[label]),
    )
    return conn.execute(statement, params).rowcount


def _project_configured_edges(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    schema: GraphSchema,
    ids: dict[str, int],
    report: GraphReport,
) -> int:
    """Each potential fact of an edge class becomes an edge between the distilled facts its
    source and target attributes name: looked up among the facts of the right class in its own
    document first, then by statement (or title) across the corpus."""
    unresolved = 0
    counters: dict[str, int] = defaultdict(int)
    for edge in schema.edges:
        rows = conn.execute(
            "SELECT id, document_id, attributes FROM facts WHERE fact_class = %s ORDER BY id",
            (edge.edge_class,),
        ).fetchall()
        drawn: list[tuple[str, int, int]] = []
        for row in rows:
            values = tuple(row.values()) if isinstance(row, dict) else tuple(row)
            _, document_id, attributes = values
            attributes = attributes or {}
            start = _resolve(conn, attributes.get(edge.source), edge.source_class, document_id)
            end = _resolve(conn, attributes.get(edge.target), edge.target_class, document_id)
            if start is None or end is None:
                unresolved += 1
                continue
            label = edge.label
            if edge.label_attribute is not None:
                value = attributes.get(edge.label_attribute)
                wanted = {edge_label(v) for v in edge.labels}
                if isinstance(value, str) and edge_label(value) in wanted:
                    label = edge_label(value)
            drawn.append((label, start, end))
        for label, start, end in sorted(set(drawn)):
            start_label = schema.vertex_label(edge.source_class)
            end_label = schema.vertex_label(edge.target_class)
            counters[label] += 1
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (id, start_id, end_id, properties) VALUES"
                    " (_graphid(%s, %s), _graphid(%s, %s), _graphid(%s, %s),"
                    " (jsonb_build_object('class', %s::text))::text::agtype)"
                ).format(_table(label)),
                (ids[label], counters[label], ids[start_label], start, ids[end_label], end,
                 edge.edge_class),
            )  # fmt: skip
    for label in schema.edge_labels():
        report.edges[label] = counters.get(label, 0)
    return unresolved


def _resolve(
    conn: psycopg.Connection[Any], value: object, fact_class: str, document_id: int
) -> int | None:
    """The distilled fact a source or target attribute names."""
    if not isinstance(value, str) or not value.strip():
        return None
    name = " ".join(value.lower().split())
    row = conn.execute(
        "SELECT distilled_fact_id FROM facts WHERE document_id = %s AND fact_class = %s"
        " AND distilled_fact_id IS NOT NULL AND (lower(text) = %s"
        " OR lower(attributes ->> 'name') = %s) ORDER BY id LIMIT 1",
        (document_id, fact_class, name, name),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT g.id FROM distilled_facts g LEFT JOIN facts r"
            " ON r.id = g.representative_fact_id WHERE g.fact_class = %s"
            " AND (lower(g.statement) = %s OR lower(r.text) = %s"
            " OR lower(r.attributes ->> 'name') = %s) ORDER BY g.id LIMIT 1",
            (fact_class, name, name, name),
        ).fetchone()
    return None if row is None else int(_first(row))
