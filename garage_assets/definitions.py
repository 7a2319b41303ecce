"""The Dagster definitions `dagster dev -w workspace.yaml` loads."""

from __future__ import annotations

import dagster as dg

from garage.config import load_config
from garage_assets.automation import automation_sensor, follow_upstream
from garage_assets.checks import ingest_checks
from garage_assets.ingest import ingest
from garage_assets.jobs import downstream_jobs, ingest_job
from resources.database import DatabaseResource
from sensors.changes import build_source_changes_sensor
from sensors.partitions import source_partitions_sensor
from sensors.schedules import build_incremental_schedule

# The schedule's cron and the sensor's interval are part of the definitions, so they are read
# when Dagster loads them (a malformed config stops the load with the file and field named).
_settings = load_config().schedule

# Assets downstream of chunks (emb_<slug>, later facts) follow it through an eager condition.
assets = follow_upstream([ingest])

defs = dg.Definitions(
    assets=assets,
    asset_checks=ingest_checks,
    jobs=[ingest_job, *downstream_jobs(assets)],
    sensors=[
        source_partitions_sensor,
        build_source_changes_sensor(_settings.watch_interval_seconds, enabled=_settings.watch),
        automation_sensor,
    ],
    schedules=[
        build_incremental_schedule(
            _settings.incremental_cron, _settings.timezone, enabled=_settings.enabled
        )
    ],
    resources={"database": DatabaseResource()},
)
