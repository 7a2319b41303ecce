"""One ``emb_<slug>`` asset per configured embedding model, partitioned by source.

Each materialization is the resumable backfill for that model over that source's chunks: what
already has a vector is skipped, so a re-run after an edit embeds only the chunks that changed.
The models come from the Garage config when the definitions load; a model added later appears
when the code location reloads.
"""

import logging

import dagster as dg

from garage.config import ConfigError, GarageConfig, config_path, load_config
from garage.embed import RegisteredModel, RegistryError, backfill, register_models
from garage.embed.registry import configured_models
from garage.inference import InferenceError
from garage_assets.partitions import sources_partitions
from resources.database import DatabaseResource
from resources.inference import InferenceResource

log = logging.getLogger(__name__)


def embedding_asset(model: RegisteredModel) -> dg.AssetsDefinition:
    @dg.asset(
        name=model.table,
        deps=["chunks"],
        partitions_def=sources_partitions,
        group_name="embeddings",
        description=(
            f"Vectors of every {model.modality} chunk under {model.name} "
            f"({model.provider} {model.model_id}, {model.dimensions} dimensions)."
        ),
        # New chunks are embedded as soon as their partition of `chunks` materializes.
        automation_condition=dg.AutomationCondition.eager(),
        kinds={"postgres", model.provider},
    )
    def _embeddings(
        context: dg.AssetExecutionContext,
        database: DatabaseResource,
        inference: InferenceResource,
    ) -> dg.MaterializeResult:
        config = database.garage_config()
        source = context.partition_key
        try:
            config.source(source)
        except KeyError as error:
            raise dg.Failure(str(error.args[0])) from None
        try:
            with database.connection() as conn, inference.client() as client:
                conn.autocommit = True
                registered = {m.name: m for m in register_models(conn, config)}
                current = registered.get(model.name)
                if current is None:
                    raise dg.Failure(
                        f"{model.name} is no longer in the config's embedding.models; reload "
                        "the code location"
                    )
                report = backfill(
                    conn,
                    client,
                    current,
                    source=source,
                    batch_size=config.embedding.batch_size,
                    batch_tokens=config.embedding.batch_tokens,
                )
        except (InferenceError, RegistryError) as error:
            raise dg.Failure(str(error)) from None
        context.log.info(report.summary())
        return dg.MaterializeResult(
            metadata={
                "vectors_written": report.vectors_written,
                "vectors_reused": report.vectors_reused,
                "pending_at_start": report.pending,
                "skipped_modality": report.skipped_modality,
                "truncated": report.truncated,
                "seconds": round(report.seconds, 2),
                "chunks_per_second": round(report.chunks_per_second, 1),
                "model": f"{current.provider} {current.model_id} @ {current.host}",
                "dimensions": current.dimensions,
                "notes": "; ".join(report.notes) or "none",
            }
        )

    return _embeddings


def embedding_assets(config: GarageConfig | None = None) -> list[dg.AssetsDefinition]:
    if config is None:
        try:
            config = load_config(config_path())
        except ConfigError as error:
            # The ingest assets still load; the broken config is reported where it is used.
            log.error("embedding assets not loaded: %s", error)
            return []
    try:
        models = configured_models(config)
    except RegistryError as error:
        log.error("embedding assets not loaded: %s", error)
        return []
    return [embedding_asset(model) for model in models]
