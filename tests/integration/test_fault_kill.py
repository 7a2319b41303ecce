"""kill -9 and SIGTERM against real `garage ingest` and `garage embed` processes.

A real mixed folder of over 500 files written by other people (Python's documentation sources
and HTML pages, its test suite's modules and mail, Office files, PDFs) is ingested and embedded
once without interruption into one database, and into another by processes killed with SIGKILL
at random points, then one clean run. The two must hold the same documents, chunks, BM25
statistics and vectors (compared as sets), no document may be without its chunks, and no run
that did not walk everything may be marked completed.

``GARAGE_FAULT_KILLS`` sets the number of kills per command (default 10); a longer soak is
``GARAGE_FAULT_KILLS=100 scripts/test tests/integration/test_fault_kill.py``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from tests.conftest import LlamaServers
from tests.integration.fault_helpers import (
    ROOT,
    cli_env,
    garage,
    rows_so_far,
    run_to_end,
    scalar,
    snapshot,
    vectors,
)
from tests.integration.ingest_helpers import write_docx, write_pptx, write_xlsx
from tests.material import material

KILLS = int(os.environ.get("GARAGE_FAULT_KILLS", "10"))
DOCS = "usr/share/doc/python3.11-doc/html"
TESTS = "usr/lib/python3.11/test"


def _take(files: list[Path], count: int, max_bytes: int) -> list[Path]:
    return [f for f in sorted(files) if f.stat().st_size <= max_bytes][:count]


def real_mixed_folder(root: Path, *, max_bytes: int) -> int:
    """Copy real files of every kind into ``root``; returns how many."""
    docs = material("python3.11-doc") / DOCS
    suite = material("libpython3.11-testsuite") / TESTS
    picks: list[tuple[Path, str]] = []
    for page in _take(list((docs / "_sources").rglob("*.txt")), 230, max_bytes):
        picks.append((page, f"docs/{page.relative_to(docs / '_sources')}"))
    for page in _take(list((docs / "library").glob("*.html")), 60, max_bytes * 4):
        picks.append((page, f"html/{page.name}"))
    for module in _take(list(suite.glob("test_*.py")), 150, max_bytes):
        picks.append((module, f"code/{module.name}"))
    for message in _take(list((suite / "test_email" / "data").glob("msg_*.txt")), 40, max_bytes):
        picks.append((message, f"mail/{message.stem}.eml"))
    for pdf in sorted((material("pypdf") / "resources").glob("*.pdf"))[:15]:
        picks.append((pdf, f"pdf/{pdf.name}"))
    for source, relative in picks:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    office = root / "office"
    office.mkdir()
    for i in range(5):
        write_docx(office / f"report{i}.docx", f"Report {i}", author="Ada Lovelace")
        write_pptx(office / f"deck{i}.pptx", f"Review {i}")
        write_xlsx(office / f"sheet{i}.xlsx")
    return len(picks) + 15


def kill_at_random_points(
    args: list[str],
    env: dict[str, str],
    progress: Callable[[], int],
    total: int,
    rng: random.Random,
) -> list[tuple[int, int]]:
    """Start ``args`` again and again, each time SIGKILLing it once ``progress()`` passed a
    random target between where it stands and ``total`` (the first time during start-up).
    Returns (progress at kill, target) pairs for the kills that hit a running process."""
    kills: list[tuple[int, int]] = []
    attempts = 0
    while len(kills) < KILLS and attempts < KILLS * 3:
        attempts += 1
        done = progress()
        remaining = total - done
        if remaining <= 1:
            break
        # Keep work for the kills still to come: never aim past half of what is left.
        target = done + rng.randint(0, max(1, remaining // 2))
        process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            if not kills:
                time.sleep(rng.uniform(0.2, 1.5))  # the first during start-up and migration
            else:
                while process.poll() is None and progress() < target:
                    time.sleep(rng.uniform(0.01, 0.08))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills.append((progress(), target))
        finally:
            process.wait(timeout=60)
    return kills


def assert_no_killed_run_completed(url: str, walked: int) -> None:
    """A completed run is one that walked everything: its seen count is the whole folder's."""
    with psycopg.connect(url) as conn:
        runs = conn.execute(
            "SELECT completed, seen_count, finished_at IS NOT NULL, stop_reason FROM ingest_runs"
        ).fetchall()
    assert runs, "no run was recorded"
    for completed, seen, finished, stop_reason in runs:
        if completed:
            assert (seen, finished, stop_reason) == (walked, True, None), runs
    # The killed ones never got to write an end at all.
    assert sum(not finished for _, _, finished, _ in runs) >= 1


def test_kill_9_of_ingest_at_random_points_loses_and_duplicates_nothing(
    migrated_db: str, second_db: str, tmp_path: Path
) -> None:
    folder = tmp_path / "home"
    files = real_mixed_folder(folder, max_bytes=30_000)
    assert files >= 500
    reference_env = cli_env(tmp_path, second_db, folder, None)
    run_to_end(garage("ingest", "--json"), reference_env)
    reference = snapshot(second_db)
    documents = len(reference["documents"])

    env = cli_env(tmp_path, migrated_db, folder, None)
    kills = kill_at_random_points(
        garage("ingest"),
        env,
        lambda: scalar(migrated_db, "SELECT count(*) FROM documents"),
        documents,
        random.Random(int(os.environ.get("GARAGE_FAULT_SEED", "14"))),
    )
    assert len(kills) >= min(KILLS, 3), kills
    [report] = json.loads(run_to_end(garage("ingest", "--json"), env).stdout)
    assert report["completed"] and report["deleted"] == 0

    interrupted = snapshot(migrated_db)
    for key, rows in reference.items():
        assert interrupted[key] == rows, f"{key}: {len(interrupted[key] ^ rows)} rows differ"
    assert reference["orphans"] == set()
    walked = scalar(second_db, "SELECT seen_count FROM ingest_runs")
    assert_no_killed_run_completed(migrated_db, walked)
    print(
        f"ingest: {files} files, {documents} documents, {len(reference['chunks'])} chunks,"
        f" {len(reference['postings'])} postings; {len(kills)} kills at"
        f" {sorted(k for k, _ in kills)} documents; lost 0, duplicated 0"
    )


def small_real_folder(root: Path) -> int:
    """Over 500 real texts small enough to embed quickly: the opening of each documentation
    page, small test modules, and real mail."""
    docs = material("python3.11-doc") / DOCS / "_sources"
    suite = material("libpython3.11-testsuite") / TESTS
    count = 0
    for page in sorted(docs.rglob("*.txt"))[:420]:
        text = page.read_text(encoding="utf-8", errors="replace")[:700]
        target = root / "docs" / page.relative_to(docs)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        count += 1
    for module in _take(list(suite.rglob("*.py")), 60, 1_200):
        target = root / "code" / f"{count}_{module.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(module, target)
        count += 1
    for message in _take(list((suite / "test_email" / "data").glob("msg_*.txt")), 40, 2_000):
        target = root / "mail" / f"{message.stem}.eml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(message, target)
        count += 1
    return count


def test_kill_9_of_embed_at_random_points_writes_every_vector_once(
    migrated_db: str, second_db: str, tmp_path: Path, llama: LlamaServers
) -> None:
    folder = tmp_path / "home"
    files = small_real_folder(folder)
    assert files >= 500
    table = "emb_" + llama.embed_model.replace("-", "_")
    reference_env = cli_env(tmp_path, second_db, folder, llama)
    run_to_end(garage("ingest"), reference_env)
    run_to_end(garage("embed"), reference_env)
    reference = vectors(second_db, table)
    chunks = scalar(second_db, "SELECT count(*) FROM chunks")
    assert len(reference) == chunks > 0

    env = cli_env(tmp_path, migrated_db, folder, llama)
    run_to_end(garage("ingest"), env)
    kills = kill_at_random_points(
        garage("embed"),
        env,
        lambda: rows_so_far(migrated_db, table),
        chunks,
        random.Random(int(os.environ.get("GARAGE_FAULT_SEED", "19"))),
    )
    assert len(kills) >= min(KILLS, 3), kills
    run_to_end(garage("embed"), env)
    found = vectors(migrated_db, table)
    assert found.keys() == reference.keys()
    assert rows_so_far(migrated_db, table) == len(found)  # no chunk embedded twice
    # The same text under the same model: the same vector, whichever batch it travelled in.
    worst = min(_cosine(found[key], reference[key]) for key in reference)
    assert worst > 0.9999, worst
    print(
        f"embed: {files} files, {chunks} chunks; {len(kills)} kills at"
        f" {sorted(k for k, _ in kills)} vectors; lost 0, duplicated 0, worst cosine {worst:.6f}"
    )


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / ((sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5))


def test_sigterm_stops_ingest_between_documents(migrated_db: str, tmp_path: Path) -> None:
    folder = tmp_path / "home"
    real_mixed_folder(folder, max_bytes=30_000)
    env = cli_env(tmp_path, migrated_db, folder, None)
    process = subprocess.Popen(
        garage("ingest", "--json"), cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    while scalar(migrated_db, "SELECT count(*) FROM documents") < 20:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 143
    [report] = json.loads(out)
    assert report["completed"] is False and report["stop_reason"] == "terminated (SIGTERM)"
    with psycopg.connect(migrated_db) as conn:
        row = conn.execute(
            "SELECT completed, stop_reason, indexed_count FROM ingest_runs"
        ).fetchone()
        stored = conn.execute("SELECT count(*) FROM documents").fetchone()
    assert row == (False, "terminated (SIGTERM)", report["indexed"])
    assert stored is not None and stored[0] == report["indexed"]
