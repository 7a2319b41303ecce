"""A second reader for workbooks openpyxl cannot open: python-calamine (MIT), Rust's calamine.

openpyxl trusts ``[Content_Types].xml``: a writer that declares a shared-strings part but
stores every string inline (``t="inlineStr"``) and writes no ``xl/sharedStrings.xml`` makes it
raise KeyError, and it reads a cached formula string (``t="str"``) as empty. calamine reads
what is in the cells, so such a workbook is read rather than lost. It does not read core
properties: those come from ``docProps/core.xml`` when the package has it.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator


def sheets(data: bytes) -> Iterator[tuple[str, Iterator[list[object]]]]:
    """Each worksheet's name and its rows of cell values (empty cells are None)."""
    import python_calamine

    book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
    for meta in book.sheets_metadata:
        if meta.typ != python_calamine.SheetTypeEnum.WorkSheet:
            continue  # a chart or dialog sheet has no cells, as openpyxl's worksheets have not
        sheet = book.get_sheet_by_name(meta.name)
        yield meta.name, ([None if v == "" else v for v in row] for row in sheet.iter_rows())


def core_properties(data: bytes) -> object | None:
    """The package's core properties (title, creator, …) as openpyxl models them, or None."""
    from openpyxl.packaging.core import DocumentProperties
    from openpyxl.xml.functions import fromstring

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        if "docProps/core.xml" not in archive.namelist():
            return None
        try:
            return DocumentProperties.from_tree(fromstring(archive.read("docProps/core.xml")))
        except Exception:  # damaged properties cost the title and author, not the workbook
            return None
