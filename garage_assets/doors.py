"""How a Dagster run names itself to a writer waiting behind it (``garage.locks``)."""

import dagster as dg


def door(context: dg.AssetExecutionContext) -> str:
    """What a terminal waiting for the source is told, e.g. ``Dagster run 1a2b3c4d``."""
    return f"Dagster run {context.run_id[:8]}"
