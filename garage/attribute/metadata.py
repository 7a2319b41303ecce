"""Embedded authors (PDF /Author, Office core properties), minus the ones no person wrote.

Libraries and applications stamp themselves into the author fields: python-docx writes
`dc:creator` "python-docx", openpyxl writes "openpyxl", python-pptx leaves `dc:creator` empty but
its template carries `cp:lastModifiedBy` "Steve Canny" (the library's author) into every deck,
Office installs default to "Microsoft Office User", and PDF producers fill /Author with their
own name. Trusting any of these would credit thousands of files to a program.
"""

from __future__ import annotations

import re
from pathlib import Path

# Whole values (case-folded, whitespace collapsed, trailing digits dropped so "User1" and
# "Administrator 2" go too) that are placeholders or programs, never a person.
_PLACEHOLDERS = frozenset(
    {
        # library defaults, checked against files the libraries write (see the unit tests)
        "python-docx",
        "python-pptx",
        "openpyxl",
        "steve canny",
        "xlsxwriter",
        "pypdf",
        "pypdf2",
        # operating-system and office-suite defaults
        "microsoft office user",
        "microsoft office",
        "windows user",
        "valued customer",
        "administrator",
        "admin",
        "user",
        "username",
        "user name",
        "your name",
        "owner",
        "author",
        "default",
        "guest",
        "root",
        "test",
        "unknown",
        "anonymous",
        "none",
        "null",
        "n/a",
        "name",
        # applications that appear on their own
        "word",
        "excel",
        "powerpoint",
        "writer",
        "calc",
        "impress",
        "pages",
        "keynote",
        "numbers",
        "preview",
        "acrobat",
        "tex",
        "scanner",
        "scan",
        "printer",
    }
)
# Words that mark a producer wherever they appear: "Adobe Acrobat Pro", "Microsoft® Word 2016",
# "pdfTeX-1.40.25", "LibreOffice Writer", "Quartz PDFContext". None of them is a likely name.
_TOOL_WORDS = frozenset(
    {
        "adobe",
        "acrobat",
        "distiller",
        "microsoft",
        "libreoffice",
        "openoffice",
        "latex",
        "pdftex",
        "pdflatex",
        "xetex",
        "luatex",
        "ghostscript",
        "reportlab",
        "openpyxl",
        "docx",
        "pptx",
        "xlsx",
        "pypdf",
        "wkhtmltopdf",
        "pdfcreator",
        "pdfcontext",
        "quartz",
        "skia",
        "itext",
        "tcpdf",
        "fpdf",
        "dompdf",
        "pdfsharp",
        "pandoc",
        "calibre",
        "chromium",
        "pdfkit",
    }
)
_VERSION = re.compile(r"\d+\.\d+|\bv\d")  # "1.40", "v3": people have no version numbers
_MARKS = ("®", "™", "(tm)", "(r)", "http://", "https://", ".exe", ".dll")


def _normal(value: str) -> str:
    return " ".join(value.split()).casefold()


def looks_like_tool_name(value: str) -> bool:
    """True when `value` names a program, a placeholder or nothing, rather than a person."""
    text = _normal(value)
    if not text or len(text) > 120 or not any(ch.isalpha() for ch in text):
        return True
    if text.rstrip("0123456789 ") in _PLACEHOLDERS:
        return True
    if any(mark in text for mark in _MARKS) or _VERSION.search(text):
        return True
    return any(word in _TOOL_WORDS for word in re.findall(r"[^\W_]+", text))


def clean_author(value: str | None) -> str | None:
    """The embedded author with whitespace tidied, or None when no person is named."""
    if value is None or looks_like_tool_name(value):
        return None
    return " ".join(value.split())


_FIELDS = {
    ".pdf": "/Author",
    **dict.fromkeys((".docx", ".docm", ".pptx", ".pptm", ".xlsx", ".xlsm"), "dc:creator"),
}


def author_field(path: Path) -> str:
    """The field the extractor most likely read the author from, for the evidence record."""
    return _FIELDS.get(path.suffix.casefold(), "embedded author")
