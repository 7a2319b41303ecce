"""The retrieval-quality measures, and the judged collection bench/quality.py assembles."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from garage.evaluate.metrics import dcg, document_ranking, ndcg_at, recall_at, reciprocal_rank
from tests.material import material

ROOT = Path(__file__).resolve().parents[2]


def _bench_quality() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_quality", ROOT / "bench" / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_document_ranking_keeps_each_document_at_its_best_chunk() -> None:
    assert document_ranking(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_ndcg_by_hand() -> None:
    judgments = {"a": 1.0, "b": 1.0}
    # Relevant at ranks 1 and 3: (1 + 1/log2(4)) / (1 + 1/log2(3)).
    expected = (1 + 1 / 2) / (1 + 1 / math.log2(3))
    assert ndcg_at(10, ["a", "x", "b"], judgments) == pytest.approx(expected)
    assert ndcg_at(10, ["a", "b"], judgments) == pytest.approx(1.0)
    assert ndcg_at(10, ["x", "y"], judgments) == 0.0
    # Only the first k count, and the ideal is cut at k too.
    assert ndcg_at(1, ["x", "a"], judgments) == 0.0
    assert ndcg_at(1, ["b", "x"], judgments) == pytest.approx(1.0)


def test_graded_gains_and_unjudged_documents() -> None:
    judgments = {"a": 2.0, "b": 1.0, "n": 0.0}
    assert dcg([2.0, 1.0]) == pytest.approx(2 + 1 / math.log2(3))
    # The better document second: 1 + 2/log2(3) against the ideal 2 + 1/log2(3).
    assert ndcg_at(10, ["b", "a"], judgments) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )
    # A document judged 0 is no better than an unjudged one.
    assert ndcg_at(10, ["n", "a", "b"], judgments) == ndcg_at(10, ["z", "a", "b"], judgments)


def test_recall() -> None:
    judgments = {"a": 1.0, "b": 1.0, "c": 0.0}
    assert recall_at(100, ["x", "a", "c"], judgments) == 0.5
    assert recall_at(1, ["x", "a", "b"], judgments) == 0.0
    assert recall_at(3, ["x", "a", "b"], judgments) == 1.0


def test_a_query_without_relevant_documents_or_a_bad_k_is_refused() -> None:
    with pytest.raises(ValueError, match="no relevant"):
        ndcg_at(10, ["a"], {"a": 0.0})
    with pytest.raises(ValueError, match="no relevant"):
        recall_at(10, ["a"], {})
    with pytest.raises(ValueError, match="positive"):
        ndcg_at(0, ["a"], {"a": 1.0})


def test_the_faq_collection_has_its_questions_as_queries_and_answers_as_documents() -> None:
    quality = _bench_quality()
    collection = quality.faq_collection(material("python3.11-doc") / quality.SOURCES / "faq")
    assert len(collection.judgments) >= 150
    assert len(collection.documents) >= len(collection.judgments)
    for question, judged in collection.judgments.items():
        assert question.endswith("?")
        assert judged and all(name in collection.documents for name in judged)
        for name in judged:
            # The question is not inside its own answer: nothing to match verbatim.
            assert question not in collection.documents[name]
    # Asked twice, in general.rst and installed.rst: both answers are judged relevant.
    assert len(collection.judgments["What is Python?"]) == 2
    # A known pair, read from the page by hand.
    [answer] = collection.judgments["How do I copy a file?"].keys()
    assert "shutil" in collection.documents[answer]


def test_sections_split_at_every_reST_title() -> None:
    quality = _bench_quality()
    text = "Title\n=====\n\nintro\n\nWhy?\n----\n\nbecause\n\n=====\nOver\n=====\n\nlast\n"
    assert quality.sections(text) == [
        ("Title", "intro"),
        ("Why?", "because"),
        ("Over", "last"),
    ]


def test_reciprocal_rank_is_one_over_the_first_relevant_rank() -> None:
    judgments = {"b": 1.0, "d": 2.0, "x": 0.0}
    assert reciprocal_rank(["x", "b", "d"], judgments) == 0.5
    assert reciprocal_rank(["d"], judgments) == 1.0
    assert reciprocal_rank(["x", "y"], judgments) == 0.0  # a judged non-relevant one is no hit
    with pytest.raises(ValueError, match="no relevant document"):
        reciprocal_rank(["a"], {"a": 0.0})
