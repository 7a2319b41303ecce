"""The Dagster definitions `dagster dev -w workspace.yaml` loads."""

from __future__ import annotations

import logging

import dagster as dg

from garage.config import ConfigError, load_config
from garage.config.model import ScheduleConfig
from garage_assets.automation import automation_sensor, follow_upstream
from garage_assets.checks import ingest_checks
from garage_assets.embeddings import embedding_assets
from garage_assets.facts import build_potential_facts
from garage_assets.graph import build_distilled_facts, graph
from garage_assets.ingest import ingest
from garage_assets.jobs import downstream_jobs, ingest_job
from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource
from sensors.changes import build_source_changes_sensor
from sensors.partitions import source_partitions_sensor
from sensors.schedules import build_incremental_schedule


def _schedule_settings() -> ScheduleConfig:
    # The schedule's cron and the sensor's interval are part of the definitions, so they are
    # read when Dagster loads them. A broken config must not hide the UI that would show what
    # is wrong: the defaults stand in, and every run reports the config error itself.
    try:
        return load_config().schedule
    except ConfigError as error:
        logging.getLogger(__name__).error("schedule settings not loaded: %s", error)
        return ScheduleConfig()


_settings = _schedule_settings()

# Assets downstream of chunks (emb_<slug>, later facts) follow it through an eager condition.
assets = follow_upstream([ingest, *embedding_assets()])
# Not through follow_upstream: facts follow ingest only when facts.automatic says so.
# distilled_facts and graph are unpartitioned and on demand (see garage_assets.graph).
assets = [*assets, build_potential_facts(), build_distilled_facts(), graph]

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
    # One process per run, not one per step: a step process costs seconds of imports on a
    # small machine, more than most incremental passes take; runs still go in parallel.
    executor=dg.in_process_executor,
    resources={
        "database": DatabaseResource(),
        "inference": InferenceResource(egress=EgressGuardResource()),
    },
)
