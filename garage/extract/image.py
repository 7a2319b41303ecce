"""Images: PNG, JPEG, TIFF, GIF, WebP and HEIC/HEIF, read by Tesseract on this machine.

There is no cloud fallback: a picture that Tesseract cannot read stays unread. HEIC and HEIF
are decoded by ``pillow-heif`` (the macOS app used ImageIO; on Linux libheif is the codec).

The extraction is the OCR text plus a ``Picture`` — the file name, EXIF date and camera, size,
and whether it is a screenshot — from which ingest builds the image chunk of a picture
(``garage.ingest.pictures``). Whether the OCR text is enough for a text document is decided
there too, so that every image kind follows one rule.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from garage.extract.ocr import OCR_LANGUAGE, ocr
from garage.extract.types import Extraction, ExtractionError, ExtractorSpec, Picture

MAX_PIXELS = 80_000_000  # past this Pillow suspects a decompression bomb; so do we

# Screenshot file names in the languages macOS, Windows, Android and GNOME use.
_SCREENSHOT_NAME = re.compile(
    r"^(screen ?shot|screenshot|bildschirmfoto|capture d.(é|e)cran|schermata|"
    r"captura de pantalla|schermafbeelding|skärmavbild|skjermbillede|skjermbilde|"
    r"snímek obrazovky|zrzut ekranu|kuvakaappaus|スクリーンショット|截屏|螢幕截圖|스크린샷)",
    re.IGNORECASE,
)
_EXIF_IFD = 0x8769
_TAG_DATETIME, _TAG_MAKE, _TAG_MODEL = 306, 271, 272
_TAG_DATETIME_ORIGINAL, _TAG_USER_COMMENT = 36867, 37510
_heif_registered = False


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    image = _open(path, data)
    exif = _exif(image)
    taken_at = _exif_date(exif.get(_TAG_DATETIME_ORIGINAL) or exif.get(_TAG_DATETIME))
    camera = _camera(exif.get(_TAG_MAKE), exif.get(_TAG_MODEL))
    screenshot = bool(_SCREENSHOT_NAME.match(path.name)) or _says_screenshot(image, exif)
    picture = Picture(
        file_name=path.name,
        taken_at=taken_at,
        camera=camera,
        width=image.width,
        height=image.height,
        format=(image.format or path.suffix.lstrip(".")).upper(),
        screenshot=screenshot,
    )
    text = ocr(path, image)
    metadata: dict[str, object] = {
        "width": picture.width,
        "height": picture.height,
        "format": picture.format,
        "taken_at": taken_at,
        "camera": camera,
        "screenshot": screenshot,
        "ocr": f"tesseract:{OCR_LANGUAGE}",
    }
    return Extraction(text=text, title=None, spec=spec, metadata=metadata, picture=picture)


def _open(path: Path, data: bytes) -> Any:
    from PIL import Image

    global _heif_registered
    if not _heif_registered:
        from pillow_heif import register_heif_opener

        register_heif_opener()
        _heif_registered = True
    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Image.DecompressionBombError:
        raise ExtractionError(path, f"image too large to OCR (over {MAX_PIXELS} pixels)") from None
    except Exception as error:  # Pillow raises OSError, ValueError, SyntaxError, … per codec
        reason = str(error) or type(error).__name__
        raise ExtractionError(path, f"not a readable image ({reason})") from None
    return image


def _exif(image: Any) -> dict[int, Any]:
    try:
        exif = image.getexif()
        tags = dict(exif)
        tags.update(exif.get_ifd(_EXIF_IFD))
    except Exception:  # damaged EXIF never costs the picture
        return {}
    return tags


def _exif_date(value: Any) -> str | None:
    # EXIF writes "2024:05:01 14:03:00"; cameras with no clock write zeros or blanks.
    if not isinstance(value, str):
        return None
    match = re.match(r"^(\d{4}):(\d{2}):(\d{2})[ T](\d{2}):(\d{2}):(\d{2})", value.strip())
    if not match or match.group(1) == "0000":
        return None
    y, mo, d, h, mi, s = match.groups()
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}"


def _camera(make: Any, model: Any) -> str | None:
    make = " ".join(str(make or "").replace("\x00", "").split())
    model = " ".join(str(model or "").replace("\x00", "").split())
    if make and model.lower().startswith(make.lower()):
        return model  # "Canon" + "Canon EOS 5D": the model already says it
    return " ".join(part for part in (make, model) if part) or None


def _says_screenshot(image: Any, exif: dict[int, Any]) -> bool:
    # macOS writes "Screenshot" as the EXIF user comment and into the PNG's XMP.
    comment = exif.get(_TAG_USER_COMMENT)
    if isinstance(comment, bytes):
        comment = comment.decode("latin-1", "replace")
    if isinstance(comment, str) and "screenshot" in comment.lower():
        return True
    xmp = image.info.get("XML:com.adobe.xmp") or image.info.get("xmp") or ""
    if isinstance(xmp, bytes):
        xmp = xmp.decode("utf-8", "replace")
    return "<exif:UserComment>" in xmp and "Screenshot" in xmp
