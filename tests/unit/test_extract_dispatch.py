"""Dispatch by extension, the public types, and the cost of calling extractor_for on a walk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from garage.extract import Extraction, ExtractionError, ExtractorSpec, extract, extractor_for

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "pypdf", "pdfplumber", "docx", "pptx", "openpyxl", "yaml", "PIL", "pytesseract",
    "pillow_heif", "typedstream",
)  # fmt: skip


def spec(name: str) -> ExtractorSpec:
    found = extractor_for(Path(name))
    assert found is not None, name
    return found


def test_kinds_by_extension_case_insensitive() -> None:
    assert spec("notes.md").name == spec("NOTES.MD").name == "markdown"
    assert spec("notes.md").kind == "markdown"
    assert (spec("a.txt").name, spec("a.txt").kind) == ("text", "prose")
    for name in ("a.rst", "a.org", "a.tex"):
        assert spec(name).name == "text"
    assert spec("Report.PDF").name == "pdf" and spec("Report.PDF").kind == "prose"
    for name in ("a.docx", "a.pptx", "a.xlsx", "a.xlsm", "a.docm", "a.pptm", "a.csv", "a.TSV"):
        assert spec(name).kind == "markdown", name
    assert spec("a.xlsm").name == "xlsx"
    assert (spec("a.docm").name, spec("a.pptm").name) == ("docx", "pptx")  # the same packages
    assert spec("a.csv").name == spec("a.tsv").name == "csv"


def test_code_languages_match_the_chunker_names() -> None:
    from garage.chunk.languages import LANGUAGE_SEPARATORS

    expected = {
        "m.py": "python", "m.js": "js", "m.tsx": "ts", "m.go": "go", "m.rs": "rust",
        "M.java": "java", "m.kt": "kotlin", "m.swift": "swift", "m.c": "c", "m.h": "c",
        "m.cpp": "cpp", "m.hpp": "cpp", "m.cs": "csharp", "m.rb": "ruby", "m.php": "php",
        "m.scala": "scala", "m.lua": "lua", "m.r": "r", "m.sh": "shell", "m.zsh": "shell",
        "m.sql": "sql", "m.pl": "perl", "m.m": "objc",
    }  # fmt: skip
    for name, language in expected.items():
        found = spec(name)
        assert (found.name, found.kind, found.language) == ("code", "code", language), name
    chunked = {"python", "js", "ts", "go", "rust", "java", "kotlin", "swift", "c", "cpp"}
    assert chunked <= set(LANGUAGE_SEPARATORS)  # the common languages get their own splitter


def test_path_strings_and_hidden_files() -> None:
    assert extractor_for("/home/jane/Notes/Trip.MD") == spec("trip.md")  # what the walk passes
    for name in (".bashrc", "/home/jane/.profile", "/home/jane/.config/x.", "dir.d/README"):
        assert extractor_for(name) is None and extractor_for(Path(name)) is None, name


def test_unsupported_kinds_are_none() -> None:
    # HTML and JSON wait for their own extractors.
    for name in ("page.html", "x.json", "Makefile", "a", "notmbox", "mbox.d/x"):
        assert extractor_for(Path(name)) is None, name
    with pytest.raises(ExtractionError, match=r"^page\.html: no extractor"):
        extract(Path("page.html"), b"<p>a</p>\n")


def test_mail_and_images_by_extension() -> None:
    for name in ("a.eml", "b.EMLX", "c.mbox", "/var/mail/mbox"):
        found = spec(name)
        assert found.corpus_class == "communication", name
    assert spec("c.mbox").multipart and spec("/home/jane/mail/mbox").name == "mbox"
    assert not spec("a.eml").multipart
    for name in ("p.png", "p.JPG", "p.jpeg", "p.tif", "p.tiff", "p.gif", "p.webp", "p.HEIC"):
        assert spec(name).name == "image" and spec(name).corpus_class is None, name
    with pytest.raises(ExtractionError, match="use extract_parts"):
        extract(Path("c.mbox"), b"From x\n")


def test_error_names_the_file_and_keeps_its_parts() -> None:
    error = ExtractionError(Path("/home/jane/report.pdf"), "not a readable PDF (corrupt header)")
    assert str(error) == "report.pdf: not a readable PDF (corrupt header)"
    assert error.path == Path("/home/jane/report.pdf") and error.reason.startswith("not a")


def test_types_are_frozen() -> None:
    found = spec("a.md")
    with pytest.raises(AttributeError):
        found.version = 99  # type: ignore[misc]
    result = extract(Path("a.md"), b"# Hi\n")
    assert isinstance(result, Extraction) and result.spec == found
    with pytest.raises(AttributeError):
        result.text = ""  # type: ignore[misc]


def test_dispatch_imports_no_extractor_library() -> None:
    """In a fresh interpreter: a walk calling extractor_for must not import any parser."""
    code = (
        "import sys; from pathlib import Path; from garage.extract import extractor_for\n"
        "[extractor_for(Path(n)) for n in ('a.pdf', 'b.docx', 'c.xlsx', 'd.md', 'e.py',"
        " 'f.png', 'g.heic', 'h.eml', 'i.mbox')]\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
