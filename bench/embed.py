"""Embedding benchmark: Garage's backfill, raw llama-server and an independent runtime, side by
side on the same chunks, against the machine's peak; then the share of chunks that needed no
model call on a corpus with repeats.

    .venv/bin/python bench/embed.py [--chunks 320] [--rounds 3] [--database-url URL]
        [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2] [--dimensions 384]
        [--server-flags "FLAGS"]... [--no-independent] [--dedup-files 40]

Every side embeds the same 1,000-character windows of real prose (the Python documentation
when its Debian package is cached, else the standard library's docstrings):

- raw: POST /v1/embeddings straight to a llama-server with httpx, 64 chunks a request, one
  request at a time, nothing else. With ``--server-flags`` (repeatable) the benchmark starts
  one llama-server per flag set itself (same binary and GGUF as ``scripts/llama``, loopback
  ports from 18090) and measures each; Garage runs against the first. Without it, both use
  ``--host``.
- independent: sentence-transformers on CPU torch with the same model's original weights
  (``bench/independent.py``), batches of 64.
- garage: ``garage.embed.backfill`` reading the chunks from PostgreSQL, sending them through
  the egress guard and the inference client with its own request sizing, and writing the
  vectors into ``emb_<slug>``.

Rounds alternate the sides so that drift in the machine's load hits all alike; medians are
reported. Tokens are counted by the server's /tokenize (with the [CLS]/[SEP] the model sees);
FLOPs and the peak are computed as ``bench/peak.py`` says and printed. Target: Garage ≥ 1.0×
the best of the other sides.

Dedup: a folder of real documents with a copy of a third of them (as Downloads or a backup
holds) is ingested and embedded by Garage; then a copy of the whole folder is added and
embedded again, which must make no model request. The database is a fresh one on the given
server (default: the embedded one), dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import servers  # noqa: E402
from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from bench.peak import Encoder, machine_peak  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed import register_models  # noqa: E402
from garage.embed.backfill import BackfillReport, backfill  # noqa: E402
from garage.inference import EgressGuard, InferenceClient  # noqa: E402
from garage.inference.model_key import load_key  # noqa: E402
from garage.ingest import ingest_source  # noqa: E402

CHUNK_CHARS = 1000
BATCH = 64
FIRST_PORT = 18090
DOCS = Path.home() / ".cache/garage/material/python3.11-doc"


def prose_texts() -> list[str]:
    texts = [p.read_text(errors="replace") for p in sorted(DOCS.rglob("*.rst.txt"))[:400]]
    if not texts:
        stdlib = Path(os.__file__).parent
        texts = [p.read_text(errors="replace") for p in sorted(stdlib.glob("*.py"))[:200]]
    return texts


def headers() -> dict[str, str]:
    key = load_key()  # scripts/llama's servers ask for it; the ones started here do not
    return {"Authorization": f"Bearer {key}"} if key else {}


def real_chunks(count: int, host: str) -> tuple[list[str], list[int]]:
    """``count`` distinct 1,000-character windows of real prose that fit MiniLM's 512-token
    context, and the tokens the model sees for each (asked of the server's /tokenize), so that
    no side pays for truncation here: that path has tests of its own."""
    prose = "\n".join(prose_texts())
    chunks: list[str] = []
    tokens: list[int] = []
    step = CHUNK_CHARS + 37  # windows that do not line up with any structure
    with httpx.Client(timeout=60, trust_env=False, headers=headers()) as http:
        for i in range(count * 3):
            start = (i * step) % max(1, len(prose) - CHUNK_CHARS)
            window = prose[start : start + CHUNK_CHARS]
            response = http.post(f"{host}/tokenize", json={"content": window, "add_special": True})
            response.raise_for_status()
            n = len(response.json()["tokens"])
            if n <= 500:
                chunks.append(window)
                tokens.append(n)
            if len(chunks) == count:
                return chunks, tokens
    raise SystemExit(f"only {len(chunks)} windows of the prose fit the model's context")


def raw_round(host: str, model: str, chunks: list[str]) -> float:
    """Seconds for ``chunks`` in requests of 64, one at a time."""
    with httpx.Client(timeout=600, trust_env=False, headers=headers()) as http:
        started = time.perf_counter()
        for i in range(0, len(chunks), BATCH):
            response = http.post(
                f"{host}/v1/embeddings", json={"model": model, "input": chunks[i : i + BATCH]}
            )
            response.raise_for_status()
            assert len(response.json()["data"]) == len(chunks[i : i + BATCH])
        return time.perf_counter() - started


def raw_vectors(host: str, model: str, chunks: list[str]) -> list[list[float]]:
    with httpx.Client(timeout=600, trust_env=False, headers=headers()) as http:
        response = http.post(f"{host}/v1/embeddings", json={"model": model, "input": chunks})
        response.raise_for_status()
        return [item["embedding"] for item in response.json()["data"]]


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
                # Distinct hashes: this measures the model path, not reuse (that comes later).
                copy.write_row(
                    (document_id, i, text, f"bench-{i}", 0, len(text), "recursive:1000/100")
                )


def garage_round(url: str, config: GarageConfig) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        [model] = register_models(conn, config)
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(model.table)))
        guard = EgressGuard.from_config(config)
        with InferenceClient(guard, timeout=600) as client:
            report = backfill(
                conn,
                client,
                model,
                batch_size=config.embedding.batch_size,
                batch_tokens=config.embedding.batch_tokens,
            )
    assert report.vectors_written == report.pending, report
    assert report.vectors_reused == 0, report
    return report.seconds


@dataclass
class Side:
    name: str
    seconds: list[float] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(self.seconds)


def cosine(a: Any, b: Any) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = (sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5
    return float(dot / norm)


def dedup_pass(url: str, config: GarageConfig, root: Path) -> tuple[BackfillReport, int]:
    """Ingest ``root`` and embed what it lacks; the report and the number of model requests."""
    requests = [0]
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.sources[0])
        [model] = register_models(conn, config)
        guard = EgressGuard.from_config(config)
        with InferenceClient(guard, timeout=600) as client:
            embed = client.embed

            def counted(*args: Any, **kwargs: Any) -> Any:
                requests[0] += 1
                return embed(*args, **kwargs)

            client.embed = counted  # type: ignore[method-assign]
            report = backfill(conn, client, model, batch_tokens=config.embedding.batch_tokens)
    return report, requests[0]


def dedup(url: str, args: argparse.Namespace, host: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="garage-bench-dedup-"))
    try:
        originals = sorted(DOCS.rglob("*.rst.txt"))[: args.dedup_files]
        if not originals:
            print("dedup: no Python documentation cached; skipped")
            return
        corpus = root / "corpus"
        for path in originals:
            target = corpus / "docs" / (path.stem.removesuffix(".rst") + ".md")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        # A third of them again, as a Downloads folder holds what was also saved elsewhere.
        for path in sorted((corpus / "docs").iterdir())[::3]:
            target = corpus / "Downloads" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        bench_args = argparse.Namespace(**{**vars(args), "host": host})
        config = bench_config(
            bench_args, sources=[{"name": "dedup", "kind": "files", "roots": [str(corpus)]}]
        )
        first, first_requests = dedup_pass(url, config, corpus)
        shutil.copytree(corpus / "docs", corpus / "backup")
        second, second_requests = dedup_pass(url, config, corpus)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(
        f"dedup, {len(originals)} documents of the Python docs + a copy of a third of them "
        "in Downloads:"
    )
    for label, report, requests in (
        ("first pass", first, first_requests),
        ("copy of all of them", second, second_requests),
    ):
        share = report.vectors_reused / report.pending if report.pending else 0.0
        print(
            f"  {label:<20} {report.pending:>5} chunks pending, {report.vectors_reused:>5} "
            f"reused with no model call ({share:.1%}), {requests} embedding requests"
        )
    verdict = "none" if second_requests == 0 else f"{second_requests} (NOT none)"
    print(f"  a re-run over a copy of an embedded folder made {verdict} embedding requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--server-flags",
        action="append",
        default=[],
        help="a llama-server flag set to start and measure (repeatable; Garage uses the first)",
    )
    parser.add_argument("--no-independent", action="store_true")
    parser.add_argument("--dedup-files", type=int, default=40)
    add_model_arguments(parser)
    args = parser.parse_args()

    peak = machine_peak()
    encoder = Encoder.from_config(_independent().model_dir() / "config.json")
    chunks, tokens = real_chunks(args.chunks, args.host)
    total_tokens = sum(tokens)
    total_flops = sum(encoder.flops(n) for n in tokens)

    logs = Path(tempfile.mkdtemp(prefix="garage-bench-servers-"))
    flag_servers = [
        servers.start(flags, FIRST_PORT + i, args.model, logs / f"server{i}.log")
        for i, flags in enumerate(args.server_flags)
    ]
    raw_hosts = [(s.flags, s.host) for s in flag_servers] or [("as running", args.host)]
    garage_host = raw_hosts[0][1]
    config = bench_config(argparse.Namespace(**{**vars(args), "host": garage_host}))
    server = args.database_url or resolve_url(config)
    name = f"garage_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_database(server, name)
    raws = [Side(f"raw llama-server [{flags}]") for flags, _ in raw_hosts]
    ours = Side(f"garage backfill [{raw_hosts[0][0]}]")
    independent = None
    agreement = None
    try:
        ensure_migrated(url)
        load_chunks(url, chunks)
        for _, host in raw_hosts:
            raw_round(host, args.model, chunks[:BATCH])  # warm the server up
        runtime = None
        if not args.no_independent:
            try:
                runtime = _independent().SentenceTransformersRuntime(
                    threads=os.cpu_count() or 1, batch=BATCH
                )
            except ImportError as error:
                # Not a dependency of Garage: the anchor is optional, and says how to get it.
                print(
                    f"independent runtime skipped ({error}): install it with "
                    "`.venv/bin/pip install torch --index-url "
                    "https://download.pytorch.org/whl/cpu sentence-transformers`",
                    flush=True,
                )
        if runtime is not None:
            independent = Side(runtime.version)
            sample = chunks[:16]
            theirs = runtime.embed(sample)
            served = raw_vectors(garage_host, args.model, sample)
            agreement = min(cosine(a, b) for a, b in zip(theirs, served, strict=True))
        for round_ in range(args.rounds):
            line = []
            for side, (_, host) in zip(raws, raw_hosts, strict=True):
                side.seconds.append(raw_round(host, args.model, chunks))
                line.append(f"{len(chunks) / side.seconds[-1]:.1f}")
            if independent is not None and runtime is not None:
                independent.seconds.append(runtime.round(chunks))
                line.append(f"independent {len(chunks) / independent.seconds[-1]:.1f}")
            ours.seconds.append(garage_round(url, config))
            line.append(f"garage {len(chunks) / ours.seconds[-1]:.1f}")
            print(f"round {round_ + 1} chunks/s: raw " + ", ".join(line), flush=True)
        dedup(url, args, garage_host)
    finally:
        for flag_server in flag_servers:
            flag_server.stop()
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    print()
    print(
        f"{len(chunks)} chunks of {CHUNK_CHARS} characters, {total_tokens} tokens "
        f"({total_tokens / len(chunks):.0f} a chunk, by /tokenize), {args.model}; "
        f"{total_flops / 1e9:.1f} GFLOP in all"
    )
    print(peak.explain())
    print(encoder.explain())
    sides = [*raws, *([independent] if independent else []), ours]
    width = max(len(side.name) for side in sides) + 2
    print(f"{'':{width}}{'chunks/s':>10}{'tokens/s':>10}{'GFLOP/s':>9}{'% peak':>8}")
    for side in sides:
        seconds = side.median()
        flops = total_flops / seconds
        print(
            f"{side.name:{width}}{len(chunks) / seconds:>10.1f}{total_tokens / seconds:>10.0f}"
            f"{flops / 1e9:>9.1f}{100 * flops / peak.flops:>7.1f}%"
        )
    if agreement is not None:
        print(f"independent vs llama-server vectors: min cosine {agreement:.4f} over 16 chunks")
    best = min((side for side in sides if side is not ours), key=Side.median)
    ratio = best.median() / ours.median()
    print(
        f"ratio garage / best other ({best.name}): {ratio:.3f}  "
        f"(target >= 1.00: {'met' if ratio >= 1.0 else 'NOT met'})"
    )


def _independent() -> Any:
    from bench import independent

    return independent


if __name__ == "__main__":
    main()
