"""HTML to plain text, for mail bodies that have no plain part.

The standard library's tokenizer is enough: mail HTML is presentation around prose, and what
matters is that block elements become line breaks, scripts, styles and the head vanish, and
entities are decoded. Malformed markup never raises: the tokenizer is forgiving by design.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = frozenset(
    "address article aside blockquote br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tr ul".split()
)
_SKIP = frozenset({"script", "style", "head", "title", "template", "noscript"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag == "td" or tag == "th":
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The readable text of an HTML fragment or page: one paragraph per block, no markup."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(parser.parts).split("\n"))
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()
