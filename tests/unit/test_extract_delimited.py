"""CSV and TSV on real exports (vega-datasets' CSV files), read as a spreadsheet's sheet is."""

from __future__ import annotations

from pathlib import Path

import pytest

from garage.extract import ExtractionError, extract
from garage.extract.delimited import MAX_READ, sniff_delimiter
from garage.extract.office import MAX_ROWS
from garage.quality import assess
from tests.material import material


@pytest.fixture(scope="module")
def exports() -> Path:
    return material("vega-datasets")


def test_real_exports_become_markdown_tables_with_their_header(exports: Path) -> None:
    path = exports / "la-riots.csv"
    result = extract(path, path.read_bytes())
    header = path.read_text().splitlines()[0].split(",")
    assert result.text.splitlines()[0] == "| " + " | ".join(header) + " |"
    assert result.text.splitlines()[1].startswith("| --- |")
    assert result.spec.name == "csv" and result.spec.kind == "markdown"
    assert result.metadata["delimiter"] == ","
    assert result.metadata["encoding"] == "utf-8"
    assert result.metadata["rows"] == len(path.read_text().strip().splitlines()) - 1
    assert "truncated" not in result.metadata


def test_every_real_export_extracts_and_passes_the_quality_gate(exports: Path) -> None:
    paths = sorted(exports.glob("*.csv"))
    assert len(paths) == 8
    for path in paths:
        result = extract(path, path.read_bytes())
        assert result.text.startswith("| "), path.name
        assert assess(result.text).accepted, (path.name, assess(result.text).reason)


def test_long_exports_keep_the_header_and_max_rows(exports: Path) -> None:
    path = exports / "airports.csv"  # 3,376 airports
    result = extract(path, path.read_bytes())
    assert result.metadata["truncated"] is True
    assert result.metadata["rows"] == MAX_ROWS
    assert len(result.text.splitlines()) == MAX_ROWS + 2  # header and rule


def test_semicolons_tabs_and_windows_1252_are_sniffed(exports: Path, tmp_path: Path) -> None:
    # The same real export as European Excel saves it (semicolons, cp1252) and as a TSV.
    lines = (exports / "stocks.csv").read_text().splitlines()[:40]
    european = "\r\n".join(line.replace(",", ";") for line in lines) + "\r\nCAFÉ;Jan 1 2010;1,5\r\n"
    result = extract(Path("stocks.csv"), european.encode("cp1252"))
    assert result.metadata["delimiter"] == ";"
    assert result.metadata["encoding"] == "cp1252"
    assert "| CAFÉ | Jan 1 2010 | 1,5 |" in result.text
    tsv = "\n".join(line.replace(",", "\t") for line in lines)
    result = extract(Path("stocks.tsv"), tsv.encode())
    assert result.metadata["delimiter"] == "\t"
    assert result.text.splitlines()[0] == "| symbol | date | price |"
    assert sniff_delimiter("one column\nno delimiter\n", tab_by_name=True) == "\t"


def test_a_huge_export_is_read_up_to_the_byte_bound(exports: Path) -> None:
    body = (exports / "sf-temps.csv").read_bytes()
    data = body * (MAX_READ // len(body) + 2)
    result = extract(Path("big.csv"), data)
    assert result.metadata["truncated"] is True


def test_binary_content_is_a_clear_error(exports: Path) -> None:
    with pytest.raises(ExtractionError, match=r"^dump\.csv: binary content"):
        extract(Path("dump.csv"), b"a,b\n\x00\x01\x02,\x03\n")
