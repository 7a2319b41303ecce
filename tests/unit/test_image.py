"""Image OCR with the real Tesseract, and the picture rule that decides the chunks."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from garage.chunk import chunker_for
from garage.extract import ExtractionError, extract
from garage.ingest.pictures import IMAGE_CHUNKER, MIN_WORDS, plan_picture

LINES = (
    "Quarterly harbour inspection report",
    "The lighthouse keeper signed the ledger",
    "before the ferry left at seven o'clock.",
)


def text_image(lines: tuple[str, ...] = LINES, size: tuple[int, int] = (1000, 260)):  # type: ignore[no-untyped-def]
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=34)
    for i, line in enumerate(lines):
        draw.text((30, 30 + 60 * i), line, fill="black", font=font)
    return image


def photo(exif: bool = True):  # type: ignore[no-untyped-def]
    """A picture with no words in it: a sky gradient with a sun and hills."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (640, 480))
    draw = ImageDraw.Draw(image)
    for y in range(480):
        draw.line([(0, y), (640, y)], fill=(90 + y // 6, 140 + y // 8, 230 - y // 4))
    draw.ellipse((420, 60, 520, 160), fill=(250, 220, 90))
    draw.polygon(
        [(0, 480), (0, 330), (200, 260), (420, 350), (640, 280), (640, 480)], fill=(60, 120, 60)
    )
    return image


def encode(image, fmt: str, **options) -> bytes:  # type: ignore[no-untyped-def]
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def camera_exif():  # type: ignore[no-untyped-def]
    from PIL import Image

    exif = Image.Exif()
    exif[271] = "Canon"
    exif[272] = "Canon EOS 5D Mark III"
    exif[306] = "2023:08:14 18:20:05"
    exif.get_ifd(0x8769)[36867] = "2023:08:14 18:19:44"
    return exif


def test_png_text_is_read_by_tesseract() -> None:
    result = extract(Path("/photos/report.png"), encode(text_image(), "PNG"))
    words = result.text.lower().split()
    for word in ("harbour", "inspection", "lighthouse", "ledger", "ferry"):
        assert word in words
    assert result.picture is not None and not result.picture.screenshot
    assert result.metadata["format"] == "PNG" and result.metadata["ocr"] == "tesseract:eng"


@pytest.mark.parametrize("fmt,name", [("JPEG", "a.jpg"), ("TIFF", "a.tiff"), ("GIF", "a.gif"),
                                      ("WEBP", "a.webp"), ("HEIF", "a.heic")])  # fmt: skip
def test_every_supported_format_is_decoded_and_read(fmt: str, name: str) -> None:
    import pillow_heif  # noqa: F401 (registers HEIF for saving)

    pillow_heif.register_heif_opener()
    options = {"quality": 95} if fmt in ("JPEG", "WEBP", "HEIF") else {}
    result = extract(Path(name), encode(text_image(), fmt, **options))
    assert "lighthouse" in result.text.lower(), (fmt, result.text)


def test_exif_date_and_camera() -> None:
    data = encode(photo(), "JPEG", exif=camera_exif(), quality=90)
    result = extract(Path("IMG_0042.JPG"), data)
    assert result.picture is not None
    assert result.picture.taken_at == "2023-08-14T18:19:44"  # DateTimeOriginal over DateTime
    assert result.picture.camera == "Canon EOS 5D Mark III"
    assert (result.picture.width, result.picture.height) == (640, 480)


def test_screenshots_by_name_and_by_macos_comment() -> None:
    by_name = extract(Path("Screenshot 2024-05-01 at 10.00.00.png"), encode(text_image(), "PNG"))
    assert by_name.picture is not None and by_name.picture.screenshot
    from PIL.PngImagePlugin import PngInfo

    # The XMP packet macOS writes into every screenshot it saves.
    xmp = (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 6.0.0">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/">'
        "<exif:PixelYDimension>260</exif:PixelYDimension>"
        "<exif:PixelXDimension>1000</exif:PixelXDimension>"
        "<exif:UserComment>Screenshot</exif:UserComment>"
        "</rdf:Description></rdf:RDF></x:xmpmeta>"
    )
    info = PngInfo()
    info.add_itxt("XML:com.adobe.xmp", xmp)
    commented = extract(Path("capture.png"), encode(text_image(), "PNG", pnginfo=info))
    assert commented.picture is not None and commented.picture.screenshot
    assert extract(Path("Bildschirmfoto 1.png"), encode(photo(), "PNG")).picture.screenshot  # type: ignore[union-attr]


def test_unreadable_images_are_clear_errors() -> None:
    data = encode(text_image(), "PNG")
    with pytest.raises(ExtractionError, match=r"^half\.png: not a readable image"):
        extract(Path("half.png"), data[: len(data) // 3])
    with pytest.raises(ExtractionError, match=r"^fake\.jpg: not a readable image"):
        extract(Path("fake.jpg"), b"this is not a JPEG at all")
    with pytest.raises(ExtractionError, match=r"^empty\.heic: not a readable image"):
        extract(Path("empty.heic"), b"")


def test_picture_rule() -> None:
    chunker = chunker_for("image")
    # A photo: no text document, one image chunk with its name, date and camera.
    result = extract(Path("IMG_0042.JPG"), encode(photo(), "JPEG", exif=camera_exif()))
    plan = plan_picture(result, chunker, cap=2000)
    [chunk] = plan.chunks
    assert (chunk.chunker, chunk.modality, chunk.ord) == (IMAGE_CHUNKER, "image", 0)
    assert chunk.text.splitlines()[:3] == [
        "IMG_0042.JPG",
        "Taken 2023-08-14T18:19:44",
        "Camera: Canon EOS 5D Mark III",
    ]
    assert plan.content == chunk.text and chunk.metadata["camera"] == "Canon EOS 5D Mark III"
    # A scanned page: a text document, no image chunk.
    page = extract(Path("scan.png"), encode(text_image(), "PNG"))
    plan = plan_picture(page, chunker, cap=2000)
    assert plan.chunks and all(c.modality == "text" for c in plan.chunks)
    assert "lighthouse" in plan.content.lower()
    # A screenshot: its text chunks and, beside them, an image chunk with its title.
    shot = extract(Path("Screenshot 2024-05-01.png"), encode(text_image(), "PNG"))
    plan = plan_picture(shot, chunker, cap=2000)
    *texts, image = plan.chunks
    assert texts and all(c.modality == "text" for c in texts)
    assert image.modality == "image" and image.ord == len(texts)
    assert image.text.startswith("Screenshot 2024-05-01.png\nScreenshot")
    assert "lighthouse" in image.text.lower()
    # A label of a word or two is "little text": a picture, its words kept in the chunk.
    label = extract(Path("sign.png"), encode(text_image(("Harbour Office",)), "PNG"))
    plan = plan_picture(label, chunker, cap=2000)
    assert MIN_WORDS > 2 and [c.modality for c in plan.chunks] == ["image"]
    assert "harbour" in plan.chunks[0].text.lower()
