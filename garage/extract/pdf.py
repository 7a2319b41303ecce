"""PDF: pypdf first, escalating to pdfplumber per page when a page yields little text or looks
like it holds a table; tables are kept as Markdown tables."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from garage.extract import Extraction, ExtractionError, ExtractorSpec
from garage.extract.tables import markdown_table

LITTLE_TEXT = 100  # characters: below this, pypdf probably missed the page's text
_GAPPED = re.compile(r"\S {2,}\S.* {2,}\S")


def _looks_tabular(text: str) -> bool:
    lines = text.splitlines()
    return sum(1 for line in lines if _GAPPED.search(line)) >= 3


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError(path, "encrypted PDF (needs a password)")
        texts = [page.extract_text() or "" for page in reader.pages]
    except ExtractionError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as error:
        raise ExtractionError(path, f"not a readable PDF ({error})") from error
    except Exception as error:  # pypdf raises many kinds on broken files
        raise ExtractionError(
            path, f"not a readable PDF ({type(error).__name__}: {error})"
        ) from error
    escalated: list[int] = []
    plumber: Any = None
    try:
        for index, text in enumerate(texts):
            if len(text.strip()) >= LITTLE_TEXT and not _looks_tabular(text):
                continue
            if plumber is None:
                import pdfplumber

                plumber = pdfplumber.open(io.BytesIO(data))
            page = plumber.pages[index]
            tables = [t for t in page.extract_tables() if t and len(t) > 1]
            better = page.extract_text() or ""
            if tables:
                better = "\n\n".join([better, *(markdown_table(t) for t in tables)])
            if len(better.strip()) > len(text.strip()) or tables:
                texts[index] = better
                escalated.append(index + 1)
    except Exception:  # pdfplumber failing on a page keeps pypdf's text
        pass
    finally:
        if plumber is not None:
            plumber.close()
    info = _info(reader)
    title = info.get("title")
    metadata: dict[str, object] = {"pages": len(texts), "pdfplumber_pages": escalated, **info}
    return Extraction(
        "\n\n".join(t.strip() for t in texts if t.strip()),
        title if isinstance(title, str) and title.strip() else None,
        spec,
        metadata,
        info.get("author"),  # type: ignore[arg-type]
    )


def _info(reader: Any) -> dict[str, str]:
    try:
        meta = reader.metadata or {}
    except Exception:
        return {}
    fields = {
        "/Title": "title",
        "/Author": "author",
        "/Producer": "producer",
        "/Creator": "creator",
    }
    out = {}
    for key, name in fields.items():
        value = meta.get(key)
        if value and str(value).strip():
            out[name] = str(value).strip()
    return out
