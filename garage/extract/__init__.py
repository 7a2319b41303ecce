"""Stage 3, extract: dispatch by extension, with lazy imports.

A walk over 100k files must not pay for pypdf, pdfplumber and openpyxl in every process, so the
dispatch table names modules, and a module is imported only when a file of its kind is read.
Each extractor has a version: bumping it re-extracts every file of its kind.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ExtractorSpec:
    name: str
    version: int
    kind: str  # "markdown" | "prose" | "code": picks the chunker
    language: str | None = None
    module: str = field(default="text", compare=False, repr=False)


@dataclass(frozen=True)
class Extraction:
    text: str
    title: str | None
    spec: ExtractorSpec
    metadata: dict[str, object]
    embedded_author: str | None = None  # raw, unfiltered: attribution filters tool names


class ExtractionError(Exception):
    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path.name}: {reason}")
        self.path = path
        self.reason = reason


MARKDOWN = ExtractorSpec("markdown", 1, "markdown", module="text")
TEXT = ExtractorSpec("text", 1, "prose", module="text")
PDF = ExtractorSpec("pdf", 1, "prose", module="pdf")
DOCX = ExtractorSpec("docx", 1, "markdown", module="office")
PPTX = ExtractorSpec("pptx", 1, "markdown", module="office")
XLSX = ExtractorSpec("xlsx", 1, "markdown", module="office")

_CODE = {
    "py": "python", "pyi": "python", "js": "js", "mjs": "js", "cjs": "js", "jsx": "js",
    "ts": "ts", "tsx": "ts", "go": "go", "rs": "rust", "java": "java", "kt": "kotlin",
    "kts": "kotlin", "swift": "swift", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp",
    "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "cs": "csharp", "rb": "ruby", "php": "php",
    "scala": "scala", "lua": "lua", "r": "r", "hs": "haskell", "ex": "elixir", "exs": "elixir",
    "ps1": "powershell", "sol": "sol", "proto": "proto", "sh": None, "bash": None, "zsh": None,
    "sql": None, "pl": None, "m": None, "mm": None, "el": None, "clj": None, "dart": None,
    "vue": None, "svelte": None, "css": None, "scss": None, "toml": None, "yaml": None,
    "yml": None, "ini": None, "cfg": None, "json": None, "xml": None, "gradle": None,
}  # fmt: skip

_TABLE: dict[str, ExtractorSpec] = {
    "md": MARKDOWN, "markdown": MARKDOWN, "mdown": MARKDOWN, "mkd": MARKDOWN,
    "txt": TEXT, "text": TEXT, "rst": TEXT, "org": TEXT, "tex": TEXT, "adoc": TEXT,
    "pdf": PDF, "docx": DOCX, "pptx": PPTX, "xlsx": XLSX, "xlsm": XLSX,
    # Room for the next kinds: mail (.eml, .emlx, .mbox), images, Messages chat.db.
}  # fmt: skip
for _ext, _lang in _CODE.items():
    _TABLE[_ext] = ExtractorSpec("code", 1, "code", _lang, module="text")


def extractor_for(path: Path | str) -> ExtractorSpec | None:
    """The extractor for a file, by extension; None when Garage does not read that kind."""
    name = path if isinstance(path, str) else path.name
    dot = name.rfind(".")
    # A leading dot is a hidden file's name, not an extension (as Path.suffix has it).
    if dot <= name.rfind("/") + 1 or dot == len(name) - 1:
        return None
    return _TABLE.get(name[dot + 1 :].lower())


def extract(path: Path, data: bytes) -> Extraction:
    """Extract text from bytes already read (and hashed) by the caller; never reopens."""
    spec = extractor_for(path)
    if spec is None:
        raise ExtractionError(path, "no extractor for this kind of file")
    module = importlib.import_module(f"garage.extract.{spec.module}")
    result: Extraction = module.extract(path, data, spec)
    return result


__all__ = ["Extraction", "ExtractionError", "ExtractorSpec", "extract", "extractor_for"]
