"""Search page latency: what the page adds to the search it shows, at 10,000 chunks.

    .venv/bin/python bench/pages.py [--chunks 10000] [--queries 100] [--database-url URL]
                                    [--base-vectors 1000] [--keep] [--reuse DBNAME]
                                    [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2]

The corpus is bench/search.py's (real prose windows of the Python documentation, the first
``--base-vectors`` embedded for real through llama-server and cached, the rest derived from
them), loaded into a scratch database. Each query is then run two ways, alternately, so a busy
machine slows both alike:

- **search**: ``garage.search.search`` in this process on an open connection (the query
  embedded through the inference client, the SQL, the hits built), which is what the CLI and
  the MCP tool cost;
- **page**: ``GET /garage/search?q=…`` over HTTP on loopback, to the pages served by uvicorn
  behind the loopback guard in this process (``garage.pages.serve``), through a kept-alive
  client: a read-only connection opened for the request, the sources listed for the form, the
  same search, the HTML rendered and sent.

Prints p50/p95 of each and of the difference per query. Target: page p50 − search p50 ≤
100 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from bench.search import (  # noqa: E402
    Corpus,
    VectorCache,
    derived_vectors,
    load,
    percentile,
    real_files,
    searchable_queries,
    stage,
    timed,
)
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed.registry import configured_models  # noqa: E402
from garage.inference import EgressGuard, InferenceClient  # noqa: E402
from garage.pages.serve import serving  # noqa: E402
from garage.search import SearchQuery, search  # noqa: E402

WARMUP = 10
TARGET_MS = 100.0
LIMIT = 20  # hits the page asks for


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--base-vectors", type=int, default=1000)
    add_model_arguments(parser)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--reuse", metavar="NAME", help="measure a kept database again")
    args = parser.parse_args()

    config = bench_config(args)
    server = args.database_url or resolve_url(config)
    name = args.reuse or f"garage_bench_pages_{uuid.uuid4().hex[:8]}"
    url = with_database(server, name)
    config = config.model_copy(update={"database": config.database.model_copy(update={"url": url})})
    with timed("reading the real text"):
        corpus = Corpus(real_files())
    guard = EgressGuard.from_config(config)
    cache = VectorCache(args.model, args.dimensions)
    with InferenceClient(guard, timeout=600) as client:
        [configured] = configured_models(config)
        queries = searchable_queries(server, corpus, args.queries + WARMUP)
        if not args.reuse:
            base_count = min(args.base_vectors, args.chunks)
            base = corpus.windows(base_count, seed=1)
            base_vectors = cache.embed(client, configured, [corpus.text(w) for w in base])
            others = corpus.windows(
                args.chunks - base_count, seed=2, exclude=frozenset(corpus.text(w) for w in base)
            )
            vectors = np.concatenate(
                [base_vectors, derived_vectors(corpus, base, base_vectors, others, seed=3)]
            )
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            stage(f"scratch database {name}")
        try:
            if not args.reuse:
                ensure_migrated(url)
                load(url, config, corpus, base + others, vectors)
            searched: list[float] = []
            paged: list[float] = []
            with (
                psycopg.connect(url, autocommit=True) as conn,
                serving(config, url, port=free_port()) as base_url,
                httpx.Client(base_url=base_url, trust_env=False, timeout=60) as http,
            ):
                with timed(f"{len(queries)} queries, each by search() and by the page"):
                    for i, query in enumerate(queries):
                        order = (0, 1) if i % 2 == 0 else (1, 0)
                        took = [0.0, 0.0]
                        for way in order:
                            began = time.perf_counter()
                            if way == 0:
                                search(conn, config, SearchQuery(text=query, limit=LIMIT),
                                       client=client)  # fmt: skip
                            else:
                                response = http.get("/search", params={"q": query})
                                assert response.status_code == 200, response.text[-500:]
                            took[way] = (time.perf_counter() - began) * 1000
                        if i >= WARMUP:
                            searched.append(took[0])
                            paged.append(took[1])
        finally:
            if args.keep or args.reuse:
                stage(f"kept {name}: rerun with --reuse {name}")
            else:
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(name)
                        )
                    )
    added = [p - s for p, s in zip(paged, searched, strict=True)]
    print(f"\n{args.chunks:,} chunks, {len(searched)} queries (hybrid, {LIMIT} hits)")
    print(f"{'':>22} {'p50 ms':>8} {'p95 ms':>8}")
    for label, values in (("search()", searched), ("search page (HTTP)", paged),
                          ("page - search", added)):  # fmt: skip
        print(f"{label:>22} {statistics.median(values):8.1f} {percentile(values, 95):8.1f}")
    overhead = statistics.median(paged) - statistics.median(searched)
    verdict = "meets" if overhead <= TARGET_MS else "misses"
    print(f"page p50 - search p50 = {overhead:.1f} ms: {verdict} the target of {TARGET_MS:.0f} ms")


if __name__ == "__main__":
    main()
