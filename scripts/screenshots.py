"""Screenshots of Garage's pages for the README, taken by headless Chromium from a real folder.

    .venv/bin/python scripts/screenshots.py [--database-url URL] [--out docs/pages]
        [--embed-url http://127.0.0.1:18080] [--facts-url http://127.0.0.1:18081]
        [--facts-model smollm2-135m-instruct] [--chat-url http://127.0.0.1:18083]
        [--chat-model qwen2.5-coder-1.5b-instruct] [--keep] [--reuse DBNAME]

The folder is the one the Dagster equivalence test indexes (tests/dagster/test_equivalence.py:
real mail from CPython's email tests and a reply thread, Python documentation pages, pypdf's
PDFs, Office files, notes), as three sources (notes, pdf, mail). It is indexed into a scratch
database on the server by the CLI, as a person would: ``ingest``, ``enrich-facts``, ``embed``,
``cluster-facts``, ``graph rebuild`` (the local llama-servers of ``scripts/llama``: MiniLM
embeds, SmolLM2 extracts facts, Qwen2.5-Coder-1.5B answers on the Ask page). Then the pages
are served on loopback and Debian's chromium, driven by Playwright, saves one PNG per page
into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from garage.config import GarageConfig  # noqa: E402
from garage.pages.serve import serving  # noqa: E402

SEARCH = "Lisbon office"
QUESTION = "When does the Lisbon office open?"
STEPS = (("ingest",), ("enrich-facts",), ("embed",), ("cluster-facts",), ("graph", "rebuild"))


def say(message: str) -> None:
    print(f"screenshots: {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config_for(
    args: argparse.Namespace, folder: Path, url: str, chat_url: str, chat_model: str
) -> GarageConfig:
    embed = {"name": "all-minilm-l6-v2", "provider": "llama_server", "host": args.embed_url,
             "model": "all-minilm-l6-v2", "dimensions": 384}  # fmt: skip
    return GarageConfig.model_validate(
        {
            "database": {"url": url},
            "sources": [
                {"name": "notes", "roots": [str(folder / d) for d in ("notes", "docs", "office")]},
                {"name": "pdf", "roots": [str(folder / "pdf")]},
                {"name": "mail", "roots": [str(folder / "mail")]},
            ],
            "identity": {"self_name": "Jane Doe", "emails": ["jane@example.org"]},
            "embedding": {"default": "all-minilm-l6-v2", "models": [embed]},
            "inference": {"provider": "llama_server", "model": chat_model,
                          "llama_host": chat_url, "timeout_seconds": 900.0},
            # Few extractions per reply keep a small model's replies short and whole.
            "facts": {"max_tokens": 256, "max_extractions": 3, "prompts": [
                {"name": "default", "scope": {"corpus_classes": ["document"]}}]},
            "schedule": {"enabled": False, "watch": False},
        }
    )  # fmt: skip


def index(config: GarageConfig, home: Path) -> None:
    config_file = home / "garage.json"
    config_file.write_text(json.dumps(config.model_dump(mode="json", exclude_defaults=True)))
    env = dict(os.environ, GARAGE_CONFIG=str(config_file), GARAGE_DATA_DIR=str(home / "data"))
    env.pop("GARAGE_DATABASE_URL", None)
    for step in STEPS:
        began = time.monotonic()
        subprocess.run([str(ROOT / ".venv/bin/garage"), *step], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        say(f"garage {' '.join(step)}: {time.monotonic() - began:.0f} s")


def shoot(base: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page: Any = browser.new_page(viewport={"width": 1200, "height": 900})
        page.set_default_timeout(600_000)

        def save(name: str, full: bool = False) -> None:
            page.screenshot(path=str(out / f"{name}.png"), full_page=full)
            say(f"{out / name}.png")

        page.goto(f"{base}/search?q={SEARCH.replace(' ', '+')}")
        save("search")
        page.locator("li.hit h3 a").first.click()
        page.wait_for_load_state("load")
        save("document")
        page.goto(f"{base}/ask")
        page.fill("textarea[name=q]", QUESTION)
        page.click("button[type=submit]")
        while page.get_attribute("#result", "data-state") == "running":
            time.sleep(0.2)
        save("ask", full=True)
        page.goto(f"{base}/facts")
        save("facts")
        page.goto(f"{base}/graph?find=Lisbon&label=Document")
        page.locator("ul.found a").first.click()
        page.wait_for_load_state("load")
        page.select_option("select[name=hops]", "2")
        page.click("form.query button[type=submit]")
        page.wait_for_load_state("load")
        page.locator("#start").scroll_into_view_if_needed()
        save("graph", full=True)
        page.goto(f"{base}/sources")
        save("sources", full=True)
        narrow = browser.new_page(viewport={"width": 400, "height": 800})
        narrow.goto(f"{base}/search?q={SEARCH.replace(' ', '+')}")
        narrow.screenshot(path=str(out / "search-400px.png"))
        say(f"{out / 'search-400px'}.png")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("GARAGE_TEST_DATABASE_URL"))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "pages")
    parser.add_argument("--embed-url", default="http://127.0.0.1:18080")
    parser.add_argument("--facts-url", default="http://127.0.0.1:18081")
    parser.add_argument("--facts-model", default="smollm2-135m-instruct")
    parser.add_argument("--chat-url", default="http://127.0.0.1:18083")
    parser.add_argument("--chat-model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--reuse", metavar="NAME", help="screenshot a kept database again")
    args = parser.parse_args()
    if not args.database_url:
        raise SystemExit("--database-url: a PostgreSQL server with pgvector and AGE")

    from psycopg.conninfo import make_conninfo

    name = args.reuse or f"garage_screenshots_{uuid.uuid4().hex[:8]}"
    url = make_conninfo(args.database_url, dbname=name)
    with tempfile.TemporaryDirectory(prefix="garage-screenshots-") as scratch:
        home = Path(scratch)
        from tests.dagster.test_equivalence import real_folder

        folder = real_folder(home / "folder")
        config = config_for(args, folder, url, args.chat_url, args.chat_model)
        if not args.reuse:
            with psycopg.connect(args.database_url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            if not args.reuse:
                # The small model extracts facts (many requests); the larger one answers.
                index(config_for(args, folder, url, args.facts_url, args.facts_model), home)
            with serving(config, url, port=free_port()) as base:
                shoot(base, args.out)
        finally:
            if args.keep or args.reuse:
                say(f"kept {name}: rerun with --reuse {name}")
            else:
                with psycopg.connect(args.database_url, autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(name)
                        )
                    )


if __name__ == "__main__":
    main()
