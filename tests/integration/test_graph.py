"""The AGE graph on the real PostgreSQL 17 server with AGE: the projection's counts equal the
tables', a rebuild gives the same graph, configured labels appear after `graph rebuild` alone,
reads with hostile input return nothing or an error and change nothing, the picture, the CLI,
and the embedded default's clear message that it has no graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from garage.cli import cli
from garage.clusters import cluster_facts
from garage.config import GarageConfig
from garage.facts import effective_prompts
from garage.graph import find_vertices, graph_labels, neighbourhood, rebuild_graph
from garage.graph.picture import render, to_dot
from tests.conftest import LlamaServers
from tests.integration.cluster_helpers import build_corpus, embed_all, store_claims

ENTITIES_GRAPH = {
    "vertices": [
        {"class": "person", "label": "Person", "title": "name"},
        {"class": "organization", "label": "Organization"},
    ],
    "edges": [
        {"class": "relation", "source": "subject", "source_class": "person",
         "target": "object", "target_class": "organization",
         "label_attribute": "predicate", "labels": ["WORKS_AT", "MEMBER_OF"]},
    ],
}  # fmt: skip

ENTITIES = {
    "name": "entities",
    "description": "Extract people, organizations and how they relate.",
    "examples": [
        {
            "text": "Jane Doe works at Acme Corp.",
            "extractions": [
                {"class": "person", "text": "Jane Doe", "attributes": {"name": "Jane Doe"}},
                {"class": "organization", "text": "Acme Corp"},
                {"class": "relation", "text": "Jane Doe works at Acme Corp",
                 "attributes": {"subject": "Jane Doe", "object": "Acme Corp",
                                "predicate": "works at"}},
            ],
        }
    ],
}  # fmt: skip

TEAM = (
    "Maria Santos works at Acme Corp. Tom Berg is a member of the Chess Club. "
    "Tom Berg likes Acme Corp.\n"
)


def _with_graph(config: GarageConfig, graph: dict[str, Any] | None) -> GarageConfig:
    entry = dict(ENTITIES) | ({"graph": graph} if graph else {})
    raw = config.model_dump(mode="json", by_alias=True)
    raw["facts"]["prompts"] = [entry]
    return GarageConfig.model_validate(raw)


def _count(conn: psycopg.Connection[Any], query: str) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def _label_counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    return {c.label: c.count for c in graph_labels(conn)}


def _dump(conn: psycopg.Connection[Any]) -> list[tuple[str, ...]]:
    """Every vertex and edge of the graph, by label, id and content."""
    rows: list[tuple[str, ...]] = []
    conn.execute("LOAD 'age'")
    with conn.transaction():
        conn.execute("SET LOCAL search_path = ag_catalog, public")
        for c in graph_labels(conn):
            if c.kind == "vertex":
                query = f'SELECT id::text, agtype_out(properties)::text FROM garage."{c.label}"'
            else:
                query = (
                    "SELECT id::text, start_id::text || '>' || end_id::text"
                    f' FROM garage."{c.label}"'
                )
            rows += [(c.label, *r) for r in conn.execute(query).fetchall()]
    return sorted(rows)


@pytest.fixture
def clustered(migrated_db: str, llama: LlamaServers, tmp_path: Path) -> tuple[str, Any, Path]:
    folder = tmp_path / "mixed"
    config = build_corpus(migrated_db, llama, folder)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        cluster_facts(conn, config)
    return migrated_db, config, folder


def test_projection_counts_equal_the_tables_and_a_rebuild_is_the_same_graph(
    clustered: tuple[str, Any, Path],
) -> None:
    url, config, _ = clustered
    with psycopg.connect(url, autocommit=True) as conn:
        report = rebuild_graph(conn, config)
        counts = _label_counts(conn)
        expected = {
            "Document": "SELECT count(*) FROM documents",
            "Chunk": "SELECT count(*) FROM chunks WHERE fact_id IS NULL",
            "Author": "SELECT count(*) FROM authors",
            "PotentialFact": "SELECT count(*) FROM facts",
            "Fact": "SELECT count(*) FROM distilled_facts",
            "HAS_CHUNK": "SELECT count(*) FROM chunks WHERE fact_id IS NULL",
            "WROTE": "SELECT count(*) FROM documents WHERE author_id IS NOT NULL",
            "STATES": "SELECT count(*) FROM facts",
            "RESTATES": "SELECT count(*) FROM facts WHERE restates_fact_id IS NOT NULL",
            "SUPPORTS": "SELECT count(*) FROM facts"
            " WHERE restates_fact_id IS NULL AND distilled_fact_id IS NOT NULL",
        }
        for label, query in expected.items():
            assert counts[label] == _count(conn, query) > 0, label
            assert (report.vertices | report.edges)[label] == counts[label]
        # The mails were received by the owner (Jane) and sent to Alice, who has an authors row.
        assert counts["RECEIVED"] >= 2
        # No edge hangs: both ends of every edge are vertices.
        conn.execute("LOAD 'age'")
        with conn.transaction():
            conn.execute("SET LOCAL search_path = ag_catalog, public")
            for c in graph_labels(conn):
                if c.kind == "edge":
                    dangling = _count(
                        conn,
                        f'SELECT count(*) FROM garage."{c.label}" e WHERE NOT EXISTS'
                        " (SELECT 1 FROM garage._ag_label_vertex v WHERE v.id = e.start_id)"
                        " OR NOT EXISTS"
                        " (SELECT 1 FROM garage._ag_label_vertex v WHERE v.id = e.end_id)",
                    )
                    assert dangling == 0, c.label
        first = _dump(conn)
        rebuild_graph(conn, config)
        assert _dump(conn) == first
        # The graph is AGE's own: Cypher reads it.
        conn.execute("LOAD 'age'")
        with conn.transaction():
            conn.execute("SET LOCAL search_path = ag_catalog, public")
            [(pairs,)] = conn.execute(
                "SELECT * FROM cypher('garage', $$ MATCH (:Document)-[:STATES]->(p:PotentialFact)"
                " -[:SUPPORTS]->(:Fact) RETURN count(p) $$) AS (n agtype)"
            ).fetchall()
        # Every potential fact that supports a distilled fact is stated by its document: the
        # path through both edges is there once per SUPPORTS edge (a fact cannot outlive its
        # document, whose deletion cascades to it, so none may be missing).
        assert int(str(pairs)) == counts["SUPPORTS"] > 0


def _add_team(url: str, config: GarageConfig, folder: Path, claims: list[Any]) -> None:
    """team.md ingested beside the corpus, with ``claims`` stored as its entities facts."""
    from garage.ingest import ingest_source

    (folder / "team.md").write_text(TEAM)
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("mixed"))
    store_claims(url, {"team.md": claims}, prompt="entities")


def test_configured_labels_appear_after_a_rebuild_alone(
    clustered: tuple[str, Any, Path], llama: LlamaServers
) -> None:
    url, config, folder = clustered
    _add_team(url, config, folder, [
        ("person", "Maria Santos", {"name": "Maria Santos"}),
        ("organization", "Acme Corp", {"name": "Acme Corp"}),
        ("person", "Tom Berg", {"name": "Tom Berg"}),
        ("organization", "Chess Club", {"name": "Chess Club"}),
        ("relation", "Maria Santos works at Acme Corp",
         {"subject": "Maria Santos", "object": "Acme Corp", "predicate": "works at"}),
        ("relation", "Tom Berg is a member of the Chess Club",
         {"subject": "Tom Berg", "object": "Chess Club", "predicate": "member of"}),
        ("relation", "Tom Berg likes Acme Corp",
         {"subject": "Tom Berg", "object": "Acme Corp", "predicate": "likes"}),
    ])  # fmt: skip
    embed_all(url, config)
    plain = _with_graph(config, None)
    with psycopg.connect(url, autocommit=True) as conn:
        cluster_facts(conn, plain)
        rebuild_graph(conn, plain)
        before = _label_counts(conn)
        assert "Person" not in before and "WORKS_AT" not in before

        # Only the graph block changes: the prompt's hash does not, and a rebuild suffices.
        configured = _with_graph(config, ENTITIES_GRAPH)
        hashes = {p.name: p.sha256 for p in effective_prompts(plain)}
        assert {p.name: p.sha256 for p in effective_prompts(configured)} == hashes
        report = rebuild_graph(conn, configured)
        counts = _label_counts(conn)
        people = _count(conn, "SELECT count(*) FROM distilled_facts WHERE fact_class = 'person'")
        titles = {
            row[0]
            for row in conn.execute(
                "SELECT coalesce(r.attributes ->> 'name', r.text) FROM distilled_facts g"
                " JOIN facts r ON r.id = g.representative_fact_id WHERE g.fact_class = 'person'"
            )
        }
    persons = {"Maria Santos", "Tom Berg"}
    # The people the mail headers anchor are persons too: entity resolution is the grouping.
    assert titles == persons | {"Alice Martin", "Jane Doe", "bob@example.com"}
    assert counts["Person"] == people == 5 and counts["Organization"] == 2
    assert counts["WORKS_AT"] == 1 and counts["MEMBER_OF"] == 1 and counts["RELATED_TO"] == 1
    assert report.unresolved_edges == 0
    # Their distilled facts moved from Fact to their own labels.
    assert counts["Fact"] == before["Fact"] - people - 2
    assert counts["SUPPORTS"] == before["SUPPORTS"]
    with psycopg.connect(url, autocommit=True) as conn:
        found = find_vertices(conn, "Maria", labels=("Person",))
        assert [v.title for v in found] == ["Maria Santos"]
        hood = neighbourhood(conn, f"Person:{found[0].id}", hops=1)
    titles = {v.title for v in hood.vertices}
    assert "Acme Corp" in titles and titles & persons
    assert {e.label for e in hood.edges} >= {"WORKS_AT", "SUPPORTS"}


def test_a_title_the_document_does_not_say_is_not_shown(
    clustered: tuple[str, Any, Path],
) -> None:
    """The title attribute comes from the model; the grounded text stands in when the
    document does not contain it."""
    url, config, folder = clustered
    _add_team(
        url,
        config,
        folder,
        [
            ("person", "Maria Santos", {"name": "Maria Santos"}),
            ("person", "Tom Berg", {"name": "Bob Lee"}),  # the name is invented
        ],
    )
    embed_all(url, config)
    configured = _with_graph(config, ENTITIES_GRAPH)
    with psycopg.connect(url, autocommit=True) as conn:
        cluster_facts(conn, configured)
        rebuild_graph(conn, configured)
        assert [v.title for v in find_vertices(conn, "Tom", labels=("Person",))] == ["Tom Berg"]
        assert find_vertices(conn, "Bob Lee") == []
        assert [v.title for v in find_vertices(conn, "Maria", labels=("Person",))] == [
            "Maria Santos"
        ]


def test_refused_graph_blocks_name_the_field(llama: LlamaServers) -> None:
    from tests.conftest import llama_config

    config = llama_config(llama)
    bad_blocks = {
        "is the graph's built-in Fact": {"vertices": [{"class": "person", "label": "Fact"}]},
        "already has the label": {"vertices": [{"class": "person", "label": "Person"},
                                               {"class": "person", "label": "Human"}]},
        "already names class": {"vertices": [{"class": "person", "label": "Person"},
                                             {"class": "human", "label": "Person"}]},
        "not a plain label": {"vertices": [{"class": "person",
                                            "label": "P`) MATCH (n) DETACH DELETE n //"}]},
        "built-in SUPPORTS": {"edges": [{**ENTITIES_GRAPH["edges"][0], "labels": ["supports"]}]},
    }  # fmt: skip
    from pydantic import ValidationError

    for message, block in bad_blocks.items():
        with pytest.raises(ValidationError, match=message) as raised:
            _with_graph(config, block)
        assert "graph." in str(raised.value)


HOSTILE = [
    "'",
    '"',
    "x' OR '1'='1",
    "') RETURN 1; DROP TABLE facts; --",
    "}) MATCH (n) DETACH DELETE n //",
    "$$) AS (a agtype); DELETE FROM documents; --",
    "%",
    "_",
    "\\",
]


def test_hostile_reads_return_nothing_or_an_error_and_change_nothing(
    clustered: tuple[str, Any, Path],
) -> None:
    url, config, _ = clustered
    with psycopg.connect(url, autocommit=True) as conn:
        rebuild_graph(conn, config)
        before = _dump(conn)
        tables = [_count(conn, f"SELECT count(*) FROM {t}") for t in ("documents", "facts")]
        for text in HOSTILE:
            assert find_vertices(conn, text) == [], text
            with pytest.raises(ValueError, match="vertex"):
                neighbourhood(conn, text)
            with pytest.raises(ValueError, match="vertex"):
                neighbourhood(conn, f"Document:1{text}")
        with pytest.raises(ValueError, match="labels"):
            find_vertices(conn, "Lisbon", labels=('Document" ; DROP TABLE facts; --',))
        with pytest.raises(ValueError, match="no vertex label"):
            neighbourhood(conn, "Nope:1")
        with pytest.raises(ValueError, match="hops"):
            neighbourhood(conn, "Document:1", hops=99)
        assert _dump(conn) == before
        assert [_count(conn, f"SELECT count(*) FROM {t}") for t in ("documents", "facts")] == tables


def test_cli_cluster_labels_find_neighbors_and_the_picture(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    config = build_corpus(migrated_db, llama, folder)
    path = tmp_path / "garage.json"
    raw = config.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    raw["sources"] = [{"name": "mixed", "roots": [str(folder)]}]
    path.write_text(json.dumps(raw))
    runner = CliRunner()
    env = {"GARAGE_CONFIG": str(path), "GARAGE_DATA_DIR": str(tmp_path / "data")}

    def garage(*args: str, code: int = 0) -> Any:
        result = runner.invoke(cli, list(args), env=env, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return json.loads(result.stdout) if "--json" in args and code == 0 else result.output

    report = garage("cluster-facts", "--no-model", "--json")
    assert report["mode"] == "full" and report["distilled_facts"] > 0
    assert report["graph"]["vertices"]["Fact"] == report["distilled_facts"]
    labels = {c["label"]: c["count"] for c in garage("graph", "labels", "--json")["labels"]}
    for label in ("Document", "Chunk", "Author", "PotentialFact", "Fact", "HAS_CHUNK", "WROTE",
                  "RECEIVED", "STATES", "RESTATES", "SUPPORTS"):  # fmt: skip
        assert labels[label] > 0, label
    found = garage("graph", "find", "Lisbon office", "--json")["vertices"]
    assert found and all("lisbon office" in v["title"].lower() for v in found)
    fact = next(v for v in found if v["label"] == "Fact")
    hood = garage("graph", "neighbors", f"Fact:{fact['id']}", "--hops", "2", "--json")
    assert {v["ring"] for v in hood["vertices"]} == {0, 1, 2}
    picture = tmp_path / "out.svg"
    text = garage("graph", "neighbors", f"Fact:{fact['id']}", "--hops", "2", "--svg", str(picture))
    assert "ring 2:" in text
    svg = picture.read_text()
    assert svg.startswith("<?xml") and "<svg" in svg
    assert "Lisbon office" in svg and "Document" in svg and "SUPPORTS" in svg
    dot = garage("graph", "neighbors", f"Fact:{fact['id']}", "--format", "dot")
    assert "layout=twopi" in dot and "root=" in dot
    out = garage("graph", "neighbors", "Document:1' OR 1=1", code=1)
    assert "neither Label:id" in out
    # Drawing straight from the library gives the same kind of picture.
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        assert b"<svg" in render(to_dot(neighbourhood(conn, f"Fact:{fact['id']}")))


def test_the_embedded_default_says_it_has_no_graph(isolated_env: Path) -> None:
    from garage.config import load_config
    from garage.db import embedded

    runner = CliRunner()
    try:
        for args in (["graph", "labels"], ["graph", "rebuild"], ["graph", "find", "x"]):
            result = runner.invoke(cli, args, catch_exceptions=False)
            assert result.exit_code == 1, result.output
            assert "no Apache AGE" in result.output
        # The rest works: the schema is there, distilled facts included.
        result = runner.invoke(cli, ["db", "status", "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    finally:
        from garage.config import data_dir

        embedded.stop(data_dir(load_config()))


def test_graph_mcp_tools(clustered: tuple[str, Any, Path]) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from garage.db.runtime import Runtime
    from garage.mcp.graph import GraphTools

    url, config, _ = clustered
    with psycopg.connect(url, autocommit=True) as conn:
        rebuild_graph(conn, config)
    runtime = Runtime(config, url)
    tools = GraphTools(runtime)
    labels = {c.label: c.count for c in tools.rag_graph_labels().labels}
    assert labels["Document"] == 6 and labels["SUPPORTS"] > 0
    subject = tools.rag_graph_find("Train tickets").vertices
    assert subject and any(v.properties.get("communication") for v in subject)
    hood = tools.rag_graph_neighbors(f"{subject[0].label}:{subject[0].id}", hops=2)
    assert hood.start.title == subject[0].title and len(hood.vertices) > 1
    for text in HOSTILE[:6]:
        assert tools.rag_graph_find(text).vertices == []
        with pytest.raises(ToolError, match="vertex"):
            tools.rag_graph_neighbors(text)
