"""Ingest benchmark: first ingest, a no-change rerun against a bare os.scandir walk, 1% touched.

    .venv/bin/python bench/ingest.py [--files 20000] [--database-url URL] [--keep DIR]

Builds a tree of real files (Python standard-library sources as code, Python documentation
prose when the Debian package is cached, Markdown and text made from them), ingests it into a
fresh database on the given server (default: the embedded one), and prints the figures side by
side. Targets: the rerun opens no file and walks at >= 20,000 files/s, at least 0.5x a bare
scandir walk of the same tree; the 1% run re-extracts only the touched files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import garage.ingest.pipeline as pipeline  # noqa: E402
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
    pool = [(p, ".py") for p in sources] + [(p, ".md") for p in prose]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--database-url", default=os.environ.get("GARAGE_DATABASE_URL"))
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    args = parser.parse_args()

    tree = args.keep or Path(tempfile.mkdtemp(prefix="garage-bench-"))
    tree.mkdir(parents=True, exist_ok=True)
    print(f"building {args.files} files under {tree} …", flush=True)
    total_bytes = build_tree(tree, args.files)

    base = load_config(Path(tempfile.mkdtemp()) / "none.json", env={})
    server = args.database_url or resolve_url(base)
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
    real_read = pipeline.read_bytes

    def counting_read(path: Path, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(path)
        return real_read(path, **kwargs)

    pipeline.read_bytes = counting_read  # type: ignore[assignment]
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            first = ingest_source(conn, config, source)
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
        pipeline.read_bytes = real_read  # type: ignore[assignment]
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        if not args.keep:
            shutil.rmtree(tree, ignore_errors=True)

    files_per_s = first.seen / first.seconds
    rerun_rate = second.seen / second.seconds
    bare_rate = walked / bare
    print()
    print(f"{'measure':<40}{'garage':>14}{'baseline':>14}{'ratio':>8}")
    print(f"{'first ingest files/s':<40}{files_per_s:>14.0f}{'':>14}{'':>8}")
    print(f"{'first ingest MB/s':<40}{total_bytes / 1e6 / first.seconds:>14.2f}{'':>14}{'':>8}")
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
