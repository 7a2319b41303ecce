"""Stage 3, extract: turn a file's bytes into searchable text, a title and metadata.

Dispatch is by extension (case-insensitive). The table names extractor *modules*, imported only
when a file of that kind is extracted: a walk over 100k files calls ``extractor_for`` on every
one and must not pay for importing pypdf, pdfplumber, python-docx, python-pptx or openpyxl.

Each kind has a version: bumping it makes ingest re-extract every file of that kind. Version 2
replaces the first, provisional extractors (their text differs: page offsets, interleaved PDF
tables, list markers, row caps), so files they extracted are redone.

Choices worth knowing:
- ``embedded_author`` is the raw author from embedded metadata, unfiltered (attribution filters
  tool names like "python-docx"): frontmatter ``author``; PDF ``/Author``; Office
  ``core_properties.author`` (xlsx ``creator``), falling back to ``last_modified_by`` only when
  the author is empty, since the last person to save a file is the next best evidence of who
  wrote it. ``metadata["embedded_author_field"]`` says which field it came from.
- CSV and TSV are read as tables, like a spreadsheet's sheet (``delimited.py``): the header
  row kept, the rows capped as a sheet's are. A verbatim dump would chunk into noise. JSON, XML
  and HTML wait for extractors of their own.
- Mail (``.eml``, ``.emlx``, Outlook ``.msg``, ``.mbox`` and files named ``mbox``) is filed as
  communication whatever the source's class, and attributed by its sender. An mbox holds many
  messages: it is ``multipart`` and read through ``extract_parts``, one document per message.
- An Outlook message is known by its bytes (an OLE compound file), not its name: one saved or
  renamed ``.eml``, ``.txt`` or ``.md`` is read as the mail it is (``msg.py``).
- Images are OCR'd (``image.py``); whether a picture also gets an image chunk is ingest's call
  (``garage.ingest.pictures``). Messages' ``chat.db`` is a source kind, not an extension: it
  is read whole by ``messages.py``, outside this dispatch, one document per chat.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from garage.extract.types import Extraction, ExtractionError, ExtractorSpec, Picture

MARKDOWN = ExtractorSpec("markdown", 2, "markdown")
TEXT = ExtractorSpec("text", 2, "prose")
PDF = ExtractorSpec("pdf", 3, "prose")  # 3: scanned pages OCR'd, run-together words respaced
DOCX = ExtractorSpec("docx", 2, "markdown")
PPTX = ExtractorSpec("pptx", 2, "markdown")
XLSX = ExtractorSpec("xlsx", 3, "markdown")  # 3: what openpyxl cannot open, calamine reads
CODE_VERSION = 2
# eml 2: an Outlook .msg saved or renamed .eml is read (it failed as "not an RFC 822 message").
EML = ExtractorSpec("eml", 2, "prose", corpus_class="communication")
EMLX = ExtractorSpec("emlx", 1, "prose", corpus_class="communication")
MSG = ExtractorSpec("msg", 1, "prose", corpus_class="communication")
MBOX = ExtractorSpec("mbox", 1, "prose", corpus_class="communication", multipart=True)
IMAGE = ExtractorSpec("image", 1, "image")
CSV = ExtractorSpec("csv", 1, "markdown")
ODT = ExtractorSpec("odt", 1, "markdown")
ODS = ExtractorSpec("ods", 1, "markdown")
ODP = ExtractorSpec("odp", 1, "markdown")

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Outlook .msg, and pre-2007 Office files

# Extractor name -> module under garage.extract.
_MODULES = {
    "markdown": "text", "text": "text", "code": "text",
    "pdf": "pdf", "docx": "office", "pptx": "office", "xlsx": "office",
    "eml": "mail", "emlx": "mail", "msg": "mail", "mbox": "mail", "image": "image",
    "csv": "delimited",
    "odt": "opendocument", "ods": "opendocument", "odp": "opendocument",
}  # fmt: skip

# Extension -> language. Names follow garage.chunk's separator table where it has the language
# (python, js, ts, go, rust, java, kotlin, swift, c, cpp, csharp, ruby, php, scala, lua, r,
# haskell, elixir, powershell, sol, proto, cobol); the rest get the generic code splitter.
_CODE = {
    "py": "python", "pyi": "python", "pyw": "python", "pyx": "python",
    "js": "js", "mjs": "js", "cjs": "js", "jsx": "js", "ts": "ts", "tsx": "ts", "mts": "ts",
    "cts": "ts", "go": "go", "rs": "rust", "java": "java", "kt": "kotlin", "kts": "kotlin",
    "swift": "swift", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp",
    "hpp": "cpp", "hh": "cpp", "hxx": "cpp", "cs": "csharp", "rb": "ruby", "rake": "ruby",
    "php": "php", "scala": "scala", "sc": "scala", "lua": "lua", "r": "r", "hs": "haskell",
    "ex": "elixir", "exs": "elixir", "ps1": "powershell", "psm1": "powershell", "sol": "sol",
    "proto": "proto", "cob": "cobol", "cbl": "cobol",
    "sh": "shell", "bash": "shell", "zsh": "shell", "fish": "shell", "ksh": "shell",
    "sql": "sql", "pl": "perl", "pm": "perl", "m": "objc", "mm": "objc", "dart": "dart",
    "groovy": "groovy", "gradle": "groovy", "clj": "clojure", "cljs": "clojure",
    "el": "elisp", "lisp": "lisp", "scm": "scheme", "rkt": "racket", "ml": "ocaml",
    "mli": "ocaml", "fs": "fsharp", "erl": "erlang", "jl": "julia", "nim": "nim", "zig": "zig",
    "f90": "fortran", "f95": "fortran", "asm": "asm", "s": "asm", "tcl": "tcl", "awk": "awk",
    "vim": "vim", "bat": "batch", "cmd": "batch", "vb": "vb", "cmake": "cmake", "mk": "make",
    "tf": "hcl", "hcl": "hcl", "nix": "nix", "graphql": "graphql", "vue": "vue",
    "svelte": "svelte", "css": "css", "scss": "scss", "sass": "sass", "less": "less",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini", "cfg": "ini",
}  # fmt: skip

_TABLE: dict[str, ExtractorSpec] = {
    "md": MARKDOWN, "markdown": MARKDOWN, "mdown": MARKDOWN, "mkd": MARKDOWN, "mdx": MARKDOWN,
    "txt": TEXT, "text": TEXT, "rst": TEXT, "org": TEXT, "tex": TEXT, "adoc": TEXT,
    "asciidoc": TEXT,
    # Macro-enabled Office files are the same packages with a VBA part beside the content.
    "pdf": PDF, "docx": DOCX, "docm": DOCX, "pptx": PPTX, "pptm": PPTX, "xlsx": XLSX,
    "xlsm": XLSX, "csv": CSV, "tsv": CSV, "tab": CSV, "odt": ODT, "ods": ODS, "odp": ODP,
    "eml": EML, "emlx": EMLX, "msg": MSG, "mbox": MBOX,
    "png": IMAGE, "jpg": IMAGE, "jpeg": IMAGE, "tif": IMAGE, "tiff": IMAGE, "gif": IMAGE,
    "webp": IMAGE, "heic": IMAGE, "heif": IMAGE,
}  # fmt: skip
_TABLE |= {ext: ExtractorSpec("code", CODE_VERSION, "code", lang) for ext, lang in _CODE.items()}


def extractor_for(path: Path | str) -> ExtractorSpec | None:
    """The extractor for a file, by extension; None when Garage does not read that kind.

    Takes a path string too: the walk has one per file and need not build a Path for it.
    """
    name = path if isinstance(path, str) else path.name
    dot = name.rfind(".")
    # A leading dot is a hidden file's name, not an extension (as Path.suffix has it).
    if dot <= name.rfind("/") + 1 or dot == len(name) - 1:
        # Unix mail spools and many exports name the file just "mbox".
        return MBOX if name.endswith("mbox") and name[name.rfind("/") + 1 :] == "mbox" else None
    return _TABLE.get(name[dot + 1 :].lower())


def extract(path: Path, data: bytes) -> Extraction:
    """Extract the bytes the caller already read (and hashed); the file is never reopened.

    Raises ExtractionError for corrupt or unsupported content. Empty or blank text is not an
    error: the Extraction then has empty text, and the caller decides.
    """
    spec = extractor_for(path)
    if spec is None:
        raise ExtractionError(path, "no extractor for this kind of file")
    if spec.multipart:
        raise ExtractionError(path, f"{spec.name} holds many documents: use extract_parts")
    module_name = _MODULES[spec.name]
    if spec.name in ("text", "markdown") and data.startswith(_OLE_MAGIC):
        # Text is never an OLE compound file: this is an Outlook message under a text name.
        # The spec keeps its name and version (what ingest compares) but files it as mail.
        module_name, spec = "mail", replace(spec, corpus_class="communication")
    module = importlib.import_module(f"garage.extract.{module_name}")
    result: Extraction = module.extract(path, data, spec)
    return result


def extract_parts(path: Path, data: bytes) -> list[tuple[str, Extraction]]:
    """The documents of a multipart file (an mbox), each with its key, unique in the file."""
    spec = extractor_for(path)
    if spec is None or not spec.multipart:
        raise ExtractionError(path, "not a file of many documents")
    module = importlib.import_module(f"garage.extract.{_MODULES[spec.name]}")
    parts: list[tuple[str, Extraction]] = module.extract_parts(path, data, spec)
    return parts


# -- helpers shared by the extractors ------------------------------------------------------------

_JUNK_PREFIX = re.compile(r"^(?:microsoft\s+)?(?:word|powerpoint|excel)\s+-\s+", re.IGNORECASE)
_FILE_SUFFIX = re.compile(
    r"\.(?:docx?|pptx?|xlsx?|pdf|rtf|odt|pages|key|indd|tex|dvi|ps|txt)$", re.IGNORECASE
)
_GENERIC_TITLE = re.compile(
    r"^(?:untitled(?:\s+document)?|(?:new\s+)?document\d*|doc\d*|title|model|book\d*|"
    r"(?:powerpoint\s+)?presentation\d*|slide\s*\d*|binder\d*|(?:anonymous)|unknown|none|-+)$",
    re.IGNORECASE,
)


def clean_title(title: str | None) -> str | None:
    """An embedded title, unless it is junk that tools write: a file name ("Binder1.pdf",
    "Microsoft Word - report.docx" becomes "report"), "Untitled", "Presentation"."""
    if not title:
        return None
    title = " ".join(title.replace("\x00", "").split())
    title = _FILE_SUFFIX.sub("", _JUNK_PREFIX.sub("", title)).strip()
    if not title or _GENERIC_TITLE.match(title) or not any(c.isalpha() for c in title):
        return None
    return title


def clean_rows(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    """Table cells as single-line strings, without the empty rows and columns that merged and
    spanning cells leave behind; the first remaining row is the header."""
    table = [[" ".join(str(c or "").split()) for c in row] for row in rows]
    table = [row for row in table if any(row)]
    width = max((len(row) for row in table), default=0)
    keep = [j for j in range(width) if any(j < len(row) and row[j] for row in table)]
    return [[row[j] if j < len(row) else "" for j in keep] for row in table]


__all__ = [
    "Extraction",
    "ExtractionError",
    "ExtractorSpec",
    "Picture",
    "extract",
    "extract_parts",
    "extractor_for",
]
