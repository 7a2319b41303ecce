"""What Garage logs names files, counts and reasons, never a document's text: an ingest (with
a note, a mail and a corrupt PDF that fails) and a search, every logger at DEBUG, and no log
record holds a word that only the documents hold."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from garage.cli import cli

SECRET = "quixoticzebrawhisper"  # in every document, and in nothing else


def test_ingest_and_search_log_no_document_text(
    migrated_db: str,
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder = isolated_env / "notes"
    folder.mkdir()
    (folder / "harbour.md").write_text(
        f"# Harbour\n\nThe harbour master said {SECRET} twice before the night ferry left.\n"
    )
    (folder / "letter.eml").write_text(
        "From: Ann <ann@example.org>\nTo: me@example.org\nSubject: The harbour\n"
        "Date: Tue, 3 Mar 2026 10:00:00 +0000\nContent-Type: text/plain\n\n"
        f"About the harbour: {SECRET}, as promised.\n"
    )
    (folder / "broken.pdf").write_bytes(f"%PDF-1.7\n{SECRET} is not a PDF body\n".encode())
    (isolated_env / "garage.json").write_text(
        json.dumps({"sources": [{"name": "notes", "roots": [str(folder)]}]})
    )
    monkeypatch.setenv("GARAGE_DATABASE_URL", migrated_db)
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()

    ingest = runner.invoke(cli, ["ingest", "--json"])
    assert ingest.exit_code == 4, ingest.output  # the PDF failed, the rest is indexed
    search = runner.invoke(cli, ["search", "harbour", "--mode", "keyword", "--json"])
    assert search.exit_code == 0, search.output
    assert SECRET in search.output  # the text is in the index, and shown to its owner

    assert caplog.records, "nothing was logged: the check below would prove nothing"
    logged = [record for record in caplog.records if SECRET in record.getMessage()]
    assert not logged, [record.getMessage()[:200] for record in logged]
