"""Answer quality of rag_ask, side by side for the local chat models: citations, their
relevance, "not in the excerpts" when the corpus does not hold the answer, and latency.

    .venv/bin/python bench/answers.py [--database-url URL] [--keep] [--reuse DBNAME]
        [--questions 40] [--limit 6] [--max-tokens 200]
        [--chat smollm2-135m-instruct=http://127.0.0.1:18081]
        [--chat qwen2.5-coder-1.5b-instruct=http://127.0.0.1:18083]
        [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2] [--dimensions 384]

The corpus and judgments are bench/quality.py's (the Python FAQ's answers, each judged relevant
to its question, among the howto, tutorial and language-reference pages), ingested and embedded
by Garage itself. Questions:

- ``--questions`` FAQ questions (evenly spaced over the sorted list, so the same ones every run);
- UNANSWERABLE: questions built for this benchmark whose answer is in none of those pages
  (checked by searching the pages for their key terms), half far from Python, half next to it;
- UNANSWERABLE_HELDOUT: more of the same, written after the first set had been measured and
  reported apart, so that a change tuned on the first set is seen on questions it never saw.

Every question goes through ``garage.ask.ask``, the code path of rag_ask and `garage ask`, with
rag_ask's defaults (6 excerpts, streamed) and each model in turn. Per model:

- cites: share of answerable questions whose answer has at least one valid [n];
- cites relevant: among answerable questions where retrieval put an excerpt of a judged-relevant
  document in the prompt, share whose citations include one;
- says not in excerpts (answerable): how often it refused although the answer was there;
- says not in excerpts (unanswerable): share of "not in the excerpts" where it is right;
- time to the first token of the answer (from the request) and total time of the call, search
  included, p50 and p95.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, with_database  # noqa: E402
from bench.quality import (  # noqa: E402
    SOURCES,
    Collection,
    faq_collection,
    load,
    quality_config,
    write_corpus,
)
from garage.ask import DEFAULT_EXCERPTS, ask, chat_model  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from tests.material import material  # noqa: E402

UNANSWERABLE = (
    "What port does PostgreSQL listen on by default?",
    "How do I read an Excel spreadsheet into a pandas DataFrame?",
    "How do I plot a line chart with matplotlib?",
    "How do I define a route in a Flask web application?",
    "How do I write a Dockerfile for a Python application?",
    "Which command creates a new Rust project with Cargo?",
    "How do I create a Kubernetes deployment from a YAML file?",
    "How do I configure Nginx as a reverse proxy?",
    "What is the capital city of Australia?",
    "In what year did Apollo 11 land on the Moon?",
    "How do I center a div with CSS flexbox?",
    "How many players does a soccer team have on the field?",
)
# Written after the questions above had been measured, and kept apart, so that a change made
# while looking at those is also judged on questions it was not made for.
UNANSWERABLE_HELDOUT = (
    "How do I reset a forgotten WordPress admin password?",
    "What is the boiling point of water at the top of Mount Everest?",
    "Who wrote the novel Pride and Prejudice?",
    "What is the worst-case time complexity of quicksort?",
    "How often should I water a cactus?",
    "How do I create a virtual machine in VirtualBox?",
    "How do I set up two-factor authentication on my bank account?",
    "Which SQL statement adds a column to an existing table?",
    "What is the speed of light in a vacuum?",
    "How do I feed a sourdough starter?",
)
DEFAULT_CHATS = (
    "smollm2-135m-instruct=http://127.0.0.1:18081",
    "qwen2.5-coder-1.5b-instruct=http://127.0.0.1:18083",
)


@dataclass
class Tally:
    model: str
    answerable: int = 0
    cites: int = 0
    relevant_shown: int = 0
    cites_relevant: int = 0
    refused_answerable: int = 0
    unanswerable: int = 0
    refused_unanswerable: int = 0
    heldout: int = 0
    refused_heldout: int = 0
    first_token_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)


def pick(collection: Collection, count: int) -> list[str]:
    questions = sorted(collection.judgments)
    if count >= len(questions):
        return questions
    step = len(questions) / count
    return [questions[int(i * step)] for i in range(count)]


def chat_config(base: GarageConfig, name: str, url: str) -> GarageConfig:
    inference = base.inference.model_copy(
        update={"provider": "llama_server", "model": name, "llama_host": url,
                "generation_seconds": 600.0}
    )  # fmt: skip
    return base.model_copy(update={"inference": inference})


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_model(
    url: str,
    config: GarageConfig,
    collection: Collection,
    questions: list[str],
    args: argparse.Namespace,
) -> Tally:
    tally = Tally(config.inference.model)
    with psycopg.connect(url, autocommit=True) as conn, chat_model(config) as model:
        [root] = conn.execute("SELECT roots[1] FROM sources WHERE name = 'python-docs'").fetchone()  # type: ignore[misc]
        prefix = Path(root).as_uri() + "/"
        asked = (
            [(q, "answerable") for q in questions]
            + [(q, "unanswerable") for q in UNANSWERABLE]
            + [(q, "heldout") for q in UNANSWERABLE_HELDOUT]
        )
        for n, (question, kind) in enumerate(asked, 1):
            started = time.monotonic()
            result = ask(
                conn, config, question, limit=args.limit, model=model,
                answer_tokens=args.max_tokens,
            )  # fmt: skip
            took = (time.monotonic() - started) * 1000
            if result.first_token_ms is not None:
                tally.first_token_ms.append(result.first_token_ms)
            tally.total_ms.append(took)
            shown = {c.number: c.uri.removeprefix(prefix) for c in result.citations}
            if kind == "answerable":
                relevant = collection.judgments[question]
                tally.answerable += 1
                tally.cites += bool(result.cited)
                tally.refused_answerable += result.not_in_excerpts
                if any(doc in relevant for doc in shown.values()):
                    tally.relevant_shown += 1
                    tally.cites_relevant += any(shown[c] in relevant for c in result.cited)
            elif kind == "unanswerable":
                tally.unanswerable += 1
                tally.refused_unanswerable += result.not_in_excerpts
            else:
                tally.heldout += 1
                tally.refused_heldout += result.not_in_excerpts
            if args.verbose:
                print(
                    f"--- {kind} {question}\n{result.answer}\ncited {result.cited}, "
                    f"not in excerpts {result.not_in_excerpts}, {took / 1000:.1f} s",
                    flush=True,
                )
            else:
                print(f"  {tally.model}: {n}/{len(asked)} ({took / 1000:.1f} s)", flush=True)
    return tally


def share(part: int, whole: int) -> str:
    return f"{part / whole:.2f} ({part}/{whole})" if whole else "-"


def print_table(tallies: list[Tally], limit: int) -> None:
    width = 30
    rows = [
        ("answers with a valid [n]", lambda t: share(t.cites, t.answerable)),
        ("cites a relevant excerpt*", lambda t: share(t.cites_relevant, t.relevant_shown)),
        ("'not in excerpts', answerable", lambda t: share(t.refused_answerable, t.answerable)),
        ("'not in excerpts', unanswerable",
         lambda t: share(t.refused_unanswerable, t.unanswerable)),
        ("'not in excerpts', held out", lambda t: share(t.refused_heldout, t.heldout)),
        ("first token p50 / p95, s", lambda t: f"{percentile(t.first_token_ms, .5) / 1000:.1f} / "
                                              f"{percentile(t.first_token_ms, .95) / 1000:.1f}"),
        ("total p50 / p95, s", lambda t: f"{percentile(t.total_ms, .5) / 1000:.1f} / "
                                        f"{percentile(t.total_ms, .95) / 1000:.1f}"),
    ]  # fmt: skip
    print()
    print(
        f"{'rag_ask, ' + str(limit) + ' excerpts':<{width + 2}}"
        + "".join(f"{t.model:>30}" for t in tallies)
    )
    for label, cell in rows:
        print(f"{label:<{width + 2}}" + "".join(f"{cell(t):>30}" for t in tallies))
    print(
        "* among answerable questions where retrieval put an excerpt of a judged-relevant "
        "document in the prompt; total includes the search"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_arguments(parser)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", metavar="DBNAME", help="measure a kept database again")
    parser.add_argument("--distractors", default="howto,tutorial,reference")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--limit", type=int, default=DEFAULT_EXCERPTS)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--chat", action="append", metavar="MODEL=URL",
                        help="a llama-server chat model (repeatable)")  # fmt: skip
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    parser.add_argument(
        "--load-only", action="store_true", help="ingest and embed, keep the database, stop"
    )
    parser.add_argument("--save", metavar="FILE", help="also write the tallies as JSON")
    parser.add_argument(
        "--combine", nargs="+", metavar="FILE",
        help="print the table of tallies saved by earlier runs (one model each, run at once)",
    )  # fmt: skip
    args = parser.parse_args()
    chats = [c.split("=", 1) for c in (args.chat or DEFAULT_CHATS)]
    if args.combine:
        tallies = [Tally(**t) for f in args.combine for t in json.loads(Path(f).read_text())]
        print_table(tallies, args.limit)
        return

    collection = faq_collection(material("python3.11-doc") / SOURCES / "faq")
    questions = pick(collection, args.questions)
    server = args.database_url or resolve_url(quality_config(args, "", None))
    name = args.reuse or f"garage_answers_{uuid.uuid4().hex[:8]}"
    url = with_database(server, name)

    def measure(config: GarageConfig) -> None:
        print(
            f"{len(questions)} answerable, {len(UNANSWERABLE)} unanswerable and "
            f"{len(UNANSWERABLE_HELDOUT)} held-out unanswerable questions"
        )
        tallies = [
            run_model(url, chat_config(config, model, host), collection, questions, args)
            for model, host in chats
        ]
        if args.save:
            Path(args.save).write_text(json.dumps([asdict(t) for t in tallies]))
        print_table(tallies, args.limit)

    if args.reuse:
        measure(quality_config(args, url, None))
        return
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with tempfile.TemporaryDirectory(prefix="garage-answers-") as tmp:
            root = Path(tmp) / "python-docs"
            write_corpus(root, collection, [d for d in args.distractors.split(",") if d])
            config = quality_config(args, url, root)
            ensure_migrated(url)
            load(url, config)
            if not args.load_only:
                measure(config)
    finally:
        if args.keep or args.load_only:
            print(f"kept database {name} (--reuse {name} measures it again)")
        else:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


if __name__ == "__main__":
    main()
