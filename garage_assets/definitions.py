"""The Dagster definitions `dagster dev -w workspace.yaml` loads."""

from __future__ import annotations

import logging

import dagster as dg
from dagster._utils.schedules import is_valid_cron_string  # internal: Dagster is pinned

from garage.config import ConfigError, GarageConfig, load_config
from garage.config.model import ScheduleConfig
from garage_assets.automation import automation_sensor
from garage_assets.checks import facts_checks, ingest_checks
from garage_assets.distilled_facts import build_distilled_facts
from garage_assets.embeddings import embedding_assets
from garage_assets.facts import build_potential_facts
from garage_assets.graph import graph
from garage_assets.ingest import ingest
from garage_assets.jobs import downstream_jobs, ingest_job
from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource
from sensors.changes import build_source_changes_sensor
from sensors.partitions import source_partitions_sensor
from sensors.schedules import build_incremental_schedule

log = logging.getLogger(__name__)


def _garage_config() -> GarageConfig | None:
    """The config, read once as the definitions load: the models, the schedule and whether
    facts follow ingest are part of the definitions. A broken config must not hide the UI that
    would show what is wrong: the defaults stand in, the assets that need the config are left
    out, and every run reports the config error itself."""
    try:
        return load_config()
    except ConfigError as error:
        log.error("the Garage config is not loaded, defaults stand in: %s", error)
        return None


def _schedule_settings(config: GarageConfig | None) -> ScheduleConfig:
    """The config's schedule settings, with a cron Dagster's own parser accepts: one it
    refuses would stop the whole code location loading, so the default stands in, with an
    error. (The config already refuses such a cron by the same rules; this is the last word.)"""
    settings = config.schedule if config is not None else ScheduleConfig()
    if is_valid_cron_string(settings.incremental_cron):
        return settings
    default = ScheduleConfig.model_fields["incremental_cron"].default
    log.error(
        "schedule.incremental_cron %r is not a cron expression Dagster can schedule; the "
        "default %r stands in until the config is fixed",
        settings.incremental_cron,
        default,
    )
    return settings.model_copy(update={"incremental_cron": default})


def build_definitions(config: GarageConfig | None) -> dg.Definitions:
    """Everything the code location holds, from the config read once (None: a broken one)."""
    settings = _schedule_settings(config)
    # emb_<slug> and potential_fact_emb_<slug> follow their upstream through the eager
    # condition they are defined with; facts follow ingest only when facts.automatic says so;
    # distilled_facts and graph are unpartitioned and on demand (see garage_assets.distilled_facts).
    assets = [
        ingest,
        *embedding_assets(config),
        build_potential_facts(config),
        build_distilled_facts(config),
        graph,
    ]
    return dg.Definitions(
        assets=assets,
        asset_checks=[*ingest_checks, *facts_checks],
        jobs=[ingest_job, *downstream_jobs(assets)],
        sensors=[
            source_partitions_sensor,
            build_source_changes_sensor(settings.watch_interval_seconds, enabled=settings.watch),
            automation_sensor,
        ],
        schedules=[
            build_incremental_schedule(
                settings.incremental_cron, settings.timezone, enabled=settings.enabled
            )
        ],
        # One process per run, not one per step: a step process costs seconds of imports on
        # a small machine, more than most incremental passes take; runs still go in parallel.
        executor=dg.in_process_executor,
        resources={
            "database": DatabaseResource(),
            "inference": InferenceResource(egress=EgressGuardResource()),
        },
    )


defs = build_definitions(_garage_config())
