"""The ``potential_facts`` asset: ``enrich-facts`` over one source partition.

Downstream of ``documents``; materialized on demand or by backfill, and — when the config asks
for it (``facts.automatic``, off by default because extraction on a local model is slow) —
after each ingest of the source. Stale-only unless the run config says otherwise: a
materialization brings the source's facts up to date, re-running only the prompts whose run
is not current. The facts' vectors follow it, eagerly, as ``potential_fact_emb_<slug>`` per
model (``garage_assets.embeddings``).
"""

import signal

import dagster as dg

from garage.config import GarageConfig
from garage.facts import FactsError, enrich_facts
from garage.inference import InferenceError
from garage.locks import Busy, Waiting
from garage.stopping import stop_on_signal
from garage_assets.doors import door
from garage_assets.partitions import sources_partitions
from resources.database import DatabaseResource
from resources.inference import InferenceResource


class FactsRunConfig(dg.Config):
    stale_only: bool = True
    prompts: list[str] = []
    limit: int | None = None


def build_potential_facts(config: GarageConfig | None) -> dg.AssetsDefinition:
    """The asset, following ingest when the config (read as the definitions load) says
    ``facts.automatic``; without a config (a broken one) facts stay manual, and the runs that
    do happen report the config error themselves."""
    automatic = config is not None and config.facts.automatic

    @dg.asset(
        name="potential_facts",
        deps=["documents"],
        partitions_def=sources_partitions,
        group_name="facts",
        description=(
            "Span-grounded potential facts of the source's documents (LangExtract on the local "
            "chat model, and the facts mail and chat headers state)."
        ),
        # None keeps it off the automation sensor; facts.automatic makes it follow ingest.
        automation_condition=dg.AutomationCondition.eager() if automatic else None,
        kinds={"postgres"},
    )
    def potential_facts(
        context: dg.AssetExecutionContext,
        config: FactsRunConfig,
        database: DatabaseResource,
        inference: InferenceResource,
    ) -> dg.MaterializeResult:
        garage_config = database.garage_config()
        source = context.partition_key
        try:
            garage_config.source(source)
        except KeyError as error:
            raise dg.Failure(str(error.args[0])) from None
        with (
            database.connection() as conn,
            inference.client() as client,
            stop_on_signal(signal.SIGINT, "run terminated in Dagster") as stop,
        ):
            conn.autocommit = True
            try:
                report = enrich_facts(
                    conn,
                    garage_config,
                    client=client,
                    source=source,
                    prompt_names=config.prompts,
                    stale_only=config.stale_only,
                    limit=config.limit,
                    stop=stop,
                    # Waiting for another writer of the source is said in the run's log.
                    waiting=Waiting(notify=context.log.info, stop=stop, door=door(context)),
                )
            except Busy as error:
                if stop.requested:
                    raise dg.DagsterExecutionInterruptedError() from None
                raise dg.Failure(str(error)) from None
            except (FactsError, InferenceError) as error:
                raise dg.Failure(str(error)) from None
        context.log.info(report.summary())
        for line in report.errors[:50]:
            context.log.warning(line)
        if stop.requested:
            raise dg.DagsterExecutionInterruptedError()
        return dg.MaterializeResult(
            metadata={
                "documents_read": report.documents_read,
                "documents_current": report.documents_current,
                "facts_stored": report.facts_stored,
                "metadata_facts": report.metadata_facts,
                "dropped_ungrounded": report.dropped_ungrounded,
                "dropped_not_claims": report.dropped_not_claims,
                "prompts_run": report.prompts_run,
                "prompts": ", ".join(report.prompts),
                "refused_egress": report.refused_egress,
                "failed": report.failed,
                "unparsed_replies": report.unparsed_replies,
                "seconds": round(report.seconds, 2),
                "chars_per_second": round(report.chars_per_second, 1),
                "model": report.model or "none (metadata only)",
                "stale_only": config.stale_only,
            }
        )

    return potential_facts
