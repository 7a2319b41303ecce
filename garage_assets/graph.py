"""``distilled_facts`` and ``graph``: clustering the potential facts, then the AGE projection.

``distilled_facts`` is unpartitioned: a group spans sources (a claim restated in a note and in
a mail is one distilled fact), so no source partition could hold it. It depends on every
partition of ``potential_facts`` and of the default model's ``emb_<slug>``. ``graph`` follows
it. Both are materialized on demand (``garage cluster-facts`` does both from the shell).
"""

import signal
from typing import Any

import dagster as dg

from garage.clusters import ClusterError, cluster_facts
from garage.config import ConfigError, config_path, load_config
from garage.embed import RegistryError
from garage.graph import GraphUnavailable, has_age, rebuild_graph
from garage.inference import InferenceError
from garage.stopping import stop_on_signal
from resources.database import DatabaseResource
from resources.inference import InferenceResource


class ClusterRunConfig(dg.Config):
    full: bool = False
    ask_model: bool = True


def _default_vectors() -> list[str]:
    # The default model's vector asset, when the config names one (read as definitions load).
    try:
        config = load_config(config_path())
    except ConfigError:
        return []
    from garage.embed.registry import configured_models

    try:
        return [m.table for m in configured_models(config) if m.is_default]
    except RegistryError:
        return []


def build_distilled_facts() -> dg.AssetsDefinition:
    @dg.asset(
        name="distilled_facts",
        deps=["potential_facts", *_default_vectors()],
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
                report = cluster_facts(conn, garage_config, full=config.full, chat=chat, stop=stop)
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


@dg.asset(
    name="graph",
    deps=["distilled_facts"],
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
            report = rebuild_graph(conn, database.garage_config())
        except GraphUnavailable as error:
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
