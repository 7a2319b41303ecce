"""PDF: pypdf first, escalating page by page to pdfplumber, PDFium and OCR.

pypdf is fast and its text is faithful (it reproduces pypdf's own crazyones.txt exactly), but it
flattens tables into runs of cells and misses text on some pages. pdfplumber is several times
slower, so a page goes to it only when pypdf got little text from it, or when its content
stream draws enough rectangles and lines to hold a ruled table. There the page is rebuilt from
pdfplumber's text lines with each table, as a Markdown table, in its place on the page.

Two more escalations, both through PDFium (``pdfium.py``): a page whose words run together
(TeX output read by pypdf) takes PDFium's text, which spaces them; a page that still has no
text but draws an image is a scan, rendered and read by Tesseract (``ocr.py``), within the
run's OCR budget and MAX_OCR_PAGES per document. ``metadata["ocr_pages"]`` names those pages.
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Any

from garage.extract import clean_rows, clean_title
from garage.extract.ocr import OCR_LANGUAGE, OcrDeferred, current_budget, ocr
from garage.extract.pdfium import PdfiumPages, run_on_share, runs_together
from garage.extract.tables import markdown_table
from garage.extract.types import Extraction, ExtractionError, ExtractorSpec

log = logging.getLogger(__name__)

LITTLE_TEXT = 80  # visible characters: below this, pypdf probably missed the page's text
MIN_RULINGS = 6  # rectangles + line segments a page must draw before it may hold a table
MAX_PLUMBED = 30  # pages per PDF given to pdfplumber (0.2-0.5 s each): bounds a long report
MAX_OCR_PAGES = 100  # scanned pages OCR'd per PDF (seconds each): a scanned book is cut here
_RULING = re.compile(rb"(?<![A-Za-z])(?:re|l)(?![A-Za-z])")  # path operators "re" and "l"
_BLANK_RUNS = re.compile(r"\n{3,}")


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    if b"%PDF-" not in data[:1024]:
        raise ExtractionError(path, "not a readable PDF (no %PDF header)")
    reader = _open(path, data)
    texts: list[str] = []
    candidates: list[tuple[int, int]] = []  # (priority, page index): little text first
    for index in range(len(reader.pages)):
        try:
            page = reader.pages[index]
            text = page.extract_text() or ""
        except Exception as error:  # one broken page must not cost the others
            log.debug("pypdf failed on page %d of %s: %s", index + 1, path, error)
            page, text = None, ""
        texts.append(text)
        if _visible(text) < LITTLE_TEXT:
            candidates.append((-(10**9), index))
        elif page is not None and (rulings := _rulings(page)) >= MIN_RULINGS:
            candidates.append((-rulings, index))
    escalate = sorted(index for _, index in sorted(candidates)[:MAX_PLUMBED])
    plumbed, tables, failed = _with_pdfplumber(data, texts, escalate) if escalate else ([], 0, [])
    with PdfiumPages(data) as pdfium:
        respaced = _respace(texts, pdfium)
        scans = [i for i, text in enumerate(texts) if _visible(text) < LITTLE_TEXT]
        scans = [i for i in scans if pdfium.has_image(i)]
        ocred = _ocr_scans(path, texts, scans, pdfium)
    parts: list[str] = []
    offsets: list[int] = []  # where each page starts in the text; an empty page, where it stands
    length = 0
    for text in texts:
        text = _tidy(text)
        if text:
            start = length + 2 if parts else 0  # pages are joined by "\n\n"
            parts.append(text)
            offsets.append(start)
            length = start + len(text)
        else:
            offsets.append(length)
    info = _info(reader)
    metadata: dict[str, object] = {
        "pages": len(texts),
        "page_offsets": offsets,  # for citing pages: chunk offsets map back to them
        "pdfplumber_pages": [i + 1 for i in plumbed],
        "tables": tables,
        "encrypted": bool(reader.is_encrypted),
        **info,
    }
    if respaced:
        metadata["pdfium_pages"] = [i + 1 for i in respaced]
    if scans:
        metadata |= {"ocr": f"tesseract:{OCR_LANGUAGE}", "ocr_pages": [i + 1 for i in ocred]}
        if len(scans) > len(ocred):
            metadata["ocr_skipped_pages"] = len(scans) - len(ocred)
    if failed:
        metadata["pdfplumber_failed_pages"] = [i + 1 for i in failed]
    if len(candidates) > MAX_PLUMBED:
        metadata["pdfplumber_skipped_pages"] = len(candidates) - MAX_PLUMBED
    author = info.get("author")
    if author:
        metadata["embedded_author_field"] = "/Author"
    return Extraction("\n\n".join(parts), clean_title(info.get("title")), spec, metadata, author)


def _visible(text: str) -> int:
    return len("".join(text.split()))


def _respace(texts: list[str], pdfium: PdfiumPages) -> list[int]:
    """Pages whose words run together take PDFium's text, where it runs together less."""
    respaced = []
    for index, text in enumerate(texts):
        if not runs_together(text):
            continue
        better = pdfium.text(index)
        if better is not None and run_on_share(better) < run_on_share(text) / 2:
            texts[index] = better
            respaced.append(index)
    return respaced


def _ocr_scans(path: Path, texts: list[str], scans: list[int], pdfium: PdfiumPages) -> list[int]:
    """OCR the scanned pages, in place; the pages read. A run's budget that cannot cover them
    defers the whole file to the next run (OcrDeferred), unless the budget is untouched: then
    a file larger than the whole budget is read as far as it goes, not deferred for ever."""
    pages = scans[:MAX_OCR_PAGES]
    budget = current_budget()
    if budget is not None and pages:
        if budget.left < len(pages) and budget.left < budget.total:
            raise OcrDeferred(
                path,
                f"{len(pages)} scanned pages to OCR and {budget.left} left in this run's budget "
                "(limits.ocr_max_pages_per_run): read on the next run",
            )
        pages = pages[: budget.left]
        budget.left -= len(pages)
    done = []
    for index in pages:
        image = pdfium.render(index)
        if image is None:
            continue
        text = ocr(path, image)
        if _visible(text) > _visible(texts[index]):
            texts[index] = text
        done.append(index)
    return done


def _open(path: Path, data: bytes) -> Any:
    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError(path, "encrypted PDF: it needs a password to open")
        len(reader.pages)  # parses the page tree: a broken one fails here, not halfway through
    except ExtractionError:
        raise
    except DependencyError as error:  # AES needs the cryptography package
        raise ExtractionError(
            path, f"encrypted PDF that cannot be decrypted here ({error})"
        ) from None
    except FileNotDecryptedError:
        raise ExtractionError(path, "encrypted PDF: it needs a password to open") from None
    except Exception as error:  # pypdf raises many kinds on broken files
        raise ExtractionError(path, f"not a readable PDF ({_describe(error)})") from None
    return reader


def _tidy(text: str) -> str:
    """Trailing spaces off every line and runs of blank lines cut to one: layout residue that
    only dilutes chunks (a PDF's text is not verbatim source the way code is)."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines))


def _rulings(page: Any) -> int:
    """How many rectangles and line segments the page draws: a cheap count on the raw content
    stream, so that pages of plain text never reach pdfplumber."""
    try:
        contents = page.get("/Contents")
        contents = contents.get_object() if contents is not None else None
        streams = contents if isinstance(contents, list) else [contents] if contents else []
        raw = b"".join(stream.get_object().get_data() for stream in streams)
    except Exception:
        return 0
    return len(_RULING.findall(raw, 0, 4_000_000))


def _with_pdfplumber(
    data: bytes, texts: list[str], pages: list[int]
) -> tuple[list[int], int, list[int]]:
    """Replace the text of ``pages`` with pdfplumber's where that is better, in place."""
    import pdfplumber

    improved, failed, n_tables = [], [], 0
    try:
        document = pdfplumber.open(io.BytesIO(data))
    except Exception as error:
        log.debug("pdfplumber cannot open a PDF pypdf read: %s", error)
        return [], 0, pages
    with document:
        for index in pages:
            page = document.pages[index]
            try:
                text, found = _page_text(page)
            except Exception as error:  # pdfminer fails on some pages pypdf reads
                log.debug("pdfplumber failed on page %d: %s", index + 1, error)
                failed.append(index)
                continue
            finally:
                page.close()  # frees the page's parsed objects: a long PDF would hold them all
            if found or len(text.strip()) > len(texts[index].strip()):
                texts[index], n_tables = text, n_tables + found
                improved.append(index)
    return improved, n_tables, failed


def _page_text(page: Any) -> tuple[str, int]:
    """The page's text lines with its tables as Markdown, each where it stands on the page."""
    tables = [(t.bbox, rows) for t in page.find_tables() if _is_table(rows := t.extract())]
    if not tables:
        return page.extract_text() or "", 0
    boxes = [bbox for bbox, _ in tables]

    def outside(obj: dict[str, Any]) -> bool:
        x, y = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)

    blocks = [(line["top"], line["text"]) for line in page.filter(outside).extract_text_lines()]
    blocks += [(bbox[1], markdown_table(clean_rows(rows))) for bbox, rows in tables]
    blocks.sort(key=lambda block: block[0])
    out: list[str] = []
    for _, block in blocks:
        # Tables stand apart as Markdown blocks; text lines keep the page's line breaks.
        if block.startswith("|") or (out and out[-1].startswith("|")):
            out.append("")
        out.append(block)
    return "\n".join(out), len(tables)


def _is_table(rows: list[list[str | None]]) -> bool:
    """A ruled box around a paragraph is found as a 1x1 'table': a table has 2+ rows and 2+
    columns with something in at least two cells."""
    cells = [c for row in rows for c in row if c and c.strip()]
    return len(rows) >= 2 and max((len(r) for r in rows), default=0) >= 2 and len(cells) >= 2


def _info(reader: Any) -> dict[str, str]:
    try:
        meta = reader.metadata or {}
    except Exception:  # a broken /Info dictionary is not worth losing the text over
        return {}
    fields = {
        "/Title": "title",
        "/Author": "author",
        "/Subject": "subject",
        "/Keywords": "keywords",
        "/Creator": "creator",
        "/Producer": "producer",
        "/CreationDate": "created",
        "/ModDate": "modified",
    }
    out = {}
    for key, name in fields.items():
        try:
            value = meta.get(key)
        except Exception:
            continue
        text = " ".join(str(value).replace("\x00", "").split()) if value is not None else ""
        if text:
            out[name] = text
    return out


def _describe(error: Exception) -> str:
    message = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
