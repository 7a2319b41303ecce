"""The jobs sensors and schedules launch."""

from __future__ import annotations

import dagster as dg

# documents + chunks of one source (partitioned by source, as they are): the unit every trigger asks for. Their asset checks ride
# along (a selection of assets includes their checks).
ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets("documents", "chunks"),
    description="One incremental ingest pass over one source partition.",
)
