"""A small mixed folder for the fact tests (notes and a mail), and a config on the real
llama-servers with a fast extraction setting for SmolLM2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import LlamaServers, llama_config

NOTES = {
    "office.md": (
        "# Lisbon office\n\n"
        "The Lisbon office opens on 3 March 2025. Maria Santos leads the new team of twelve "
        "engineers. The building on Rua Augusta has four floors.\n"
    ),
    "garden.md": (
        "# Garden log\n\n"
        "The apple tree in the north corner was planted in 2019. Tomatoes need six hours of "
        "sun each day. The rain barrel holds two hundred litres.\n"
    ),
}

MAIL = """\
From: Alice Martin <alice@example.net>
To: Jane Doe <jane@example.org>, bob@example.com
Subject: Re: Fwd: Train tickets to Lisbon
Date: Sat, 02 Mar 2024 09:40:00 +0000
Message-ID: <abc123@example.net>
Content-Type: text/plain; charset=utf-8

The night train leaves Madrid at ten. I forwarded the booking to you yesterday.
"""


def write_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (root / name).write_text(text)
    (root / "tickets.eml").write_text(MAIL)
    return root


def facts_config(llama: LlamaServers, folder: Path, database_url: str, **sections: Any) -> Any:
    """Real servers; short chunks and few extractions per reply, so SmolLM2's replies stay
    short and whole even on a loaded machine (a few tokens a second). Two documents are
    with the model at once (the default), so a request may wait for the other's prompt: the
    read timeout is long, for a machine whose two cores are shared."""
    config = llama_config(
        llama,
        sources=[{"name": "mixed", "roots": [str(folder)]}],
        identity={"self_name": "Jane Doe", "emails": ["jane@example.org"]},
        **sections,
    )
    facts = config.facts.model_copy(
        update={"max_char_buffer": 400, "max_tokens": 400, "max_extractions": 3}
    )
    database = config.database.model_copy(update={"url": database_url})
    inference = config.inference.model_copy(update={"timeout_seconds": 600.0})
    return config.model_copy(update={"facts": facts, "database": database, "inference": inference})
