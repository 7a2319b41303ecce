"""File-change sensor benchmark: the cost of one tick on an unchanged source of 100k files.

    .venv/bin/python bench/watch.py [--files 100000] [--keep DIR] [--repeat 5]

Builds a tree of small files under /tmp (100 per folder, plus a pruned node_modules and .git
of 10% more that the walk must never enter), then times, each the median of --repeat runs on
the warm (page-cached) tree:

- baseline: a bare os.scandir walk that lstat()s every file — the floor for any stat-based check;
- garage.walk alone (its pruning, globs and records);
- garage.watch.fingerprint: the walk plus the digest the sensor compares;
- a full sensor tick through Dagster (config load, fingerprint, partitions, runs in progress),
  with a cursor that already holds the current fingerprint: the SkipReason case;

and one tick after touching a single file (the run-request case). Figures and ratios are printed
side by side; the target is a tick within 2x the bare scandir walk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build_tree(root: Path, count: int) -> None:
    body = b"A line of a note that nobody will read during this benchmark.\n" * 4
    for i in range(count):
        folder = root / f"d{i // 10000:02d}" / f"s{(i // 100) % 100:02d}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i:06d}.md").write_bytes(body)
    # What the walk prunes: it must cost nothing however large it is.
    for pruned in ("node_modules/pkg", ".git/objects"):
        folder = root / pruned
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(count // 20):
            (folder / f"blob{i:06d}").write_bytes(b"x")


def scandir_stat_walk(root: Path) -> int:
    """Every file lstat()-ed, pruned folders skipped by name: the floor."""
    count, stack = 0, [str(root)]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in ("node_modules", ".git"):
                        stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="Build (or reuse) the tree here and keep it.")
    args = parser.parse_args()

    import dagster as dg

    from garage.config import SourceConfig
    from garage.walk import walk
    from garage.watch import fingerprint
    from resources.database import DatabaseResource
    from sensors.changes import build_source_changes_sensor

    work = Path(tempfile.mkdtemp(prefix="garage-bench-watch-", dir="/tmp"))
    root = args.keep or work / "tree"
    try:
        if not (root / "d00").exists():
            started = time.perf_counter()
            build_tree(root, args.files)
            print(f"built {args.files} files in {time.perf_counter() - started:.1f}s: {root}")
        source = SourceConfig(name="bench", roots=[str(root)])
        config = work / "garage.json"
        config.write_text(json.dumps({"sources": [{"name": "bench", "roots": [str(root)]}]}))
        os.environ["GARAGE_CONFIG"] = str(config)

        files = scandir_stat_walk(root)  # also warms the page cache
        assert fingerprint(source).files == files, "the walk and the floor disagree"
        floor = median_seconds(lambda: scandir_stat_walk(root), args.repeat)
        walk_only = median_seconds(lambda: sum(1 for _ in walk(root)), args.repeat)
        digest = median_seconds(lambda: fingerprint(source), args.repeat)

        sensor = build_source_changes_sensor()
        resources = {"database": DatabaseResource()}
        with dg.instance_for_test() as instance:
            instance.add_dynamic_partitions("sources", ["bench"])

            def tick(cursor: str | None) -> object:
                context = dg.build_sensor_context(
                    instance=instance, cursor=cursor, resources=resources
                )
                return sensor(context)

            first = tick(None)
            assert isinstance(first, dg.SensorResult) and first.run_requests
            cursor = first.cursor
            results: list[object] = []
            idle = median_seconds(lambda: results.append(tick(cursor)), args.repeat)
            assert all(isinstance(r, dg.SkipReason) for r in results)
            touched = next(root.rglob("note000500.md"))
            touched.write_text(touched.read_text() + "one more line\n")
            started = time.perf_counter()
            changed = tick(cursor)
            change_tick = time.perf_counter() - started
            assert isinstance(changed, dg.SensorResult) and len(changed.run_requests or []) == 1

        rate = files / idle
        pruned = 2 * (args.files // 20)
        print(f"\nunchanged source: {files} files watched (+{pruned} in pruned folders), "
              f"median of {args.repeat}")  # fmt: skip
        print(f"{'what':<44}{'seconds':>10}{'files/s':>12}{'x floor':>10}")
        for label, seconds in (
            ("bare os.scandir + lstat walk (floor)", floor),
            ("garage.walk alone", walk_only),
            ("garage.watch.fingerprint", digest),
            ("sensor tick, nothing changed (SkipReason)", idle),
            ("sensor tick, one file touched (1 request)", change_tick),
        ):
            print(f"{label:<44}{seconds:>10.3f}{files / seconds:>12,.0f}{seconds / floor:>10.2f}")
        verdict = "meets" if idle <= 2 * floor else "misses"
        print(f"\nan idle tick costs {idle:.2f}s ({rate:,.0f} files/s): {verdict} the target of "
              f"2x the bare walk ({2 * floor:.2f}s)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
