"""The ``documents`` and ``chunks`` assets: one ingest pass over one source partition.

One multi-asset, because one transaction per document covers both tables: a document is never
visible without its chunks.
"""

import signal

import dagster as dg

from garage.ingest import IngestError, ingest_source
from garage.ingest.totals import source_totals
from garage.locks import Busy, Waiting
from garage.stopping import stop_on_signal
from garage_assets.doors import door
from garage_assets.partitions import sources_partitions
from resources.database import DatabaseResource

TERMINATED = "run terminated in Dagster"


class IngestConfig(dg.Config):
    limit: int | None = None  # stop after N files: a partial run deletes nothing
    force: bool = False  # delete even when more than 25% of the source would go


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "documents",
            partitions_def=sources_partitions,
            description="One row per indexed file, mail message or chat thread.",
            group_name="ingest",
        ),
        dg.AssetSpec(
            "chunks",
            deps=["documents"],
            partitions_def=sources_partitions,
            description="Model-agnostic chunks of each document, reused across edits.",
            group_name="ingest",
        ),
    ],
)
def ingest(context: dg.AssetExecutionContext, config: IngestConfig, database: DatabaseResource):  # type: ignore[no-untyped-def]
    garage_config = database.garage_config()
    try:
        source = garage_config.source(context.partition_key)
    except KeyError as error:
        raise dg.Failure(str(error.args[0])) from None
    # Terminating a run interrupts its worker with SIGINT, which Dagster turns into an exception
    # wherever the worker is, a COMMIT included. Taken as a stop request instead, ingest
    # finishes the document in hand, records the run as stopped, and only then is the run
    # cancelled: the record says what happened, and nothing is deleted.
    with database.connection() as conn, stop_on_signal(signal.SIGINT, TERMINATED) as stop:
        conn.autocommit = True
        try:
            report = ingest_source(
                conn,
                garage_config,
                source,
                limit=config.limit,
                force=config.force,
                stop=stop,
                # Behind a CLI run of the same source this run waits, and says for whom.
                waiting=Waiting(notify=context.log.info, stop=stop, door=door(context)),
            )
        except IngestError as error:
            raise dg.Failure(str(error)) from None
        except Busy as error:
            # Terminated while it waited for the source: nothing was started.
            context.log.warning(str(error))
            raise dg.DagsterExecutionInterruptedError() from None
        totals = source_totals(conn, source.name)
    if stop.requested:
        context.log.warning(report.summary())
        raise dg.DagsterExecutionInterruptedError()
    context.log.info(report.summary())
    for line in report.errors[:50]:
        context.log.warning(line)
    documents: dict[str, dg.RawMetadataValue] = {
        "seen": report.seen,
        "indexed": report.indexed,
        "stat_skipped": report.stat_skipped,
        "unchanged": report.unchanged,
        "rejected": report.rejected,
        "failed": report.failed,
        "placeholders": report.placeholders,
        "deleted": report.deleted,
        "budget_files": report.budget_files,
        "budget_bytes": report.budget_bytes,
        "completed": report.completed,
        "run_id": report.run_id,
        "seconds": round(report.seconds, 2),
        "files_per_second": round(report.seen / report.seconds, 1) if report.seconds else 0.0,
        "source_root": dg.MetadataValue.path(source.roots[0]),
        "source_roots": ", ".join(source.roots),
        "source_documents": totals["documents"],
        "dagster/row_count": totals["documents"],
    }
    chunks: dict[str, dg.RawMetadataValue] = {
        "kept": report.chunks_kept,
        "new": report.chunks_new,
        "deleted": report.chunks_deleted,
        "source_chunks": totals["chunks"],
        "dagster/row_count": totals["chunks"],
        "source_root": dg.MetadataValue.path(source.roots[0]),
    }
    if report.deletion_refused:
        raise dg.Failure(
            description=report.deletion_refused,
            metadata={**documents, **{f"chunks_{k}": v for k, v in chunks.items()}},
        )
    yield dg.MaterializeResult(asset_key="documents", metadata=documents)
    yield dg.MaterializeResult(asset_key="chunks", metadata=chunks)
