"""What the instance knows about runs under way, as the sensors and the schedule need it."""

from __future__ import annotations

import dagster as dg

PARTITION_TAG = "dagster/partition"
# A queued run has not started yet, so it is "in progress" for our purposes too: launching
# another run of the same source would only queue behind it.
IN_PROGRESS = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def sources_in_progress(instance: dg.DagsterInstance) -> set[str]:
    """Source partitions with a run queued or running (one query for all of them)."""
    runs = instance.get_runs(filters=dg.RunsFilter(statuses=IN_PROGRESS), limit=1000)
    return {run.tags[PARTITION_TAG] for run in runs if PARTITION_TAG in run.tags}
