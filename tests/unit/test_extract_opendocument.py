"""OpenDocument text, spreadsheets and presentations: odfpy's own example files, and
OCRmyPDF's damaged tagged.odt."""

from __future__ import annotations

from pathlib import Path

import pytest

from garage.extract import Extraction, ExtractionError, extract
from tests.material import material


@pytest.fixture(scope="module")
def examples() -> Path:
    return material("odfpy") / "tests" / "examples"


def run(path: Path) -> Extraction:
    return extract(path, path.read_bytes())


def test_text_lists_tables_and_headings(examples: Path) -> None:
    assert run(examples / "twolevellist.odt").text == (
        "Line 1\n\n- Item A\n\n- Item B\n\n- Subitem B.1\n\n- Subitem B.2 (bold)\n\n- Item C"
        "\n\nLine 4"
    )
    table = run(examples / "simpletable.odt")
    assert table.text == "| Cell 1 | Cell 2 |\n| --- | --- |\n| Cell 3 (bold) | Cell 4 (italic) |"
    assert table.embedded_author == "Søren Roug" and table.spec.name == "odt"
    assert run(examples / "headerfooter.odt").title == "Lorem ipsum"  # its first heading


def test_slides_and_sheets(examples: Path) -> None:
    deck = run(examples / "ol.odp")
    assert deck.text.startswith("## OL\n\nOL\n\n- Eins\n\n- Tsvey") and deck.spec.name == "odp"
    sheet = run(examples / "pythagoras.ods")
    assert sheet.text == "## Sheet1\n\n| 3 |\n| --- |\n| 4 |\n| 5 |\n| 7 |"
    assert run(examples / "chinese_spreadsheet.ods").text.startswith("## 工作表1\n\n| test |")


def test_every_example_extracts_or_fails_cleanly(examples: Path) -> None:
    paths = sorted(examples.glob("*.od[tsp]"))
    assert len(paths) >= 20
    failed = []
    for path in paths:
        try:
            run(path)
        except ExtractionError as error:
            assert str(error).startswith(f"{path.name}: not a readable"), error
            failed.append(path.name)
    assert failed == ["nasty.odt"]  # an undefined XML entity: refused, never expanded


def test_damaged_and_mislabelled_packages_are_clear_errors(examples: Path) -> None:
    tagged = material("ocrmypdf") / "tests" / "resources" / "tagged.odt"  # one byte short
    with pytest.raises(ExtractionError, match=r"^tagged\.odt: not a readable odt file"):
        run(tagged)
    with pytest.raises(ExtractionError, match=r"^sheet\.odt: not a odt file \(it is .*spreadsheet"):
        extract(Path("sheet.odt"), (examples / "pythagoras.ods").read_bytes())
    with pytest.raises(ExtractionError, match=r"^x\.odp: not a odp file \(not a zip"):
        extract(Path("x.odp"), b"plain text")
