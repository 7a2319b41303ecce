"""CSV and TSV: a table, read the way a spreadsheet's sheet is (``office.py``).

The first non-empty row is the header and stays the Markdown table's header, so every chunk of
rows is read against the column names it came under. Rows are capped as a sheet's are (the
header and ``MAX_ROWS`` data rows, ``MAX_COLUMNS`` columns), and only the first ``MAX_READ``
bytes are decoded: an export of millions of rows is data, not something a person reads whole,
and what is kept is recorded in metadata (``truncated``, ``truncated_columns``).

The delimiter is sniffed from the first lines (comma, semicolon — what European Excel writes —,
tab or pipe), the tab being assumed for ``.tsv`` and ``.tab`` when the sniff is unsure. The
encoding is read as for text files (a BOM, else UTF-8, else Windows-1252 or Latin-1).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from garage.extract import clean_rows
from garage.extract.office import MAX_COLUMNS, MAX_ROWS
from garage.extract.tables import markdown_table
from garage.extract.text import decode
from garage.extract.types import Extraction, ExtractionError, ExtractorSpec

MAX_READ = 8 * 1024 * 1024  # bytes decoded: far more than MAX_ROWS rows of any sane export
_DELIMITERS = ",;\t|"
_SNIFF_LINES = 50


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    cut = len(data) > MAX_READ
    if cut:  # whole lines only: a row cut in half would be a wrong row
        data = data[: data.rfind(b"\n", 0, MAX_READ) + 1 or MAX_READ]
    text, encoding = decode(path, data)  # ExtractionError for binary content
    delimiter = sniff_delimiter(text, path.suffix.lower() in (".tsv", ".tab"))
    rows: list[list[str]] = []
    truncated = wide = False
    try:
        for row in csv.reader(io.StringIO(text), delimiter=delimiter):
            if not any(cell.strip() for cell in row):
                continue
            if len(rows) > MAX_ROWS:  # the header and MAX_ROWS data rows are kept
                truncated = True
                break
            wide = wide or any(cell.strip() for cell in row[MAX_COLUMNS:])
            rows.append(row[:MAX_COLUMNS])
    except csv.Error as error:  # a NUL inside a field, a field past csv's size limit
        raise ExtractionError(path, f"not a readable CSV file ({error})") from None
    table = clean_rows(rows)
    metadata: dict[str, object] = {
        "encoding": encoding,
        "delimiter": delimiter,
        "rows": max(len(table) - 1, 0),  # data rows kept, the header not counted
        "columns": len(table[0]) if table else 0,
        "max_rows": MAX_ROWS,
    }
    if truncated or cut:
        metadata["truncated"] = True
    if wide:
        metadata["truncated_columns"] = MAX_COLUMNS
    return Extraction(markdown_table(table) if table else "", None, spec, metadata)


def sniff_delimiter(text: str, tab_by_name: bool) -> str:
    """The delimiter that splits the first lines into the same number of fields, most of them.

    ``csv.Sniffer`` is tried first; it gives up on short or ragged files and sometimes picks a
    letter, so its answer is taken only when it is one of the delimiters files really use.
    """
    sample = "\n".join(text.splitlines()[:_SNIFF_LINES])
    try:
        found = csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        found = ""
    if found in _DELIMITERS and found:
        return found
    lines = [line for line in sample.splitlines() if line.strip()]

    def consistency(delimiter: str) -> tuple[int, int]:
        counts = [line.count(delimiter) for line in lines]
        if not counts or not counts[0]:
            return (0, 0)
        return (sum(count == counts[0] for count in counts), counts[0])

    best = max(_DELIMITERS, key=consistency)
    if consistency(best)[0] == 0:
        return "\t" if tab_by_name else ","  # one column: any delimiter reads it the same
    return "\t" if tab_by_name and consistency("\t")[0] else best
