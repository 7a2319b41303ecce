"""Office files: python-docx, python-pptx and openpyxl, with headings kept as Markdown."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from garage.extract import Extraction, ExtractionError, ExtractorSpec
from garage.extract.tables import markdown_table

MAX_ROWS = 2000  # per sheet: a workbook of raw data is not prose


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ExtractionError(path, f"not a {spec.name} file (not a zip archive)")
    try:
        return {"docx": _docx, "pptx": _pptx, "xlsx": _xlsx}[spec.name](data, spec)
    except ExtractionError:
        raise
    except Exception as error:  # the libraries raise KeyError, ValueError, … on broken parts
        raise ExtractionError(
            path, f"not a readable {spec.name} file ({type(error).__name__}: {error})"
        ) from error


def _core(props: Any) -> tuple[str | None, str | None, dict[str, object]]:
    """Title and author from core properties (docx/pptx name it author, openpyxl creator)."""

    def field(*names: str) -> str | None:
        for name in names:
            value = getattr(props, name, None)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    author = field("author", "creator")
    modified_by = field("last_modified_by", "lastModifiedBy")
    meta: dict[str, object] = {"core_author": author, "last_modified_by": modified_by}
    return field("title"), author or modified_by, meta


def _docx(data: bytes, spec: ExtractorSpec) -> Extraction:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    parts: list[str] = []
    first_heading = None
    for block in document.element.body.iterchildren():
        tag = block.tag.rsplit("}", 1)[-1]
        if tag == "p":
            paragraph = Paragraph(block, document)
            text = paragraph.text.strip()
            if not text:
                continue
            style = (paragraph.style.name if paragraph.style is not None else "") or ""
            level = _heading_level(style)
            if level:
                first_heading = first_heading or text
                parts.append("#" * level + " " + text)
            else:
                parts.append(text)
        elif tag == "tbl":
            table = Table(block, document)
            rows = [[cell.text for cell in row.cells] for row in table.rows]
            if rows:
                parts.append(markdown_table(rows))
    title, author, meta = _core(document.core_properties)
    return Extraction("\n\n".join(parts), title or first_heading, spec, meta, author)


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    if style.startswith("Heading "):
        try:
            return min(int(style.split()[1]), 6)
        except ValueError:
            return 0
    return 0


def _pptx(data: bytes, spec: ExtractorSpec) -> Extraction:
    import pptx

    deck = pptx.Presentation(io.BytesIO(data))
    parts: list[str] = []
    first_title = None
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text.strip() if title_shape is not None else ""
        first_title = first_title or title or None
        parts.append(f"## {title or f'Slide {number}'}")
        for shape in slide.shapes:
            if shape is title_shape:
                continue
            if shape.has_text_frame and shape.text_frame.text.strip():
                parts.append(shape.text_frame.text.strip())
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                parts.append(markdown_table(rows))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                parts.append(f"Notes: {notes}")
    title, author, meta = _core(deck.core_properties)
    meta["slides"] = len(deck.slides)
    return Extraction("\n\n".join(parts), title or first_title, spec, meta, author)


def _xlsx(data: bytes, spec: ExtractorSpec) -> Extraction:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    parts: list[str] = []
    truncated: list[str] = []
    try:
        for sheet in book.worksheets:
            rows = []
            for row in sheet.iter_rows(values_only=True):
                if any(v is not None and str(v).strip() for v in row):
                    rows.append(list(row))
                if len(rows) > MAX_ROWS:
                    truncated.append(sheet.title)
                    break
            if rows:
                parts.append(f"## {sheet.title}\n\n{markdown_table(rows[: MAX_ROWS + 1])}")
        title, author, meta = _core(book.properties)
        meta |= {"sheets": book.sheetnames, "truncated_sheets": truncated}
    finally:
        book.close()
    return Extraction("\n\n".join(parts), title, spec, meta, author)
