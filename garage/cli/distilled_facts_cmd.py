"""``garage cluster-facts``: the ``distilled_facts`` stage from the shell (then the graph)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

import click

from garage.cli.common import (
    GarageContext,
    ProgressBars,
    echo_json,
    no_wait_option,
    user_errors,
    waiting,
)
from garage.cli.graph_cmd import graph_errors
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated


@click.command("cluster-facts")
@click.option("--full", is_flag=True, help="Regroup everything rather than attach what is new.")
@click.option("--no-model", is_flag=True, help="Ask no chat model; groups to confirm stay pending.")
@click.option("--no-graph", is_flag=True, help="Do not re-project the graph afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@no_wait_option
@click.pass_obj
def cluster_facts_cmd(
    obj: GarageContext, full: bool, no_model: bool, no_graph: bool, as_json: bool, no_wait: bool
) -> None:
    """Link every potential fact to one distilled fact, then rebuild the graph.

    Within a document, restatements point at the longest statement; across the corpus,
    representatives are grouped by the default model's vectors (never across a disagreement on
    numbers, dates or negation); mail headers anchor groups. Groups that are not tight go to
    the local chat model, which confirms them with one sentence or dissolves them.
    """
    from garage.clusters import cluster_facts
    from garage.graph import GraphUnavailable, has_age, rebuild_graph
    from garage.inference import EgressGuard, InferenceClient, LocalChatModel
    from garage.stopping import stop_on_sigterm

    config = obj.config()
    bars = ProgressBars(" facts", quiet=as_json)
    graph: dict[str, Any] | str | None = None
    with user_errors(), graph_errors(), stop_on_sigterm() as stop:
        url = resolve_url(config)
        ensure_migrated(url)
        client = InferenceClient(
            EgressGuard.from_config(config), timeout=config.inference.timeout_seconds
        )
        with connect(url, autocommit=True) as conn, client:
            chat = None
            if not no_model and (config.inference.model or config.facts.model):
                chat = LocalChatModel.from_config(config, client)
            try:
                report = cluster_facts(
                    conn,
                    config,
                    full=full,
                    chat=chat,
                    progress=bars,
                    stop=stop,
                    waiting=waiting(no_wait, stop),
                )
            finally:
                bars.close()
            if not no_graph:
                if has_age(conn):
                    try:
                        graph = asdict(rebuild_graph(conn, config, waiting(no_wait, stop)))
                    except GraphUnavailable as error:
                        graph = str(error)
                else:
                    graph = "absent: the server has no Apache AGE"
    if as_json:
        echo_json(report.as_dict() | {"graph": graph})
    else:
        click.echo(report.summary())
        if isinstance(graph, dict):
            click.echo(f"graph: {sum(graph['vertices'].values())} vertices, "
                       f"{sum(graph['edges'].values())} edges")  # fmt: skip
        elif graph:
            click.echo(f"graph: {graph}")
    if stop.requested:
        sys.exit(143)
