"""Per configured embedding model, two assets partitioned by source: ``emb_<slug>``, the
vectors of the source's content chunks (after ``chunks``), and ``potential_fact_emb_<slug>``,
the vectors of its potential facts (after ``potential_facts``).

Each materialization is the resumable backfill for that model over that source: what already
has a vector is skipped, so a re-run after an edit embeds only the chunks that changed. Fact
vectors are an asset of their own because facts come later than chunks: embedded with the
content, they would wait for the next ingest, and ``distilled_facts`` (which clusters only the
facts with a vector) would leave the new ones out without a word. The models come from the
Garage config when the definitions load; a model added later appears when the code location
reloads.
"""

import logging
import signal
from dataclasses import dataclass
from typing import Any

import dagster as dg

from garage.config import GarageConfig
from garage.embed import RegisteredModel, RegistryError, embed
from garage.embed.backfill import BackfillReport, Chunks
from garage.embed.registry import configured_models
from garage.inference import InferenceError
from garage.locks import Busy, Waiting
from garage.stopping import stop_on_signal
from garage_assets.doors import door
from garage_assets.partitions import sources_partitions
from resources.database import DatabaseResource
from resources.inference import InferenceResource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Vectors:
    """One kind of vector asset: which chunks it embeds, after what, in which group."""

    chunks: Chunks
    upstream: str
    group: str

    def name(self, model: RegisteredModel) -> str:
        return model.fact_table if self.chunks == "facts" else model.table

    def describe(self, model: RegisteredModel) -> str:
        what = (
            "every potential fact"
            if self.chunks == "facts"
            else f"every {model.modality} content chunk"
        )
        return (
            f"Vectors of {what} under {model.name} ({model.provider} {model.model_id}, "
            f"{model.dimensions} dimensions)."
        )


CONTENT = _Vectors("content", "chunks", "embeddings")
FACTS = _Vectors("facts", "potential_facts", "facts")


def _vectors_asset(model: RegisteredModel, kind: _Vectors) -> dg.AssetsDefinition:
    @dg.asset(
        name=kind.name(model),
        deps=[kind.upstream],
        partitions_def=sources_partitions,
        group_name=kind.group,
        description=kind.describe(model),
        # New chunks (or facts) are embedded as soon as their upstream partition materializes.
        automation_condition=dg.AutomationCondition.eager(),
        kinds={"postgres", model.provider},
    )
    def _embeddings(
        context: dg.AssetExecutionContext,
        database: DatabaseResource,
        inference: InferenceResource,
    ) -> dg.MaterializeResult:
        report, current = _embed(context, database, inference, model, kind.chunks)
        context.log.info(report.summary())
        return dg.MaterializeResult(metadata=_metadata(report, current))

    return _embeddings


def _embed(
    context: dg.AssetExecutionContext,
    database: DatabaseResource,
    inference: InferenceResource,
    model: RegisteredModel,
    chunks: Chunks,
) -> tuple[BackfillReport, RegisteredModel]:
    """The backfill of one source under ``model``, as the model is registered now. A run that
    waits for another writer of the source (a `garage` command, say) says who in its log, and
    a command waiting behind it is told which Dagster run holds the source."""
    config = database.garage_config()
    source = context.partition_key
    try:
        config.source(source)
    except KeyError as error:
        raise dg.Failure(str(error.args[0])) from None
    with (
        database.connection() as conn,
        inference.client() as client,
        stop_on_signal(signal.SIGINT, "run terminated in Dagster") as stop,
    ):
        conn.autocommit = True
        try:
            current = _configured(config, model)
            reports = embed(
                conn,
                client,
                config,
                model_names=[model.name],
                source=source,
                stop=stop,
                waiting=Waiting(notify=context.log.info, stop=stop, door=door(context)),
                chunks=chunks,
            )
        except Busy as error:
            if stop.requested:
                raise dg.DagsterExecutionInterruptedError() from None
            raise dg.Failure(str(error)) from None
        except (InferenceError, RegistryError) as error:
            raise dg.Failure(str(error)) from None
    if stop.requested or not reports:
        for report in reports:
            context.log.warning(report.summary())
        raise dg.DagsterExecutionInterruptedError()
    return reports[0], current


def _configured(config: GarageConfig, model: RegisteredModel) -> RegisteredModel:
    """The model as the config names it now (what ``embed`` registers)."""
    current = {m.name: m for m in configured_models(config)}.get(model.name)
    if current is None:
        raise dg.Failure(
            f"{model.name} is no longer in the config's embedding.models; reload the code location"
        )
    return current


def _metadata(report: BackfillReport, model: RegisteredModel) -> dict[str, Any]:
    return {
        "vectors_written": report.vectors_written,
        "vectors_reused": report.vectors_reused,
        "pending_at_start": report.pending,
        "skipped_modality": report.skipped_modality,
        "truncated": report.truncated,
        "seconds": round(report.seconds, 2),
        "chunks_per_second": round(report.chunks_per_second, 1),
        "model": f"{model.provider} {model.model_id} @ {model.host}",
        "dimensions": model.dimensions,
        "table": report.table,
        "notes": "; ".join(report.notes) or "none",
    }


def embedding_asset(model: RegisteredModel) -> dg.AssetsDefinition:
    """``emb_<slug>``: the model's vectors of the content chunks."""
    return _vectors_asset(model, CONTENT)


def fact_embedding_asset(model: RegisteredModel) -> dg.AssetsDefinition:
    """``potential_fact_emb_<slug>``: the model's vectors of the potential facts."""
    return _vectors_asset(model, FACTS)


def embedding_assets(config: GarageConfig | None) -> list[dg.AssetsDefinition]:
    """Both vector assets of every configured model; none without a config (a broken one is
    reported where it is used). Facts are text, so an image model has no fact vectors."""
    if config is None:
        return []
    try:
        models = configured_models(config)
    except RegistryError as error:
        log.error("embedding assets not loaded: %s", error)
        return []
    assets = [embedding_asset(model) for model in models]
    return assets + [fact_embedding_asset(m) for m in models if m.modality == "text"]
