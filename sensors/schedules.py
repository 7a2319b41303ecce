"""The incremental schedule: an ingest pass over every source partition on a cron."""

from __future__ import annotations

import dagster as dg

from garage_assets.jobs import ingest_job
from garage_assets.partitions import SOURCES_PARTITIONS_NAME
from resources.database import DatabaseResource
from sensors.logic import scheduled_sources
from sensors.runs import sources_in_progress


def build_incremental_schedule(
    cron: str = "0 * * * *", timezone: str = "UTC", *, enabled: bool = True
) -> dg.ScheduleDefinition:
    @dg.schedule(
        name="incremental_ingest_schedule",
        cron_schedule=cron,
        execution_timezone=timezone,
        job=ingest_job,
        default_status=(
            dg.DefaultScheduleStatus.RUNNING if enabled else dg.DefaultScheduleStatus.STOPPED
        ),
        description="Every source, incrementally; a source whose last run is still going waits.",
    )
    def incremental_ingest_schedule(
        context: dg.ScheduleEvaluationContext, database: DatabaseResource
    ) -> list[dg.RunRequest] | dg.SkipReason:
        configured = [s.name for s in database.garage_config().sources if s.enabled]
        plan = scheduled_sources(
            configured,
            context.instance.get_dynamic_partitions(SOURCES_PARTITIONS_NAME),
            sources_in_progress(context.instance),
        )
        for name, why in plan.skipped.items():
            context.log.info(f"{name}: skipped ({why})")
        if not plan.run:
            skipped = "; ".join(f"{n}: {why}" for n, why in plan.skipped.items())
            return dg.SkipReason(f"no source to run ({skipped or 'none configured'})")
        tick = (
            context.scheduled_execution_time.isoformat()
            if context.scheduled_execution_time
            else "now"
        )
        return [
            dg.RunRequest(
                run_key=f"{name}:{tick}",
                partition_key=name,
                tags={"garage/trigger": "schedule"},
            )
            for name in plan.run
        ]

    return incremental_ingest_schedule


incremental_ingest_schedule = build_incremental_schedule()
