"""Markdown, plain text and code: decoding, frontmatter, titles, verbatim content."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from garage.extract import ExtractionError, extract
from tests.material import material

STDLIB = Path(os.__file__).parent


def md(text: str | bytes, name: str = "note.md"):  # type: ignore[no-untyped-def]
    return extract(Path(name), text.encode() if isinstance(text, str) else text)


def test_frontmatter_goes_to_metadata_and_titles_the_note() -> None:
    result = md(
        "---\ntitle: Trip notes\nauthor: Jane Doe\ndate: 2024-03-01\ntags: [travel, lisbon]\n"
        "---\n# Day one\n\nWe left early.\n"
    )
    assert result.text == "# Day one\n\nWe left early.\n"
    assert result.title == "Trip notes" and result.embedded_author == "Jane Doe"
    assert result.metadata["frontmatter"] == {
        "title": "Trip notes",
        "author": "Jane Doe",
        "date": "2024-03-01",  # a YAML date, stored as ISO text so metadata stays JSON
        "tags": ["travel", "lisbon"],
    }
    assert result.spec.name == "markdown" and "frontmatter_error" not in result.metadata


def test_malformed_frontmatter_never_costs_the_body() -> None:
    text = "---\ntitle: [unclosed\nauthor: Jane\n---\n# Kept heading\n\nThe body survives.\n"
    result = md(text)
    assert result.text == text  # every byte kept, the frontmatter block included
    assert "frontmatter_error" in result.metadata and "frontmatter" not in result.metadata
    assert result.title == "Kept heading" and result.embedded_author is None
    bad_date = md("---\ndate: 2024-02-30\n---\nBody.\n")  # valid YAML, impossible date
    assert (
        bad_date.text.startswith("---\ndate")
        and "out of range" in bad_date.metadata["frontmatter_error"]
    )
    listed = md("---\n- just\n- a list\n---\nBody.\n")
    assert (
        listed.text.endswith("Body.\n") and "not a mapping" in listed.metadata["frontmatter_error"]
    )
    open_ended = md("---\ntitle: never closed\n\nBody.\n")
    assert (
        open_ended.text.startswith("---\ntitle")
        and "closing" in open_ended.metadata["frontmatter_error"]
    )


def test_a_yaml_alias_bomb_stays_small() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    result = md(f"---\n{bomb}---\nBody.\n")
    assert result.text == "Body.\n" and len(repr(result.metadata)) < 200_000


def test_title_falls_back_to_the_first_h1_outside_code() -> None:
    fenced = "Intro\n\n```sh\n# not a heading, a shell comment\n```\n\n# Real Title #\n\n## Sub\n"
    assert md(fenced).title == "Real Title"
    assert md("Setext Title\n============\n\nText.\n").title == "Setext Title"
    assert md("## Only a second level\n\nText.\n").title is None
    assert md("---\ntitle: 2024\n---\n# H\n").title == "2024"  # a number is still a title


def test_decoding_utf8_bom_utf16_and_windows_1252() -> None:
    assert md(b"\xef\xbb\xbf# Caf\xc3\xa9\n").text == "# Café\n"
    utf16 = "# Ünïcode\r\nline two\r\n".encode("utf-16")
    result = md(utf16, "u.txt")
    assert result.text == "# Ünïcode\nline two\n" and result.metadata["encoding"] == "utf-16"
    old = md("Café crème — “quoted” € 5\n".encode("cp1252"), "old.txt")
    assert old.text == "Café crème — “quoted” € 5\n" and old.metadata["encoding"] == "cp1252"
    assert md(b"classic\rmac\rfile\r", "mac.txt").text == "classic\nmac\nfile\n"


def test_a_bom_does_not_make_nul_characters_text() -> None:
    """UTF-16 with a BOM holding U+0000: PostgreSQL cannot store it, and it is not text."""
    data = ("\ufeffA note\x00 with a NUL " * 10).encode("utf-16-le")
    with pytest.raises(ExtractionError, match=r"^poison\.txt: binary content \(NUL characters"):
        extract(Path("poison.txt"), data)


def test_binary_content_behind_text_extensions_is_an_error() -> None:
    png = (material("python-docx") / "features/steps/test_files/monty-truth.png").read_bytes()
    with pytest.raises(ExtractionError, match=r"^monty-truth\.md: binary content \(a PNG image\)"):
        extract(Path("monty-truth.md"), png)
    gif = (material("python-pptx") / "features/steps/test_files/sonic.gif").read_bytes()
    with pytest.raises(ExtractionError, match=r"^sonic\.py: binary content"):
        extract(Path("sonic.py"), gif)
    noise = bytes((i * 7919 + 13) % 256 for i in range(4096)).replace(b"\x00", b"\x01")
    with pytest.raises(ExtractionError, match=r"^noise\.txt: binary content \(mostly non-text"):
        extract(Path("noise.txt"), noise)


def test_empty_and_blank_files_are_not_errors() -> None:
    for data in (b"", b"   \n\n\t\n"):
        for name in ("e.md", "e.txt", "e.py"):
            result = extract(Path(name), data)
            assert not result.text.strip() and result.title is None


def test_real_code_is_verbatim() -> None:
    for name in ("textwrap.py", "tabnanny.py", "this.py"):
        data = (STDLIB / name).read_bytes()
        result = extract(Path(name), data)
        assert result.text == data.decode("utf-8")  # every tab, indent and trailing space
        assert result.spec.kind == "code" and result.spec.language == "python"
        assert result.title is None and result.metadata["language"] == "python"
    tabs = extract(Path("Makefile.mk"), b"all:\n\tcc -o x x.c  \n")
    assert tabs.text == "all:\n\tcc -o x x.c  \n" and tabs.spec.language == "make"


def test_real_prose_documents_as_text() -> None:
    root = material("python3.11-doc") / "usr/share/doc/python3.11-doc/html/_sources"
    source = root / "tutorial" / "introduction.rst.txt"
    result = extract(Path("introduction.rst"), source.read_bytes())
    assert result.spec.name == "text" and result.text == source.read_text(encoding="utf-8")
    assert "An Informal Introduction to Python" in result.text
