"""Fact extraction benchmark: what a local chat model extracts from real documents of mixed kinds.

    .venv/bin/python bench/facts.py [--model-url http://127.0.0.1:18083] [--model ALIAS]
                                    [--documents 20] [--max-bytes 1600] [--database-url URL]
                                    [--max-char-buffer N] [--max-tokens N] [--max-extractions N]
                                    [--parallel-documents N]
                                    [--prompts default,entities] [--dump FILE] [--keep]

Real files written by other people (the test material cache, see tests/material.py): mail from
CPython's email test suite, reStructuredText pages of the Python documentation, a PDF from
pypdf's resources and Word documents from python-docx's. They are ingested into a scratch
database exactly as ``garage ingest`` would, then ``enrich-facts`` runs the built-in default
prompt and the architecture guide's entities recipe over each document in turn.

Per kind of document, and overall: facts per 1,000 characters (the default prompt; metadata
facts counted apart), the share of the model's extractions that were grounded (stored rather
than dropped as unlocatable), seconds per 1,000 characters, and for the entities prompt a
count per class. The model is the chat model answering at ``--model-url`` (its first
``/v1/models`` id unless ``--model`` names one); by default the first of the Qwen2.5-Coder
server on 18083 and SmolLM2 on 18081 that answers.

Overall, chars/s is the characters of the documents over the seconds every prompt took on
them. Under the table: the model requests, the replies cut off at the token limit (their
completed extractions kept) or unreadable, the spans dropped by shape (a default-prompt span
stating nothing, an entity span naming nothing) and for an attribute the document does not
hold. "grounded" is the share of the model's extractions located in the text, whatever then
dropped them. When the server exposes ``/metrics`` (llama-server ``--metrics``), also the
prompt tokens it read and reused from its cache and the tokens it wrote, per 1,000
characters: what a run costs, whatever else shares the machine's cores. ``--dump`` writes
every stored fact of the model's (JSON lines) for reading.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import with_database  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.config.model import FactsConfig  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.facts import enrich_facts  # noqa: E402
from garage.inference.model_key import auth_headers, load_key  # noqa: E402
from garage.ingest import ingest_source  # noqa: E402

MATERIAL = Path(os.environ.get("GARAGE_CACHE", Path.home() / ".cache" / "garage")) / "material"
CANDIDATE_HOSTS = ("http://127.0.0.1:18083", "http://127.0.0.1:18081")

ENTITIES: dict[str, Any] = {
    "name": "entities",
    "description": (
        "Extract every named person, place, organization and event mentioned in this text. "
        "Quote each mention exactly as it appears; do not paraphrase. For each, give "
        "attributes: name (the full canonical name if the text states it, else the mention), "
        "and kind. For a person also give role if the text states one; for an event also give "
        "date if the text states one. Do not infer anything not stated."
    ),
    "examples": [
        {
            "text": (
                "On 12 May 2019 Jane Doe of Acme Corp presented the Q2 roadmap at the Austin "
                "Convention Center."
            ),
            "extractions": [
                {"class": "event", "text": "presented the Q2 roadmap",
                 "attributes": {"name": "Q2 roadmap presentation", "date": "2019-05-12"}},
                {"class": "person", "text": "Jane Doe",
                 "attributes": {"name": "Jane Doe", "role": "presenter"}},
                {"class": "organization", "text": "Acme Corp", "attributes": {"name": "Acme Corp"}},
                {"class": "place", "text": "Austin Convention Center",
                 "attributes": {"name": "Austin Convention Center", "kind": "venue"}},
            ],
        }
    ],
}  # fmt: skip


def pick_files(count: int, max_bytes: int) -> list[tuple[str, Path, str]]:
    """(kind, file, name to copy it as): a spread of kinds, small enough that one document is
    one or two extraction requests."""
    mail = sorted(
        MATERIAL.glob("libpython3.11-testsuite/usr/lib/python3.11/test/test_email/data/msg_*.txt")
    )
    prose = sorted(
        MATERIAL.glob("python3.11-doc/usr/share/doc/python3.11/html/_sources/**/*.rst.txt")
    )
    pdfs = [MATERIAL / "pypdf" / "resources" / "crazyones.pdf"]
    docx = sorted(MATERIAL.glob("python-docx/**/*.docx"))

    def small(paths: list[Path], lower: int = 300) -> list[Path]:
        return [p for p in paths if p.is_file() and lower <= p.stat().st_size <= max_bytes]

    mails = [p for p in small(mail) if b"\nSubject:" in b"\n" + p.read_bytes()[:2000]]
    chosen: list[tuple[str, Path, str]] = []
    quota = {"mail": count * 2 // 5, "pdf": 1, "docx": 2}
    quota["prose"] = count - sum(quota.values())
    for kind, paths, suffix in (
        ("mail", mails, ".eml"),
        ("prose", small(prose, 600), ".txt"),
        ("pdf", [p for p in pdfs if p.exists()], ".pdf"),
        ("docx", [p for p in docx if 200 <= _docx_chars(p) <= max_bytes], ".docx"),
    ):
        # Evenly spread over what there is, not the first few of one folder.
        step = max(1, len(paths) // max(quota[kind], 1))
        for path in paths[::step][: quota[kind]]:
            chosen.append((kind, path, f"{kind}-{len(chosen):02d}{suffix}"))
    return chosen


def _docx_chars(path: Path) -> int:
    """How much paragraph text a Word file holds: most of python-docx's test files hold
    almost none, and a bench of empty documents measures nothing."""
    import docx

    try:
        return sum(len(p.text) for p in docx.Document(str(path)).paragraphs)
    except Exception:
        return 0


def chat_host(args: argparse.Namespace) -> tuple[str, str]:
    hosts = [args.model_url] if args.model_url else list(CANDIDATE_HOSTS)
    key = load_key()  # the local servers answer only requests that carry their key
    with httpx.Client(timeout=5, trust_env=False) as http:
        for host in hosts:
            try:
                if http.get(f"{host}/health").status_code != 200:
                    continue
                models = [
                    m["id"]
                    for m in http.get(
                        f"{host}/v1/models", headers=auth_headers("llama_server", host, key)
                    ).json()["data"]
                ]
            except (httpx.HTTPError, KeyError, ValueError):
                continue
            return host, args.model or models[0]
    sys.exit(f"no chat model answers at {', '.join(hosts)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-url", help="the chat server (default: 18083, else 18081)")
    parser.add_argument("--model", help="its model id or alias (default: its first model)")
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--max-bytes", type=int, default=1600, help="largest file to pick")
    defaults = FactsConfig()
    parser.add_argument("--max-char-buffer", type=int, default=defaults.max_char_buffer)
    parser.add_argument(
        "--max-extractions", type=int, default=defaults.max_extractions, help="per chunk"
    )
    parser.add_argument("--max-tokens", type=int, default=defaults.max_tokens, help="per reply")
    parser.add_argument(
        "--parallel-documents",
        type=int,
        # An older Garage (a "before" run) has no such setting: one document at a time.
        default=getattr(defaults, "parallel_documents", 1),
        help="documents with the model at once",
    )
    parser.add_argument(
        "--prompts", default="default,entities", help="the model's prompts to run, in order"
    )
    parser.add_argument("--dump", type=Path, help="write the stored facts here (JSON lines)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("GARAGE_TEST_DATABASE_URL"),
        help="the server to make a scratch database on",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the scratch database and folder, and print their names, to go on from them",
    )
    args = parser.parse_args()
    if not args.database_url:
        sys.exit("--database-url (or GARAGE_TEST_DATABASE_URL) names the server to use")
    host, model = chat_host(args)
    files = pick_files(args.documents, args.max_bytes)
    print(f"model {model} at {host}; {len(files)} documents", file=sys.stderr)

    scratch = f"garage_bench_facts_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    url = with_database(args.database_url, scratch)
    folder = Path(tempfile.mkdtemp(prefix="garage-bench-facts-"))
    try:
        kinds: dict[str, str] = {}
        for kind, path, name in files:
            shutil.copy(path, folder / name)
            kinds[name] = kind
        config = GarageConfig.model_validate(
            {
                "sources": [{"name": "bench", "roots": [str(folder)]}],
                "embedding": {"models": []},
                "inference": {"provider": "llama_server", "model": model, "llama_host": host,
                              "timeout_seconds": 600},
                "facts": {"prompts": [ENTITIES], "max_char_buffer": args.max_char_buffer,
                          "max_extractions": args.max_extractions,
                          "max_tokens": args.max_tokens,
                          **({"parallel_documents": args.parallel_documents}
                             if "parallel_documents" in FactsConfig.model_fields else {})},
            }
        )  # fmt: skip
        ensure_migrated(url)
        prompts = [p for p in args.prompts.split(",") if p]
        before = server_metrics(host)
        rows = run(url, config, kinds, prompts, args.dump)
        after = server_metrics(host)
        print_table(rows, model, prompts)
        print_tokens(before, after, sum(r["chars"] for r in rows))
        print(
            f"settings: max_char_buffer {args.max_char_buffer}, max_tokens {args.max_tokens}, "
            f"max_extractions {args.max_extractions}, parallel_documents {args.parallel_documents}"
        )
    finally:
        if args.keep:
            print(f"kept: folder {folder}, database {url}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
            with psycopg.connect(args.database_url, autocommit=True) as admin:
                admin.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(scratch)
                    )
                )


def server_metrics(host: str) -> dict[str, float] | None:
    """llama-server's counters (only with --metrics): tokens read, reused and written."""
    try:
        with httpx.Client(timeout=5, trust_env=False) as http:
            response = http.get(
                f"{host}/metrics", headers=auth_headers("llama_server", host, load_key())
            )
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    values: dict[str, float] = {}
    for line in response.text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:"):
            try:
                values[name.removeprefix("llamacpp:")] = float(value)
            except ValueError:
                continue
    return values


def print_tokens(
    before: dict[str, float] | None, after: dict[str, float] | None, chars: int
) -> None:
    if before is None or after is None or not chars:
        print("server tokens: - (no /metrics: start llama-server with --metrics to count them)")
        return

    def grew(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    per_k = 1000 / chars
    read, cached = grew("prompt_tokens_total"), grew("prompt_tokens_cached_total")
    written = grew("tokens_predicted_total")
    line = (
        f"server tokens per 1k chars: {read * per_k:.0f} prompt read, {cached * per_k:.0f} "
        f"reused from cache, {written * per_k:.0f} written; server seconds: "
        f"{grew('prompt_seconds_total'):.0f} reading, "
        f"{grew('tokens_predicted_seconds_total'):.0f} writing"
    )
    drafted = grew("spec_decode_num_draft_tokens_total")
    if drafted:
        accepted = grew("spec_decode_num_accepted_tokens_total")
        line += f"; speculative: {accepted:.0f} of {drafted:.0f} drafted tokens accepted"
    print(line)


def run(
    url: str,
    config: GarageConfig,
    kinds: dict[str, str],
    prompts: list[str],
    dump: Path | None = None,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("bench"))
        documents = conn.execute(
            "SELECT id, uri, length(content) FROM documents ORDER BY id"
        ).fetchall()
        # One run of each prompt over the documents of a kind, as enrich-facts runs over a
        # source (documents in parallel, facts.parallel_documents at once).
        by_kind: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for document_id, uri, chars in documents:
            by_kind[kinds.get(Path(uri.removeprefix("file://")).name, "other")].append(
                (document_id, chars)
            )
        try:
            for kind, group in by_kind.items():
                rows.append(measure(conn, config, kind, prompts, group))
        except KeyboardInterrupt:
            # Ctrl-C: the table of the kinds measured so far is still worth printing.
            print(f"interrupted after {len(rows)} kinds", file=sys.stderr)
        ungrounded = conn.execute(
            "SELECT count(*) FROM facts f JOIN documents d ON d.id = f.document_id"
            " WHERE substr(d.content, f.start_offset + 1, f.end_offset - f.start_offset)"
            " IS DISTINCT FROM f.text"
        ).fetchone()
        assert ungrounded is not None and ungrounded[0] == 0, "a stored span differs from the text"
        if dump is not None:
            write_dump(conn, kinds, dump)
    return rows


def write_dump(conn: psycopg.Connection[Any], kinds: dict[str, str], path: Path) -> None:
    """Every fact the model's prompts stored, with its document's name and kind."""
    facts = conn.execute(
        "SELECT f.id, d.uri, f.prompt_name, f.fact_class, f.text, f.attributes, f.start_offset"
        " FROM facts f JOIN documents d ON d.id = f.document_id"
        " WHERE f.prompt_name <> 'metadata' ORDER BY f.document_id, f.prompt_name, f.ord"
    ).fetchall()
    with path.open("w", encoding="utf-8") as out:
        for fact_id, uri, prompt, fact_class, text, attributes, start in facts:
            name = Path(uri.removeprefix("file://")).name
            record = {
                "id": fact_id, "document": name, "kind": kinds.get(name, "other"),
                "prompt": prompt, "class": fact_class, "text": text,
                "attributes": attributes or {}, "start": start,
            }  # fmt: skip
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(facts)} facts written to {path}", file=sys.stderr)


def measure(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    kind: str,
    prompts: list[str],
    documents: list[tuple[int, int]],
) -> dict[str, Any]:
    ids = [document_id for document_id, _ in documents]
    row: dict[str, Any] = {"kind": kind, "docs": len(ids), "chars": sum(c for _, c in documents)}
    for prompt in ("metadata", "default", "entities"):
        if prompt != "metadata" and prompt not in prompts:
            row[prompt] = dict.fromkeys(FIELDS, 0)
            continue
        started = time.monotonic()
        report = enrich_facts(conn, config, prompt_names=[prompt], document_ids=ids)
        row[prompt] = {
            "stored": report.facts_stored,
            "dropped": report.dropped_ungrounded,
            "nothing": report.dropped_not_claims,
            "not_names": getattr(report, "dropped_not_names", 0),  # 0 on an older Garage
            "attributes": getattr(
                report, "dropped_ungrounded_attributes", 0
            ),  # 0 on an older Garage
            "seconds": time.monotonic() - started,
            "failed": report.failed,
            "requests": report.requests,
            "unparsed": report.unparsed_replies,
            "cut": getattr(report, "cut_replies", 0),  # 0 on an older Garage
        }
    classes = conn.execute(
        "SELECT fact_class, count(*) FROM facts WHERE document_id = ANY(%s)"
        " AND prompt_name = 'entities' GROUP BY fact_class",
        (ids,),
    ).fetchall()
    row["classes"] = Counter(dict(classes))
    print(
        f"  {kind:6} {len(ids):3} documents, {row['chars']:6} chars: default "
        f"{row['default']['stored']} stored / {row['default']['dropped']} dropped in "
        f"{row['default']['seconds']:.1f}s, entities {row['entities']['stored']} / "
        f"{row['entities']['dropped']} in {row['entities']['seconds']:.1f}s",
        file=sys.stderr,
    )
    return row


FIELDS = (
    "stored", "dropped", "nothing", "not_names", "attributes", "seconds", "failed", "requests",
    "unparsed", "cut",
)  # fmt: skip


def print_table(rows: list[dict[str, Any]], model: str, prompts: list[str]) -> None:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["kind"]].append(row)
    groups["all"] = rows
    header = (
        f"{'kind':6} {'docs':>4} {'chars':>7} {'facts/1k':>8} {'grounded':>8} {'s/1k':>6} "
        f"{'meta':>5} {'ent/1k':>7} {'ent grounded':>12} {'ent s/1k':>8} {'chars/s':>7}"
        "  entities per class"
    )
    print(f"model: {model}")
    print(header)
    print("-" * len(header))
    for kind, group in groups.items():
        chars = sum(r["chars"] for r in group)

        def total(prompt: str, field: str, group: list[dict[str, Any]] = group) -> float:
            return float(sum(r[prompt][field] for r in group))

        def share(prompt: str) -> str:
            # Grounded: located in the text, whatever then dropped it (a span stating or
            # naming nothing, an attribute the text lacks).
            located = sum(
                total(prompt, field) for field in ("stored", "nothing", "not_names", "attributes")
            )
            seen = located + total(prompt, "dropped")
            return f"{located / seen:.0%}" if seen else "-"

        per_k = 1000 / chars if chars else 0.0
        docs = sum(r["docs"] for r in group)
        seconds = sum(total(p, "seconds") for p in ("metadata", "default", "entities"))
        speed = f"{chars / seconds:7.0f}" if seconds else f"{'-':>7}"
        classes: Counter[str] = Counter()
        for r in group:
            classes.update(r["classes"])
        print(
            f"{kind:6} {docs:4} {chars:7} {total('default', 'stored') * per_k:8.2f} "
            f"{share('default'):>8} {total('default', 'seconds') * per_k:6.1f} "
            f"{int(total('metadata', 'stored')):5} {total('entities', 'stored') * per_k:7.2f} "
            f"{share('entities'):>12} {total('entities', 'seconds') * per_k:8.1f} {speed}  "
            + (", ".join(f"{c} {n}" for c, n in classes.most_common()) or "-")
        )

    def over_prompts(field: str) -> int:
        return int(sum(r[p][field] for r in rows for p in ("default", "entities")))

    print(
        f"prompts: {', '.join(prompts)}; {over_prompts('requests')} model requests, "
        f"{over_prompts('cut')} replies cut off at max_tokens (their completed extractions "
        f"kept), {over_prompts('unparsed')} that did not parse, {over_prompts('failed')} failed"
    )
    nothing = sum(r["default"]["nothing"] for r in rows)
    print(f"{nothing} grounded default-prompt spans dropped as stating nothing (not in facts/1k)")
    print(
        f"{over_prompts('not_names')} grounded entity spans dropped as naming nothing (a "
        f"pronoun, a sentence); {over_prompts('attributes')} grounded facts dropped for an "
        "attribute the document does not hold (neither in ent/1k)"
    )


if __name__ == "__main__":
    main()
