"""The file-change sensor: an ingest run for exactly the sources whose files changed."""

from __future__ import annotations

import time

import dagster as dg

from garage.watch import fingerprint
from garage_assets.jobs import ingest_job
from garage_assets.partitions import SOURCES_PARTITIONS_NAME
from resources.database import DatabaseResource
from sensors.logic import changed_sources, dump_change_cursor, parse_change_cursor
from sensors.runs import sources_in_progress

DEFAULT_INTERVAL_SECONDS = 30


def build_source_changes_sensor(
    interval_seconds: int = DEFAULT_INTERVAL_SECONDS, *, enabled: bool = True
) -> dg.SensorDefinition:
    @dg.sensor(
        name="source_changes_sensor",
        job=ingest_job,
        minimum_interval_seconds=interval_seconds,
        default_status=(
            dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED
        ),
        description="Stat-only walk of every source; ingests those whose files changed.",
    )
    def source_changes_sensor(
        context: dg.SensorEvaluationContext, database: DatabaseResource
    ) -> dg.SensorResult | dg.SkipReason:
        started = time.monotonic()
        sources = [s for s in database.garage_config().sources if s.enabled]
        current = {source.name: fingerprint(source) for source in sources}
        remembered = parse_change_cursor(context.cursor)
        decision = changed_sources(
            current,
            remembered,
            registered=context.instance.get_dynamic_partitions(SOURCES_PARTITIONS_NAME),
            in_progress=sources_in_progress(context.instance),
        )
        seconds = time.monotonic() - started
        files = sum(f.files for f in current.values())
        for name, why in decision.waiting.items():
            context.log.info(f"{name}: changed, not requested yet: {why}")
        cursor = dump_change_cursor(decision.cursor)
        if not decision.requests:
            reason = dg.SkipReason(
                f"no source changed ({len(current)} source(s), {files} files stat-ed "
                f"in {seconds:.2f}s)"
                + (f"; waiting: {', '.join(sorted(decision.waiting))}" if decision.waiting else "")
            )
            # The cursor only ever loses the entries of sources taken out of the config here.
            if cursor == context.cursor or (context.cursor is None and not decision.cursor):
                return reason
            return dg.SensorResult(skip_reason=reason, cursor=cursor)
        requests = [
            dg.RunRequest(
                run_key=request.run_key,
                partition_key=request.source,
                tags={
                    "garage/trigger": "file-change",
                    "garage/files": str(current[request.source].files),
                },
            )
            for request in decision.requests
        ]
        context.log.info(
            f"changed: {', '.join(r.source for r in decision.requests)} "
            f"({files} files stat-ed in {seconds:.2f}s)"
        )
        # Returned together: Dagster stores the cursor with the tick that launched the runs,
        # so a failed tick neither loses a change nor launches it twice (the run keys dedupe).
        return dg.SensorResult(run_requests=requests, cursor=cursor)

    return source_changes_sensor


source_changes_sensor = build_source_changes_sensor()
