"""looks_like_tool_name on what the real libraries write, and on real people's names."""

from __future__ import annotations

from pathlib import Path

import docx
import openpyxl
import pptx
import pypdf
import pytest

from garage.attribute.metadata import author_field, clean_author, looks_like_tool_name


def test_python_docx_default_author_is_a_tool(tmp_path: Path) -> None:
    docx.Document().save(str(tmp_path / "a.docx"))
    props = docx.Document(str(tmp_path / "a.docx")).core_properties
    assert props.author == "python-docx"
    assert looks_like_tool_name(props.author)
    assert looks_like_tool_name(props.last_modified_by)  # empty


def test_python_pptx_defaults_are_tools(tmp_path: Path) -> None:
    pptx.Presentation().save(str(tmp_path / "a.pptx"))
    props = pptx.Presentation(str(tmp_path / "a.pptx")).core_properties
    # dc:creator is empty; the template's lastModifiedBy names the library's author.
    assert props.author == "" and looks_like_tool_name(props.author)
    assert props.last_modified_by == "Steve Canny" and looks_like_tool_name(props.last_modified_by)


def test_openpyxl_default_creator_is_a_tool(tmp_path: Path) -> None:
    openpyxl.Workbook().save(tmp_path / "a.xlsx")
    props = openpyxl.load_workbook(tmp_path / "a.xlsx").properties
    assert props.creator == "openpyxl" and looks_like_tool_name(props.creator)


def test_pypdf_producer_is_a_tool_and_a_set_author_is_not(tmp_path: Path) -> None:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(72, 72)
    writer.add_metadata({"/Author": "Dr. María José García"})
    with open(tmp_path / "a.pdf", "wb") as out:
        writer.write(out)
    meta = pypdf.PdfReader(tmp_path / "a.pdf").metadata
    assert meta is not None
    assert looks_like_tool_name(meta["/Producer"])
    assert not looks_like_tool_name(meta["/Author"])


def test_authors_set_through_the_libraries_pass(tmp_path: Path) -> None:
    document = docx.Document()
    document.core_properties.author = "Ada Lovelace"
    document.save(str(tmp_path / "b.docx"))
    deck = pptx.Presentation()
    deck.core_properties.author = "J. R. R. Tolkien"
    deck.save(str(tmp_path / "b.pptx"))
    book = openpyxl.Workbook()
    book.properties.creator = "Grace Hopper"
    book.save(tmp_path / "b.xlsx")
    read = [
        docx.Document(str(tmp_path / "b.docx")).core_properties.author,
        pptx.Presentation(str(tmp_path / "b.pptx")).core_properties.author,
        openpyxl.load_workbook(tmp_path / "b.xlsx").properties.creator,
    ]
    assert read == ["Ada Lovelace", "J. R. R. Tolkien", "Grace Hopper"]
    assert not any(map(looks_like_tool_name, read))


@pytest.mark.parametrize(
    "value",
    [
        "python-pptx", "python-docx", "openpyxl", "Steve Canny", "PYTHON-DOCX ",
        "Microsoft Office User", "Microsoft Office Word", "Microsoft® Word 2016", "Administrator",
        "User", "user1", "Unknown", "Owner", "Windows User", "", "   ", "\t\n", "-", "???",
        "pdfTeX-1.40.25", "LaTeX with hyperref", "TeX", "XeTeX", "LuaTeX-1.17.0",
        "Adobe Acrobat Pro DC 23.1", "Adobe PDF Library 15.0", "Acrobat Distiller 9.0",
        "Acrobat", "Writer", "LibreOffice", "LibreOffice 7.5", "OpenOffice.org 3.2", "Word",
        "ReportLab PDF Library - www.reportlab.com", "Preview", "Quartz PDFContext",
        "macOS Version 14.2 (Build 23C64) Quartz PDFContext", "Skia/PDF m120",
        "wkhtmltopdf 0.12.6", "Ghostscript 9.55", "pypdf", "PyPDF2", "iText 5.5.13",
        "Pandoc", "calibre 6.11.0", "Chromium", "x" * 200,
    ],
)  # fmt: skip
def test_tools_and_placeholders(value: str) -> None:
    assert looks_like_tool_name(value)
    assert clean_author(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "Jane Doe", "J. R. R. Tolkien", "Dr. María José García", "Ada Lovelace",
        "Zoë O'Brien-Smith", "李小龍", "Jean-Luc Picard", "Tex Avery", "William Wordsworth",
        "Ursula K. Le Guin", "jane@example.org", "Prof. Dr. Hans-Jürgen Müller", "Владимир Набоков",
    ],
)  # fmt: skip
def test_real_names_pass(value: str) -> None:
    assert not looks_like_tool_name(value)
    assert clean_author(f"  {value} ") == value


def test_clean_author_collapses_whitespace_and_keeps_none() -> None:
    assert clean_author("Jane \t  Doe") == "Jane Doe"
    assert clean_author(None) is None


def test_author_field_names_the_likely_source() -> None:
    assert author_field(Path("x.PDF")) == "/Author"
    assert author_field(Path("x.pptx")) == "dc:creator"
    assert author_field(Path("x.md")) == "embedded author"
