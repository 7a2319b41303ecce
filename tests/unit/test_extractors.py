"""Extractors on real files from the package registries, and on real broken ones."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from garage.extract import ExtractionError, extract, extractor_for
from tests.integration.ingest_helpers import PROSE, write_docx, write_pptx, write_xlsx
from tests.material import material


def run(path: Path):  # type: ignore[no-untyped-def]
    return extract(path, path.read_bytes())


def test_dispatch_is_by_extension_and_imports_nothing_heavy() -> None:
    import sys

    for name in ("pypdf", "pdfplumber", "docx", "pptx", "openpyxl"):
        sys.modules.pop(name, None)
    assert extractor_for(Path("a.PDF")).name == "pdf"  # type: ignore[union-attr]
    assert extractor_for(Path("x.py")).language == "python"  # type: ignore[union-attr]
    assert extractor_for(Path("notes.md")).kind == "markdown"  # type: ignore[union-attr]
    assert extractor_for(Path("photo.jpg")).name == "image"  # type: ignore[union-attr]
    assert extractor_for(Path("data.csv")) is None and extractor_for(Path("Makefile")) is None
    assert not {"pypdf", "pdfplumber", "docx", "pptx", "openpyxl"} & set(sys.modules)


def test_pdf_text_matches_the_shipped_expected_text() -> None:
    resources = material("pypdf") / "resources"
    result = run(resources / "crazyones.pdf")
    expected = (resources / "crazyones.txt").read_text()
    assert " ".join(result.text.split()) == " ".join(expected.split())
    assert result.spec.name == "pdf" and result.metadata["pages"] == 1


def test_corrupt_and_encrypted_pdfs_are_clear_errors() -> None:
    with pytest.raises(ExtractionError, match=r"^invalid\.pdf: not a readable PDF"):
        run(material("ocrmypdf") / "tests" / "resources" / "invalid.pdf")
    encrypted = sorted((material("pypdf") / "resources").glob("encryption/*.pdf"))
    password_protected = [p for p in encrypted if "unencrypted" not in p.name]
    assert password_protected
    failures = 0
    for path in password_protected:
        try:
            run(path)
        except ExtractionError as error:
            failures += 1
            assert path.name in str(error)
    assert failures >= 1


def test_markdown_frontmatter_and_malformed_frontmatter(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("---\ntitle: Trip notes\nauthor: Jane Doe\n---\n# Day one\n\nWe left early.\n")
    result = run(good)
    assert result.title == "Trip notes" and result.embedded_author == "Jane Doe"
    assert result.text.startswith("# Day one") and "title:" not in result.text
    broken = tmp_path / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\n# Kept\n\nThe body survives.\n")
    kept = run(broken)
    assert "The body survives." in kept.text and "frontmatter_error" in kept.metadata
    assert kept.title == "Kept"


def test_binary_named_md_and_latin1_text(tmp_path: Path) -> None:
    png = tmp_path / "picture.md"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ExtractionError, match=r"^picture\.md: binary content"):
        run(png)
    latin = tmp_path / "old.txt"
    latin.write_bytes("Café crème, déjà vu.\n".encode("cp1252"))
    assert run(latin).text == "Café crème, déjà vu.\n"


def test_code_is_verbatim(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n\treturn  1\n")
    result = run(source)
    assert result.text == "def f():\n\treturn  1\n" and result.spec.kind == "code"


def test_office_files_keep_headings_titles_and_tables(tmp_path: Path) -> None:
    docx = run(write_docx(tmp_path / "r.docx", "Quarterly Report", author="Ada Lovelace"))
    assert "# Quarterly Report" in docx.text and "## Details" in docx.text
    assert docx.title == "Quarterly Report" and docx.embedded_author == "Ada Lovelace"
    pptx = run(write_pptx(tmp_path / "d.pptx", "Roadmap Review"))
    assert pptx.text.startswith("## Roadmap Review") and PROSE.strip()[:40] in pptx.text
    xlsx = run(write_xlsx(tmp_path / "e.xlsx"))
    assert "## Expenses" in xlsx.text and "| Date | Item | Amount | Note |" in xlsx.text
    assert xlsx.embedded_author == "openpyxl"  # raw: attribution filters tool names


def test_real_docx_and_pptx_from_their_projects() -> None:
    docx_files = sorted(
        (material("python-docx") / "features" / "steps" / "test_files").glob("*.docx")
    )
    pptx_files = sorted(
        (material("python-pptx") / "features" / "steps" / "test_files").glob("*.pptx")
    )
    assert len(docx_files) > 10 and len(pptx_files) > 10
    opened = 0
    for path in docx_files + pptx_files:
        try:
            run(path)
            opened += 1
        except ExtractionError as error:
            assert path.name in str(error)
    assert opened >= (len(docx_files) + len(pptx_files)) * 0.8


def test_zip_and_garbage_named_docx(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    fake = tmp_path / "fake.docx"
    fake.write_bytes(buffer.getvalue())
    with pytest.raises(ExtractionError, match=r"^fake\.docx: not a readable docx"):
        run(fake)
    garbage = tmp_path / "garbage.xlsx"
    garbage.write_bytes(b"this is not a spreadsheet")
    with pytest.raises(ExtractionError, match=r"^garbage\.xlsx: not a xlsx file"):
        run(garbage)
