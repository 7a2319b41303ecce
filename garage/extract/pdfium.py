"""PDFium (pypdfium2) for the pages pypdf reads badly: words run together, and scans.

pypdf puts a space between two words only where the PDF draws a space or a gap it recognises;
TeX places each word by position with no space glyph, so on a LaTeX reference card pypdf reads
"Queryinstalledpackages," where PDFium, which infers spaces from glyph positions, reads
"Query installed packages,". Such a page is told by its tokens: many long runs of lower-case
letters, which words are not (CamelCase identifiers and compounds are rarer and are not
lower-case runs).

A page with no text layer but an image on it is rendered here for OCR (``ocr.py``).
"""

from __future__ import annotations

import logging
import re
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)

RUN_ON_LETTERS = 16  # a token this long, lower case after its first letter, is a run of words
RUN_ON_SHARE = 0.2  # of a page's letters in such tokens: the page's words run together
MIN_TOKENS = 30  # fewer words than this are too few to judge
OCR_DPI = 300  # what Tesseract reads best
MAX_RENDER_SIDE = 5000  # pixels: a poster-sized page is rendered smaller, not at 300 dpi
_WORD = re.compile(r"[^\W\d_]+")  # letters only: "e.g." is two words, a URL several


def run_on_share(text: str) -> float:
    """The share of the text's letters that sit in runs of words with no space between them."""
    runs = letters = 0
    for word in _WORD.findall(text):
        letters += len(word)
        if len(word) >= RUN_ON_LETTERS and word[1:].islower():
            runs += len(word)
    return runs / letters if letters else 0.0


def runs_together(text: str) -> bool:
    return len(text.split()) >= MIN_TOKENS and run_on_share(text) >= RUN_ON_SHARE


class PdfiumPages:
    """The PDF opened in PDFium on first use; closed with the ``with`` block."""

    def __init__(self, data: bytes):
        self._data = data
        self._document: Any = None
        self.unreadable = False

    def __enter__(self) -> PdfiumPages:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._document is not None:
            self._document.close()

    def _open(self) -> Any:
        if self._document is None and not self.unreadable:
            import pypdfium2

            try:
                self._document = pypdfium2.PdfDocument(self._data)
            except Exception as error:  # pypdf read it; PDFium need not: keep pypdf's text
                log.debug("PDFium cannot open a PDF pypdf read: %s", error)
                self.unreadable = True
        return self._document

    def text(self, index: int) -> str | None:
        """The page's text as PDFium spaces it, or None when PDFium cannot read the page."""
        document = self._open()
        if document is None:
            return None
        try:
            page = document[index]
            textpage = page.get_textpage()
            try:
                text: str = textpage.get_text_range()
            finally:
                textpage.close()
                page.close()
        except Exception as error:
            log.debug("PDFium failed on page %d: %s", index + 1, error)
            return None
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def has_image(self, index: int) -> bool:
        """Whether the page draws an image: a page with no text and no image is blank, not a
        scan, and is not worth seconds of OCR."""
        document = self._open()
        if document is None:
            return False
        import pypdfium2.raw as pdfium_c

        try:
            page = document[index]
            try:
                images = page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3)
                return next(iter(images), None) is not None
            finally:
                page.close()
        except Exception:
            return False

    def render(self, index: int) -> Any:
        """The page as a PIL image at OCR_DPI (smaller for a huge page), or None."""
        document = self._open()
        if document is None:
            return None
        try:
            page = document[index]
            try:
                width, height = page.get_size()  # in points, 72 to the inch
                scale = min(OCR_DPI / 72, MAX_RENDER_SIDE / max(width, height, 1))
                bitmap = page.render(scale=scale)
                image = bitmap.to_pil()
                bitmap.close()
                return image
            finally:
                page.close()
        except Exception as error:
            log.debug("PDFium could not render page %d: %s", index + 1, error)
            return None
