"""The jobs sensors and schedules launch."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from garage_assets.automation import DOWNSTREAM_PREFIXES

# documents + chunks of one source: the unit every trigger asks for. Partitioned by source, as
# its assets are; their asset checks ride along (a selection of assets includes its checks).
ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets("documents", "chunks"),
    description="One incremental ingest pass over one source partition.",
)


def downstream_jobs(
    assets: Sequence[dg.AssetsDefinition | dg.AssetSpec],
) -> list[dg.UnresolvedAssetJobDefinition]:
    """A job per asset downstream of ``chunks`` (``emb_<slug>_job`` and
    ``potential_fact_emb_<slug>_job`` for each model), so that a new model can be backfilled
    over every source with ``dagster job backfill``."""
    keys = []
    for item in assets:
        specs = item.specs if isinstance(item, dg.AssetsDefinition) else [item]
        keys += [s.key for s in specs if s.key.path[-1].startswith(DOWNSTREAM_PREFIXES)]
    return [
        dg.define_asset_job(
            f"{key.path[-1]}_job",
            selection=dg.AssetSelection.assets(key),
            description=f"{key.to_user_string()} of one source partition.",
        )
        for key in keys
    ]
