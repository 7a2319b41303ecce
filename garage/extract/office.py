"""Office files: python-docx, python-pptx and openpyxl, rendered as Markdown.

- docx: body paragraphs and tables in document order; Title and Heading N styles (or any style
  with an outline level) become ``#`` headings, list paragraphs ``-`` items, tables Markdown.
- pptx: a ``## title`` heading per slide (``## Slide N`` when it has none), then its text in
  reading order (top to bottom, left to right), tables as Markdown, and the speaker notes.
- xlsx: a ``## SheetName`` heading per sheet and the sheet as a Markdown table whose header is
  its first non-empty row, capped at MAX_ROWS rows and MAX_COLUMNS columns (recorded in
  metadata as ``truncated`` and ``truncated_columns``). A workbook openpyxl cannot open is read
  by calamine instead (``calamine.py``), with ``reader`` and ``openpyxl_error`` in metadata.

Headers, footers, comments and text boxes are left out: they repeat or annotate the body.
"""

from __future__ import annotations

import datetime as dt
import io
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from garage.extract import clean_rows, clean_title
from garage.extract.tables import markdown_table
from garage.extract.types import Extraction, ExtractionError, ExtractorSpec

MAX_ROWS = 1000  # data rows per sheet: a workbook of raw data is not prose, and chunks cost
MAX_COLUMNS = 60  # columns per sheet, likewise recorded when cut
MAX_SCANNED = 100_000  # rows read per sheet, empty ones included
MAX_UNPACKED = 1 << 30  # bytes: a zip that would inflate past this is refused (zip bombs)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_PARTS = {"docx": "word/", "pptx": "ppt/", "xlsx": "xl/"}
_DOCM_MAIN = b"application/vnd.ms-word.document.macroEnabled.main+xml"
_DOCX_MAIN = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    _check_package(path, data, spec.name)
    try:
        with warnings.catch_warnings():
            # openpyxl warns about every extension it drops: noise across 100k files.
            warnings.simplefilter("ignore", UserWarning)
            return {"docx": _docx, "pptx": _pptx, "xlsx": _xlsx}[spec.name](data, spec)
    except Exception as error:  # the libraries raise KeyError, ValueError, lxml errors, …
        message = " ".join(str(error).split())[:200]
        raise ExtractionError(
            path, f"not a readable {spec.name} file ({type(error).__name__}: {message})"
        ) from None


def _check_package(path: Path, data: bytes, name: str) -> None:
    """Refuse what is not an Office Open XML package before a library trips over it."""
    if data.startswith(_OLE):
        raise ExtractionError(
            path, f"not a {name} file (a password-protected or old binary Office document)"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ExtractionError(path, f"not a {name} file (not a zip archive)") from None
    with archive:
        names = archive.namelist()
        unpacked = sum(info.file_size for info in archive.infolist())
    if "[Content_Types].xml" not in names or not any(n.startswith(_PARTS[name]) for n in names):
        raise ExtractionError(
            path, f"not a readable {name} file (a zip archive without the {_PARTS[name]} part)"
        )
    if unpacked > MAX_UNPACKED:
        raise ExtractionError(path, f"{name} file would unpack to {unpacked} bytes; refused")


def _core(props: Any) -> tuple[str | None, str | None, dict[str, object]]:
    """Title, embedded author and metadata from core properties. The author is ``author``
    (openpyxl calls it ``creator``), else ``last_modified_by``: raw, not filtered here."""

    def field(*names: str) -> str | None:
        for name in names:
            value = getattr(props, name, None)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
        return None

    author, modified_by = field("author", "creator"), field("last_modified_by", "lastModifiedBy")
    meta: dict[str, object] = {"author": author, "last_modified_by": modified_by}
    for name in ("created", "modified"):
        value = getattr(props, name, None)
        if isinstance(value, dt.datetime):
            meta[name] = value.isoformat()
    if author or modified_by:
        meta["embedded_author_field"] = "author" if author else "last_modified_by"
    return clean_title(field("title")), author or modified_by, meta


# -- docx ---------------------------------------------------------------------------------------


def _docx(data: bytes, spec: ExtractorSpec) -> Extraction:
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(_as_docx(data)))
    parts: list[str] = []
    first_heading: str | None = None
    paragraphs = tables = 0
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            rows = clean_rows([[cell.text for cell in row.cells] for row in block.rows])
            if rows:
                parts.append(markdown_table(rows))
                tables += 1
            continue
        text = block.text.strip()
        if not text:
            continue
        paragraphs += 1
        level = _heading_level(block)
        if level:
            first_heading = first_heading or text
            parts.append(f"{'#' * level} {' '.join(text.split())}")
        elif _is_list_item(block):
            parts.append(f"- {text}")
        else:
            parts.append(text)
    title, author, meta = _core(document.core_properties)
    meta |= {"paragraphs": paragraphs, "tables": tables}
    return Extraction(_join(parts), title or first_heading, spec, meta, author)


def _as_docx(data: bytes) -> bytes:
    """python-docx refuses a .docm by its main part's content type, though the part is the same
    WordprocessingML: read a copy whose [Content_Types].xml calls it a .docx part. (python-pptx
    accepts .pptm as it is.)"""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        types = source.read("[Content_Types].xml")
        if _DOCM_MAIN not in types:
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
            for info in source.infolist():
                body = source.read(info)
                if info.filename == "[Content_Types].xml":
                    body = body.replace(_DOCM_MAIN, _DOCX_MAIN)
                copy.writestr(info, body)
    return out.getvalue()


def _heading_level(paragraph: Any) -> int:
    """1 for Title and Heading 1, N for Heading N; else the outline level of the paragraph or
    of its style chain, which custom and localised heading styles carry."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    if name == "Title":
        return 1
    if name.startswith("Heading ") and name[8:].isdigit():
        return min(int(name[8:]), 6)
    for element in [paragraph._p, *_style_chain(style)]:
        ppr = element.find(f"{_W}pPr")
        outline = ppr.find(f"{_W}outlineLvl") if ppr is not None else None
        if outline is not None:
            value = outline.get(f"{_W}val", "")
            # Level 9 means body text; levels 0-8 are headings 1-9.
            return min(int(value) + 1, 6) if value.isdigit() and int(value) < 9 else 0
    return 0


def _style_chain(style: Any) -> list[Any]:
    chain: list[Any] = []
    while style is not None and len(chain) < 10:
        chain.append(style.element)
        style = style.base_style
    return chain


def _is_list_item(paragraph: Any) -> bool:
    style = paragraph.style
    if style is not None and (style.name or "").startswith(("List Bullet", "List Number")):
        return True
    ppr = paragraph._p.find(f"{_W}pPr")
    return ppr is not None and ppr.find(f"{_W}numPr") is not None


# -- pptx ---------------------------------------------------------------------------------------


def _pptx(data: bytes, spec: ExtractorSpec) -> Extraction:
    import pptx

    deck = pptx.Presentation(io.BytesIO(data))
    parts: list[str] = []
    first_title: str | None = None
    n_tables = 0
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        heading = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        first_title = first_title or heading or None
        parts.append(f"## {heading or f'Slide {number}'}")
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False):
                rows = clean_rows([[cell.text for cell in row.cells] for row in shape.table.rows])
                if rows:
                    parts.append(markdown_table(rows))
                    n_tables += 1
            elif shape.has_text_frame and shape.text_frame.text.strip():
                parts.append(shape.text_frame.text.strip())
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = frame.text.strip() if frame is not None else ""
            if notes:
                parts.append(f"Notes: {notes}")
    title, author, meta = _core(deck.core_properties)
    meta |= {"slides": len(deck.slides), "tables": n_tables}
    return Extraction(_join(parts), title or first_title, spec, meta, author)


def _reading_order(shapes: Any) -> list[Any]:
    """Shapes top to bottom, left to right, with groups opened (z-order is not reading order)."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    flat: list[Any] = []
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            flat.extend(_reading_order(shape.shapes))
        else:
            flat.append(shape)
    return sorted(flat, key=lambda s: (s.top if s.top is not None else 0, s.left or 0))


# -- xlsx ---------------------------------------------------------------------------------------


def _xlsx(data: bytes, spec: ExtractorSpec) -> Extraction:
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            parts, meta = _sheets_markdown(
                (sheet.title, sheet.iter_rows(values_only=True)) for sheet in book.worksheets
            )
            title, author, core = _core(book.properties)
            sheetnames = book.sheetnames
        finally:
            book.close()
    except Exception as error:  # KeyError, ValueError, lxml errors: try the second reader
        return _xlsx_calamine(data, spec, error)
    meta |= core | {"sheets": sheetnames}
    return Extraction(_join(parts), title, spec, meta, author)


def _xlsx_calamine(data: bytes, spec: ExtractorSpec, first: Exception) -> Extraction:
    """A workbook openpyxl cannot open, read by calamine (``calamine.py`` says when that is)."""
    from garage.extract import calamine

    why = f"{type(first).__name__}: {' '.join(str(first).split())[:200]}"
    try:
        sheets = list(calamine.sheets(data))
        parts, meta = _sheets_markdown(sheets)
    except Exception as second:
        raise ValueError(
            f"openpyxl failed ({why}) and so did calamine ({type(second).__name__}: {second})"
        ) from None
    props = calamine.core_properties(data)
    title, author, core = _core(props) if props is not None else (None, None, {})
    meta |= core | {"sheets": [name for name, _ in sheets], "reader": "calamine"}
    meta["openpyxl_error"] = why
    return Extraction(_join(parts), title, spec, meta, author)


def _sheets_markdown(
    sheets: Iterable[tuple[str, Iterable[Sequence[object]]]],
) -> tuple[list[str], dict[str, object]]:
    """Each sheet as a ``## name`` heading and a Markdown table, rows and columns capped."""
    parts: list[str] = []
    truncated: dict[str, int] = {}
    wide: set[str] = set()
    for name, sheet_rows in sheets:
        rows: list[list[str]] = []
        for scanned, values in enumerate(sheet_rows):
            if scanned >= MAX_SCANNED:  # a million formatted but empty rows: stop
                break
            row = [_cell(v) for v in values[:MAX_COLUMNS]]
            if not any(row):
                continue  # blank rows separate blocks; they carry no text
            if len(rows) > MAX_ROWS:  # the header and MAX_ROWS data rows are kept
                truncated[name] = MAX_ROWS
                break
            if len(values) > MAX_COLUMNS and any(v is not None for v in values[MAX_COLUMNS:]):
                wide.add(name)
            rows.append(row)
        if rows:
            width = max(j + 1 for row in rows for j, v in enumerate(row) if v)
            table = markdown_table([row[:width] for row in rows])
            parts.append(f"## {name}\n\n{table}")
    meta: dict[str, object] = {"max_rows_per_sheet": MAX_ROWS}
    if truncated:
        meta["truncated"] = truncated  # sheet -> data rows kept
    if wide:
        meta["truncated_columns"] = {name: MAX_COLUMNS for name in sorted(wide)}
    return parts, meta


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # 12.0 from a spreadsheet is "12" to whoever typed it
    return " ".join(str(value).split())


def _join(parts: list[str]) -> str:
    return "\n\n".join(parts)
