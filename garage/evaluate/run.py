"""Measure search on a judged collection: every query through ``garage.search`` in each mode
(and each fusion, for hybrid), scored by nDCG@10, recall@100 and MRR.

Search returns chunks and judgments name documents: each document ranks at its best chunk,
over the first 100 hits (the most any front door may ask for). A judged document the index
does not hold still counts as relevant — it is a miss every mode shares — and is listed, so a
user sees when the measure is about files Garage never indexed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from garage.config import GarageConfig
from garage.evaluate.metrics import document_ranking, ndcg_at, recall_at, reciprocal_rank
from garage.evaluate.trec import Judgment
from garage.inference import InferenceClient
from garage.search import MAX_LIMIT, SearchQuery, search
from garage.search.fusion import FUSIONS

MODES = ("keyword", "vector", "hybrid")


class EvaluationError(Exception):
    """A measurement that cannot be made as asked (e.g. hybrid ran as keyword only)."""


@dataclass(frozen=True)
class Run:
    """One column of the table: a mode, and for hybrid a fusion (None: the config's)."""

    mode: str
    fusion: str | None = None

    @property
    def label(self) -> str:
        return f"{self.mode} ({self.fusion})" if self.fusion else self.mode


@dataclass(frozen=True)
class RunScores:
    label: str
    mode: str
    fusion: str | None
    ndcg_at_10: float
    recall_at_100: float
    mrr: float
    p50_ms: float
    # Query id → nDCG@10, for paired comparisons between runs.
    per_query_ndcg: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluation:
    queries: int  # scored: in the queries file with at least one relevant judgment
    skipped_queries: list[str]  # queries with no relevant judgment (nothing to score)
    unjudged_queries: list[str]  # in the queries file but not in the qrels
    judged_documents: int
    unindexed_documents: list[str]  # judged relevant, named in the qrels, not in the index
    runs: list[RunScores]


def resolve_documents(conn: psycopg.Connection[Any], names: Iterable[str]) -> dict[str, str]:
    """Each name a qrels file uses → the URI of the indexed document it names.

    A name is a document URI as Garage stores it (``file:///…``, a Messages thread's key), an
    absolute path, or a path relative to a configured source's root (sources in name order,
    the first that holds it). Names that match nothing are left out.
    """
    with conn.cursor(row_factory=tuple_row) as cur:
        uris = {uri for (uri,) in cur.execute("SELECT uri FROM documents")}
        roots = [
            Path(root)
            for (source_roots,) in cur.execute("SELECT roots FROM sources ORDER BY name")
            for root in source_roots
        ]
    found: dict[str, str] = {}
    for name in names:
        candidates = [name]
        path = Path(name).expanduser()
        if path.is_absolute():
            candidates.append(path.as_uri())
        elif "://" not in name:
            candidates.extend((root / path).as_uri() for root in roots)
        for candidate in candidates:
            if candidate in uris:
                found[name] = candidate
                break
    return found


def judgments_by_uri(
    judgments: Iterable[Judgment], resolved: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """Query id → {document → gain}; a document keyed by its URI when indexed, else by the
    name the qrels gave it (so it counts in the ideal ranking and is never found)."""
    by_query: dict[str, dict[str, float]] = {}
    for judgment in judgments:
        document = resolved.get(judgment.document, judgment.document)
        by_query.setdefault(judgment.query_id, {})[document] = judgment.gain
    return by_query


def evaluate(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    queries: Mapping[str, str],
    judgments: Iterable[Judgment],
    runs: Iterable[Run],
    *,
    client: InferenceClient | None = None,
    progress: Callable[[str], None] | None = None,
) -> Evaluation:
    """Score every run on the queries that have a relevant judgment."""
    judgments = list(judgments)
    resolved = resolve_documents(conn, {j.document for j in judgments})
    judged = judgments_by_uri(judgments, resolved)
    scored = {
        query_id: text
        for query_id, text in queries.items()
        if any(gain > 0 for gain in judged.get(query_id, {}).values())
    }
    skipped = [q for q in queries if q in judged and q not in scored]
    unjudged = [q for q in queries if q not in judged]
    relevant_names = {j.document for j in judgments if j.gain > 0 and j.query_id in scored}
    unindexed = sorted(name for name in relevant_names if name not in resolved)
    if not scored:
        raise EvaluationError(
            "no query of the queries file has a relevant judgment in the qrels file "
            "(do their query ids match?)"
        )
    results = []
    for run in runs:
        results.append(_score_run(conn, config, run, scored, judged, client))
        if progress is not None:
            progress(run.label)
    return Evaluation(
        queries=len(scored),
        skipped_queries=skipped,
        unjudged_queries=unjudged,
        judged_documents=len({j.document for j in judgments}),
        unindexed_documents=unindexed,
        runs=results,
    )


def _score_run(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    run: Run,
    queries: Mapping[str, str],
    judged: Mapping[str, Mapping[str, float]],
    client: InferenceClient | None,
) -> RunScores:
    if run.mode not in MODES:
        raise EvaluationError(f"mode {run.mode!r} is not one of {', '.join(MODES)}")
    if run.fusion is not None:
        if run.mode != "hybrid":
            raise EvaluationError(f"{run.label}: only hybrid search fuses")
        if run.fusion not in FUSIONS:
            raise EvaluationError(f"fusion {run.fusion!r} is not one of {', '.join(FUSIONS)}")
        settings = config.search.model_copy(update={"fusion": run.fusion})
        config = config.model_copy(update={"search": settings})
    ndcg, recall, mrr, took = {}, [], [], []
    for query_id, text in queries.items():
        query = SearchQuery(text=text, limit=MAX_LIMIT, mode=run.mode)  # type: ignore[arg-type]
        response = search(conn, config, query, client=client)
        if response.mode != run.mode:
            raise EvaluationError(f"{run.label} ran as {response.mode}: {response.degraded}")
        ranking = document_ranking(hit.uri for hit in response.hits)
        gains = judged[query_id]
        ndcg[query_id] = ndcg_at(10, ranking, gains)
        recall.append(recall_at(100, ranking, gains))
        mrr.append(reciprocal_rank(ranking, gains))
        took.append(response.took_ms)
    return RunScores(
        label=run.label,
        mode=run.mode,
        fusion=run.fusion,
        ndcg_at_10=statistics.mean(ndcg.values()),
        recall_at_100=statistics.mean(recall),
        mrr=statistics.mean(mrr),
        p50_ms=statistics.median(took),
        per_query_ndcg=ndcg,
    )
