"""``distilled_facts``: the potential facts of every source linked to distilled facts.

It is unpartitioned: a group spans sources (a claim restated in a note and in a mail is one
distilled fact), so no source partition could hold it. It depends on every partition of
``potential_facts`` and of the clustering model's vectors (the default model's
``potential_fact_emb_<slug>``, and its ``emb_<slug>``), and refuses to run while a potential
fact has no vector under that model: clustering reads only the facts that have one, and would
leave the others out without a word. Materialized on demand (``garage cluster-facts`` does it,
and the graph, from the shell); ``graph.py`` projects what it made.
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
from garage.inference import InferenceError
from garage.locks import Busy
from garage.stopping import stop_on_signal
from garage_assets.doors import corpus_waiting
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
                    waiting=corpus_waiting(context, stop),
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
