"""Chunkers: a splitter plus the signature stored in ``chunks.chunker``.

``recursive:1000/100`` for prose, ``markdown:1000/100`` for Markdown (langchain's Markdown
separators cut at headings first), ``code:<language>:1500/150`` for code. A signature names
exactly what produced the chunks: a different one rebuilds them on the next ingest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from garage.chunk.languages import LANGUAGE_SEPARATORS
from garage.chunk.splitters import RecursiveSplitter

PROSE_SIZE, PROSE_OVERLAP = 1000, 100
CODE_SIZE, CODE_OVERLAP = 1500, 150

# Extractor language names that langchain spells differently.
_ALIASES = {"javascript": "js", "typescript": "ts", "c++": "cpp", "cs": "csharp", "kt": "kotlin"}
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Chunk:
    ord: int
    text: str
    start: int
    end: int
    heading: str | None


@dataclass(frozen=True)
class Chunker:
    signature: str
    splitter: RecursiveSplitter
    headings: bool

    def split(self, text: str) -> list[Chunk]:
        pieces = self.splitter.split_with_offsets(text)
        heads = [(m.start(), m.group(1)) for m in _HEADING.finditer(text)] if self.headings else []
        chunks = []
        h = 0
        current: str | None = None
        for ord_, (start, piece) in enumerate(pieces):
            # The heading in force where the chunk starts, or the first one inside it.
            while h < len(heads) and heads[h][0] <= start:
                current = heads[h][1]
                h += 1
            heading = current
            if heading is None and h < len(heads) and heads[h][0] < start + len(piece):
                heading = heads[h][1]
            chunks.append(Chunk(ord_, piece, start, start + len(piece), heading))
        return chunks


@lru_cache(maxsize=128)  # asked once per file: build each chunker once
def chunker_for(kind: str, language: str | None = None) -> Chunker:
    """The chunker for an extractor's kind ("markdown", "prose", "code") and language."""
    if kind == "code":
        lang = _ALIASES.get(language or "", language or "")
        separators = LANGUAGE_SEPARATORS.get(lang)
        if separators is None:
            # No language rules: the generic splitter at code sizes, under its own signature.
            return Chunker(
                f"code:generic:{CODE_SIZE}/{CODE_OVERLAP}",
                RecursiveSplitter(CODE_SIZE, CODE_OVERLAP),
                headings=False,
            )
        return Chunker(
            f"code:{lang}:{CODE_SIZE}/{CODE_OVERLAP}",
            RecursiveSplitter(CODE_SIZE, CODE_OVERLAP, separators, separators_are_regex=True),
            headings=False,
        )
    if kind == "markdown":
        return Chunker(
            f"markdown:{PROSE_SIZE}/{PROSE_OVERLAP}",
            RecursiveSplitter(
                PROSE_SIZE,
                PROSE_OVERLAP,
                LANGUAGE_SEPARATORS["markdown"],
                separators_are_regex=True,
            ),
            headings=True,
        )
    return Chunker(
        f"recursive:{PROSE_SIZE}/{PROSE_OVERLAP}",
        RecursiveSplitter(PROSE_SIZE, PROSE_OVERLAP),
        headings=True,
    )


__all__ = ["Chunk", "Chunker", "chunker_for"]
