"""A small, dependency-free port of langchain-text-splitters' RecursiveCharacterTextSplitter.

Garage's chunks were first cut by langchain; this port reproduces its output chunk for chunk
and offset for offset (``tests/unit/test_chunk_golden.py`` pins that against langchain itself),
so the chunker signatures stayed valid and no index had to be rebuilt when the dependency went.
Any deliberate change here must change the signature too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def _split_keeping_separator(text: str, separator: str) -> list[str]:
    """Split on a regex, each separator kept at the start of the piece after it."""
    if not separator:
        return [c for c in text if c != ""]
    parts = re.split(f"({separator})", text)
    pieces = [parts[i] + parts[i + 1] for i in range(1, len(parts), 2)]
    if len(parts) % 2 == 0:
        pieces += parts[-1:]
    pieces = [parts[0], *pieces]
    return [p for p in pieces if p != ""]


class RecursiveSplitter:
    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int,
        separators: Sequence[str] = ("\n\n", "\n", " ", ""),
        *,
        separators_are_regex: bool = False,
    ):
        if chunk_overlap > chunk_size:
            raise ValueError("chunk_overlap must not exceed chunk_size")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.separators = list(separators)
        self.separators_are_regex = separators_are_regex

    def split_text(self, text: str) -> list[str]:
        return self._split(text, self.separators)

    def split_with_offsets(self, text: str) -> list[tuple[int, str]]:
        """Chunks with their start offsets, found the way langchain's add_start_index does."""
        found: list[tuple[int, str]] = []
        index, previous = 0, 0
        for chunk in self.split_text(text):
            offset = index + previous - self.chunk_overlap
            index = text.find(chunk, max(0, offset))
            previous = len(chunk)
            found.append((index, chunk))
        return found

    def _pattern(self, separator: str) -> str:
        return separator if self.separators_are_regex else re.escape(separator)

    def _split(self, text: str, separators: list[str]) -> list[str]:
        final: list[str] = []
        separator = separators[-1]
        remaining: list[str] = []
        for i, candidate in enumerate(separators):
            if candidate == "":
                separator = candidate
                break
            if re.search(self._pattern(candidate), text):
                separator = candidate
                remaining = separators[i + 1 :]
                break
        splits = _split_keeping_separator(text, self._pattern(separator))
        good: list[str] = []
        for piece in splits:
            if len(piece) < self.chunk_size:
                good.append(piece)
                continue
            if good:
                final.extend(self._merge(good))
                good = []
            if not remaining:
                final.append(piece)
            else:
                final.extend(self._split(piece, remaining))
        if good:
            final.extend(self._merge(good))
        return final

    def _merge(self, splits: list[str]) -> list[str]:
        # Separators are kept inside the pieces, so pieces join with nothing between them.
        docs: list[str] = []
        current: list[str] = []
        total = 0
        for piece in splits:
            length = len(piece)
            if total + length > self.chunk_size:
                if current:
                    joined = "".join(current).strip()
                    if joined:
                        docs.append(joined)
                    while total > self.chunk_overlap or (
                        total + length > self.chunk_size and total > 0
                    ):
                        total -= len(current[0])
                        current = current[1:]
            current.append(piece)
            total += length
        joined = "".join(current).strip()
        if joined:
            docs.append(joined)
        return docs
