"""``garage eval``: retrieval quality of the user's own index on a judged collection."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from garage.cli.common import GarageContext, echo_json, user_errors
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated

MODES = ("keyword", "vector", "hybrid")
FUSIONS = ("rrf", "convex")


@click.command("eval")
@click.argument("queries_file", metavar="QUERIES", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("qrels_file", metavar="QRELS", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(MODES),
    help="A mode to measure (repeatable; default: all three).",
)
@click.option(
    "--fusion",
    "fusions",
    multiple=True,
    type=click.Choice(FUSIONS),
    help="Measure hybrid with this fusion (repeatable; default: the config's search.fusion).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the measures as JSON.")
@click.pass_obj
def eval_cmd(
    obj: GarageContext,
    queries_file: Path,
    qrels_file: Path,
    modes: tuple[str, ...],
    fusions: tuple[str, ...],
    as_json: bool,
) -> None:
    """Measure search on a judged collection: nDCG@10, recall@100 and MRR per mode.

    QUERIES is a TREC topics file, BEIR-style JSON lines, or one 'ID<tab>TEXT' a line; QRELS
    is 'QUERY_ID 0 DOCUMENT RELEVANCE' a line (or 'QUERY_ID DOCUMENT RELEVANCE'). A document is
    named by its URI, its absolute path, or its path under a source's root.
    """
    from garage.evaluate import (
        CollectionError,
        EvaluationError,
        Run,
        evaluate,
        read_qrels,
        read_queries,
    )
    from garage.search import SearchError

    config = obj.config()
    try:
        queries = read_queries(queries_file)
        judgments = read_qrels(qrels_file)
    except CollectionError as error:
        raise click.ClickException(str(error)) from None
    runs: list[Run] = []
    for mode in modes or MODES:
        if mode == "hybrid" and fusions:
            runs.extend(Run("hybrid", fusion) for fusion in dict.fromkeys(fusions))
        elif Run(mode) not in runs:
            runs.append(Run(mode))
    if fusions and "hybrid" not in (modes or MODES):
        raise click.UsageError("--fusion measures hybrid search: add --mode hybrid")
    with user_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url, autocommit=True) as conn:
            try:
                result = evaluate(
                    conn,
                    config,
                    queries,
                    judgments,
                    runs,
                    progress=None if as_json else lambda label: click.echo(f"  {label}: done"),
                )
            except (EvaluationError, SearchError) as error:
                raise click.ClickException(str(error)) from None
    if as_json:
        echo_json({"queries_file": queries_file, "qrels_file": qrels_file, **asdict(result)})
        return
    summary = f"{result.queries} queries scored, {result.judged_documents} judged documents"
    if result.skipped_queries:
        summary += f"; {len(result.skipped_queries)} queries with no relevant judgment"
    if result.unjudged_queries:
        summary += f"; {len(result.unjudged_queries)} queries not in the qrels"
    click.echo(summary)
    if result.unindexed_documents:
        shown = ", ".join(result.unindexed_documents[:3])
        click.echo(
            f"note: {len(result.unindexed_documents)} relevant documents are not in the index "
            f"(every mode misses them), e.g. {shown}",
            err=True,
        )
    click.echo(f"{'mode':<18} {'nDCG@10':>8} {'recall@100':>11} {'MRR':>7} {'p50 ms':>8}")
    for run in result.runs:
        click.echo(
            f"{run.label:<18} {run.ndcg_at_10:>8.3f} {run.recall_at_100:>11.3f} "
            f"{run.mrr:>7.3f} {run.p50_ms:>8.1f}"
        )
