"""Text PostgreSQL can store, from names and headers that are not valid UTF-8.

Linux file names are bytes: Python hands an undecodable one over with lone surrogates
("bad\\udcffname.md"), and the email package does the same for raw 8-bit headers. PostgreSQL
refuses them (UTF-8 cannot encode a surrogate), which failed the whole document over its name.
Each surrogate becomes U+FFFD, one character for one, so offsets into a text stay valid; the
file's URI keeps the exact bytes (percent-encoded), so nothing is lost for finding it again.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def printable_tree(value: Any) -> Any:
    """``printable`` over every string in a JSON-like value (keys too)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(v) for v in value]
    return value
