"""The picture rule: which images are text documents, which are pictures, and their chunks.

An image whose OCR found real text (``MIN_WORDS`` words that pass the quality gate) is a text
document, chunked like prose. An image with little or no text — a photo, a diagram, an icon —
is a picture: its document holds no text chunks, only one image chunk (``chunker = 'image'``,
``modality = 'image'``) whose text is what full-text search sees: the file name, the EXIF date
and camera, and whatever words OCR found. A screenshot is both: its text chunks and, beside
them, an image chunk with its title and OCR text.

Why a picture gets a document row at all when the ingest rule says a file with no text gets
none: chunks hang off documents, and a photo must be findable by its name and date. The row's
content is the image chunk's text; it has no text chunks, so text models embed nothing of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from garage.chunk import Chunker
from garage.extract import Extraction, Picture
from garage.ingest.store import NewChunk, new_chunks
from garage.quality import assess, exceeds_chunk_cap

IMAGE_CHUNKER = "image"
MIN_WORDS = 8  # fewer OCR'd words than this is "little or no text"
_WORD = re.compile(r"[^\W\d_]{2,}")  # letters only: OCR noise on a photo is mostly punctuation


@dataclass(frozen=True)
class PicturePlan:
    content: str
    chunks: list[NewChunk]
    rejected: str | None = None


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def picture_text(picture: Picture, ocr: str) -> str:
    lines = [picture.file_name]
    if picture.screenshot:
        lines.append("Screenshot")
    if picture.taken_at:
        lines.append(f"Taken {picture.taken_at}")
    if picture.camera:
        lines.append(f"Camera: {picture.camera}")
    if ocr:
        lines += ["", ocr]
    return "\n".join(lines)


def image_chunk(picture: Picture, text: str, ord_: int, start: int, end: int) -> NewChunk:
    metadata: dict[str, object] = {
        "file_name": picture.file_name,
        "taken_at": picture.taken_at,
        "camera": picture.camera,
        "width": picture.width,
        "height": picture.height,
        "format": picture.format,
        "screenshot": picture.screenshot,
    }
    return NewChunk(
        ord_, text, start, end, None, IMAGE_CHUNKER, modality="image", metadata=metadata
    )


def plan_picture(extraction: Extraction, chunker: Chunker, cap: int) -> PicturePlan:
    picture = extraction.picture
    assert picture is not None
    ocr = extraction.text.strip()
    words = word_count(ocr)
    if words >= MIN_WORDS and assess(ocr).accepted:
        pieces = chunker.split(ocr)
        if exceeds_chunk_cap(len(pieces), cap):
            reason = f"{len(pieces)} chunks, over limits.max_chunks_per_document ({cap})"
            return PicturePlan("", [], reason)
        chunks = new_chunks(pieces, chunker.signature)
        if picture.screenshot:
            text = picture_text(picture, ocr)
            chunks.append(image_chunk(picture, text, len(chunks), 0, len(ocr)))
        return PicturePlan(ocr, chunks)
    # A picture: OCR noise of a word or two is kept (it may be a sign or a label).
    text = picture_text(picture, ocr if words else "")
    return PicturePlan(text, [image_chunk(picture, text, 0, 0, len(text))])
