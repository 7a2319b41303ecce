"""Answer quality of rag_ask (or rag_agent), side by side for the local chat models: citations,
their relevance, "not in the excerpts" when the corpus does not hold the answer, and latency,
on two judged collections: the FAQ's own words, and questions put the way people ask.

    .venv/bin/python bench/answers.py [--collection faq|paraphrase|both] [--agent]
        [--database-url URL] [--keep] [--reuse DBNAME | --reuse faq=DB,paraphrase=DB]
        [--questions N] [--limit 6] [--max-tokens 200] [--max-steps 6]
        [--chat smollm2-135m-instruct=http://127.0.0.1:18081]
        [--chat qwen2.5-coder-1.5b-instruct=http://127.0.0.1:18083]
        [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2] [--dimensions 384]
        [--save FILE [--resume]] [--combine FILE...] [--check-collection] [--load-only]
        [--verbose]

``faq``: the corpus and judgments are bench/quality.py's (the Python FAQ's answers, each judged
relevant to its question, among the howto, tutorial and language-reference pages). Questions:

- ``--questions`` FAQ questions (default 40, evenly spaced over the sorted list, so the same
  ones every run);
- UNANSWERABLE: questions built for this benchmark whose answer is in none of those pages
  (checked by searching the pages for their key terms), half far from Python, half next to it;
- UNANSWERABLE_HELDOUT: more of the same, written after the first set had been measured and
  reported apart, so that a change tuned on the first set is seen on questions it never saw.

The FAQ's questions use the words of the answer they are judged against: they measure reading,
hardly retrieval. ``paraphrase`` (bench/collections/paraphrase.json) asks the way people do — a
symptom instead of an option's name, a user's words instead of the manual's ("put my edits
aside" for ``git stash``, "redo the keyboard setup" for ``dpkg-reconfigure``) — over a corpus
of real files of four kinds: mail (fedora-devel-list posts, Python's email test messages,
Outlook .msg files, Enron mails), PDFs (the Debian reference card, pypdf's PDFs with prose),
manuals (Git's AsciiDoc man pages, Python library pages) and Office files (odfpy's manual as
ODT, python-pptx/-docx test files), with distractors of the same kinds. Each answerable
question names the documents that answer it and, per document, a pattern of the passage;
each unanswerable one is near something the corpus holds, with patterns of what its answer
would say that match no document. ``--check-collection`` extracts every document with Garage's
extractors and checks both (run it after editing the collection). About a third of each group
is marked held out: a change tuned on the rest is judged on those too, and every figure is
given per split.

Both corpora are ingested and embedded by Garage itself, each into a scratch database of its
own. Every question goes through ``garage.ask.ask``, the code path of rag_ask and `garage ask`,
with rag_ask's defaults (6 excerpts, streamed) and each model in turn; ``--agent`` measures
rag_agent instead (garage.ask.agent.Agent, what `garage ask --agent` runs: the model searches
and reads the index with the five read-only tools, ``--max-steps`` calls at most).

The FAQ's table is the one this benchmark has always printed, per model:

- cites: share of answerable questions whose answer has at least one valid [n];
- cites relevant: among answerable questions where retrieval put an excerpt of a judged-relevant
  document in the prompt, share whose citations include one;
- says not in excerpts (answerable): how often it refused although the answer was there;
- says not in excerpts (unanswerable): share of "not in the excerpts" where it is right;
- time to the first token of the answer (from the request) and total time of the call, search
  included, p50 and p95.

Then, per model and per collection and split, the same figures for both collections (a judged
document is one the judgment names; there is no partial credit):

- retrieval showed a judged document: share of answerable questions where one of the excerpts
  in the prompt (rag_ask) or one of the documents the model saw (rag_agent) is judged;
- cites a judged document: share of all answerable questions whose answer cites one — [n] of
  an excerpt of it (rag_ask); for rag_agent, its citations (every document it saw) include one,
  and "answer names a judged [doc N]" is the stricter reading of the [doc N] it wrote;
- refused, answerable: "not in the excerpts" (rag_ask) or a decline (rag_agent: "could not
  find", "no information", ... — see DECLINES) although the answer was there;
- declined, unanswerable: the same where it is right;
- first token and whole answer p50 / p95 (rag_agent does not stream: whole answer only);
- search fell back to keyword only: questions whose query vector did not come in time (the
  embedding server busy); search waits ``--embed-timeout`` (120 s, the product 10 s) for it so
  that every question is measured on the same retrieval, and ``--resume`` asks these again;
- prompt tokens per answer, mean: the prompt's messages counted by the model server's tokenizer
  (``LocalChatModel.count_tokens``; garage.ask does not report the server's usage): for rag_ask
  ``ask_messages`` over the excerpts shown, for rag_agent the conversation its answer was
  written from. Questions that reached no model are left out.

``--save`` writes every tally and every question's outcome as JSON, after every question;
``--resume`` goes on with a run so saved, asking only what it lacks (on this machine a 1.5B
model under load can take minutes a question). ``--combine`` prints the tables of runs saved
before (one model each, run at the same time; with ``--save``, written as one file).
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import unquote

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
from garage.ask import (  # noqa: E402
    DEFAULT_EXCERPTS,
    AskResult,
    ask,
    ask_messages,
    chat_model,
    prompts,
)
from garage.ask.agent import DEFAULT_STEPS, Agent, AgentResult  # noqa: E402
from garage.ask.citations import says_not_in_excerpts  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.db.runtime import Runtime  # noqa: E402
from garage.inference import InferenceError, LocalChatModel  # noqa: E402
from garage.search import SearchError  # noqa: E402
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
FAQ_QUESTIONS = 40
# The product waits 10 s for a question's vector, then searches by keyword alone. Here the
# embedding server may be busy with other work (an ingest beside the run), and a question
# measured on the fallback measures another retrieval: wait longer, and count any fallback.
EMBED_TIMEOUT = 120.0
PARAPHRASE = Path(__file__).resolve().parent / "collections" / "paraphrase.json"
SOURCE = {"faq": "python-docs", "paraphrase": "paraphrase"}

# How rag_agent says the index does not hold the answer. Its prompt asks for no fixed sentence
# (rag_ask's "Not in the excerpts." is read by says_not_in_excerpts, which is tried too), so
# the usual phrasings of "I looked and it is not there" count.
DECLINES = re.compile(
    r"\b(?:could\s*n[o']?t|can\s*n[o']?t|cannot|unable\s+to|did\s*n[o']?t|was\s*n[o']?t\s+able"
    r"|were\s*n[o']?t\s+able|not\s+able)\s+(?:to\s+)?(?:find|locate|identify|determine|see)"
    r"|\bno\s+(?:relevant\s+|specific\s+|matching\s+|such\s+|direct\s+)?"
    r"(?:information|results?|documents?|mentions?|details?|data|records?|passages?)\b"
    r"|\b(?:is|are|was|were)\s*(?:n['’]t|not)\s+(?:found|mentioned|covered|available|present"
    r"|specified|stated|included|provided)\b"
    r"|\bnot\s+(?:found|mentioned|covered)\s+in\b"
    r"|\b(?:does|do|did)\s*(?:n['’]t|not)\s+(?:contain|mention|say|include|cover|specify"
    r"|provide|state|address)"
    r"|\bI\s+(?:do\s+not|don['’]t)\s+know\b",
    re.IGNORECASE,
)
_DOC_REF = re.compile(r"\bdoc(?:ument)?\s*(?:id\s*)?#?\s*(\d+)", re.IGNORECASE)

Group = Literal["answerable", "unanswerable"]
Split = Literal["tuning", "held-out"]
SPLITS: tuple[Split, ...] = ("tuning", "held-out")


# -- the old FAQ tally ---------------------------------------------------------------------------


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
    return spaced(sorted(collection.judgments), count)


def spaced(items: Sequence[Any], count: int | None) -> list[Any]:
    """``count`` of ``items`` evenly spaced (all when ``count`` is None or larger): the same
    ones every run, from every part of the list."""
    if count is None or count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def chat_config(
    base: GarageConfig,
    name: str,
    url: str,
    embed_timeout: float | None = None,
    ask: dict[str, Any] | None = None,
) -> GarageConfig:
    inference = base.inference.model_copy(
        update={"provider": "llama_server", "model": name, "llama_host": url,
                "generation_seconds": 600.0}
    )  # fmt: skip
    update: dict[str, Any] = {"inference": inference}
    if embed_timeout is not None:
        update["search"] = base.search.model_copy(update={"embed_timeout_seconds": embed_timeout})
    if ask is not None and hasattr(base, "ask"):
        update["ask"] = base.ask.model_copy(update=ask)
    return base.model_copy(update=update)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def share(part: int, whole: int) -> str:
    return f"{part / whole:.2f} ({part}/{whole})" if whole else "-"


def seconds(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{percentile(values, 0.5) / 1000:.1f} / {percentile(values, 0.95) / 1000:.1f}"


def faq_tally(model: str, outcomes: Sequence[Outcome]) -> Tally:
    """The FAQ's table as it always was, from the outcomes of its questions under rag_ask."""
    tally = Tally(model)
    for o in outcomes:
        if o.error is not None:
            continue
        if o.first_token_ms is not None:
            tally.first_token_ms.append(o.first_token_ms)
        tally.total_ms.append(o.total_ms)
        if o.group == "answerable":
            tally.answerable += 1
            tally.cites += o.cited_any
            tally.refused_answerable += o.declined
            if o.shown_judged:
                tally.relevant_shown += 1
                tally.cites_relevant += o.cites_judged
        elif o.split == "tuning":
            tally.unanswerable += 1
            tally.refused_unanswerable += o.declined
        else:
            tally.heldout += 1
            tally.refused_heldout += o.declined
    return tally


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


# -- questions and what became of them ---------------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    group: Group
    split: Split
    kind: str  # faq, or the paraphrase document kind: mail, pdf, manual, office
    judged: tuple[str, ...] = ()  # the documents (relative to the source root) that answer it


@dataclass
class Outcome:
    """One question asked of one model: what it was shown, what it cited, how long it took."""

    collection: str
    mode: str
    model: str
    question: str
    group: str
    split: str
    kind: str
    answer: str
    shown: list[str]  # documents retrieval put before the model (rag_agent: that it saw)
    cited: list[str]  # documents the answer cites (rag_agent: its citations, all it saw)
    named: list[str]  # rag_agent: documents of the [doc N] the answer wrote
    shown_judged: bool
    cites_judged: bool
    names_judged: bool
    cited_any: bool
    declined: bool
    no_answer: bool  # rag_agent stopped at its step limit without an answer
    first_token_ms: float | None
    total_ms: float
    prompt_tokens: int | None
    steps: int = 0
    error: str | None = None  # the call failed (server error, time limit): counted apart
    degraded: str | None = None  # rag_ask's search fell back (keyword only): why
    # rag_ask: the model's probability that an excerpt states the answer (garage.ask)
    stated_probability: float | None = None
    # rag_ask: the share of the answer's words its excerpts hold (ask.min_support decides on
    # it), and with ask.quote whether the words it copied are in an excerpt it named
    support: float | None = None
    quote_found: bool | None = None


@dataclass
class SplitTally:
    """The figures of one collection's split, for one model in one mode."""

    collection: str
    split: str
    mode: str
    model: str
    answerable: int = 0
    shown_judged: int = 0
    cites_judged: int = 0
    names_judged: int = 0
    refused_answerable: int = 0
    unanswerable: int = 0
    declined_unanswerable: int = 0
    no_answer: int = 0
    first_token_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    failed: int = 0
    degraded: int = 0

    def add(self, o: Outcome) -> None:
        if o.error is not None:
            self.failed += 1
            return
        self.degraded += o.degraded is not None
        if o.first_token_ms is not None:
            self.first_token_ms.append(o.first_token_ms)
        self.total_ms.append(o.total_ms)
        if o.prompt_tokens is not None:
            self.prompt_tokens.append(o.prompt_tokens)
        self.no_answer += o.no_answer
        if o.group == "answerable":
            self.answerable += 1
            self.shown_judged += o.shown_judged
            self.cites_judged += o.cites_judged
            self.names_judged += o.names_judged
            self.refused_answerable += o.declined
        else:
            self.unanswerable += 1
            self.declined_unanswerable += o.declined


def split_tallies(outcomes: Sequence[Outcome]) -> list[SplitTally]:
    tallies: dict[tuple[str, str, str, str], SplitTally] = {}
    for o in outcomes:
        key = (o.mode, o.model, o.collection, o.split)
        if key not in tallies:
            tallies[key] = SplitTally(o.collection, o.split, o.mode, o.model)
        tallies[key].add(o)
    return list(tallies.values())


def relative(uri: str, prefix: str) -> str:
    """A document's URI as the judgments name it: relative to the source root, unescaped, and
    without the fragment a part of a multi-document file carries."""
    return unquote(uri.split("#", 1)[0].removeprefix(prefix))


def asked_outcome(
    collection: str, question: Question, result: AskResult, prefix: str, took_ms: float,
    prompt_tokens: int | None,
) -> Outcome:  # fmt: skip
    shown = {c.number: relative(c.uri, prefix) for c in result.citations}
    cited = [shown[n] for n in result.cited if n in shown]
    judged = set(question.judged)
    return Outcome(
        collection, "rag_ask", result.model, question.text, question.group, question.split,
        question.kind, result.answer, list(shown.values()), cited, [],
        shown_judged=bool(judged & set(shown.values())),
        cites_judged=bool(judged & set(cited)),
        names_judged=bool(judged & set(cited)),
        cited_any=bool(result.cited),
        declined=result.not_in_excerpts,
        no_answer=False,
        first_token_ms=result.first_token_ms,
        total_ms=took_ms,
        prompt_tokens=prompt_tokens,
        degraded=result.degraded,
        stated_probability=getattr(result, "stated_probability", None),
        support=getattr(result, "support", None),
        quote_found=getattr(result, "quote_found", None),
    )  # fmt: skip


def agent_declines(answer: str) -> bool:
    return bool(DECLINES.search(answer)) or says_not_in_excerpts(answer)


def agent_outcome(
    collection: str, question: Question, result: AgentResult, prefix: str, took_ms: float,
    prompt_tokens: int | None,
) -> Outcome:  # fmt: skip
    seen = {c.document_id: relative(c.uri, prefix) for c in result.citations}
    named = list(dict.fromkeys(
        seen[int(n)] for n in _DOC_REF.findall(result.answer) if int(n) in seen
    ))  # fmt: skip
    judged = set(question.judged)
    no_answer = result.stopped == "step_limit" and result.answer.startswith("No answer within")
    return Outcome(
        collection, "rag_agent", result.model, question.text, question.group, question.split,
        question.kind, result.answer, list(seen.values()), list(seen.values()), named,
        shown_judged=bool(judged & set(seen.values())),
        cites_judged=bool(judged & set(seen.values())),
        names_judged=bool(judged & set(named)),
        cited_any=bool(named),
        declined=not no_answer and agent_declines(result.answer),
        no_answer=no_answer,
        first_token_ms=None,
        total_ms=took_ms,
        prompt_tokens=prompt_tokens,
        steps=len(result.steps),
    )  # fmt: skip


def ask_prompt_tokens(
    conn: psycopg.Connection[Any],
    model: LocalChatModel,
    question: str,
    result: AskResult,
    config: GarageConfig | None = None,
) -> int | None:
    """The tokens of the prompt rag_ask sent: the server's own count when garage.ask reports
    one, else the server's tokenizer over ``ask_messages`` for the excerpts shown (the rare
    words computed as ask computes them). None when no model was asked."""
    told = getattr(result, "prompt_tokens", None)
    if isinstance(told, int):
        return told
    if not result.citations:
        return None
    if len(inspect.signature(ask_messages).parameters) > 2 and getattr(
        getattr(config, "ask", None), "name_missing_words", True
    ):
        # A prompt that also lists the question's rare words no excerpt holds.
        from garage.ask.coverage import question_words, rare_words

        rare = rare_words(conn, question_words(question))
        messages = cast(Any, ask_messages)(question, result.citations, rare)
    else:
        messages = ask_messages(question, result.citations)
    classes = {c.corpus_class for c in result.citations}
    return model.count_tokens("\n".join(m["content"] for m in messages), corpus_classes=classes)


def agent_prompt_tokens(agent: Agent, model: LocalChatModel, result: AgentResult) -> int:
    """The tokens of the conversation rag_agent's answer was written from: its system prompt,
    the question, and every call with the result it got back (earlier results it left out to
    fit the context are counted whole, so this is an upper bound then)."""
    parts = [agent.system_prompt(), result.question]
    for step in result.steps:
        parts.append(step.reply)
        parts.append(
            prompts.TOOL_RESULT.format(tool=step.tool, result=step.result)
            if step.ok
            else step.result
        )
    classes = {c.corpus_class for c in result.citations}
    return model.count_tokens("\n".join(parts), corpus_classes=classes)


# -- the paraphrase collection ------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusFile:
    material: str  # a tests/material.py source
    path: str  # inside it
    name: str  # where it goes, relative to the source root
    transform: str | None = None  # gunzip, strip-bom

    def data(self) -> bytes:
        data = (material(self.material) / self.path).read_bytes()
        if self.transform == "gunzip":
            return gzip.decompress(data)
        if self.transform == "strip-bom":  # a Windows export's BOM hides the first header
            return data.removeprefix(b"\xef\xbb\xbf")
        if self.transform:
            raise ValueError(f"{self.name}: unknown transform {self.transform!r}")
        return data


@dataclass(frozen=True)
class Paraphrase:
    files: list[CorpusFile]
    answerable: list[dict[str, Any]]
    unanswerable: list[dict[str, Any]]

    def questions(self, count: int | None) -> list[Question]:
        """``count`` of each group (all when None), spread over the group so that every kind
        and both splits keep their share."""
        answerable = [
            Question(q["question"], "answerable", split_of(q), q["kind"], tuple(q["documents"]))
            for q in self.answerable
        ]
        unanswerable = [
            Question(q["question"], "unanswerable", split_of(q), q["kind"])
            for q in self.unanswerable
        ]
        return spaced(answerable, count) + spaced(unanswerable, count)


def split_of(entry: dict[str, Any]) -> Split:
    return "held-out" if entry.get("heldout") else "tuning"


def paraphrase_collection(path: Path = PARAPHRASE) -> Paraphrase:
    spec = json.loads(path.read_text(encoding="utf-8"))
    files = [
        CorpusFile(f["material"], f["path"], f["as"], f.get("transform")) for f in spec["corpus"]
    ]
    return Paraphrase(files, spec["answerable"], spec["unanswerable"])


def write_paraphrase(root: Path, paraphrase: Paraphrase) -> None:
    for f in paraphrase.files:
        target = root / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.data())


def check_paraphrase(paraphrase: Paraphrase) -> list[str]:
    """What is wrong with the judgments, read against the text Garage extracts from each file
    (whitespace collapsed, case ignored): a judged document without its passage, a passage
    found in a document it does not judge (a likely missed judgment), an unanswerable
    question's answer pattern found anywhere."""
    from garage.extract import extract

    texts: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="garage-paraphrase-") as tmp:
        for f in paraphrase.files:
            path = Path(tmp) / f.name
            path.parent.mkdir(parents=True, exist_ok=True)
            data = f.data()
            path.write_bytes(data)
            texts[f.name] = " ".join(extract(path, data).text.split())
    problems = []
    for q in paraphrase.answerable:
        for name, passage in q["documents"].items():
            if name not in texts:
                problems.append(f"{q['question']!r}: {name} is not in the corpus")
            elif not re.search(passage, texts[name], re.IGNORECASE):
                problems.append(f"{q['question']!r}: {name} lacks /{passage}/")
        for passage in set(q["documents"].values()):
            for name, text in texts.items():
                if name not in q["documents"] and re.search(passage, text, re.IGNORECASE):
                    problems.append(f"{q['question']!r}: {name} also has /{passage}/, unjudged")
    for q in paraphrase.unanswerable:
        for pattern in q["absent"]:
            for name, text in texts.items():
                found = re.search(pattern, text, re.IGNORECASE)
                if found:
                    problems.append(
                        f"{q['question']!r}: /{pattern}/ matches {name}: {found.group()[:80]!r}"
                    )
    return problems


def faq_questions(collection: Collection, count: int | None) -> list[Question]:
    answerable = [
        Question(q, "answerable", "tuning", "faq", tuple(collection.judgments[q]))
        for q in pick(collection, FAQ_QUESTIONS if count is None else count)
    ]
    unanswerable = [
        Question(q, "unanswerable", "tuning", "faq") for q in spaced(UNANSWERABLE, count)
    ] + [
        Question(q, "unanswerable", "held-out", "faq") for q in spaced(UNANSWERABLE_HELDOUT, count)
    ]
    return answerable + unanswerable


# -- measuring ----------------------------------------------------------------------------------


@dataclass
class Measured:
    """A collection ready to ask: its database, its questions and its source's root URI."""

    name: str
    url: str
    questions: list[Question]
    prefix: str = ""


def source_prefix(url: str, name: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT roots[1] FROM sources WHERE name = %s", (SOURCE[name],)
        ).fetchone()
    if row is None:
        raise SystemExit(f"{name}: the database has no source {SOURCE[name]!r}")
    return Path(row[0]).as_uri() + "/"


def run_collection(
    measured: Measured,
    config: GarageConfig,
    args: argparse.Namespace,
    record: Callable[[Outcome], None],
    done: frozenset[str] = frozenset(),
) -> None:
    """Ask every question of ``measured`` but those ``done``, handing each outcome to
    ``record`` as it comes (a run of hours can be stopped and resumed)."""
    each: Callable[[Question], tuple[Outcome, str]]
    with ExitStack() as stack:
        conn = stack.enter_context(psycopg.connect(measured.url, autocommit=True))
        model = stack.enter_context(chat_model(config))
        if args.agent:
            agent = Agent.for_model(
                Runtime(config, measured.url), model, reply_tokens=args.max_tokens
            )

            def each(question: Question) -> tuple[Outcome, str]:
                started = time.monotonic()
                result = agent.run(question.text, max_steps=args.max_steps)
                took = (time.monotonic() - started) * 1000
                tokens = agent_prompt_tokens(agent, model, result)
                outcome = agent_outcome(
                    measured.name, question, result, measured.prefix, took, tokens
                )
                return outcome, f"{len(result.steps)} steps, {result.stopped}"

        else:

            def each(question: Question) -> tuple[Outcome, str]:
                started = time.monotonic()
                result = ask(
                    conn, config, question.text, limit=args.limit, model=model,
                    answer_tokens=args.max_tokens,
                )  # fmt: skip
                took = (time.monotonic() - started) * 1000
                tokens = ask_prompt_tokens(conn, model, question.text, result, config)
                outcome = asked_outcome(
                    measured.name, question, result, measured.prefix, took, tokens
                )
                return outcome, f"cited {result.cited}, not in excerpts {result.not_in_excerpts}"

        for n, question in enumerate(measured.questions, 1):
            if question.text in done:
                continue
            started = time.monotonic()
            try:
                outcome, how = each(question)
            except (InferenceError, SearchError) as error:
                # One failed call (a server gone away, a prompt refused) is reported and
                # counted apart rather than ending an hour's run.
                outcome = Outcome(
                    measured.name, "rag_agent" if args.agent else "rag_ask",
                    config.inference.model, question.text, question.group, question.split,
                    question.kind, "", [], [], [], False, False, False, False, False, False,
                    None, (time.monotonic() - started) * 1000, None, error=str(error),
                )  # fmt: skip
                how = f"failed: {error}"
            record(outcome)
            if args.verbose:
                print(
                    f"--- {measured.name} {question.group} {question.split} {question.kind}: "
                    f"{question.text}\n{outcome.answer}\n{how}; shown {outcome.shown}; judged "
                    f"{list(question.judged)}; {outcome.total_ms / 1000:.1f} s",
                    flush=True,
                )
            else:
                mark = ""
                if question.group == "answerable":
                    mark = "cites judged" if outcome.cites_judged else "misses"
                mark += " declined" if outcome.declined else ""
                print(
                    f"  {config.inference.model} {measured.name}: {n}/{len(measured.questions)} "
                    f"({outcome.total_ms / 1000:.1f} s){' ' + mark.strip() if mark else ''}",
                    flush=True,
                )


# -- tables -------------------------------------------------------------------------------------


def split_rows(agent: bool) -> list[tuple[str, Callable[[SplitTally], str]]]:
    rows: list[tuple[str, Callable[[SplitTally], str]]] = [
        ("retrieval showed a judged doc", lambda t: share(t.shown_judged, t.answerable)),
        ("cites a judged document", lambda t: share(t.cites_judged, t.answerable)),
    ]
    if agent:
        rows.append(
            ("answer names a judged [doc N]", lambda t: share(t.names_judged, t.answerable))
        )
    else:
        rows.append(("  when one was shown", lambda t: share(t.cites_judged, t.shown_judged)))
    rows += [
        ("refused, answerable", lambda t: share(t.refused_answerable, t.answerable)),
        ("declined, unanswerable", lambda t: share(t.declined_unanswerable, t.unanswerable)),
    ]
    if agent:
        rows.append(
            ("no answer within the steps",
             lambda t: share(t.no_answer, t.answerable + t.unanswerable))
        )  # fmt: skip
    rows += [
        ("first token p50 / p95, s", lambda t: seconds(t.first_token_ms)),
        ("whole answer p50 / p95, s", lambda t: seconds(t.total_ms)),
        ("failed calls (left out above)", lambda t: str(t.failed)),
        ("search fell back to keyword only", lambda t: str(t.degraded)),
        ("prompt tokens per answer, mean",
         lambda t: f"{sum(t.prompt_tokens) / len(t.prompt_tokens):.0f}" if t.prompt_tokens
         else "-"),
    ]  # fmt: skip
    return rows


def print_splits(tallies: list[SplitTally], limit: int, max_steps: int) -> None:
    width, column = 32, 22
    for mode, model in dict.fromkeys((t.mode, t.model) for t in tallies):
        mine = [t for t in tallies if (t.mode, t.model) == (mode, model)]
        mine.sort(key=lambda t: (t.collection, SPLITS.index(t.split)))  # type: ignore[arg-type]
        how = f"{limit} excerpts" if mode == "rag_ask" else f"at most {max_steps} steps"
        print()
        print(f"{mode} ({how}), {model}")
        print(
            f"{'':<{width}}" + "".join(f"{t.collection + ', ' + t.split:>{column}}" for t in mine)
        )
        questions = [
            ("answerable / unanswerable", lambda t: f"{t.answerable} / {t.unanswerable}"),
        ]
        for label, cell in questions + split_rows(mode == "rag_agent"):
            print(f"{label:<{width}}" + "".join(f"{cell(t):>{column}}" for t in mine))
    print(
        "a judged document is one the judgment names; shares of answerable questions, "
        "'declined' of unanswerable ones; whole answer includes the search"
    )


def print_kinds(outcomes: list[Outcome]) -> None:
    """The paraphrase collection per kind of document, both splits together: where a kind
    fails, the overall share hides it."""
    mine = [o for o in outcomes if o.collection == "paraphrase" and o.error is None]
    if not mine:
        return
    width, column = 32, 16
    for mode, model in dict.fromkeys((o.mode, o.model) for o in mine):
        rows = [o for o in mine if (o.mode, o.model) == (mode, model)]
        kinds = list(dict.fromkeys(o.kind for o in rows))
        print()
        print(f"paraphrase per kind, {mode}, {model}")
        print(f"{'':<{width}}" + "".join(f"{k:>{column}}" for k in kinds))

        def count(
            rows: list[Outcome], kind: str, group: str, test: Callable[[Outcome], bool]
        ) -> str:
            of = [o for o in rows if o.kind == kind and o.group == group]
            return share(sum(test(o) for o in of), len(of))

        for label, group, test in (
            ("retrieval showed a judged doc", "answerable", lambda o: o.shown_judged),
            ("cites a judged document", "answerable", lambda o: o.cites_judged),
            ("refused, answerable", "answerable", lambda o: o.declined),
            ("declined, unanswerable", "unanswerable", lambda o: o.declined),
        ):
            print(
                f"{label:<{width}}"
                + "".join(f"{count(rows, k, group, test):>{column}}" for k in kinds)
            )


THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


# The checks an answer can be read under after a run that made none (--min-support 0,
# --quote record): the model's verdict alone, ask.min_support at its default, the quote, both.
CHECKS = ("none", "support", "quote", "both")
SUPPORT = 0.3


def at_threshold(o: Outcome, threshold: float, check: str = "none") -> tuple[bool, bool]:
    """(declined, cites a judged document) had rag_ask run at ``threshold`` with ``check``,
    from a run at a lower one that checked nothing: under the threshold the reply is
    declined; at or above it, it is the answer the run got (greedy, the same "yes" branch),
    declined when the check withdraws it. No probability: as the run went."""
    p = o.stated_probability
    if p is not None and p < threshold:
        return True, False
    if o.declined:
        return True, False
    if check in ("support", "both") and o.support is not None and o.support < SUPPORT:
        return True, False
    if check in ("quote", "both") and o.quote_found is False:
        return True, False
    return o.declined, o.cites_judged


def print_thresholds(outcomes: list[Outcome], run_threshold: float) -> None:
    """What ``ask.answer_threshold`` would give, per collection and split, from one run at a
    threshold no higher than those shown: the trade-off between answering and declining."""
    mine = [o for o in outcomes if o.mode == "rag_ask" and o.error is None]
    if not any(o.stated_probability is not None for o in mine):
        return
    for model in dict.fromkeys(o.model for o in mine):
        rows = [o for o in mine if o.model == model]
        groups = list(dict.fromkeys((o.collection, o.split) for o in rows))
        print()
        print(f"rag_ask by ask.answer_threshold (from a run at {run_threshold:g}), {model}")
        print(
            f"{'threshold':<10}"
            + "".join(f"{c + ', ' + s:>34}" for c, s in groups)
            + f"{'worst target margin':>22}"
        )
        print(f"{'':<10}" + "".join(f"{'cites  refused  declined':>34}" for _ in groups))
        checks = ["none"]
        if any(o.support is not None for o in rows):
            checks.append("support")
        if any(o.quote_found is not None for o in rows):
            checks += ["quote", "both"] if len(checks) > 1 else ["quote"]
        for check in checks:
            if len(checks) > 1:
                print(f"check: {check}")
            for threshold in (t for t in THRESHOLDS if t >= run_threshold):
                cells, worst = [], float("inf")
                for collection, split in groups:
                    of = [o for o in rows if (o.collection, o.split) == (collection, split)]
                    answerable = [
                        at_threshold(o, threshold, check) for o in of if o.group == "answerable"
                    ]
                    unanswerable = [
                        at_threshold(o, threshold, check) for o in of if o.group != "answerable"
                    ]
                    cites = sum(c for _, c in answerable) / max(1, len(answerable))
                    refused = sum(d for d, _ in answerable) / max(1, len(answerable))
                    declined = sum(d for d, _ in unanswerable) / max(1, len(unanswerable))
                    worst = min(worst, cites - 0.75, 0.10 - refused, declined - 0.85)
                    cells.append(f"{cites:>8.2f} {refused:>8.2f} {declined:>9.2f}")
                print(f"{threshold:<10g}" + "".join(f"{c:>34}" for c in cells) + f"{worst:>22.2f}")
    print(
        "targets: cites a judged document >= 0.75, refused <= 0.10 of answerable; declined >= "
        "0.85 of unanswerable; margin: the worst of the three, above (+) or below (-) its target"
    )


def print_all(
    faq: list[Tally],
    outcomes: list[Outcome],
    limit: int,
    max_steps: int,
    run_threshold: float | None = None,
) -> None:
    if faq:
        print_table(faq, limit)
    print_splits(split_tallies(outcomes), limit, max_steps)
    print_kinds(outcomes)
    if run_threshold is not None:
        print_thresholds(outcomes, run_threshold)


# -- databases ----------------------------------------------------------------------------------


def reused(value: str | None) -> dict[str, str]:
    """``--reuse``: a bare database name is the FAQ's (as it always was), else name=db pairs."""
    if not value:
        return {}
    if "=" not in value:
        return {"faq": value}
    return dict(item.split("=", 1) for item in value.split(",") if item)


@contextmanager
def scratch_database(server: str, name: str, keep: bool, label: str) -> Iterator[str]:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(server, name)
    finally:
        if keep:
            print(f"kept database {name} (--reuse {label}={name} measures it again)")
        else:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


def save(
    path: str, faq: list[Tally], outcomes: list[Outcome], settings: list[dict[str, Any]]
) -> None:
    Path(path).write_text(
        json.dumps(
            {
                "faq": [asdict(t) for t in faq],
                "splits": [asdict(t) for t in split_tallies(outcomes)],
                "outcomes": [asdict(o) for o in outcomes],
                "settings": settings,
            },
            indent=1,
        )
    )


def combine(files: list[str], args: argparse.Namespace) -> None:
    """Print (and with ``--save``, write as one file) the tallies of runs saved before."""
    faq: list[Tally] = []
    outcomes: list[Outcome] = []
    settings: list[dict[str, Any]] = []
    for f in files:
        saved = json.loads(Path(f).read_text())
        if isinstance(saved, list):  # a run from before the paraphrase collection
            faq += [Tally(**t) for t in saved]
            continue
        faq += [Tally(**t) for t in saved.get("faq", [])]
        outcomes += [Outcome(**o) for o in saved.get("outcomes", [])]
        settings += saved.get("settings", [])
    if args.save:
        save(args.save, faq, outcomes, settings)
    thresholds = [s.get("ask", {}).get("answer_threshold") for s in settings]
    known = [t for t in thresholds if t is not None]
    print_all(faq, outcomes, args.limit, args.max_steps, max(known) if known else None)


def attribution() -> dict[str, str]:
    """The commit and the uncommitted changes to garage/ask the figures were measured on, so
    that they can be attributed while that code is being worked on."""
    repo = Path(__file__).resolve().parents[1]

    def git(*argv: str) -> str:
        try:
            done = subprocess.run(
                ["git", *argv], cwd=repo, capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"(git {argv[0]} failed: {error})"
        return done.stdout.strip()

    return {
        "head": git("rev-parse", "HEAD"),
        "garage_ask_diff_stat": git("diff", "--stat", "--", "garage/ask"),
        "garage_ask_untracked": git("ls-files", "--others", "--exclude-standard", "garage/ask"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_arguments(parser)
    parser.add_argument("--collection", choices=("faq", "paraphrase", "both"), default="both")
    parser.add_argument("--agent", action="store_true", help="measure rag_agent, not rag_ask")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    parser.add_argument(
        "--reuse", metavar="DB|NAME=DB,…", help="measure kept databases again (a bare name: faq)"
    )
    parser.add_argument("--distractors", default="howto,tutorial,reference")
    parser.add_argument(
        "--questions", type=int, metavar="N",
        help=f"questions per group (default: all; the FAQ's answerable, {FAQ_QUESTIONS})",
    )  # fmt: skip
    parser.add_argument("--limit", type=int, default=DEFAULT_EXCERPTS)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument(
        "--threshold", type=float, metavar="P",
        help="ask.answer_threshold (default: the config's); a run at 0 answers every question "
        "and records the model's probability, from which the table of thresholds is drawn",
    )  # fmt: skip
    parser.add_argument(
        "--excerpt-chars", type=int, metavar="N", help="ask.excerpt_chars (default: the config's)"
    )
    parser.add_argument(
        "--missing-words", choices=("on", "off"), help="ask.name_missing_words (default: config)"
    )
    parser.add_argument(
        "--quote", choices=("off", "record", "check"),
        help="ask.quote: off; record the quote (and whether it is found) without deciding on "
        "it, for the table of checks; check: decline when it is not found (default: config)",
    )  # fmt: skip
    parser.add_argument(
        "--min-support", type=float, metavar="P",
        help="ask.min_support (default: the config's); 0 records the support without deciding",
    )  # fmt: skip
    parser.add_argument("--max-steps", type=int, default=DEFAULT_STEPS, help="with --agent")
    parser.add_argument(
        "--embed-timeout", type=float, default=EMBED_TIMEOUT, metavar="SECONDS",
        help="how long a question waits for its vector before search falls back to keyword "
        "only (search.embed_timeout_seconds)",
    )  # fmt: skip
    parser.add_argument("--chat", action="append", metavar="MODEL=URL",
                        help="a llama-server chat model (repeatable)")  # fmt: skip
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    parser.add_argument(
        "--load-only", action="store_true", help="ingest and embed, keep the databases, stop"
    )
    parser.add_argument("--save", metavar="FILE", help="also write the tallies as JSON")
    parser.add_argument(
        "--resume", action="store_true",
        help="with --save: keep the outcomes FILE holds and ask only the questions it lacks",
    )  # fmt: skip
    parser.add_argument(
        "--combine", nargs="+", metavar="FILE",
        help="print the tables of tallies saved by earlier runs (one model each, run at once)",
    )  # fmt: skip
    parser.add_argument(
        "--check-collection", action="store_true",
        help="check the paraphrase judgments against the extracted documents, and stop",
    )  # fmt: skip
    args = parser.parse_args()
    if args.combine:
        combine(args.combine, args)
        return
    if args.check_collection:
        paraphrase = paraphrase_collection()
        problems = check_paraphrase(paraphrase)
        for problem in problems:
            print(problem)
        print(
            f"{len(paraphrase.files)} files, {len(paraphrase.answerable)} answerable and "
            f"{len(paraphrase.unanswerable)} unanswerable questions: {len(problems)} problems"
        )
        raise SystemExit(1 if problems else 0)

    chats = [c.split("=", 1) for c in (args.chat or DEFAULT_CHATS)]
    names = ["faq", "paraphrase"] if args.collection == "both" else [args.collection]
    reuse = reused(args.reuse)
    server = args.database_url or resolve_url(quality_config(args, "", None))
    with ExitStack() as stack:
        measured: list[Measured] = []
        for name in names:
            if name == "faq":
                faq = faq_collection(material("python3.11-doc") / SOURCES / "faq")
                questions = faq_questions(faq, args.questions)
            else:
                paraphrase = paraphrase_collection()
                questions = paraphrase.questions(args.questions)
            if name in reuse:
                url = with_database(server, reuse[name])
            else:
                database = f"garage_answers_{'' if name == 'faq' else name + '_'}"
                database += uuid.uuid4().hex[:8]
                url = stack.enter_context(
                    scratch_database(server, database, args.keep or args.load_only, name)
                )
                root = Path(stack.enter_context(tempfile.TemporaryDirectory(
                    prefix=f"garage-answers-{name}-"
                ))) / SOURCE[name]  # fmt: skip
                if name == "faq":
                    write_corpus(root, faq, [d for d in args.distractors.split(",") if d])
                else:
                    write_paraphrase(root, paraphrase)
                ensure_migrated(url)
                load(url, quality_config(args, url, root, SOURCE[name]))
            measured.append(Measured(name, url, questions, source_prefix(url, name)))
        if args.load_only:
            return

        for m in measured:
            groups = {g: sum(q.group == g for q in m.questions) for g in ("answerable",)}
            held = sum(q.split == "held-out" for q in m.questions)
            print(
                f"{m.name}: {groups['answerable']} answerable and "
                f"{len(m.questions) - groups['answerable']} unanswerable questions "
                f"({held} held out)",
                flush=True,
            )
        settings = {
            "mode": "rag_agent" if args.agent else "rag_ask",
            "collections": names,
            "chats": [f"{model}={host}" for model, host in chats],
            "limit": args.limit,
            "max_tokens": args.max_tokens,
            "max_steps": args.max_steps,
            "questions": args.questions,
            "ask": ask_settings(args),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            **attribution(),
        }
        print(f"measured at {settings['head']}; garage/ask uncommitted:", flush=True)
        print(settings["garage_ask_diff_stat"] or "  none", flush=True)
        outcomes: list[Outcome] = []
        if args.resume and args.save and Path(args.save).exists():
            saved = json.loads(Path(args.save).read_text())
            outcomes = [
                Outcome(**o)
                for o in saved.get("outcomes", [])
                if o.get("error") is None
                and o.get("degraded") is None
                and o["mode"] == settings["mode"]
            ]
            print(f"resuming: {len(outcomes)} questions already measured", flush=True)
        faq_tallies: list[Tally] = []

        def record(outcome: Outcome) -> None:
            outcomes.append(outcome)
            if args.save:  # after every question: a run stopped part way keeps what it measured
                save(args.save, faq_tallies, outcomes, [settings])

        for model, host in chats:
            for m in measured:
                config = chat_config(
                    quality_config(args, m.url, None), model, host, args.embed_timeout,
                    ask_settings(args),
                )  # fmt: skip
                done = frozenset(
                    o.question for o in outcomes if (o.collection, o.model) == (m.name, model)
                )
                run_collection(m, config, args, record, done)
                if m.name == "faq" and not args.agent:
                    mine = [o for o in outcomes if (o.collection, o.model) == ("faq", model)]
                    faq_tallies.append(faq_tally(model, mine))
                    if args.save:
                        save(args.save, faq_tallies, outcomes, [settings])
        run_threshold = (
            args.threshold if args.threshold is not None else GarageConfig().ask.answer_threshold
        )
        print_all(faq_tallies, outcomes, args.limit, args.max_steps, run_threshold)


def ask_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ask section's settings given on the command line."""
    settings: dict[str, Any] = {}
    if args.threshold is not None:
        settings["answer_threshold"] = args.threshold
    if args.excerpt_chars is not None:
        settings["excerpt_chars"] = args.excerpt_chars
    if args.missing_words is not None:
        settings["name_missing_words"] = args.missing_words == "on"
    if args.quote is not None:
        settings["quote"] = args.quote != "off"
        settings["quote_check"] = args.quote == "check"
    if args.min_support is not None:
        settings["min_support"] = args.min_support
    return settings


if __name__ == "__main__":
    main()
