"""Retrieval quality measures over a judged collection: nDCG@k, recall@k and MRR.

Search returns chunks; a judged collection judges documents. ``document_ranking`` turns a hit
list into the ranking of documents it implies (each document at the rank of its best chunk),
which is what the measures read. Binary or graded judgments both work: a judgment maps a
document to its gain (0 or absent means not relevant).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def document_ranking(document_ids: Iterable[str]) -> list[str]:
    """Documents in the order of their first hit, each once."""
    return list(dict.fromkeys(document_ids))


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain, the linear-gain form trec_eval uses: gain / log2(rank + 1)."""
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))


def ndcg_at(k: int, ranking: Sequence[str], judgments: Mapping[str, float]) -> float:
    """nDCG@k of ``ranking`` against the ideal ordering of every judged-relevant document."""
    if k <= 0:
        raise ValueError("k must be positive")
    ideal = dcg(sorted((g for g in judgments.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        raise ValueError("a query with no relevant document cannot be scored")
    return dcg([judgments.get(document, 0.0) for document in ranking[:k]]) / ideal


def recall_at(k: int, ranking: Sequence[str], judgments: Mapping[str, float]) -> float:
    """Share of the relevant documents found in the first ``k`` of ``ranking``."""
    if k <= 0:
        raise ValueError("k must be positive")
    relevant = {document for document, gain in judgments.items() if gain > 0}
    if not relevant:
        raise ValueError("a query with no relevant document cannot be scored")
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def reciprocal_rank(ranking: Sequence[str], judgments: Mapping[str, float]) -> float:
    """1 / the rank of the first relevant document in ``ranking``, 0 when none is there; its
    mean over the queries is MRR."""
    if not any(gain > 0 for gain in judgments.values()):
        raise ValueError("a query with no relevant document cannot be scored")
    for rank, document in enumerate(ranking, 1):
        if judgments.get(document, 0.0) > 0:
            return 1.0 / rank
    return 0.0
