"""PDF extraction on pypdf's and OCRmyPDF's own test files, real broken ones included, Debian's
LaTeX-typeset reference card, and a scan rendered here from a real PDF page."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from garage.extract import Extraction, ExtractionError, extract
from garage.extract.ocr import OcrBudget, OcrDeferred, ocr_budget
from garage.extract.pdfium import runs_together
from tests.material import material

SLOW = {"issue-604.pdf", "issue-301.pdf"}  # 137 pages of vector drawing; one 1 MB page


@pytest.fixture(scope="module")
def resources() -> Path:
    return material("pypdf") / "resources"


def run(path: Path) -> Extraction:
    return extract(path, path.read_bytes())


def test_text_is_exactly_the_shipped_expected_text(resources: Path) -> None:
    result = run(resources / "crazyones.pdf")
    assert result.text == (resources / "crazyones.txt").read_text(encoding="utf-8")
    assert result.spec.name == "pdf" and result.spec.kind == "prose"
    assert result.metadata["pages"] == 1 and result.metadata["page_offsets"] == [0]
    assert result.metadata["pdfplumber_pages"] == []  # a plain text page never needs it
    assert result.title is None and result.embedded_author is None  # it has no /Title


def test_title_and_author_from_metadata_and_junk_titles_dropped(resources: Path) -> None:
    meta = run(resources / "metadata.pdf")
    assert (meta.title, meta.embedded_author) == ("The Title", "Martin Thoma")
    assert meta.metadata["subject"] == "The Subject"
    assert meta.metadata["embedded_author_field"] == "/Author"
    word = run(resources / "test Orient.pdf")  # /Title "Microsoft Word - Test Orient PDF.docx"
    assert word.title == "Test Orient PDF" and word.embedded_author == "CDa"
    binder = run(resources / "Seige_of_Vicksburg_Sample_OCR.pdf")  # /Title "Binder1.pdf"
    assert binder.title is None and binder.metadata["title"] == "Binder1.pdf"
    untitled = run(resources / "two-different-pages.pdf")  # /Title "Untitled document"
    assert untitled.title is None
    assert run(resources / "example.pdf").title == "PDF Example Document"


def test_tables_become_markdown_tables_in_place(resources: Path) -> None:
    example = run(resources / "example.pdf")
    text = example.text
    header = text.index("| Continent | Asia | Europe |")
    assert text.index("Namespaces are one honking great idea") < header  # the page's order
    assert "| Capital | Jakarta | Berlin | Vienna | Paris | Vatican City |" in text
    assert example.metadata["tables"] == 1 and example.metadata["pdfplumber_pages"] == [1]
    geobase = run(resources / "GeoBase_NHNC1_Data_Model_UML_EN.pdf")
    assert "REVISION HISTORY\n\n| Date | Version | Description |\n| --- | --- | --- |\n" in (
        geobase.text
    )
    assert "| September 2002 | Draft 01 | First draft for discussion with Nova Scotia |" in (
        geobase.text
    )
    assert geobase.metadata["pages"] == 19 and geobase.metadata["tables"] >= 5
    # pdfplumber ran on a few pages only; plain text pages kept pypdf's text.
    assert 0 < len(geobase.metadata["pdfplumber_pages"]) < 19  # type: ignore[arg-type]


def test_page_offsets_point_at_each_page(resources: Path) -> None:
    result = run(resources / "GeoBase_NHNC1_Data_Model_UML_EN.pdf")
    offsets = result.metadata["page_offsets"]
    assert isinstance(offsets, list) and len(offsets) == 19 and offsets == sorted(offsets)
    assert result.text[offsets[2] :].startswith("National Hydro Network, Data Model")
    assert result.text[offsets[2] :].split("\n")[1] == "REVISION HISTORY"


def test_pages_with_little_text_escalate_to_pdfplumber(resources: Path) -> None:
    matrix = run(resources / "Sample_Td-matrix.pdf")  # text placed by Td matrices in a grid
    assert matrix.text.startswith("| Hello PDF 2 1! | Hello PDF 10 7! |\n| --- | --- |")
    assert matrix.metadata["pdfplumber_pages"] == [1]


def test_encrypted_pdfs(resources: Path) -> None:
    # Opened with the empty user password (owner-password only): read like any other.
    for name in ("r4-owner-password.pdf", "r6-empty-password.pdf", "r2-empty-password.pdf"):
        result = run(resources / "encryption" / name)
        assert result.text == "pdf encryption test\npassword: asdfzxcv", name
        assert result.metadata["encrypted"] is True
    # A user password is needed: a clear error naming the file.
    for path in (
        resources / "libreoffice-writer-password.pdf",  # password "openpassword"
        resources / "crazyones-encrypted-256.pdf",
        resources / "encryption" / "r3-user-password.pdf",  # password "asdfzxcv"
        resources / "encrypted-file.pdf",
    ):
        with pytest.raises(ExtractionError) as caught:
            run(path)
        assert str(caught.value) == f"{path.name}: encrypted PDF: it needs a password to open"


def test_corrupt_and_fake_pdfs_are_clear_errors() -> None:
    invalid = material("ocrmypdf") / "tests" / "resources" / "invalid.pdf"
    with pytest.raises(ExtractionError, match=r"^invalid\.pdf: not a readable PDF \("):
        run(invalid)
    with pytest.raises(ExtractionError, match=r"^report\.pdf: not a readable PDF"):
        extract(Path("report.pdf"), b"%PDF-1.4 truncated garbage")
    docx = material("python-docx") / "tests" / "test_files" / "test.docx"
    with pytest.raises(ExtractionError, match=r"^test\.pdf: not a readable PDF \(no %PDF header\)"):
        extract(Path("test.pdf"), docx.read_bytes())
    with pytest.raises(ExtractionError, match=r"^empty\.pdf: not a readable PDF"):
        extract(Path("empty.pdf"), b"")


def test_every_real_pdf_extracts_or_fails_cleanly(resources: Path) -> None:
    """No PDF of either project may raise anything but ExtractionError."""
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about broken files
    scans = material("ocrmypdf") / "tests" / "resources"
    paths = [p for p in sorted(resources.rglob("*.pdf")) if p.name not in SLOW]
    paths += sorted(scans.glob("*.pdf"))
    readable = failed = 0
    for path in paths:
        try:
            with ocr_budget(OcrBudget(0)):  # OCR has tests of its own, below; here it is slow
                result = run(path)
        except ExtractionError as error:
            assert str(error).startswith(f"{path.name}: "), error
            failed += 1
            continue
        readable += 1
        assert isinstance(result.text, str) and result.metadata["pages"] >= 1  # type: ignore[operator]
        offsets = result.metadata["page_offsets"]
        assert isinstance(offsets, list) and all(0 <= o <= len(result.text) for o in offsets)
    assert readable >= 60 and failed >= 10  # the encrypted ones, invalid.pdf


# -- words run together, and scans ----------------------------------------------------------


def test_words_run_together_are_respaced_by_pdfium() -> None:
    card = material("debian-refcard") / "usr/share/doc/debian-refcard/refcard-en-a4.pdf.gz"
    import gzip

    data = gzip.decompress(card.read_bytes())
    import io

    import pypdf

    pypdf_text = pypdf.PdfReader(io.BytesIO(data)).pages[0].extract_text()
    assert "Queryinstalledpackages," in pypdf_text and runs_together(pypdf_text)
    result = extract(Path("refcard-en-a4.pdf"), data)
    assert result.metadata["pdfium_pages"] == [1, 2]
    assert "Query installed packages," in result.text
    assert "Write package selections to" in result.text
    assert "ocr_pages" not in result.metadata  # a text page is never OCR'd


def test_real_text_does_not_look_run_together(resources: Path) -> None:
    text = (resources / "crazyones.txt").read_text(encoding="utf-8")
    assert not runs_together(text * 5)
    # CamelCase identifiers on a UML model's pages are not runs of words.
    result = run(resources / "GeoBase_NHNC1_Data_Model_UML_EN.pdf")
    assert "pdfium_pages" not in result.metadata


def scan_of(page: Path, copies: int = 1) -> bytes:
    """An image-only PDF made the way a scanner makes one: the page rendered at 200 dpi and
    saved as pictures, with no text layer."""
    import io

    import pypdfium2

    document = pypdfium2.PdfDocument(page)
    image = document[0].render(scale=200 / 72).to_pil().convert("L")
    document.close()
    out = io.BytesIO()
    image.save(out, "PDF", resolution=200, save_all=True, append_images=[image] * (copies - 1))
    return out.getvalue()


def test_a_scan_of_a_real_page_is_read_by_ocr(resources: Path) -> None:
    result = extract(Path("scan.pdf"), scan_of(resources / "crazyones.pdf"))
    assert result.metadata["ocr_pages"] == [1] and result.metadata["ocr"] == "tesseract:eng"
    assert result.metadata["pages"] == 1
    text = " ".join(result.text.split()).lower()
    assert "the misfits" in text and "the round pegs in the square holes" in text


def test_real_scans_from_ocrmypdf_are_read() -> None:
    scans = material("ocrmypdf") / "tests" / "resources"
    result = run(scans / "c03-29.pdf")  # a page of Huckleberry Finn, scanned
    assert result.metadata["ocr_pages"] == [1]
    assert "Miss Watson" in result.text
    blank = run(scans / "blank.pdf")  # no text and no image: nothing to OCR
    assert blank.text == "" and "ocr_pages" not in blank.metadata


def test_the_run_budget_defers_what_it_cannot_cover(resources: Path) -> None:
    data = scan_of(resources / "crazyones.pdf", copies=2)
    spent = OcrBudget(10, left=1)
    with ocr_budget(spent), pytest.raises(OcrDeferred, match=r"^two\.pdf: 2 scanned pages"):
        extract(Path("two.pdf"), data)
    assert spent.left == 1  # nothing spent on a deferred file
    with ocr_budget(OcrBudget(0)):  # OCR turned off
        assert extract(Path("two.pdf"), data).metadata["ocr_skipped_pages"] == 2
    small = OcrBudget(1)  # a file larger than a whole budget is read as far as it goes
    with ocr_budget(small):
        result = extract(Path("two.pdf"), data)
    assert result.metadata["ocr_pages"] == [1] and result.metadata["ocr_skipped_pages"] == 1
    assert small.left == 0
