"""How assets downstream of ``chunks`` follow it: declaratively, not through chains of sensors.

``emb_<slug>`` and ``potential_fact_emb_<slug>`` (one of each per embedding model) carry
``AutomationCondition.eager()``: when a source's ``chunks`` (or ``potential_facts``) partition
is materialized, the automation sensor requests the same partition of the vectors, once
nothing upstream is missing or in progress. Each asset declares its own condition where it is
defined; ``potential_facts`` follows ingest only when ``facts.automatic`` says so.
"""

from __future__ import annotations

import dagster as dg

# Key prefixes of the assets that follow the ingest assets (and get a job of their own).
DOWNSTREAM_PREFIXES: tuple[str, ...] = (
    "emb_",
    "facts",
    "potential_facts",
    "potential_fact_emb_",
    "distilled_facts",
)


# The sensor that evaluates every condition. Declared here, RUNNING by default, because the
# implicit default sensor starts stopped on some instances; one evaluation a minute is plenty
# for work that follows minutes-long ingest runs.
automation_sensor = dg.AutomationConditionSensorDefinition(
    "garage_automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    description=(
        "Materializes emb_<slug> after a source's chunks, potential_fact_emb_<slug> after its "
        "potential facts (and potential_facts after ingest when facts.automatic)."
    ),
)
