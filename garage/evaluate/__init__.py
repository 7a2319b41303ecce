"""Retrieval quality on a judged collection: TREC-format queries and qrels, the measures
(nDCG@10, recall@100, MRR), and the runner that scores each search mode side by side."""

from garage.evaluate.metrics import (
    dcg,
    document_ranking,
    ndcg_at,
    recall_at,
    reciprocal_rank,
)
from garage.evaluate.run import (
    MODES,
    Evaluation,
    EvaluationError,
    Run,
    RunScores,
    evaluate,
    judgments_by_uri,
    resolve_documents,
)
from garage.evaluate.trec import CollectionError, Judgment, read_qrels, read_queries

__all__ = [
    "MODES",
    "CollectionError",
    "Evaluation",
    "EvaluationError",
    "Judgment",
    "Run",
    "RunScores",
    "dcg",
    "document_ranking",
    "evaluate",
    "judgments_by_uri",
    "ndcg_at",
    "read_qrels",
    "read_queries",
    "recall_at",
    "reciprocal_rank",
    "resolve_documents",
]
