"""Hybrid search on real PostgreSQL with vectors from the real llama-server (MiniLM).

The corpus: the Python tutorial (17 pages of real prose), two CPython test modules (code), and
a chat thread inserted the way the Messages ingest stores one (direction, sender, date).
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from garage.config import GarageConfig
from garage.embed import embed
from garage.embed.registry import default_model
from garage.inference import EgressGuard, InferenceClient
from garage.search import SearchError, SearchQuery, hybrid, search
from garage.search import filters as search_filters
from tests.conftest import LlamaServers, _with_database, llama_config
from tests.integration.ingest_helpers import run_ingest
from tests.integration.search_helpers import code, insert_thread, tutorial


@dataclass(frozen=True)
class Corpus:
    url: str
    config: GarageConfig
    root: Path


def _config(llama: LlamaServers, root: Path, **search_settings: Any) -> GarageConfig:
    sources = [
        {"name": "docs", "roots": [str(root / "docs")], "default_author": "Python Docs Team"},
        {
            "name": "code",
            "roots": [str(root / "code")],
            "corpus_class": "code",
            "default_author": "CPython Developers",
        },
    ]
    return llama_config(llama, sources=sources, search=search_settings)


@pytest.fixture(scope="module")
def corpus(
    pg_server_url: str, llama: LlamaServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Corpus]:
    from garage.db.migrate import ensure_migrated

    name = f"garage_test_search_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_database(pg_server_url, name)
    try:
        ensure_migrated(url)
        root = tmp_path_factory.mktemp("search")
        tutorial(root / "docs")
        code(root / "code")
        config = _config(llama, root)
        run_ingest(url, config, "docs")
        run_ingest(url, config, "code")
        with psycopg.connect(url, autocommit=True) as conn:
            insert_thread(conn)
            with InferenceClient(EgressGuard.from_config(config)) as client:
                embed(conn, client, config)
        yield Corpus(url, config, root)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _search(corpus: Corpus, text: str, config: GarageConfig | None = None, **kw: Any):  # type: ignore[no-untyped-def]
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        return search(conn, config or corpus.config, SearchQuery(text, **kw))


# -- fusion -------------------------------------------------------------------------------------


def test_hybrid_places_each_hit_where_rrf_says(corpus: Corpus, llama: LlamaServers) -> None:
    # Few candidates per engine, so some chunks are found by one engine only.
    config = _config(llama, corpus.root, candidates=8, fusion="rrf")
    text = "what happens when an exception is raised inside a try statement"
    keyword = _search(corpus, text, config, mode="keyword", limit=8)
    vector = _search(corpus, text, config, mode="vector", limit=8)
    hybrid_ = _search(corpus, text, config, mode="hybrid", limit=16)
    assert (keyword.mode, vector.mode, hybrid_.mode) == ("keyword", "vector", "hybrid")
    assert len(keyword.hits) == len(vector.hits) == 8

    k_rank = {h.chunk_id: i for i, h in enumerate(keyword.hits, 1)}
    v_rank = {h.chunk_id: i for i, h in enumerate(vector.hits, 1)}
    expected = sorted(
        (
            -(1 / (60 + v_rank[c]) if c in v_rank else 0)
            - (1 / (60 + k_rank[c]) if c in k_rank else 0),
            c,
        )
        for c in set(k_rank) | set(v_rank)
    )
    assert [h.chunk_id for h in hybrid_.hits] == [c for _, c in expected]
    for hit, (negative_score, _) in zip(hybrid_.hits, expected, strict=True):
        assert hit.score == pytest.approx(-negative_score, abs=1e-12)
        assert hit.vector_rank == v_rank.get(hit.chunk_id)
        assert hit.keyword_rank == k_rank.get(hit.chunk_id)
    kinds = {(h.vector_rank is not None, h.keyword_rank is not None) for h in hybrid_.hits}
    assert kinds == {(True, True), (True, False), (False, True)}, "each kind of hit is present"
    # Both engines agreeing beats either alone at the same rank: the top hit is found by both.
    assert hybrid_.hits[0].vector_rank is not None and hybrid_.hits[0].keyword_rank is not None
    # The hit fields are filled from the chunk and its document.
    top = hybrid_.hits[0]
    assert top.uri.startswith("file://") and top.uri.endswith("errors.txt")
    assert top.source == "docs" and top.corpus_class == "document"
    assert top.author == "Python Docs Team" and top.title
    with psycopg.connect(corpus.url) as conn:
        row = conn.execute(
            "SELECT c.document_id, c.start_offset, c.end_offset, c.text FROM chunks c"
            " WHERE c.id = %s",
            (top.chunk_id,),
        ).fetchone()
    assert row is not None
    assert (top.document_id, top.start_offset, top.end_offset) == row[:3]
    assert row[3].startswith(top.excerpt.removesuffix("…"))


def _normalized(scores: dict[int, float], normalization: str) -> dict[int, float]:
    values = list(scores.values())
    if normalization == "zscore":
        mean, spread = statistics.fmean(values), statistics.pstdev(values)
        return {c: (s - mean) / spread for c, s in scores.items()}
    low, high = min(values), max(values)
    return {c: (s - low) / (high - low) for c, s in scores.items()}


@pytest.mark.parametrize("normalization", ["zscore", "minmax"])
def test_convex_fusion_places_each_hit_where_its_formula_says(
    corpus: Corpus, llama: LlamaServers, normalization: str
) -> None:
    config = _config(
        llama,
        corpus.root,
        candidates=8,
        fusion="convex",
        normalization=normalization,
        vector_weight=0.3,
    )
    text = "what happens when an exception is raised inside a try statement"
    # One query vector for all three statements: a busy embedding server's batches can move a
    # query's vector in the fourth decimal from one request to the next.
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        model = default_model(conn)
        assert model is not None
        with InferenceClient(EgressGuard.from_config(config)) as client:
            [qvec] = client.embed(
                model.provider,  # type: ignore[arg-type]
                model.host,
                model.model_id,
                [text],
            ).vectors
        filters = search_filters.build(SearchQuery(text))
        rows = {}
        for mode, limit in (("keyword", 8), ("vector", 8), ("hybrid", 16)):
            the_plan = hybrid.plan(
                mode,  # type: ignore[arg-type]
                text=text,
                limit=limit,
                filters=filters,
                settings=config.search,
                model=model,
                query_vector=qvec,
            )
            rows[mode] = hybrid.run(conn, the_plan, candidates=8, filtered=False)
    keyword, vector, hybrid_ = rows["keyword"], rows["vector"], rows["hybrid"]
    assert len(keyword) == len(vector) == 8
    # Each leg normalized over its own 8 candidates; a chunk one leg did not return gets that
    # leg's lowest normalized score.
    k_norm = _normalized({r["chunk_id"]: r["score"] for r in keyword}, normalization)
    v_norm = _normalized({r["chunk_id"]: r["score"] for r in vector}, normalization)
    fused = {
        c: 0.3 * v_norm.get(c, min(v_norm.values())) + 0.7 * k_norm.get(c, min(k_norm.values()))
        for c in set(k_norm) | set(v_norm)
    }
    expected = sorted(fused, key=lambda c: (-fused[c], c))
    assert [r["chunk_id"] for r in hybrid_] == expected
    for row in hybrid_:
        assert row["score"] == pytest.approx(fused[row["chunk_id"]], abs=1e-9)
    kinds = {(r["vector_rank"] is not None, r["keyword_rank"] is not None) for r in hybrid_}
    assert kinds == {(True, True), (True, False), (False, True)}, "each kind of hit is present"
    # Through the front door with the same configuration: hybrid, every fused chunk.
    response = _search(corpus, text, config, mode="hybrid", limit=16)
    assert response.mode == "hybrid" and len(response.hits) == len(expected)


def test_convex_weights_move_the_ranking_between_the_legs(
    corpus: Corpus, llama: LlamaServers
) -> None:
    text = "how do I read a file line by line"
    keyword = _search(corpus, text, mode="keyword", limit=20)
    vector = _search(corpus, text, mode="vector", limit=20)
    assert [h.chunk_id for h in keyword.hits] != [h.chunk_id for h in vector.hits]
    for weights, leg in (({"vector_weight": 1.0}, vector), ({"keyword_weight": 1.0}, keyword)):
        config = _config(llama, corpus.root, fusion="convex", **weights)
        fused = _search(corpus, text, config, mode="hybrid", limit=20)
        # All the weight on one leg: that leg's order, whatever the other leg thought.
        assert [h.chunk_id for h in fused.hits] == [h.chunk_id for h in leg.hits]


def test_two_hundred_candidates_come_back_at_default_settings(corpus: Corpus) -> None:
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        model = default_model(conn)
        assert model is not None
        count = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(model.table))
        ).fetchone()[0]  # type: ignore[index]
        assert count > 250
        with InferenceClient(EgressGuard.from_config(corpus.config)) as client:
            [qvec] = client.embed(
                model.provider,  # type: ignore[arg-type]
                model.host,
                model.model_id,
                ["how do I define a function with default arguments"],
            ).vectors
        literal = "[" + ",".join(map(repr, qvec)) + "]"
        raw = sql.SQL("SELECT chunk_id FROM {} ORDER BY embedding <=> %s::vector LIMIT 200").format(
            sql.Identifier(model.table)
        )
        with conn.transaction():
            # Force the HNSW index (the table is small enough for a sequential scan otherwise).
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + raw, (literal,)))
            assert f"{model.table}_hnsw" in plan
            # What a naive leg gets: pgvector's default ef_search of 40.
            assert len(conn.execute(raw, (literal,)).fetchall()) == 40
        with conn.transaction():
            # The true nearest 200, by a full sort: without this the planner may still read the
            # HNSW index under an incremental sort, and get its 40.
            conn.execute("SET LOCAL enable_indexscan = off")
            exact = [
                r[0]
                for r in conn.execute(
                    sql.SQL(
                        "SELECT chunk_id FROM {} ORDER BY embedding <=> %s::vector, chunk_id"
                        " LIMIT 200"
                    ).format(sql.Identifier(model.table)),
                    (literal,),
                )
            ]
        assert len(exact) == 200
        for filtered in (False, True):
            query = SearchQuery("x", mode="vector", sources=("docs",) if filtered else ())
            filters = search_filters.build(query)
            the_plan = hybrid.plan(
                "vector",
                text="x",
                limit=200,
                filters=filters,
                settings=corpus.config.search,
                model=model,
                query_vector=qvec,
            )
            with conn.transaction():
                conn.execute("SET LOCAL enable_seqscan = off")
                rows = hybrid.run(conn, the_plan, candidates=200, filtered=filters.active)
            assert len(rows) == 200
            assert [r["vector_rank"] for r in rows] == list(range(1, 201))
            if filtered:
                assert {r["source"] for r in rows} == {"docs"}
            else:
                # Approximate, but with ef_search = 200 nearly all the true 200 nearest.
                assert len({r["chunk_id"] for r in rows} & set(exact)) >= 190


# -- the keyword leg ------------------------------------------------------------------------------


def test_keyword_terms_are_ored(corpus: Corpus) -> None:
    text = "secure enclave firmware validation"
    response = _search(corpus, text, mode="keyword")
    texts = [h.excerpt for h in response.hits]
    assert any("firmware validation" in t for t in texts)  # two of the four words
    assert any("secure boot" in t for t in texts)  # one of them
    # The same words ANDed (websearch_to_tsquery) find nothing: the OR is what found them.
    with psycopg.connect(corpus.url) as conn:
        anded = conn.execute(
            "SELECT count(*) FROM chunks WHERE tsv @@ websearch_to_tsquery('english', %s)",
            (text,),
        ).fetchone()[0]  # type: ignore[index]
    assert anded == 0


def test_ts_rank_cd_is_selectable(corpus: Corpus, llama: LlamaServers) -> None:
    config = _config(llama, corpus.root, keyword_ranking="ts_rank_cd")
    text = "secure enclave firmware validation"
    bm25 = _search(corpus, text, mode="keyword", limit=100)
    cd = _search(corpus, text, config, mode="keyword", limit=100)
    assert len(cd.hits) < 100  # every matching chunk, so both rankings see the same set
    assert [h.score for h in cd.hits] == sorted((h.score for h in cd.hits), reverse=True)
    assert {h.chunk_id for h in cd.hits} == {h.chunk_id for h in bm25.hits}
    with psycopg.connect(corpus.url) as conn:
        for hit in cd.hits:
            expected = conn.execute(
                "SELECT ts_rank_cd(tsv, to_tsquery('english', 'secure | enclave | firmware |"
                " validation')) FROM chunks WHERE id = %s",
                (hit.chunk_id,),
            ).fetchone()[0]  # type: ignore[index]
            assert hit.score == pytest.approx(expected, rel=1e-6)


def test_stop_words_only_query_finds_nothing_by_keyword(corpus: Corpus) -> None:
    response = _search(corpus, "the and of", mode="keyword")
    assert response.hits == [] and response.mode == "keyword"
    # Hybrid still answers from the vectors.
    assert _search(corpus, "the and of", mode="hybrid").hits


# -- filters --------------------------------------------------------------------------------------


FILTER_CASES = [
    ({"sources": ("code",)}, lambda h: h.source == "code"),
    ({"corpus_classes": ("communication",)}, lambda h: h.corpus_class == "communication"),
    ({"corpus_classes": ("document", "code")}, lambda h: h.corpus_class != "communication"),
    ({"authors": ("cpython developers",)}, lambda h: h.author == "CPython Developers"),
    ({"direction": "received"}, lambda h: h.metadata.get("direction") == "received"),
    ({"direction": "sent"}, lambda h: h.metadata.get("direction") == "sent"),
    ({"sender": "alice"}, lambda h: "Alice" in h.metadata.get("sender", "")),
    (
        {"date_from": datetime(2024, 5, 1, tzinfo=UTC), "date_to": datetime(2024, 5, 31)},
        lambda h: h.metadata["date"].startswith("2024-05"),
    ),
    (
        {"date_to": datetime(2024, 4, 1, tzinfo=UTC)},
        lambda h: h.metadata["date"] < "2024-04",
    ),
]


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
@pytest.mark.parametrize(("filters", "passes"), FILTER_CASES)
def test_every_filter(corpus: Corpus, mode: str, filters: dict[str, Any], passes: Any) -> None:
    text = "train tickets and the firmware board test for the heap"
    everything = _search(corpus, text, mode=mode, limit=100)
    assert any(not passes(h) for h in everything.hits), "the filter must exclude something"
    filtered = _search(corpus, text, mode=mode, limit=100, **filters)
    assert filtered.hits, f"{filters} found nothing"
    assert all(passes(h) for h in filtered.hits)
    assert filtered.mode == mode


@pytest.mark.parametrize(("filters", "passes"), FILTER_CASES)
def test_every_filter_when_every_term_is_common(
    corpus: Corpus, llama: LlamaServers, filters: dict[str, Any], passes: Any
) -> None:
    # Every term common, and 5 candidates: the keyword leg reads 125 postings of each term
    # by impact, and those must be taken among the chunks that pass the filter.
    config = _config(llama, corpus.root, bm25_common_df=0, candidates=5)
    text = "train tickets and the firmware board test for the heap"
    filtered = _search(corpus, text, config, mode="keyword", limit=100, **filters)
    assert filtered.hits, f"{filters} found nothing"
    assert all(passes(h) for h in filtered.hits)


def test_filters_reach_past_the_unfiltered_candidates(corpus: Corpus, llama: LlamaServers) -> None:
    # With 5 candidates per engine, none of the top 5 is a message; the filter must still find
    # the messages (each leg filters before it takes its candidates).
    config = _config(llama, corpus.root, candidates=5)
    text = "how do I define a function in Python"
    assert all(h.corpus_class != "communication" for h in _search(corpus, text, config).hits)
    filtered = _search(corpus, text, config, corpus_classes=("communication",))
    assert len(filtered.hits) == 4


# -- degraded mode and errors -------------------------------------------------------------------


def test_unreachable_model_degrades_to_keyword(corpus: Corpus, llama: LlamaServers) -> None:
    dead = replace(llama, embed_url="http://127.0.0.1:9")  # discard port: nothing listens
    config = llama_config(dead, sources=[])
    with (
        psycopg.connect(corpus.url, autocommit=True) as conn,
        conn.transaction(force_rollback=True),
    ):
        # Point the registered default at the dead host, for this transaction only.
        conn.execute("UPDATE embedding_models SET host = %s", (dead.embed_url,))
        for mode in ("hybrid", "vector"):
            response = search(conn, config, SearchQuery("exceptions in a try statement", mode=mode))  # type: ignore[arg-type]
            assert response.mode == "keyword"
            assert response.degraded and "keyword-only" in response.degraded
            assert "all-minilm-l6-v2" in response.degraded
            assert response.hits and all(h.vector_rank is None for h in response.hits)


def test_no_registered_model_degrades_to_keyword(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    config = llama_config(
        llama, sources=[{"name": "docs", "roots": [str(tutorial(tmp_path / "d", ["errors"]))]}]
    )
    run_ingest(migrated_db, config, "docs")
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        response = search(conn, config, SearchQuery("try statement"))
    assert response.mode == "keyword" and response.hits
    assert (
        response.degraded
        == "keyword-only: no text embedding model is registered (run `garage embed`)"
    )


def test_bad_queries_are_refused_by_name(corpus: Corpus) -> None:
    cases = [
        (SearchQuery(""), "text"),
        (SearchQuery("x", limit=0), "limit"),
        (SearchQuery("x", limit=101), "limit"),
        (SearchQuery("x", mode="fuzzy"), "mode"),  # type: ignore[arg-type]
        (SearchQuery("x", corpus_classes=("photos",)), "corpus_classes"),  # type: ignore[arg-type]
        (SearchQuery("x", direction="both"), "direction"),  # type: ignore[arg-type]
        (SearchQuery("x", model="no-such-model"), "model"),
        (
            SearchQuery("x", date_from=datetime(2024, 2, 1), date_to=datetime(2024, 1, 1)),
            "date_from",
        ),
    ]
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        for query, field in cases:
            with pytest.raises(SearchError, match=f"^{field}:"):
                search(conn, corpus.config, query)


# -- the command line and the corpus summaries --------------------------------------------------


def test_garage_search_command(corpus: Corpus, tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from garage.cli import cli

    raw = corpus.config.model_dump(mode="json")
    raw["database"]["url"] = corpus.url
    config_file = tmp_path / "garage.json"
    config_file.write_text(json.dumps(raw))
    runner = CliRunner()
    base = ["--config", str(config_file), "search"]

    result = runner.invoke(cli, [*base, "train", "tickets", "--class", "communication", "--json"])
    assert result.exit_code == 0, result.output
    response = json.loads(result.output)
    assert response["mode"] == "hybrid" and response["degraded"] is None
    assert response["query"] == "train tickets"
    assert {h["corpus_class"] for h in response["hits"]} == {"communication"}
    assert set(response["hits"][0]) >= {
        "chunk_id", "document_id", "uri", "title", "source", "corpus_class", "author",
        "start_offset", "end_offset", "excerpt", "score", "vector_rank", "keyword_rank",
    }  # fmt: skip

    result = runner.invoke(
        cli,
        [*base, "firmware", "--direction", "received", "--sender", "bob", "--since",
         "2024-05-20", "--until", "2024-05-20", "--mode", "keyword", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [hit] = json.loads(result.output)["hits"]
    assert hit["metadata"]["sender"].startswith("Bob Stone")

    result = runner.invoke(cli, [*base, "heap", "invariant", "--source", "code", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "test_heapq.py" in result.output and "2 hits (hybrid" in result.output
    assert "CPython Developers" in result.output

    result = runner.invoke(cli, [*base, "x", "--since", "last tuesday"])
    assert result.exit_code == 2 and "not a date" in result.output
    result = runner.invoke(cli, [*base, "x", "--model", "nope"])
    assert result.exit_code == 1 and "model: no embedding model named 'nope'" in result.output
    result = runner.invoke(cli, ["search", "--help"])
    assert result.exit_code == 0 and "--direction" in result.output


def test_corpus_summaries(corpus: Corpus) -> None:
    from garage.search import corpus_stats, list_authors, list_sources

    with psycopg.connect(corpus.url, autocommit=True) as conn:
        sources = {s.name: s for s in list_sources(conn)}
        authors = list_authors(conn, limit=10)
        stats = corpus_stats(conn)
        with pytest.raises(ValueError, match="limit"):
            list_authors(conn, limit=0)
        assert len(list_authors(conn, limit=1)) == 1
    assert set(sources) == {"docs", "code", "chats"}
    assert sources["docs"].documents == 17 and sources["docs"].kind == "files"
    assert sources["code"].corpus_class == "code" and sources["code"].documents == 2
    assert sources["chats"].chunks == 4 and sources["chats"].last_run_at is None
    assert sources["docs"].last_run_at is not None
    assert [(a.name, a.documents) for a in authors] == [
        ("Python Docs Team", 17),
        ("CPython Developers", 2),
    ]
    assert stats.sources == 3 and stats.documents == 20
    assert stats.chunks == sum(s.chunks for s in sources.values())
    assert stats.documents_by_class == {"code": 2, "communication": 1, "document": 17}
    [model] = stats.embedding_models
    assert model.name == "all-minilm-l6-v2" and model.is_default
    assert model.vectors == stats.chunks


# -- garage eval ------------------------------------------------------------------------------


def test_garage_eval_command(corpus: Corpus, tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from garage.cli import cli
    from garage.evaluate import document_ranking, ndcg_at, reciprocal_rank

    raw = corpus.config.model_dump(mode="json")
    raw["database"]["url"] = corpus.url
    config_file = tmp_path / "garage.json"
    config_file.write_text(json.dumps(raw))
    docs = corpus.root / "docs"
    queries = tmp_path / "queries.tsv"
    queries.write_text(
        "qid\tquery\n"
        "q1\thandling exceptions with try and except\n"
        "q2\treading and writing files\n"
        "q3\tdefining a class that inherits from another\n"
        "q4\ta query nobody judged\n"
    )
    qrels = tmp_path / "qrels"
    # A document named three ways: a path under the source's root, an absolute path, a URI;
    # and one relevant document the index does not hold.
    qrels.write_text(
        "q1 0 errors.txt 2\n"
        "q1 0 controlflow.txt 1\n"
        f"q2 0 {docs / 'inputoutput.txt'} 1\n"
        f"q3 0 {(docs / 'classes.txt').as_uri()} 1\n"
        "q3 0 notes/never-indexed.md 1\n"
        "q3 0 datastructures.txt 0\n"
    )
    runner = CliRunner()
    base = ["--config", str(config_file), "eval", str(queries), str(qrels)]
    result = runner.invoke(cli, [*base, "--fusion", "rrf", "--fusion", "convex", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["queries"] == 3 and report["unjudged_queries"] == ["q4"]
    assert report["unindexed_documents"] == ["notes/never-indexed.md"]
    labels = [run["label"] for run in report["runs"]]
    assert labels == ["keyword", "vector", "hybrid (rrf)", "hybrid (convex)"]

    # The keyword run's figures are those of the searches themselves, measured independently.
    judged = {
        "q1": {(docs / "errors.txt").as_uri(): 2.0, (docs / "controlflow.txt").as_uri(): 1.0},
        "q2": {(docs / "inputoutput.txt").as_uri(): 1.0},
        "q3": {(docs / "classes.txt").as_uri(): 1.0, "notes/never-indexed.md": 1.0},
    }
    texts = {"q1": "handling exceptions with try and except", "q2": "reading and writing files",
             "q3": "defining a class that inherits from another"}  # fmt: skip
    ndcg, rr = {}, {}
    for query_id, text in texts.items():
        hits = _search(corpus, text, mode="keyword", limit=100).hits
        ranking = document_ranking(hit.uri for hit in hits)
        ndcg[query_id] = ndcg_at(10, ranking, judged[query_id])
        rr[query_id] = reciprocal_rank(ranking, judged[query_id])
    keyword = report["runs"][0]
    assert keyword["per_query_ndcg"] == pytest.approx(ndcg)
    assert keyword["mrr"] == pytest.approx(sum(rr.values()) / 3)
    # q3's second relevant document is never found: recall at most 1/2 for it.
    assert all(run["recall_at_100"] <= (1 + 1 + 0.5) / 3 + 1e-9 for run in report["runs"])
    assert all(0 < run["ndcg_at_10"] <= 1 and 0 < run["mrr"] <= 1 for run in report["runs"])

    result = runner.invoke(cli, [*base, "--mode", "keyword", "--mode", "hybrid"])
    assert result.exit_code == 0, result.output
    assert "3 queries scored" in result.output and "1 queries not in the qrels" in result.output
    assert "1 relevant documents are not in the index" in result.output
    lines = result.output.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("mode ")) :]
    assert table[0].split() == ["mode", "nDCG@10", "recall@100", "MRR", "p50", "ms"]
    assert [line.split()[0] for line in table[1:]] == ["keyword", "hybrid"]

    qrels.write_text("q1 0 errors.txt 2\nq1 0 classes.txt yes\n")
    result = runner.invoke(cli, base)
    assert result.exit_code == 1 and f"{qrels}:2: relevance 'yes' is not a number" in result.output
    qrels.write_text("x1 0 errors.txt 1\n")
    result = runner.invoke(cli, base)
    assert result.exit_code == 1 and "no query of the queries file has a relevant" in result.output
    result = runner.invoke(cli, [*base, "--mode", "vector", "--fusion", "convex"])
    assert result.exit_code == 2 and "--fusion measures hybrid search" in result.output
    result = runner.invoke(cli, ["eval", "--help"])
    assert result.exit_code == 0 and "nDCG@10" in result.output
