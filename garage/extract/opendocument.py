"""OpenDocument (LibreOffice): .odt, .ods and .odp, read from the package's content.xml.

The XML is walked directly with the standard library rather than through odfpy: the text is a
few element kinds (headings, paragraphs, lists, tables, slides), and a direct walk keeps the
rendering the same as the Office extractors' — ``#`` headings from outline levels, ``-`` list
items, Markdown tables, a ``## name`` heading per slide and per sheet, sheets capped at
MAX_ROWS rows and MAX_COLUMNS columns as a workbook's are.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from garage.extract import clean_rows, clean_title
from garage.extract.office import MAX_COLUMNS, MAX_ROWS, MAX_UNPACKED
from garage.extract.tables import markdown_table
from garage.extract.types import Extraction, ExtractionError, ExtractorSpec

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
}
_MIMETYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
}
MAX_REPEAT = 1000  # a cell or row "repeated" a million times is formatting, not content


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    kind = spec.name
    content, meta = _read(path, data, kind)
    body = content.find(f"{_q('office:body')}")
    if body is None:
        raise ExtractionError(path, f"not a readable {kind} file (content.xml has no body)")
    parts: list[str] = []
    if kind == "odp":
        for number, page in enumerate(body.iter(_q("draw:page")), start=1):
            parts.append(f"## {page.get(_q('draw:name')) or f'Slide {number}'}")
            parts += _blocks(page)
    elif kind == "ods":
        for sheet in body.iter(_q("table:table")):
            rows = _sheet_rows(sheet)
            if rows:
                parts.append(f"## {sheet.get(_q('table:name'))}\n\n{markdown_table(rows)}")
    else:
        for text in body:
            parts += _blocks(text)
    title, author, metadata = _meta(meta)
    first_heading = next((p.lstrip("# ") for p in parts if p.startswith("# ")), None)
    return Extraction("\n\n".join(parts), title or first_heading, spec, metadata, author)


def _read(path: Path, data: bytes, kind: str) -> tuple[Any, Any]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ExtractionError(path, f"not a {kind} file (not a zip archive)") from None
    try:
        return _parts(path, archive, kind)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:  # a damaged archive
        reason = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
        raise ExtractionError(path, f"not a readable {kind} file ({reason})") from None


def _parts(path: Path, archive: zipfile.ZipFile, kind: str) -> tuple[Any, Any]:
    with archive:
        names = set(archive.namelist())
        if "content.xml" not in names:
            raise ExtractionError(path, f"not a readable {kind} file (no content.xml)")
        if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED:
            raise ExtractionError(path, f"{kind} file would unpack too large; refused")
        mimetype = (
            archive.read("mimetype").decode("ascii", "replace") if "mimetype" in names else ""
        )
        if mimetype and mimetype.strip() != _MIMETYPES[kind]:
            raise ExtractionError(path, f"not a {kind} file (it is {mimetype.strip()})")
        try:
            content = ElementTree.fromstring(archive.read("content.xml"))
            meta = ElementTree.fromstring(archive.read("meta.xml")) if "meta.xml" in names else None
        except ElementTree.ParseError as error:
            raise ExtractionError(path, f"not a readable {kind} file ({error})") from None
    return content, meta


def _blocks(element: Any) -> list[str]:
    """Headings, paragraphs, list items and tables under ``element``, in document order."""
    out: list[str] = []
    for child in element:
        tag = child.tag
        if tag == _q("text:h"):
            text = _text(child)
            level = int(child.get(_q("text:outline-level"), "1") or 1)
            if text:
                out.append(f"{'#' * min(max(level, 1), 6)} {text}")
        elif tag == _q("text:p"):
            if text := _text(child):
                out.append(text)
        elif tag == _q("text:list"):
            for item in child.iter(_q("text:list-item")):
                texts = [_text(p) for p in item if p.tag in (_q("text:p"), _q("text:h"))]
                if line := " ".join(t for t in texts if t):
                    out.append(f"- {line}")
        elif tag == _q("table:table"):
            if rows := _sheet_rows(child):
                out.append(markdown_table(rows))
        else:  # sections, frames, text boxes: their paragraphs are the document's too
            out += _blocks(child)
    return out


def _text(element: Any) -> str:
    """A paragraph's text, with text:s / text:tab / text:line-break as the spaces they are."""
    pieces: list[str] = [element.text or ""]
    for child in element:
        if child.tag in (_q("text:s"), _q("text:tab"), _q("text:line-break")):
            pieces.append(" ")
        elif child.tag != _q("office:annotation"):  # comments annotate, they are not the text
            pieces.append(_text(child))
        pieces.append(child.tail or "")
    return " ".join("".join(pieces).split())


def _sheet_rows(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.iter(_q("table:table-row")):
        cells: list[str] = []
        for cell in row:
            if cell.tag not in (_q("table:table-cell"), _q("table:covered-table-cell")):
                continue
            value = " ".join(t for p in cell.iter(_q("text:p")) if (t := _text(p)))
            repeat = min(int(cell.get(_q("table:number-columns-repeated"), "1")), MAX_REPEAT)
            cells += [value] * repeat
            if len(cells) >= MAX_COLUMNS:
                break
        cells = cells[:MAX_COLUMNS]
        if any(cells):
            repeat = min(int(row.get(_q("table:number-rows-repeated"), "1")), MAX_REPEAT)
            rows += [cells] * repeat
        if len(rows) > MAX_ROWS:  # the header and MAX_ROWS data rows
            rows = rows[: MAX_ROWS + 1]
            break
    return clean_rows(rows)


def _meta(meta: Any) -> tuple[str | None, str | None, dict[str, object]]:
    def field(name: str) -> str | None:
        found = meta.find(f".//{_q(name)}") if meta is not None else None
        text = " ".join((found.text or "").split()) if found is not None else ""
        return text or None

    author = field("meta:initial-creator")
    modified_by = field("dc:creator")  # ODF's dc:creator is whoever saved it last
    metadata: dict[str, object] = {"author": author, "last_modified_by": modified_by}
    if author or modified_by:
        metadata["embedded_author_field"] = "initial-creator" if author else "creator"
    return clean_title(field("dc:title")), author or modified_by, metadata
