"""Embedding benchmark: Garage's backfill against the raw server, side by side in one run.

    .venv/bin/python bench/embed.py [--chunks 640] [--rounds 3] [--database-url URL]
                                    [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2]
                                    [--dimensions 384]

Both sides embed the same 1,000-character chunks of real prose (the Python documentation when
its Debian package is cached, else the standard library's docstrings) in batches of 64:

- raw: POST /v1/embeddings straight to llama-server with httpx, nothing else;
- garage: ``garage.embed.backfill`` reading the chunks from PostgreSQL, sending them through
  the egress guard and the inference client, and writing the vectors into ``emb_<slug>``.

Rounds alternate raw and Garage so that drift in the machine's load hits both alike; the
median of each is reported. Target: Garage ≥ 0.9 × raw. The server is `scripts/llama start`'s
MiniLM unless told otherwise; the database is a fresh one on the given server (default: the
embedded one), dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed import register_models  # noqa: E402
from garage.embed.backfill import backfill  # noqa: E402
from garage.inference import EgressGuard, InferenceClient  # noqa: E402

CHUNK_CHARS = 1000
BATCH = 64


def real_chunks(count: int, host: str) -> list[str]:
    """``count`` distinct 1,000-character windows of real prose that fit MiniLM's 512-token
    context (asked of the server's /tokenize), so that neither side pays for truncation here:
    that path has tests of its own."""
    docs = Path.home() / ".cache/garage/material/python3.11-doc"
    texts = [p.read_text(errors="replace") for p in sorted(docs.rglob("*.rst.txt"))[:400]]
    if not texts:
        stdlib = Path(os.__file__).parent
        texts = [p.read_text(errors="replace") for p in sorted(stdlib.glob("*.py"))[:200]]
    prose = "\n".join(texts)
    chunks: list[str] = []
    step = CHUNK_CHARS + 37  # windows that do not line up with any structure
    with httpx.Client(timeout=60, trust_env=False) as http:
        for i in range(count * 3):
            start = (i * step) % max(1, len(prose) - CHUNK_CHARS)
            window = prose[start : start + CHUNK_CHARS]
            tokens = http.post(f"{host}/tokenize", json={"content": window}).json()["tokens"]
            if len(tokens) <= 500:
                chunks.append(window)
            if len(chunks) == count:
                return chunks
    raise SystemExit(f"only {len(chunks)} windows of the prose fit the model's context")


def raw_round(host: str, model: str, chunks: list[str]) -> float:
    with httpx.Client(timeout=600, trust_env=False) as http:
        started = time.perf_counter()
        for i in range(0, len(chunks), BATCH):
            response = http.post(
                f"{host}/v1/embeddings", json={"model": model, "input": chunks[i : i + BATCH]}
            )
            response.raise_for_status()
            assert len(response.json()["data"]) == len(chunks[i : i + BATCH])
        return len(chunks) / (time.perf_counter() - started)


def load_chunks(url: str, chunks: list[str]) -> None:
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        source_id = conn.execute(
            "INSERT INTO sources (name, kind, corpus_class) VALUES ('bench', 'files', 'document')"
            " RETURNING id"
        ).fetchone()[0]  # type: ignore[index]
        document_id = conn.execute(
            "INSERT INTO documents (source_id, uri, corpus_class, content, source_sha256,"
            " content_sha256, size_bytes, mtime_ns, extractor, extractor_version)"
            " VALUES (%s, 'file:///bench', 'document', '', '', '', 0, 0, 'text', 1) RETURNING id",
            (source_id,),
        ).fetchone()[0]  # type: ignore[index]
        with conn.cursor().copy(
            "COPY chunks (document_id, ord, text, text_sha256, start_offset, end_offset, chunker)"
            " FROM STDIN"
        ) as copy:
            for i, text in enumerate(chunks):
                copy.write_row((document_id, i, text, "-", 0, len(text), "recursive:1000/100"))


def garage_round(url: str, config: GarageConfig) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        [model] = register_models(conn, config)
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(model.table)))
        guard = EgressGuard.from_config(config)
        with InferenceClient(guard, timeout=600) as client:
            report = backfill(conn, client, model, batch_size=BATCH)
    assert report.vectors_written == report.pending, report
    return report.chunks_per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=640)
    parser.add_argument("--rounds", type=int, default=3)
    add_model_arguments(parser)
    args = parser.parse_args()

    chunks = real_chunks(args.chunks, args.host)
    config = bench_config(args)
    server = args.database_url or resolve_url(config)
    name = f"garage_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_database(server, name)
    try:
        ensure_migrated(url)
        load_chunks(url, chunks)
        raw_round(args.host, args.model, chunks[:BATCH])  # warm the server up
        raw, ours = [], []
        for round_ in range(args.rounds):
            raw.append(raw_round(args.host, args.model, chunks))
            ours.append(garage_round(url, config))
            print(
                f"round {round_ + 1}: raw {raw[-1]:.1f} chunks/s, garage {ours[-1]:.1f} chunks/s",
                flush=True,
            )
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
    raw_median, ours_median = statistics.median(raw), statistics.median(ours)
    print()
    print(
        f"{len(chunks)} chunks of {CHUNK_CHARS} characters, batches of {BATCH}, "
        f"{args.model} at {args.host}"
    )
    print(f"{'':24}{'chunks/s':>10}")
    print(f"{'raw llama-server':24}{raw_median:>10.1f}")
    print(f"{'garage backfill':24}{ours_median:>10.1f}")
    ratio = ours_median / raw_median
    print(
        f"ratio garage/raw: {ratio:.3f}  (target >= 0.90: {'met' if ratio >= 0.9 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
