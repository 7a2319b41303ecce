"""Asset checks: the index's invariants (``garage.invariants``), shown where a person looks.

The ingest checks are partitioned like the assets they guard, so they run in every ingest run
of a source, right after its materialization. The last-run check is about that source; the
others read the whole index, since an orphan has no source left to be filed under. The check
on ``distilled_facts`` is unpartitioned, as that asset is.
"""

# No `from __future__ import annotations`: Dagster reads the context annotation at definition.
import warnings
from collections.abc import Callable
from typing import Any

import dagster as dg
import psycopg

from garage import invariants
from garage.clusters import ClusterError
from garage.embed import RegistryError
from garage_assets.distilled_facts import facts_without_vectors
from garage_assets.partitions import sources_partitions
from resources.database import DatabaseResource

# Partitioned checks are a preview feature in Dagster 1.13. They are what lets a check know its
# source (and run inside that source's run), which is worth the warning it would print on
# every load.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")


def _result(finding: invariants.Finding) -> dg.AssetCheckResult:
    metadata: dict[str, Any] = {"count": finding.count, "detail": finding.detail}
    if finding.examples:
        metadata["examples"] = dg.MetadataValue.md("\n".join(f"- {e}" for e in finding.examples))
    return dg.AssetCheckResult(
        passed=finding.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=finding.detail,
        metadata=metadata,
    )


def _run(
    database: DatabaseResource, query: Callable[[psycopg.Connection[Any]], invariants.Finding]
):  # type: ignore[no-untyped-def]
    with database.connection() as conn:
        return _result(query(conn))


@dg.asset_check(
    asset="documents",
    name="last_ingest_run_completed",
    partitions_def=sources_partitions,
    description="The source's latest ingest run finished and walked the whole source.",
)
def last_ingest_run_completed(
    context: dg.AssetCheckExecutionContext, database: DatabaseResource
) -> dg.AssetCheckResult:
    source = context.partition_key
    return _run(database, lambda conn: invariants.last_run_completed(conn, source))


@dg.asset_check(
    asset="chunks",
    name="no_chunk_without_document",
    partitions_def=sources_partitions,
    description="Every chunk belongs to a document that exists.",
)
def no_chunk_without_document(database: DatabaseResource) -> dg.AssetCheckResult:
    return _run(database, invariants.orphan_chunks)


@dg.asset_check(
    asset="chunks",
    name="no_vector_without_chunk",
    partitions_def=sources_partitions,
    description="No embedding table holds a vector for a chunk that is gone.",
)
def no_vector_without_chunk(database: DatabaseResource) -> dg.AssetCheckResult:
    return _run(database, invariants.orphan_vectors)


@dg.asset_check(
    asset="chunks",
    name="embedding_dimensions_match_registry",
    partitions_def=sources_partitions,
    description="Each emb_<slug> table's vector dimension equals its embedding_models entry.",
)
def embedding_dimensions_match_registry(database: DatabaseResource) -> dg.AssetCheckResult:
    return _run(database, invariants.embedding_dimensions)


ingest_checks = [
    last_ingest_run_completed,
    no_chunk_without_document,
    no_vector_without_chunk,
    embedding_dimensions_match_registry,
]


@dg.asset_check(
    asset="distilled_facts",
    name="every_potential_fact_has_a_vector",
    # In a run with the graph, a failure keeps the graph from projecting incomplete facts.
    blocking=True,
    description=(
        "Every potential fact has a vector under the clustering model (the default model's "
        "potential_fact_emb_<slug>): clustering leaves out the facts without one."
    ),
)
def every_potential_fact_has_a_vector(database: DatabaseResource) -> dg.AssetCheckResult:
    with database.connection() as conn:
        conn.autocommit = True
        try:
            finding = facts_without_vectors(conn, database.garage_config())
        except (ClusterError, RegistryError) as error:
            # No clustering model to ask about: nothing is distilled, and this says why.
            finding = invariants.Finding(False, 0, str(error), [])
    return _result(finding)


facts_checks = [every_potential_fact_has_a_vector]
