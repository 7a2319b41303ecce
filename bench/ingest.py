"""Ingest benchmark: first ingest (against a baseline checkout's, chunk for chunk), a no-change
rerun against a bare os.scandir walk, 1% touched.

    .venv/bin/python bench/ingest.py [--files 20000] [--database-url URL] [--keep DIR]
                                     [--baseline DIR] [--rounds 1]

Builds a tree of real files (Python standard-library sources as code, Python documentation
prose when the Debian package is cached, Markdown and text made from them), ingests it into a
fresh database on the given server (default: the embedded one), and prints the figures side by
side. Targets: the rerun opens no file and walks at >= 20,000 files/s, at least 0.5x a bare
scandir walk of the same tree; the 1% run re-extracts only the touched files.

With ``--baseline DIR`` (another checkout of Garage, e.g. a worktree of main), the first ingest
is run by both checkouts on the same tree, each in a process of its own with its own code and
migrations (``bench/first_ingest.py``) and its own fresh database, alternating for ``--rounds``
rounds so that the machine's load hits both alike; the median files/s of each and their ratio
are printed, and the two databases' chunks and BM25 statistics are compared chunk for chunk
(digests over every chunk column and every posting, keyed by URI and ordinal). Target for the
first ingest: >= 2x the baseline, identical chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import garage.ingest.stages as ingest_stages  # noqa: E402
from garage.config import SourceConfig, load_config  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.ingest import ingest_source  # noqa: E402
from garage.walk import walk  # noqa: E402


def build_tree(root: Path, count: int) -> int:
    """Copy real files into ``root`` until it holds ``count``; return total bytes."""
    stdlib = Path(os.__file__).parent
    sources = [p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts][:4000]
    docs = Path.home() / ".cache/garage/material/python3.11-doc"
    prose = list(docs.rglob("*.rst.txt"))[:2000] if docs.exists() else []
    # Interleaved, so that a tree smaller than the pool still holds prose and code alike.
    code = [(p, ".py") for p in sources]
    pages = [(p, ".md") for p in prose]
    step = max(1, len(code) // max(1, len(pages)))
    pool: list[tuple[Path, str]] = []
    for i, page in enumerate(pages):
        pool += [*code[i * step : (i + 1) * step], page]
    pool += code[len(pages) * step :]
    if not pool:
        raise SystemExit("no real files found to build the tree from")
    total = 0
    for i in range(count):
        src, suffix = pool[i % len(pool)]
        folder = root / f"d{i // 500:03d}" / f"s{(i // 50) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"f{i:06d}{suffix}"
        data = src.read_bytes()
        # Make each file unique so the index holds count documents, not len(pool).
        data += f"\n# copy {i}\n".encode() if suffix == ".py" else f"\n\nCopy {i}.\n".encode()
        target.write_bytes(data)
        total += len(data)
    return total


def scandir_walk(root: Path) -> int:
    count, stack = 0, [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


HERE = Path(__file__).resolve().parents[1]

# Digests that do not depend on row ids: chunks by document URI and ordinal, postings by URI,
# ordinal and term; sums of 64-bit hashes, so no side's order matters.
_DIGESTS = {
    "chunks": """SELECT count(*), sum(hashtextextended(concat_ws('|', d.uri, c.ord, c.text,
        c.text_sha256, c.start_offset, c.end_offset, c.heading, c.chunker, c.modality,
        c.metadata::text, c.tsv::text), 0)::numeric)
        FROM chunks c JOIN documents d ON d.id = c.document_id""",
    "bm25_postings": """SELECT count(*), sum(hashtextextended(concat_ws('|', d.uri, c.ord,
        p.term, p.tf, p.dl), 0)::numeric)
        FROM bm25_postings p JOIN chunks c ON c.id = p.chunk_id
        JOIN documents d ON d.id = c.document_id""",
    "bm25_corpus": "SELECT sum(chunks), sum(tokens) FROM bm25_corpus",
}


def digests(url: str) -> dict[str, tuple[object, object]]:
    with psycopg.connect(url) as conn:
        return {
            name: tuple(conn.execute(query).fetchone() or ()) for name, query in _DIGESTS.items()
        }  # type: ignore[misc]


def first_ingest(code: Path, tree: Path, url: str) -> dict[str, float]:
    """A first ingest of ``tree`` by the checkout at ``code``, in a process of its own."""
    result = subprocess.run(
        [
            sys.executable,
            str(HERE / "bench" / "first_ingest.py"),
            "--code",
            str(code),
            "--tree",
            str(tree),
            "--url",
            url,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def compare_first_ingest(
    server: str, tree: Path, baseline: Path, rounds: int
) -> tuple[str, list[str]]:
    """Run both sides' first ingests, alternating; return our last database (kept for the rest
    of the benchmark) and the lines to print."""
    sides = {"baseline": baseline, "garage": HERE}
    rates: dict[str, list[float]] = {side: [] for side in sides}
    last: dict[str, str] = {}
    made: list[str] = []
    for round_ in range(rounds):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for side in order:
            name = f"garage_bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            made.append(name)
            url = psycopg.conninfo.make_conninfo(server, dbname=name)
            run = first_ingest(sides[side], tree, url)
            rates[side].append(run["seen"] / run["seconds"])
            print(
                f"round {round_ + 1} {side}: {run['seen']:.0f} files, {run['chunks']:.0f} chunks,"
                f" {run['seconds']:.1f}s, {rates[side][-1]:.1f} files/s",
                flush=True,
            )
            if side in last:
                _drop(server, last[side])
            last[side] = url
    ours, theirs = digests(last["garage"]), digests(last["baseline"])
    _drop(server, last["baseline"])
    lines = []
    before, after = statistics.median(rates["baseline"]), statistics.median(rates["garage"])
    lines.append(
        f"{'first ingest files/s (vs baseline)':<40}{after:>14.1f}{before:>14.1f}"
        f"{after / before:>8.2f}"
    )
    for table, digest in ours.items():
        same = "identical" if digest == theirs[table] else f"DIFFERENT (baseline {theirs[table]})"
        lines.append(f"  {table}: {digest[0]} rows/count, digest {digest[1]}: {same}")
    return last["garage"], lines


def _drop(server: str, url: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(str(name)))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--database-url", default=os.environ.get("GARAGE_DATABASE_URL"))
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    parser.add_argument("--baseline", type=Path, help="a checkout of Garage to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    tree = args.keep or Path(tempfile.mkdtemp(prefix="garage-bench-"))
    tree.mkdir(parents=True, exist_ok=True)
    print(f"building {args.files} files under {tree} …", flush=True)
    total_bytes = build_tree(tree, args.files)

    base = load_config(Path(tempfile.mkdtemp()) / "none.json", env={})
    server = args.database_url or resolve_url(base)
    compared: list[str] = []
    if args.baseline:
        url, compared = compare_first_ingest(server, tree, args.baseline, args.rounds)
    else:
        name = f"garage_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = psycopg.conninfo.make_conninfo(server, dbname=name)
        ensure_migrated(url)
    config = base.model_copy(
        update={
            "sources": [SourceConfig(name="bench", roots=[str(tree)])],
            "limits": base.limits.model_copy(update={"max_chunks_per_document": 100000}),
        }
    )
    source = config.sources[0]

    opened: list[Path] = []
    real_read = ingest_stages.read_bytes

    def counting_read(path: Path, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(path)
        return real_read(path, **kwargs)

    ingest_stages.read_bytes = counting_read  # type: ignore[assignment]
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            first = None if compared else ingest_source(conn, config, source)
            if first is not None:
                print(f"first ingest:  {first.summary()}")
            opened.clear()
            second = ingest_source(conn, config, source)
            second_opened = len(opened)
            start = time.perf_counter()
            walked = scandir_walk(tree)
            bare = time.perf_counter() - start
            start = time.perf_counter()
            garage_walked = sum(1 for _ in walk(tree))
            garage_walk = time.perf_counter() - start
            touched = sorted(tree.rglob("f*"))[::100]
            for path in touched:
                with path.open("a") as handle:
                    handle.write("\nedited\n")
            opened.clear()
            third = ingest_source(conn, config, source)
    finally:
        ingest_stages.read_bytes = real_read  # type: ignore[assignment]
        _drop(server, url)
        if not args.keep:
            shutil.rmtree(tree, ignore_errors=True)

    rerun_rate = second.seen / second.seconds
    bare_rate = walked / bare
    print()
    print(f"{'measure':<40}{'garage':>14}{'baseline':>14}{'ratio':>8}")
    if first is not None:
        print(f"{'first ingest files/s':<40}{first.seen / first.seconds:>14.0f}")
        print(f"{'first ingest MB/s':<40}{total_bytes / 1e6 / first.seconds:>14.2f}")
    for line in compared:
        print(line)
    print(
        f"{'no-change rerun files/s (vs scandir)':<40}{rerun_rate:>14.0f}{bare_rate:>14.0f}"
        f"{rerun_rate / bare_rate:>8.2f}"
    )
    print(
        f"{'garage.walk alone files/s (vs scandir)':<40}{garage_walked / garage_walk:>14.0f}"
        f"{bare_rate:>14.0f}{garage_walked / garage_walk / bare_rate:>8.2f}"
    )
    print(f"{'no-change rerun files opened':<40}{second_opened:>14}{0:>14}")
    print(
        f"{'1% touched: re-extracted / touched':<40}{third.indexed + third.unchanged:>14}"
        f"{len(touched):>14}{(third.indexed + third.unchanged) / len(touched):>8.2f}"
    )
    print(f"{'1% touched: files opened':<40}{len(opened):>14}{len(touched):>14}")


if __name__ == "__main__":
    main()
