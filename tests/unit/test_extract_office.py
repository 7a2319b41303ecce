"""docx, pptx and xlsx on python-docx's and python-pptx's own test files, Excel workbooks
embedded in real decks, workbooks written here, and broken packages."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import pytest

from garage.extract import Extraction, ExtractionError, extract
from garage.extract.office import MAX_ROWS
from tests.material import material


def run(path: Path, name: str | None = None) -> Extraction:
    return extract(Path(name) if name else path, path.read_bytes())


@pytest.fixture(scope="module")
def docx_files() -> Path:
    return material("python-docx") / "features" / "steps" / "test_files"


@pytest.fixture(scope="module")
def pptx_files() -> Path:
    return material("python-pptx") / "features" / "steps" / "test_files"


# -- docx ---------------------------------------------------------------------------------------


def test_real_docx_headings_title_and_author() -> None:
    result = run(material("python-docx") / "tests" / "test_files" / "test.docx")
    assert result.text == "# python-docx was here!\n\npython-docx was here too!"
    assert result.title == "python-docx was here!"  # no core title: the first heading
    assert result.embedded_author == "Cisco Employee"
    assert result.metadata["last_modified_by"] == "Steve Canny"
    assert result.metadata["embedded_author_field"] == "author"


def test_real_docx_keeps_document_order(docx_files: Path) -> None:
    styles = run(docx_files / "par-known-styles.docx")
    assert "\n\n# Heading 1\n\nBody Text" in styles.text
    mixed = run(docx_files / "blk-paras-and-tables.docx")
    paragraph, table, after = mixed.text.split("\n\n")
    assert paragraph.startswith("Lorem ipsum") and after.startswith("Donec semper")
    assert table.startswith("| Text before Text after |")
    assert mixed.metadata["tables"] == 1


def test_written_docx_title_headings_lists_and_tables(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("Field Report", style="Title")
    document.add_heading("Findings", level=1)
    document.add_paragraph("The survey covered three valleys over two weeks.")
    document.add_paragraph("Water levels were low", style="List Bullet")
    document.add_paragraph("Two bridges need repair", style="List Bullet")
    document.add_heading("Costs", level=2)
    table = document.add_table(rows=3, cols=2)
    values = [("Item", "Cost"), ("Bridge", "12 000"), ("Road", "3 500")]
    for row, cells in zip(table.rows, values, strict=True):
        for cell, value in zip(row.cells, cells, strict=True):
            cell.text = value
    document.core_properties.author = ""
    document.core_properties.last_modified_by = "Ada Lovelace"
    path = tmp_path / "report.docx"
    document.save(str(path))
    result = run(path)
    assert result.text == (
        "# Field Report\n\n# Findings\n\nThe survey covered three valleys over two weeks.\n\n"
        "- Water levels were low\n\n- Two bridges need repair\n\n## Costs\n\n"
        "| Item | Cost |\n| --- | --- |\n| Bridge | 12 000 |\n| Road | 3 500 |"
    )
    assert result.title == "Field Report"
    # No author: the last person to save it is the embedded author, and metadata says so.
    assert result.embedded_author == "Ada Lovelace"
    assert result.metadata["embedded_author_field"] == "last_modified_by"


# -- pptx ---------------------------------------------------------------------------------------


def test_real_pptx_slide_titles_tables_and_notes(pptx_files: Path) -> None:
    deck = run(pptx_files / "test.pptx")
    assert deck.text == "## Presentation Title Text\n\nSubtitle Text"
    # The core title "Presentation" is the template's: junk, so the first slide title wins.
    assert deck.title == "Presentation Title Text" and deck.metadata["slides"] == 1
    assert deck.embedded_author == "python-pptx"  # raw: attribution filters tool names
    untitled = run(pptx_files / "sld-slides.pptx")
    assert untitled.text == "## Slide 1\n\n## Slide 2\n\n## Slide 3"
    tables = run(pptx_files / "tbl-cell.pptx")
    assert "## Slide 3\n\n| a | b | c |\n| --- | --- | --- |\n| d | e | f |\n| g | h | i |" in (
        tables.text
    )
    assert run(pptx_files / "prs-notes.pptx").text == "## Slide 1\n\nNotes: Notes"


def test_written_pptx_reading_order(tmp_path: Path) -> None:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Quarterly Review"
    # Added bottom first: z-order is not reading order.
    for top, text in ((5, "Third: next steps"), (2, "First: revenue grew"), (3.5, "Second: costs")):
        box = slide.shapes.add_textbox(Inches(1), Inches(top), Inches(6), Inches(1))
        box.text_frame.text = text
    deck.save(str(tmp_path / "review.pptx"))
    result = run(tmp_path / "review.pptx")
    assert result.text == (
        "## Quarterly Review\n\nFirst: revenue grew\n\nSecond: costs\n\nThird: next steps"
    )
    assert result.title == "Quarterly Review"


# -- xlsx ---------------------------------------------------------------------------------------


def test_real_workbooks_embedded_in_decks() -> None:
    books = sorted(material("pptx-embedded-xlsx").glob("*.xlsx"))
    assert len(books) > 20
    for path in books:
        result = run(path)
        assert result.text.startswith("## Sheet1\n\n| ") and result.spec.name == "xlsx", path
    chart = run(material("pptx-embedded-xlsx") / "cht-axis-props--Microsoft_Excel_Worksheet.xlsx")
    assert chart.text.splitlines()[2:5] == [
        "|  | Series 1 | Series 2 | Series 3 |",
        "| --- | --- | --- | --- |",
        "| Category 1 | -4.3 | 2.4 | 2 |",
    ]
    assert chart.embedded_author == "Steve Canny" and chart.metadata["sheets"] == ["Sheet1"]


def test_written_workbook_sheets_header_values_and_row_cap(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    budget = book.active
    budget.title = "Budget"
    budget.append([])  # a blank first row: the header is the first row with anything in it
    budget.append(["Month", "Rent", "Food", "Paid on"])
    budget.append(["January", 950.0, 310.25, dt.datetime(2024, 1, 31)])
    budget.append(["February", 950.0, 287.5, dt.datetime(2024, 2, 29, 18, 30)])
    log = book.create_sheet("Readings")
    log.append(["Day", "Reading"])
    for day in range(MAX_ROWS + 50):
        log.append([day, day * 0.5])
    book.create_sheet("Empty")
    book.properties.creator = "Jane Doe"
    book.properties.title = "Household 2024"
    path = tmp_path / "household.xlsx"
    book.save(str(path))
    result = run(path)
    assert result.text.startswith(
        "## Budget\n\n| Month | Rent | Food | Paid on |\n| --- | --- | --- | --- |\n"
        "| January | 950 | 310.25 | 2024-01-31 |\n| February | 950 | 287.5 | 2024-02-29T18:30:00 |"
        "\n\n## Readings\n\n| Day | Reading |\n| --- | --- |\n| 0 | 0 |\n| 1 | 0.5 |\n"
    )
    readings = result.text.split("## Readings\n\n")[1].splitlines()
    assert len(readings) == 2 + MAX_ROWS and "## Empty" not in result.text
    assert result.metadata["truncated"] == {"Readings": MAX_ROWS}
    assert result.metadata["sheets"] == ["Budget", "Readings", "Empty"]
    assert result.title == "Household 2024" and result.embedded_author == "Jane Doe"


# -- every real file, and broken ones --------------------------------------------------------


def test_every_real_office_file_extracts(docx_files: Path, pptx_files: Path) -> None:
    paths = sorted(material("python-docx").rglob("*.docx")) + sorted(pptx_files.glob("*.pptx"))
    paths += sorted(pptx_files.glob("*.xlsx")) + sorted(pptx_files.glob("*.docx"))
    assert len(paths) > 100
    for path in paths:
        result = run(path)
        assert result.spec.name == path.suffix[1:], path


def test_broken_packages_are_clear_errors(tmp_path: Path, pptx_files: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(
        ExtractionError, match=r"^fake\.docx: not a readable docx file \(a zip archive without"
    ):
        extract(Path("fake.docx"), buffer.getvalue())
    noise = bytes((i * 7919 + 13) % 256 for i in range(4096))
    with pytest.raises(ExtractionError, match=r"^noise\.docx: not a docx file \(not a zip"):
        extract(Path("noise.docx"), noise)
    with pytest.raises(ExtractionError, match=r"^sheet\.xlsx: not a xlsx file \(not a zip"):
        extract(Path("sheet.xlsx"), b"this is not a spreadsheet")
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)  # how Office saves with a password
    with pytest.raises(ExtractionError, match=r"^locked\.xlsx: .*password-protected or old"):
        extract(Path("locked.xlsx"), ole)
    # A real presentation named .docx: a valid package of the wrong kind.
    with pytest.raises(ExtractionError, match=r"^deck\.docx: not a readable docx file"):
        run(pptx_files / "test.pptx", "deck.docx")
    truncated = (pptx_files / "test.pptx").read_bytes()[:5000]
    with pytest.raises(ExtractionError, match=r"^cut\.pptx: not a pptx file \(not a zip"):
        extract(Path("cut.pptx"), truncated)


# -- macro-enabled packages ---------------------------------------------------------------------


def test_real_pptm_reads_as_a_deck(pptx_files: Path) -> None:
    result = run(pptx_files / "act-props.pptm")
    assert result.spec.name == "pptx"
    assert "## Slide 1" in result.text and "First" in result.text


def test_docm_reads_as_a_document(tmp_path: Path) -> None:
    # No real .docm ships in a package: this is python-docx's real test.docx saved the way Word
    # saves a macro-enabled document (its main part's content type), which python-docx refuses.
    source = material("python-docx") / "tests" / "test_files" / "test.docx"
    buffer = io.BytesIO()
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(buffer, "w") as docm:
        for info in original.infolist():
            body = original.read(info)
            if info.filename == "[Content_Types].xml":
                body = body.replace(
                    b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                    b"application/vnd.ms-word.document.macroEnabled.main+xml",
                )
                assert b"macroEnabled" in body
            docm.writestr(info, body)
    result = extract(Path("macros.docm"), buffer.getvalue())
    assert result.spec.name == "docx"
    assert result.text == "# python-docx was here!\n\npython-docx was here too!"
