"""Clustering benchmark: the time of a full and of an incremental ``cluster-facts`` run.

    .venv/bin/python bench/cluster.py [--facts 10000 100000] [--new 0.01] [--database-url URL]

Scale is measured on synthetic facts in a scratch database: ``--facts`` potential facts spread
over documents, their vectors drawn around a few thousand random directions in 384 dimensions
(so groups exist to be found), their texts made of words without numbers, dates or negation
(so the guard leaves them in one bucket: the hardest case for the neighbour search). Then a
share ``--new`` of new facts arrives and an incremental run attaches them. No chat model is
asked (groups to confirm stay pending); the grouping is what is timed.

Quality is measured on real facts: ``--real URL`` clusters the facts of an existing Garage
database (after ``enrich-facts`` and ``embed``) in a copy-free way — it runs ``cluster-facts``
on it — and reports the share of groups sent to the chat model that it confirms.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from garage.clusters import cluster_facts  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed import register_models  # noqa: E402

WORDS = (
    "office team garden project budget report meeting train station city river library school "
    "market bridge museum kitchen window roof engine server network license contract invoice "
    "customer supplier product release version"
).split()
VERBS = "opens closes needs moves keeps shares builds checks plans holds".split()


def _claim(rng: random.Random) -> str:
    return f"The {rng.choice(WORDS)} {rng.choice(VERBS)} the {rng.choice(WORDS)} of the " \
        f"{rng.choice(WORDS)}."  # fmt: skip


def add_facts(
    url: str, count: int, centers: np.ndarray, rng: random.Random, *, first_load: bool = False
) -> None:
    """``count`` facts (ten to a document) with vectors near ``centers``, in one COPY each."""
    nrng = np.random.default_rng(rng.randrange(2**32))
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        source = conn.execute(
            "INSERT INTO sources (name, kind, corpus_class) VALUES ('bench', 'files', 'document')"
            " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id"
        ).fetchone()[0]
        first = conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()[0]
        documents = max(1, count // 10)
        conn.execute(
            "INSERT INTO documents (source_id, uri, corpus_class, content, source_sha256,"
            " content_sha256, size_bytes, mtime_ns, extractor, extractor_version)"
            " SELECT %s, 'file:///bench/' || (%s + i), 'document', 'x', 's', 'c' || (%s + i),"
            " 1, 1, 'text', 1 FROM generate_series(1, %s) i",
            (source, first, first, documents),
        )
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM documents WHERE id > %s ORDER BY id", (first,)
            ).fetchall()
        ]
        texts = [_claim(rng) for _ in range(count)]
        with conn.cursor() as cur:
            with cur.copy(
                "COPY facts (document_id, prompt_name, prompt_sha256, model, fact_class, text,"
                " start_offset, end_offset, alignment, ord) FROM STDIN"
            ) as copy:
                for i, text in enumerate(texts):
                    copy.write_row((ids[i % len(ids)], "default", "bench", "bench", "fact",
                                    text, 0, 1, "match_exact", i))  # fmt: skip
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset, end_offset,"
            " chunker, fact_id) SELECT f.document_id, f.ord, f.text, md5(f.text), 0, 1,"
            " 'facts:bench', f.id FROM facts f WHERE NOT EXISTS"
            " (SELECT 1 FROM chunks c WHERE c.fact_id = f.id)"
        )
        rows = conn.execute(
            "SELECT f.id, c.id FROM facts f JOIN chunks c ON c.fact_id = f.id WHERE NOT EXISTS"
            " (SELECT 1 FROM potential_fact_emb_bench p WHERE p.fact_id = f.id) ORDER BY f.id"
        ).fetchall()
        # Loading 10^5 vectors through an HNSW index costs minutes that no real run pays at
        # once (the backfill adds them a batch at a time): a first load goes in without it and
        # the index is built after (``register_models``), before any run is timed.
        if first_load:
            conn.execute("DROP INDEX IF EXISTS pfe_bench_hnsw")
        picks = nrng.integers(0, len(centers), size=len(rows))
        noise = nrng.normal(scale=0.012, size=(len(rows), centers.shape[1])).astype(np.float32)
        vectors = centers[picks] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with conn.cursor() as cur:
            with cur.copy(
                "COPY potential_fact_emb_bench (fact_id, chunk_id, embedding) FROM STDIN"
                " WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "vector"])
                for (fact_id, chunk_id), vector in zip(rows, vectors, strict=True):
                    copy.write_row((fact_id, chunk_id, vector))


def measure(base_url: str, args: argparse.Namespace, count: int) -> dict[str, Any]:
    name = f"garage_bench_cluster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_database(base_url, name)
    try:
        ensure_migrated(url)
        config = bench_config(args)
        with psycopg.connect(url, autocommit=True) as conn:
            register_models(conn, config)
        rng = random.Random(count)
        centers = np.random.default_rng(count).normal(size=(max(10, count // 8), args.dimensions))
        centers = (centers / np.linalg.norm(centers, axis=1, keepdims=True)).astype(np.float32)
        add_facts(url, count, centers, rng, first_load=True)
        with psycopg.connect(url, autocommit=True) as conn:
            register_models(conn, config)  # builds the index the load went without
        with psycopg.connect(url, autocommit=True) as conn:
            started = time.monotonic()
            full = cluster_facts(conn, config)
            full_seconds = time.monotonic() - started
        new = max(1, int(count * args.new))
        add_facts(url, new, centers, rng)
        with psycopg.connect(url, autocommit=True) as conn:
            started = time.monotonic()
            incremental = cluster_facts(conn, config)
            incremental_seconds = time.monotonic() - started
        return {
            "facts": count,
            "full_seconds": round(full_seconds, 1),
            "distilled": full.distilled_facts,
            "of_several": full.groups_of_several,
            "new_facts": new,
            "incremental_seconds": round(incremental_seconds, 1),
            "attached": incremental.attached,
            "stood_alone": incremental.stood_alone,
            "mode": incremental.mode,
        }
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def real(url: str, args: argparse.Namespace) -> None:
    """Cluster an existing database's facts with its own config and the chat model, and say
    what share of the groups sent to the model it confirmed."""
    from garage.config import load_config
    from garage.inference import EgressGuard, InferenceClient, LocalChatModel

    config = load_config()
    config = config.model_copy(update={"database": config.database.model_copy(update={"url": url})})
    client = InferenceClient(EgressGuard.from_config(config))
    with psycopg.connect(url, autocommit=True) as conn, client:
        report = cluster_facts(
            conn, config, full=True, chat=LocalChatModel.from_config(config, client)
        )
    asked = report.confirmed + report.dissolved
    share = report.confirmed / asked if asked else 0.0
    print(report.summary())
    print(f"groups asked: {asked}; confirmed {report.confirmed} ({share:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_model_arguments(parser)
    parser.add_argument("--facts", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--new", type=float, default=0.01, help="share of new facts")
    parser.add_argument("--real", metavar="URL", help="a Garage database with real facts")
    args = parser.parse_args()
    if args.real:
        real(args.real, args)
        return
    base = args.database_url
    if not base:
        import subprocess

        base = subprocess.run(
            ["bash", str(Path(__file__).resolve().parents[1] / "scripts" / "pg-age"), "start"],
            capture_output=True, text=True, check=True,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
    print("facts  full_s  distilled  of_several  new  incremental_s  attached  alone")
    for count in args.facts:
        r = measure(base, args, count)
        print(f"{r['facts']:>6} {r['full_seconds']:>7} {r['distilled']:>10} {r['of_several']:>11}"
              f" {r['new_facts']:>4} {r['incremental_seconds']:>14} {r['attached']:>9}"
              f" {r['stood_alone']:>6}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
