"""Builders for real files of every supported kind, and a runner for ingest against a database."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import psycopg

from garage.config import GarageConfig, load_config
from garage.ingest import IngestReport, ingest_source

PROSE = (
    "The harbour was quiet before dawn. Fishing boats rocked against the pilings while gulls "
    "argued over scraps on the quay. Maria walked the length of the breakwater, counting the "
    "lamps that still burned, and thought about the letter folded in her coat pocket. "
)


def write_markdown(path: Path, title: str, paragraphs: int = 3) -> Path:
    body = "\n\n".join(f"{PROSE} Paragraph {i} of the story." for i in range(paragraphs))
    path.write_text(f"---\ntitle: {title}\ntags: [notes]\n---\n\n# Heading\n\n{body}\n")
    return path


def write_docx(path: Path, title: str, author: str | None) -> Path:
    import docx

    document = docx.Document()
    document.add_heading(title, level=1)
    document.add_paragraph(PROSE * 2)
    document.add_heading("Details", level=2)
    document.add_paragraph(PROSE)
    if author is not None:
        document.core_properties.author = author
    document.core_properties.title = title
    document.save(str(path))
    return path


def write_pptx(path: Path, title: str) -> Path:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = PROSE
    deck.save(str(path))  # python-pptx writes its own name as the author
    return path


def write_xlsx(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Expenses"
    sheet.append(["Date", "Item", "Amount", "Note"])
    for day in range(1, 15):
        sheet.append(
            [
                f"2024-03-{day:02d}",
                f"Groceries for the week {day}",
                12.5 * day,
                "paid by card at the market near the station",
            ]
        )
    book.save(str(path))
    return path


def git(repo: Path, *args: str, name: str = "Jane Doe", email: str = "jane@example.org") -> None:
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(
        ["git", "-c", f"user.name={name}", "-c", f"user.email={email}", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env=env,
    )


def make_config(tmp_path: Path, sources: list[dict[str, Any]], **sections: Any) -> GarageConfig:
    path = tmp_path / "garage.json"
    path.write_text(json.dumps({"sources": sources, **sections}))
    return load_config(path, env={})


def run_ingest(url: str, config: GarageConfig, name: str, **options: Any) -> IngestReport:
    with psycopg.connect(url, autocommit=True) as conn:
        return ingest_source(conn, config, config.source(name), **options)


def rows(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, params).fetchall()
