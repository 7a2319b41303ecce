"""How a Dagster run names itself to a writer waiting behind it (``garage.locks``)."""

import dagster as dg

from garage.locks import Waiting
from garage.stopping import StopSignal


def door(context: dg.AssetExecutionContext) -> str:
    """What a terminal waiting for the source is told, e.g. ``Dagster run 1a2b3c4d``."""
    return f"Dagster run {context.run_id[:8]}"


def corpus_waiting(context: dg.AssetExecutionContext, stop: StopSignal | None) -> Waiting:
    """Waiting for the corpus-wide lock (a `garage cluster-facts` or `graph rebuild` in a
    shell) is said in the run's log; a shell waiting behind this run is told its name."""
    return Waiting(notify=context.log.info, stop=stop, door=door(context))
