"""``distilled_facts`` and ``graph``: clustering the potential facts, then the AGE projection.

``distilled_facts`` is unpartitioned: a group spans sources (a claim restated in a note and in
a mail is one distilled fact), so no source partition could hold it. It depends on every
partition of ``potential_facts`` and of the clustering model's vectors (the default model's
``potential_fact_emb_<slug>``, and its ``emb_<slug>``), and refuses to run while a potential
fact has no vector under that model: clustering reads only the facts that have one, and would
leave the others out without a word. ``graph`` projects documents, chunks, authors, potential
and distilled facts, and depends on each. Both are materialized on demand (``garage
cluster-facts`` does both from the shell).
"""

import signal
from typing import Any

import dagster as dg
import psycopg

from garage import invariants
from garage.clusters import ClusterError, cluster_facts, clustering_model
from garage.config import GarageConfig
from garage.embed import RegistryError
from garage.embed.registry import configured_models
from garage.graph import GraphUnavailable, has_age, rebuild_graph
from garage.inference import InferenceError
from garage.locks import Busy, Waiting
from garage.stopping import StopSignal, stop_on_signal
from garage_assets.doors import door
from resources.database import DatabaseResource
from resources.inference import InferenceResource


class ClusterRunConfig(dg.Config):
    full: bool = False
    ask_model: bool = True
    # Distil the facts that have a vector even when some have none: for facts that can never
    # get one (mail and chats kept from an embedding host off this machine by the egress rule).
    allow_facts_without_vectors: bool = False


def clustering_vectors(config: GarageConfig | None) -> list[str]:
    """The assets holding the clustering model's vectors: the default text model's fact and
    chunk vectors; none without a config, or when the default cannot cluster."""
    if config is None:
        return []
    try:
        models = configured_models(config)
    except RegistryError:
        return []
    return [
        table
        for m in models
        if m.is_default and m.modality == "text" and not m.binary_quantization
        for table in (m.fact_table, m.table)
    ]


def facts_without_vectors(
    conn: psycopg.Connection[Any], config: GarageConfig
) -> invariants.Finding:
    """Whether every potential fact has a vector under the clustering model; raises
    ``ClusterError`` or ``RegistryError`` when there is no clustering model to ask about."""
    return invariants.facts_without_vectors(conn, clustering_model(conn, config))


def _refuse_missing_vectors(conn: psycopg.Connection[Any], config: GarageConfig) -> None:
    finding = facts_without_vectors(conn, config)
    if not finding.passed:
        raise dg.Failure(
            description=(
                f"{finding.detail}; or set allow_facts_without_vectors in the run config to "
                "distil only the facts that have one"
            ),
            metadata={"facts_without_vector": finding.count},
        )


def build_distilled_facts(config: GarageConfig | None) -> dg.AssetsDefinition:
    @dg.asset(
        name="distilled_facts",
        deps=["potential_facts", *clustering_vectors(config)],
        group_name="facts",
        description=(
            "Potential facts linked to distilled facts: restatements within documents, groups "
            "across the corpus under the guard, anchors from mail headers, confirmed by the "
            "local chat model."
        ),
        kinds={"postgres"},
    )
    def distilled_facts(
        context: dg.AssetExecutionContext,
        config: ClusterRunConfig,
        database: DatabaseResource,
        inference: InferenceResource,
    ) -> dg.MaterializeResult:
        garage_config = database.garage_config()
        with (
            database.connection() as conn,
            inference.client() as client,
            stop_on_signal(signal.SIGINT, "run terminated in Dagster") as stop,
        ):
            conn.autocommit = True
            chat = None
            if config.ask_model and (garage_config.inference.model or garage_config.facts.model):
                from garage.inference import LocalChatModel

                chat = LocalChatModel.from_config(garage_config, client)
            try:
                if not config.allow_facts_without_vectors:
                    _refuse_missing_vectors(conn, garage_config)
                report = cluster_facts(
                    conn,
                    garage_config,
                    full=config.full,
                    chat=chat,
                    stop=stop,
                    waiting=_waiting(context, stop),
                )
            except Busy as error:
                if stop.requested:
                    raise dg.DagsterExecutionInterruptedError() from None
                raise dg.Failure(str(error)) from None
            except (ClusterError, InferenceError, RegistryError) as error:
                raise dg.Failure(str(error)) from None
        context.log.info(report.summary())
        metadata: dict[str, Any] = {
            key: value
            for key, value in report.as_dict().items()
            if isinstance(value, int | str) and not isinstance(value, bool)
        }
        metadata["seconds"] = round(report.seconds, 2)
        metadata["notes"] = "; ".join(report.notes) or "none"
        return dg.MaterializeResult(metadata=metadata)

    return distilled_facts


def _waiting(context: dg.AssetExecutionContext, stop: StopSignal | None) -> Waiting:
    """Waiting for the corpus-wide lock (a `garage cluster-facts` or `graph rebuild` in a
    shell) is said in the run's log; a shell waiting behind this run is told its name."""
    return Waiting(notify=context.log.info, stop=stop, door=door(context))


@dg.asset(
    name="graph",
    # What it projects: documents and their authors, chunks, potential and distilled facts.
    deps=["documents", "chunks", "potential_facts", "distilled_facts"],
    group_name="facts",
    description="The tables projected into the Apache AGE graph `garage` (where AGE is present).",
    kinds={"postgres"},
)
def graph(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    with database.connection() as conn:
        conn.autocommit = True
        if not has_age(conn):
            context.log.warning("the server has no Apache AGE: there is no graph to build")
            return dg.MaterializeResult(metadata={"graph": "absent: no Apache AGE"})
        try:
            report = rebuild_graph(conn, database.garage_config(), _waiting(context, None))
        except (GraphUnavailable, Busy) as error:
            raise dg.Failure(str(error)) from None
    context.log.info(report.summary())
    metadata: dict[str, int | float | str] = {
        f"vertices_{label}": count for label, count in report.vertices.items()
    }
    metadata.update({f"edges_{label}": count for label, count in report.edges.items()})
    metadata["vertices"] = sum(report.vertices.values())
    metadata["edges"] = sum(report.edges.values())
    metadata["unresolved_edges"] = report.unresolved_edges
    metadata["seconds"] = round(report.seconds, 2)
    return dg.MaterializeResult(metadata=metadata)
