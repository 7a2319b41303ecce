"""Rows of cells as a Markdown table, the first row as its header."""

from __future__ import annotations

from collections.abc import Sequence


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    cells = [[_cell(v) for v in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)
