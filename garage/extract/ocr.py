"""OCR with Tesseract on this machine: pictures (``image.py``) and scanned PDF pages (``pdf.py``)
go through this one path, so they are read the same way.

OCR costs seconds a page on a small machine, so scanned pages are spent from a per-run
``OcrBudget`` (``limits.ocr_max_pages_per_run``), which ingest opens around each extraction
with ``ocr_budget``. A PDF whose scanned pages the rest of the budget cannot cover is deferred
(``OcrDeferred``): ingest records it with no extractor version, so the next run reads it whole
rather than indexing half of it for good.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from garage.extract.types import ExtractionError

OCR_TIMEOUT_SECONDS = 120  # a huge scan must not hold the whole source up
OCR_LANGUAGE = "eng"
_UPSCALE_BELOW = 1000  # Tesseract reads small text better twice the size


@dataclass
class OcrBudget:
    """Scanned PDF pages that may still be OCR'd in this run (mutable: it is spent)."""

    total: int
    left: int = -1

    def __post_init__(self) -> None:
        if self.left < 0:
            self.left = self.total


class OcrDeferred(ExtractionError):
    """The run's OCR budget cannot cover this file's scanned pages: read it next run."""


_BUDGET: ContextVar[OcrBudget | None] = ContextVar("ocr_budget", default=None)


@contextmanager
def ocr_budget(budget: OcrBudget) -> Iterator[OcrBudget]:
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def current_budget() -> OcrBudget | None:
    """The run's budget, or None outside a run (a library call): then only the per-document
    cap bounds the pages."""
    return _BUDGET.get()


def ocr(path: Path, image: Any) -> str:
    """The text Tesseract reads in a picture or a rendered page; ExtractionError naming the
    file when Tesseract is missing, gives up or fails."""
    import pytesseract
    from PIL import ImageOps

    try:
        image.seek(0)  # a GIF's or a TIFF's first frame
    except EOFError:
        pass
    page = ImageOps.exif_transpose(image)
    if page.mode not in ("L", "RGB"):
        page = page.convert("RGBA") if "A" in page.mode or page.mode == "P" else page.convert("RGB")
    if page.mode == "RGBA":  # transparent pixels are black to Tesseract: put them on white
        from PIL import Image

        background = Image.new("RGB", page.size, "white")
        background.paste(page, mask=page.getchannel("A"))
        page = background
    if max(page.size) < _UPSCALE_BELOW:
        page = page.resize((page.width * 2, page.height * 2))
    # Tesseract's OpenMP threads fight each other (and the rest of ingest) on small machines:
    # one thread reads a page in half the time here. A user's own setting wins.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        text = pytesseract.image_to_string(page, lang=OCR_LANGUAGE, timeout=OCR_TIMEOUT_SECONDS)
    except pytesseract.TesseractNotFoundError:
        raise ExtractionError(
            path, "Tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)"
        ) from None
    except RuntimeError as error:  # pytesseract's timeout
        raise ExtractionError(path, f"Tesseract gave up on it ({error})") from None
    except pytesseract.TesseractError as error:
        message = " ".join(str(error.message or error).split())[:300]
        raise ExtractionError(path, f"Tesseract could not read it ({message})") from None
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
