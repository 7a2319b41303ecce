"""The Dagster-only path builds the index the CLI path builds.

One real folder (mail from Python's email test data and a two-mail thread between named
people, an Office document, deck and workbook, two PDFs from pypdf, pages of Python's
documentation and two Markdown notes) and one config file, the same bytes on both sides:
MiniLM on the real llama-server for vectors, SmolLM2 on the real llama-server for facts (a JSON
schema in ``response_format``) and for the distillation's confirmations, no schedule and no
file watcher. Two fresh databases:

- the CLI path, each step a `garage` subprocess: ``ingest``, ``enrich-facts``, ``embed``,
  ``cluster-facts`` (which rebuilds the graph), then ``graph rebuild`` once more, as a person
  following the README would;
- the Dagster path, from an empty Dagster instance whose only preparation is the source's
  partition (what `garage sources add` registers): one
  ``dagster asset materialize -m garage_assets.definitions --select '*' --partition mixed``.
  Dagster accepts that mixed selection as it stands: every asset is in one implicit job, and
  the unpartitioned ``distilled_facts`` and ``graph`` run in the same run as the source's
  partitioned assets, after them, in dependency order, with the asset checks. No backfill and
  no second run are needed. The test reads the run's steps back from the instance and asserts
  their order (``potential_fact_emb_<slug>`` after ``potential_facts``, ``distilled_facts``
  after both vector assets, ``graph`` after ``distilled_facts``), what each materialized for
  which partition, and that every asset check passed, so a Dagster that ran them otherwise
  fails here rather than passing by luck.

Then documents, chunks, BM25, potential facts, fact and chunk vectors, distilled facts (their
members, status, statement and vectors) and the AGE graph's label counts must be equal across
the two databases, and none of them empty.

Two choices keep the model's part both short and repeatable:

- The default fact prompt is scoped (config, not code) to the document class and reads up to
  1,000 characters a request (the default): SmolLM2 reads the notes, pages, Office files and
  PDFs, a dozen requests or so a path, while the mail gives the facts its headers state, read
  with no model (SmolLM2 made nothing of these short test mails but header lines, every one
  dropped, at a request each).
- Extraction on llama-server is greedy (temperature 0 under the JSON-schema grammar, see
  garage/facts/language_model.py), and one document's requests go one at a time.
- Greedy is not enough for the same reply twice: llama-server's logits are not bit-identical
  across batch shapes, so a prompt whose prefix was cached (the second path finds the first
  path's prefixes cached) or that shared a batch with another slot's can turn a 135M model's
  near-tie the other way, and one fact differs. Both paths therefore talk to a SmolLM2 server
  of this test's own with one slot and no prompt cache: every prompt is read whole, alone, and
  the same text gets the same reply.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest

from garage.graph.read import graph_labels
from garage.inference.model_key import key_file
from garage_assets.definitions import build_definitions
from garage_assets.partitions import instance_at, register_source
from tests.conftest import LlamaServers, llama_config
from tests.integration.cluster_helpers import MAILS as THREAD
from tests.integration.fault_helpers import garage, run_to_end, snapshot, vectors
from tests.integration.ingest_helpers import write_docx, write_pptx, write_xlsx
from tests.material import material
from tests.servers import cached_model, llama_server

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "mixed"
SLUG = "all_minilm_l6_v2"
CONTENT, FACTS, DISTILLED = f"emb_{SLUG}", f"potential_fact_emb_{SLUG}", f"fact_emb_{SLUG}"

MAILS = ("msg_01", "msg_20", "msg_04", "msg_10", "msg_21", "msg_27")
PAGES = ("library/keyword", "library/tty")
PDFS = ("crazyones.pdf", "toy.pdf")
NOTES = {
    "lisbon.md": (
        "# Lisbon office\n\nThe Lisbon office opens on 3 March 2025. Maria Santos leads the new "
        "team of twelve engineers. The building on Rua Augusta has four floors.\n"
    ),
    "lisbon-plan.md": (
        "# Plans for Lisbon\n\nOur Lisbon office opens its doors on 3 March 2025. The team of "
        "twelve engineers is led by Maria Santos.\n"
    ),
}


def real_folder(root: Path) -> Path:
    mail = material("libpython3.11-testsuite") / "usr/lib/python3.11/test/test_email/data"
    docs = material("python3.11-doc") / "usr/share/doc/python3.11-doc/html/_sources"
    pdfs = material("pypdf") / "resources"
    for folder in ("mail", "docs", "pdf", "office", "notes"):
        (root / folder).mkdir(parents=True)
    for name in MAILS:
        shutil.copyfile(mail / f"{name}.txt", root / "mail" / f"{name}.eml")
    # A reply and its original: senders, recipients and a subject the headers anchor across
    # both mails.
    for name, text in THREAD.items():
        (root / "mail" / name).write_text(text)
    for page in PAGES:
        shutil.copyfile(docs / f"{page}.rst.txt", root / "docs" / f"{Path(page).name}.rst.txt")
    for name in PDFS:
        shutil.copyfile(pdfs / name, root / "pdf" / name)
    write_docx(root / "office" / "report.docx", "Quarterly report", author="Ada Lovelace")
    write_pptx(root / "office" / "review.pptx", "Harbour review")
    write_xlsx(root / "office" / "expenses.xlsx")
    for name, text in NOTES.items():
        (root / "notes" / name).write_text(text)
    return root


def config_text(llama: LlamaServers, folder: Path) -> str:
    """The one config both paths read. Few extractions per reply keep SmolLM2's replies short
    and whole; no schedule and no watcher, so nothing but the run asked for writes the Dagster
    side."""
    facts: dict[str, Any] = {
        "max_tokens": 256,
        "max_extractions": 2,
        "prompts": [{"name": "default", "scope": {"corpus_classes": ["document"]}}],
    }
    config = llama_config(
        llama,
        sources=[{"name": SOURCE, "roots": [str(folder)]}],
        facts=facts,
        schedule={"enabled": False, "watch": False},
    )
    # A reply of max_tokens can take minutes from SmolLM2 on a busy two-core machine.
    inference = config.inference.model_copy(update={"timeout_seconds": 900.0})
    config = config.model_copy(update={"inference": inference})
    return json.dumps(config.model_dump(mode="json", exclude_defaults=True, by_alias=True))


def environment(tmp_path: Path, side: str, config: Path, url: str) -> dict[str, str]:
    return dict(
        os.environ,
        GARAGE_CONFIG=str(config),
        GARAGE_DATABASE_URL=url,
        GARAGE_DATA_DIR=str(tmp_path / side / "data"),
        DAGSTER_HOME=str(tmp_path / side / "dagster"),
    )


STEP_START, STEP_SUCCESS = dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS
CLI_STEPS = (("ingest",), ("enrich-facts",), ("embed",), ("cluster-facts",), ("graph", "rebuild"))


def cli_path(env: dict[str, str]) -> dict[str, float]:
    seconds = {}
    for command in CLI_STEPS:
        started = time.monotonic()
        run_to_end(garage(*command), env)
        seconds[" ".join(command)] = time.monotonic() - started
    return seconds


def dagster_path(env: dict[str, str]) -> tuple[float, dict[str, float], dict[str, list[Any]]]:
    """One `dagster asset materialize` of every asset: the seconds it took, the seconds of
    each step in the order they started, and the partitions each asset was materialized
    for."""
    home = Path(env["DAGSTER_HOME"])
    with instance_at(home) as instance:
        assert register_source(instance, SOURCE)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "asset", "materialize", "-m",
         "garage_assets.definitions", "--select", "*", "--partition", SOURCE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400,
    )  # fmt: skip
    seconds = time.monotonic() - started
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    with dg.DagsterInstance.from_config(str(home)) as instance:
        [run] = instance.get_runs()  # the one run: no sensor or schedule started another
        assert run.status == dg.DagsterRunStatus.SUCCESS
        logs = instance.all_logs(run.run_id)
    begun = {e.step_key: e.timestamp for e in logs if e.dagster_event_type == STEP_START}
    ended = {e.step_key: e.timestamp for e in logs if e.dagster_event_type == STEP_SUCCESS}
    assert ended.keys() == begun.keys()
    steps = {str(key): ended[key] - begun[key] for key in begun}
    materialized: dict[str, list[Any]] = {}
    for event in logs:
        if materialization := event.asset_materialization:
            key = materialization.asset_key.to_user_string()
            materialized.setdefault(key, []).append(materialization.partition)
        if evaluation := event.asset_check_evaluation:
            # The index's invariants hold on the Dagster side too.
            assert evaluation.passed, evaluation
    return seconds, steps, materialized


def assert_dependency_order(steps: list[str]) -> None:
    def at(step: str) -> int:
        assert step in steps, steps
        return steps.index(step)

    assert at("ingest") < at(CONTENT) < at("distilled_facts")
    assert at("ingest") < at("potential_facts") < at(FACTS) < at("distilled_facts")
    assert at("distilled_facts") < at("graph")


class Index:
    """What one database holds, read by what survives a rebuild (never by serial ids)."""

    def __init__(self, url: str):
        self.url = url
        with psycopg.connect(url) as conn:
            # author:<id> anchors and keys name a row of authors by its serial id: say who.
            self.authors = {
                f"author:{i}": f"author:{name} <{email}>"
                for i, name, email in conn.execute("SELECT id, name, email FROM authors")
            }

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url) as conn:
            return conn.execute(query).fetchall()  # type: ignore[arg-type]

    def who(self, key: str | None) -> str | None:
        return self.authors.get(key, key) if key else key

    # A potential fact's identity: its document, the prompt that asked, its class and span.
    FACT = "d.uri, f.prompt_name, f.fact_class, f.start_offset, f.end_offset, f.text"

    def facts(self) -> set[tuple[Any, ...]]:
        return {
            (*row[:-1], self.who(row[-1]))
            for row in self.rows(
                f"SELECT {self.FACT}, f.prompt_sha256, f.model, f.alignment, f.attributes::text,"
                " f.key FROM facts f JOIN documents d ON d.id = f.document_id"
            )
        }

    def fact_runs(self) -> set[tuple[Any, ...]]:
        return set(
            self.rows(
                "SELECT d.uri, r.prompt_name, r.prompt_sha256, r.content_sha256, r.model,"
                " r.facts_stored, r.dropped FROM fact_runs r JOIN documents d"
                " ON d.id = r.document_id"
            )
        )

    def fact_vectors(self) -> dict[tuple[Any, ...], list[float]]:
        found = self.rows(
            f"SELECT {self.FACT}, e.embedding::text FROM {FACTS} e"
            " JOIN facts f ON f.id = e.fact_id JOIN documents d ON d.id = f.document_id"
        )
        return {tuple(row[:-1]): json.loads(row[-1]) for row in found}

    def _groups(self) -> dict[int, tuple[tuple[Any, ...], ...]]:
        members: dict[int, list[tuple[Any, ...]]] = {}
        for group, *fact in self.rows(
            f"SELECT f.distilled_fact_id, {self.FACT} FROM facts f"
            " JOIN documents d ON d.id = f.document_id WHERE f.distilled_fact_id IS NOT NULL"
        ):
            members.setdefault(group, []).append(tuple(fact))
        return {group: tuple(sorted(found)) for group, found in members.items()}

    def distilled(self) -> set[tuple[Any, ...]]:
        """Each distilled fact by its members, with what clustering decided about it."""
        groups = self._groups()
        return {
            (groups.get(i, ()), fact_class, status, statement, self.who(anchor), model, nodes)
            for i, fact_class, status, statement, anchor, model, nodes in self.rows(
                "SELECT id, fact_class, status, statement, anchor_key, model, nodes"
                " FROM distilled_facts"
            )
        }

    def restatements(self) -> set[tuple[Any, ...]]:
        return set(
            self.rows(
                f"SELECT {self.FACT}, r.prompt_name, r.start_offset, r.end_offset FROM facts f"
                " JOIN documents d ON d.id = f.document_id JOIN facts r"
                " ON r.id = f.restates_fact_id"
            )
        )

    def distilled_vectors(self) -> dict[tuple[Any, ...], list[float]]:
        groups = self._groups()
        return {
            groups[i]: json.loads(text)
            for i, text in self.rows(f"SELECT distilled_fact_id, embedding::text FROM {DISTILLED}")
        }

    def labels(self) -> set[tuple[str, str, int]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return {(label.kind, label.label, label.count) for label in graph_labels(conn)}


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def assert_same_vectors(left: dict[Any, list[float]], right: dict[Any, list[float]]) -> None:
    """The same keys, and per key the same vector up to the float noise of a batch of a
    different make-up (cosine > 0.9999)."""
    assert left.keys() == right.keys(), (left.keys() - right.keys(), right.keys() - left.keys())
    worst = min(cosine(left[key], right[key]) for key in left)
    assert worst > 0.9999, worst


def compare(name: str, read: Callable[[Index], Any], cli: Index, dagster: Index) -> Any:
    """Read one part of both indexes, print its size on each side, and return the CLI's."""
    ours, theirs = read(cli), read(dagster)
    print(f"  {name:<22} CLI {len(ours):>5}   Dagster {len(theirs):>5}")
    assert ours == theirs, (
        name,
        sorted(ours - theirs, key=repr)[:10] if isinstance(ours, set) else "",
        sorted(theirs - ours, key=repr)[:10] if isinstance(theirs, set) else "",
    )
    return ours


def test_one_selection_of_every_asset_is_one_job(tmp_path: Path) -> None:
    """What the Dagster path relies on, checked without a server: `--select '*'` resolves to
    the source's partitioned assets and the unpartitioned distilled_facts and graph together,
    and Dagster has one implicit job for them all (were it None, `asset materialize` would
    refuse the mixed selection, and the path would need a backfill and a second run)."""
    servers = LlamaServers("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3")
    config = llama_config(servers, sources=[{"name": SOURCE, "roots": [str(tmp_path)]}])
    with dg.instance_for_test():
        repository = build_definitions(config).get_repository_def()
    graph = repository.asset_graph
    keys = dg.AssetSelection.from_coercible(["*"]).resolve(graph)
    names = {key.to_user_string() for key in keys}
    assert {"documents", "chunks", CONTENT, "potential_facts", FACTS} <= names
    assert {"distilled_facts", "graph"} <= names
    assert {graph.get(key).partitions_def is None for key in keys} == {True, False}
    assert repository.get_implicit_job_def_for_assets(keys) is not None


@pytest.fixture
def repeatable_llama(llama: LlamaServers, tmp_path: Path) -> Iterator[LlamaServers]:
    """The shared servers, but SmolLM2 for chat on a server of this test's own that reads every
    prompt whole and alone (one slot, no prompt cache), under the shared servers' key."""
    args = ["-c", "4096", "-np", "1", "--no-cache-prompt", "--threads", str(os.cpu_count() or 1),
            "--api-key-file", str(key_file())]  # fmt: skip
    model = cached_model("SmolLM2-135M-Instruct.Q4_1.gguf")
    with llama_server(model, llama.chat_model, args, tmp_path / "chat.log") as url:
        yield dataclasses.replace(llama, chat_url=url)


def test_the_dagster_path_builds_the_index_the_cli_builds(
    migrated_db: str, second_db: str, repeatable_llama: LlamaServers, tmp_path: Path
) -> None:
    llama = repeatable_llama
    folder = real_folder(tmp_path / "folder")
    config = tmp_path / "garage.json"
    config.write_text(config_text(llama, folder))

    cli_seconds = cli_path(environment(tmp_path, "cli", config, migrated_db))
    dagster_seconds, steps, materialized = dagster_path(
        environment(tmp_path, "dagster", config, second_db)
    )

    print("\nCLI path: " + ", ".join(f"garage {k} {v:.1f} s" for k, v in cli_seconds.items()))
    print(f"  in all {sum(cli_seconds.values()):.1f} s")
    print(f"Dagster path: one run, {dagster_seconds:.1f} s; its steps in the order they began:")
    print("  " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in steps.items()))
    assert_dependency_order(list(steps))
    # Each partitioned asset for the source, each unpartitioned one once, with no partition.
    partitioned = ["documents", "chunks", CONTENT, "potential_facts", FACTS]
    assert materialized == {
        **{key: [SOURCE] for key in partitioned},
        "distilled_facts": [None],
        "graph": [None],
    }

    cli, dagster = Index(migrated_db), Index(second_db)
    ingested, embedded = snapshot(migrated_db), snapshot(second_db)
    for part in ("documents", "chunks", "postings", "corpus", "outcomes", "orphans"):
        print(f"  {part:<22} CLI {len(ingested[part]):>5}   Dagster {len(embedded[part]):>5}")
        assert ingested[part] == embedded[part], part
    # Equal because extraction is greedy under the grammar (see the module's docstring).
    facts = compare("potential facts", Index.facts, cli, dagster)
    compare("fact runs", Index.fact_runs, cli, dagster)
    compare("chunk vectors", lambda index: set(vectors(index.url, CONTENT)), cli, dagster)
    assert_same_vectors(vectors(migrated_db, CONTENT), vectors(second_db, CONTENT))
    compare("fact vectors", lambda index: set(index.fact_vectors()), cli, dagster)
    assert_same_vectors(cli.fact_vectors(), dagster.fact_vectors())
    distilled = compare("distilled facts", Index.distilled, cli, dagster)
    compare("restatements", Index.restatements, cli, dagster)
    assert_same_vectors(cli.distilled_vectors(), dagster.distilled_vectors())
    labels = compare("graph labels", Index.labels, cli, dagster)
    statuses = Counter(group[2] for group in distilled)
    print(f"    distilled by status: {dict(sorted(statuses.items()))}")
    for kind, label, count in sorted(labels):
        print(f"    {kind:<6} {label:<16} {count}")

    # Nothing compared is trivially empty: the model stated facts, the headers gave theirs,
    # clustering grouped them, and the graph holds them.
    assert ingested["documents"] and ingested["chunks"] and ingested["postings"]
    assert any(fact[1] == "default" for fact in facts), "SmolLM2 stated no fact at all"
    assert any(fact[1] == "metadata" for fact in facts)
    assert distilled and all(group[0] for group in distilled)
    counts = {(kind, label): count for kind, label, count in labels}
    assert counts[("vertex", "Fact")] == len(distilled)
    assert counts[("vertex", "PotentialFact")] == len(facts)
    assert counts[("edge", "STATES")] == len(facts)
