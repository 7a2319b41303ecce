"""``graph``: the AGE projection of documents, chunks, authors, potential and distilled facts.

Unpartitioned like ``distilled_facts`` (``distilled_facts.py``), after everything it projects,
and materialized on demand (``garage graph rebuild`` from the shell).
"""

import dagster as dg

from garage.graph import GraphUnavailable, has_age, rebuild_graph
from garage.locks import Busy
from garage_assets.doors import corpus_waiting
from resources.database import DatabaseResource


@dg.asset(
    name="graph",
    # What it projects: documents and their authors, chunks, potential and distilled facts.
    deps=["documents", "chunks", "potential_facts", "distilled_facts"],
    group_name="facts",
    description="The tables projected into the Apache AGE graph `garage` (where AGE is present).",
    kinds={"postgres"},
)
def graph(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    with database.connection() as conn:
        conn.autocommit = True
        if not has_age(conn):
            context.log.warning("the server has no Apache AGE: there is no graph to build")
            return dg.MaterializeResult(metadata={"graph": "absent: no Apache AGE"})
        try:
            report = rebuild_graph(conn, database.garage_config(), corpus_waiting(context, None))
        except (GraphUnavailable, Busy) as error:
            raise dg.Failure(str(error)) from None
    context.log.info(report.summary())
    metadata: dict[str, int | float | str] = {
        f"vertices_{label}": count for label, count in report.vertices.items()
    }
    metadata.update({f"edges_{label}": count for label, count in report.edges.items()})
    metadata["vertices"] = sum(report.vertices.values())
    metadata["edges"] = sum(report.edges.values())
    metadata["unresolved_edges"] = report.unresolved_edges
    metadata["seconds"] = round(report.seconds, 2)
    return dg.MaterializeResult(metadata=metadata)
