"""The records of extraction: what an extractor is, what it makes of a file, and how it fails.

Every extractor module imports these, and the dispatch in ``garage.extract`` imports the
extractors only when a file of their kind is read: a module of its own keeps the records below
both, so no extractor needs the package that dispatches to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ExtractorSpec:
    name: str  # "markdown", "text", "code", "pdf", "docx", "pptx", "xlsx"
    version: int  # bump to force re-extraction of every file of this kind
    kind: str  # "markdown" | "prose" | "code": picks the chunker
    language: str | None = None  # for code: "python", "js", "shell", … (None otherwise)
    corpus_class: str | None = None  # forced whatever the source says (mail: communication)
    multipart: bool = False  # one file, many documents (mbox): see extract_parts


@dataclass(frozen=True)
class Extraction:
    text: str  # the document content (chunked and searched)
    title: str | None
    spec: ExtractorSpec
    metadata: dict[str, object]  # JSON-serialisable
    embedded_author: str | None = None  # raw, unfiltered (see the module docstring)
    sender: tuple[str | None, str | None] | None = None  # mail: (name, address) of From
    picture: Picture | None = None  # images: what the image chunk is made of


@dataclass(frozen=True)
class Picture:
    """What an image file offers besides its OCR text: enough to find it by name and date."""

    file_name: str
    taken_at: str | None  # ISO 8601, from EXIF DateTimeOriginal (or DateTime)
    camera: str | None  # EXIF Make and Model
    width: int
    height: int
    format: str
    screenshot: bool  # by its name or the "Screenshot" comment macOS writes into it


class ExtractionError(Exception):
    """Corrupt or unsupported content; ``str()`` names the file and what is wrong with it."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path.name}: {reason}")
        self.path = path
        self.reason = reason
