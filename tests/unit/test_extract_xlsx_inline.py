"""Workbooks openpyxl cannot open, read by calamine instead of being lost.

The workbook is written here, part by part, as such writers store it: every string inline in
its cell (``t="inlineStr"``), ``[Content_Types].xml`` declaring a shared-strings part that the
package does not hold. openpyxl trusts the declaration and raises KeyError."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import openpyxl
import pytest

from garage.extract import ExtractionError, extract

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_TYPES = "application/vnd.openxmlformats-officedocument.spreadsheetml"

ORDERS = [
    ["Order", "Customer", "Item", "Quantity", "Shipped"],
    ["A-1001", "Ada Lovelace", "Analytical engine punch cards", 40, "2024-03-01"],
    ["A-1002", "Charles Babbage", "Brass gears, assorted", 12, "2024-03-04"],
    ["A-1003", "Mary Somerville", "On the Connexion of the Physical Sciences", 1, ""],
]
NOTES = [["Note"], ["Ship the gears before the cards; Ada is in no hurry."]]


def _cell(ref: str, value: object) -> str:
    if value == "":
        return ""
    if isinstance(value, int | float):
        return f'<c r="{ref}"><v>{value}</v></c>'
    return f'<c r="{ref}" t="inlineStr"><is><t>{value}</t></is></c>'


def _sheet(rows: list[list[object]]) -> str:
    body = "".join(
        f'<row r="{i}">'
        + "".join(_cell(f"{chr(65 + j)}{i}", v) for j, v in enumerate(row))
        + "</row>"
        for i, row in enumerate(rows, start=1)
    )
    head = f'<?xml version="1.0"?><worksheet xmlns="{_MAIN}">'
    return f"{head}<sheetData>{body}</sheetData></worksheet>"


def inline_workbook(sheets: dict[str, list[list[object]]], *, core: bool = True) -> bytes:
    names = list(sheets)
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="{_TYPES}.worksheet+xml"/>'
        for i in range(1, len(names) + 1)
    )
    types = (
        '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-'
        'package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{_TYPES}.sheet.main+xml"/>'
        f"{overrides}"
        # Declared, never written: every string is inline.
        f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_TYPES}.sharedStrings+xml"/>'
        "</Types>"
    )
    package_rels = (
        '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
        f'2006/relationships"><Relationship Id="rId1" Type="{_REL}/officeDocument" '
        'Target="xl/workbook.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats'
        '.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>'
        "</Relationships>"
    )
    workbook = (
        f'<?xml version="1.0"?><workbook xmlns="{_MAIN}" xmlns:r="{_REL}"><sheets>'
        + "".join(
            f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>'
            for i, name in enumerate(names, start=1)
        )
        + "</sheets></workbook>"
    )
    workbook_rels = (
        '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
        '2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(names) + 1)
        )
        + "</Relationships>"
    )
    core_xml = (
        '<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/'
        'package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        "<dc:title>Spring orders</dc:title><dc:creator>Mary Somerville</dc:creator>"
        "</cp:coreProperties>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", types)
        package.writestr("_rels/.rels", package_rels)
        package.writestr("xl/workbook.xml", workbook)
        package.writestr("xl/_rels/workbook.xml.rels", workbook_rels)
        for i, rows in enumerate(sheets.values(), start=1):
            package.writestr(f"xl/worksheets/sheet{i}.xml", _sheet(rows))
        if core:
            package.writestr("docProps/core.xml", core_xml)
    return out.getvalue()


def test_openpyxl_cannot_open_it() -> None:
    data = inline_workbook({"Orders": ORDERS})
    with pytest.raises(KeyError, match="sharedStrings"):
        openpyxl.load_workbook(io.BytesIO(data), read_only=True)


def test_calamine_reads_what_openpyxl_cannot() -> None:
    result = extract(Path("orders.xlsx"), inline_workbook({"Orders": ORDERS, "Notes": NOTES}))
    assert result.text.split("\n\n") == [
        "## Orders",
        "| Order | Customer | Item | Quantity | Shipped |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| A-1001 | Ada Lovelace | Analytical engine punch cards | 40 | 2024-03-01 |\n"
        "| A-1002 | Charles Babbage | Brass gears, assorted | 12 | 2024-03-04 |\n"
        "| A-1003 | Mary Somerville | On the Connexion of the Physical Sciences | 1 |  |",
        "## Notes",
        "| Note |\n| --- |\n| Ship the gears before the cards; Ada is in no hurry. |",
    ]
    meta = result.metadata
    assert meta["reader"] == "calamine" and meta["sheets"] == ["Orders", "Notes"]
    assert "KeyError" in str(meta["openpyxl_error"])
    assert (result.title, result.embedded_author) == ("Spring orders", "Mary Somerville")


def test_without_core_properties_there_is_no_title_or_author() -> None:
    result = extract(Path("orders.xlsx"), inline_workbook({"Orders": ORDERS}, core=False))
    assert result.title is None and result.embedded_author is None
    assert "| A-1002 | Charles Babbage |" in result.text


def test_a_workbook_neither_reader_opens_names_both(tmp_path: Path) -> None:
    data = inline_workbook({"Orders": ORDERS})
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(broken, "w") as copy:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "xl/workbook.xml":
                body = body[: len(body) // 2]  # cut off mid-element
            copy.writestr(info, body)
    with pytest.raises(ExtractionError) as error:
        extract(Path("cut.xlsx"), broken.getvalue())
    message = str(error.value)
    assert message.startswith("cut.xlsx: not a readable xlsx file")
    assert "openpyxl failed" in message and "calamine" in message
