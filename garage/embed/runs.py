"""What each backfill run embedded, and in how long: ``embedding_runs``, the measured rate the
time left is estimated from (``garage status``, the Sources page).

A rate is only ever measured here, never assumed: with no run that embedded something, there
is none, and whoever shows an estimate says the rate is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

# Runs a rate is measured over: enough to even out one slow or quick run, few enough that a
# change of server or model shows soon.
RATE_RUNS = 3


@dataclass(frozen=True)
class Rate:
    """Chunks a second one model embedded over its last ``runs`` runs that embedded any."""

    chunks_per_second: float
    runs: int
    chunks: int
    seconds: float


def record(
    conn: psycopg.Connection[Any],
    *,
    model: str,
    source: str | None,
    chunks: str,
    seconds: float,
    pending: int,
    written: int,
    reused: int,
    stopped: str | None,
) -> None:
    """Write one run's row: ``model`` and ``source`` by name (no source: every source),
    ``chunks`` what it embedded (all, content or facts)."""
    started = datetime.now(UTC) - timedelta(seconds=seconds)
    conn.execute(
        "INSERT INTO embedding_runs (model_id, source_id, chunks, started_at, seconds, pending,"
        " vectors_written, vectors_reused, stopped)"
        " SELECT m.id, (SELECT id FROM sources WHERE name = %s), %s, %s, %s, %s, %s, %s, %s"
        " FROM embedding_models m WHERE m.name = %s",
        (source, chunks, started, seconds, pending, written, reused, stopped, model),
    )


def measured_rates(conn: psycopg.Connection[Any], runs: int = RATE_RUNS) -> dict[str, Rate]:
    """Each model's rate over its last ``runs`` runs that wrote a vector, by model name; a
    model with none is absent. Summed, not averaged: a long run counts for what it did."""
    rows = conn.execute(
        "SELECT name, count(*) AS runs, sum(vectors_written) AS chunks,"
        " sum(seconds) AS seconds FROM ("
        " SELECT m.name, r.vectors_written, r.seconds, row_number() OVER"
        "  (PARTITION BY r.model_id ORDER BY r.finished_at DESC, r.id DESC) AS recent"
        " FROM embedding_runs r JOIN embedding_models m ON m.id = r.model_id"
        " WHERE r.vectors_written > 0) x WHERE recent <= %s GROUP BY name",
        (runs,),
    ).fetchall()
    rates = {}
    for row in rows:
        name, count, chunks, seconds = tuple(row.values()) if isinstance(row, dict) else row
        if seconds and seconds > 0:
            rates[str(name)] = Rate(
                float(chunks) / float(seconds), int(count), int(chunks), float(seconds)
            )
    return rates
