"""BM25 inside PostgreSQL against a reference BM25 computed in Python on the same tokens.

The tokens come from ``ts_debug`` (PostgreSQL's parser and dictionaries, one lexeme per
occurrence), not from the tsvectors the statistics are built from, and the reference counts
everything itself. Scores must agree to 1e-6 after ingest, after edits that keep some chunks
and replace others, after deletes, and after every other way a chunk can change.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from garage.config import GarageConfig
from garage.search import filters as search_filters
from garage.search import hybrid
from garage.search.types import SearchQuery
from tests.integration.ingest_helpers import run_ingest
from tests.integration.search_helpers import reference, tokens, tutorial

QUERIES = [
    "exception handling with try and except",
    "list comprehensions and nested list comprehensions",
    "floating point representation error",
    "where does import look for modules on the search path",
    "secure enclave firmware validation",
    "lambda",
]


def _config(root: Path) -> GarageConfig:
    return GarageConfig.model_validate({"sources": [{"name": "docs", "roots": [str(root)]}]})


def _leg(
    conn: psycopg.Connection[Any], config: GarageConfig, text: str, ranking: str
) -> list[dict[str, Any]]:
    filters = search_filters.build(SearchQuery(text))
    plan = hybrid.plan(
        "keyword",
        text=text,
        limit=200,
        filters=filters,
        settings=config.search,
        model=None,
        query_vector=None,
        keyword_ranking=ranking,
    )
    return hybrid.run(conn, plan, candidates=200, filtered=False)


def _check(url: str, config: GarageConfig) -> int:
    """Compare every statistic and every score; return how many chunks were compared."""
    with psycopg.connect(url, autocommit=True) as conn:
        ref = reference(conn)
        n, total = conn.execute("SELECT sum(chunks), sum(tokens) FROM bm25_corpus").fetchone()  # type: ignore[misc]
        assert (n, total) == (ref.n, ref.total_tokens)
        postings = {
            (chunk_id, term): tf
            for chunk_id, term, tf in conn.execute("SELECT chunk_id, term, tf FROM bm25_postings")
        }
        assert postings == {
            (chunk_id, term): tf for chunk_id, tfs in ref.docs.items() for term, tf in tfs.items()
        }
        lengths = dict(conn.execute("SELECT DISTINCT chunk_id, dl FROM bm25_postings").fetchall())
        assert lengths == {c: sum(tfs.values()) for c, tfs in ref.docs.items() if tfs}
        df = dict(
            conn.execute(
                "SELECT term, sum(df) FROM bm25_terms GROUP BY term HAVING sum(df) <> 0"
            ).fetchall()
        )
        assert df == Counter(term for tfs in ref.docs.values() for term in tfs)
        for text in QUERIES:
            expected = ref.scores(set(tokens(conn, text)))
            top = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:200]
            for ranking in ("bm25", "bm25_derived"):
                rows = _leg(conn, config, text, ranking)
                assert [r["chunk_id"] for r in rows] == [c for c, _ in top], (text, ranking)
                for row, (_, score) in zip(rows, top, strict=True):
                    assert row["score"] == pytest.approx(score, abs=1e-6, rel=0)
                assert [r["keyword_rank"] for r in rows] == list(range(1, len(rows) + 1))
            _check_common(conn, config, text, expected)
        return ref.n


def _check_common(
    conn: psycopg.Connection[Any], config: GarageConfig, text: str, expected: dict[int, float]
) -> None:
    """With every term common (df above bm25_common_df), or only the commoner ones, the leg
    reads a bounded share of the postings: every score it returns is still the exact BM25 of
    its chunk over all the query's terms, in order; with the default candidates, which read
    more postings than this index holds, the best chunk is still found."""
    for common_df in (0, 3):
        for candidates in (200, 1):
            search = config.search.model_copy(
                update={"bm25_common_df": common_df, "candidates": candidates}
            )
            rows = _leg(conn, config.model_copy(update={"search": search}), text, "bm25")
            assert bool(rows) == bool(expected), (text, common_df)
            if not rows:
                continue
            for row in rows:
                assert row["score"] == pytest.approx(expected[row["chunk_id"]], abs=1e-6, rel=0)
            scores = [row["score"] for row in rows]
            assert scores == sorted(scores, reverse=True)
            if candidates == 200:
                assert scores[0] == pytest.approx(max(expected.values()), abs=1e-6, rel=0)


def test_bm25_matches_the_reference_through_edits_and_deletes(
    migrated_db: str, tmp_path: Path
) -> None:
    root = tutorial(tmp_path / "docs", ["errors", "datastructures", "floatingpoint", "modules"])
    config = _config(root)
    run_ingest(migrated_db, config, "docs")
    assert _check(migrated_db, config) > 40

    # An edit in the middle (the chunks after it shift and are replaced) and one at the end
    # (every chunk before it is kept, row and all), and a deleted file.
    errors = root / "errors.txt"
    text = errors.read_text()
    middle = len(text) // 2
    errors.write_text(
        text[:middle] + "\nA firmware validation note inserted here.\n" + text[middle:]
    )
    modules = root / "modules.txt"
    modules.write_text(modules.read_text() + "\nLambda functions are mentioned at the end.\n")
    (root / "floatingpoint.txt").unlink()
    report = run_ingest(migrated_db, config, "docs", force=True)
    assert report.indexed == 2 and report.deleted == 1
    assert report.chunks_kept > 0 and report.chunks_new > 0 and report.chunks_deleted > 0
    assert _check(migrated_db, config) > 30

    # A file brought back, then every other way a chunk can change.
    shutil.copy(tutorial(tmp_path / "again", ["floatingpoint"]) / "floatingpoint.txt", root)
    run_ingest(migrated_db, config, "docs")
    _check(migrated_db, config)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        conn.execute(
            "UPDATE chunks SET text = 'Exceptions, exceptions: the try statement again.'"
            " WHERE id = (SELECT min(id) FROM chunks)"
        )
        conn.execute("UPDATE chunks SET heading = 'moved' WHERE id = (SELECT max(id) FROM chunks)")
        conn.execute(
            "DELETE FROM documents WHERE id = (SELECT min(id) FROM documents)"
        )  # cascades to its chunks
    _check(migrated_db, config)
    with psycopg.connect(migrated_db) as conn:
        # Rolled back: the statistics roll back with the chunks.
        conn.execute("DELETE FROM chunks")
        conn.rollback()
    _check(migrated_db, config)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        conn.execute("TRUNCATE chunks")
        assert conn.execute("SELECT count(*) FROM bm25_postings").fetchone() == (0,)
        assert conn.execute("SELECT coalesce(sum(chunks), 0) FROM bm25_corpus").fetchone() == (0,)
        assert _leg(conn, config, "exception", "bm25") == []


def test_statistics_of_chunks_stored_before_the_migration(blank_db: str, tmp_path: Path) -> None:
    """004 fills the statistics for chunks that already exist.

    The database has every migration but 004 (the ingest code of today needs the later ones)
    and 010 and 013, which replace functions 004 creates, so the chunks are stored without
    statistics and 004 must compute them, and 013 the document frequencies from those.
    """
    from garage.db.migrate import discover, migrate

    earlier = tmp_path / "schema"
    earlier.mkdir()
    for migration in discover():
        if migration.version not in (4, 10, 13):
            shutil.copy(migration.path, earlier)
    root = tutorial(tmp_path / "docs", ["errors"])
    config = _config(root)
    with psycopg.connect(blank_db, autocommit=True) as conn:
        migrate(conn, earlier)  # type: ignore[arg-type]
    run_ingest(blank_db, config, "docs")
    with psycopg.connect(blank_db, autocommit=True) as conn:
        migrate(conn)  # type: ignore[arg-type]
    _check(blank_db, config)


def test_the_reference_counts_what_it_should() -> None:
    """The Python reference itself, on numbers worked by hand."""
    from tests.integration.search_helpers import ReferenceBM25

    ref = ReferenceBM25({1: Counter({"a": 2, "b": 1}), 2: Counter({"b": 1})})
    # N = 2, avgdl = 2; idf(a) = ln(1 + 1.5/1.5) = ln 2; tf 2, dl 3.
    expected_a = 0.6931471805599453 * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 1.5))
    assert ref.scores({"a"}) == {1: pytest.approx(expected_a, abs=1e-12)}
    assert set(ref.scores({"b", "c"})) == {1, 2}
