"""Mail: ``.eml``, Apple Mail's ``.emlx``, and ``mbox`` files (one document per message);
Outlook ``.msg`` files, under whatever name, are read by ``msg.py`` into the same document.

A message becomes a header block (subject, from, to, cc, date, and the attachments by name)
followed by its body: the plain part when there is one, the HTML part stripped to text otherwise.
Attachments are listed, never extracted — a PDF someone sent is indexed where it is saved, not
once per message that carried it.

Decoding is forgiving where mail is commonly broken and strict where it is not mail at all:
- encoded words and charsets are decoded by the standard library's modern policy; a charset
  Python does not know is read as UTF-8 with replacement characters, and the document's
  metadata says so (``charset_fallback``), rather than losing the message;
- broken MIME (a multipart with no boundary, bad base64) is kept as the parser recovers it, its
  defects named in ``metadata["defects"]``;
- bytes with no header fields at all, a truncated ``.emlx`` or one whose byte count is wrong,
  are an ExtractionError naming the file and the problem.

Attribution is by sender (``Extraction.sender``): the embedded-metadata rule does not apply.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import plistlib
import re
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from garage.extract.compose import MailMessage, address_dict, compose
from garage.extract.html import html_to_text
from garage.extract.types import Extraction, ExtractionError, ExtractorSpec

# Apple Mail's flags word in the .emlx plist: the bits people ask about.
_EMLX_FLAG_BITS = {
    "read": 0,
    "deleted": 1,
    "answered": 2,
    "encrypted": 3,
    "flagged": 4,
    "recent": 5,
    "draft": 6,
    "forwarded": 8,
    "redirected": 9,
}
_HEADER_NAMES = ("subject", "from", "to", "cc", "date")
_FIELD = re.compile(rb"[ \t\r\n]*[!-9;-~]+:")  # an RFC 5322 field name and its colon
_PARSER = BytesParser(policy=policy.default)


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    """An ``.eml``, ``.emlx`` or ``.msg`` file: exactly one message.

    What the bytes are decides, not the name: an Outlook message is often saved or renamed
    ``.eml``, and a ``.msg`` may hold RFC 822 text that another client saved."""
    from garage.extract.msg import is_outlook_msg, parse_msg

    if is_outlook_msg(data):
        return as_extraction(parse_msg(path, data), spec)
    extra: dict[str, object] = {}
    if spec.name == "emlx":
        data, extra = split_emlx(path, data)
    message = parse_message(path, data)
    return as_extraction(message, spec, extra)


def as_extraction(
    message: MailMessage, spec: ExtractorSpec, extra: dict[str, object] | None = None
) -> Extraction:
    return Extraction(
        text=message.text,
        title=message.title,
        spec=spec,
        metadata=message.metadata | (extra or {}),
        sender=message.sender,
    )


# -- .emlx -------------------------------------------------------------------------------------


def split_emlx(path: Path, data: bytes) -> tuple[bytes, dict[str, object]]:
    """The RFC 822 bytes of an ``.emlx`` and its trailing plist (flags decoded) as metadata.

    The format: a decimal byte count on the first line, exactly that many bytes of message,
    then an XML property list Apple Mail keeps its flags and dates in.
    """
    newline = data.find(b"\n")
    head = data[: newline if newline >= 0 else 32].strip()
    if newline < 0 or not head.isdigit():
        raise ExtractionError(path, "not an .emlx file: the first line is not a byte count")
    count = int(head)
    body = data[newline + 1 :]
    if count > len(body):
        raise ExtractionError(
            path, f"truncated .emlx: the byte count says {count} bytes, only {len(body)} follow"
        )
    message, trailer = body[:count], body[count:]
    extra: dict[str, object] = {}
    if trailer.strip():
        if not trailer.lstrip().startswith((b"<?xml", b"<!DOCTYPE", b"<plist", b"bplist")):
            raise ExtractionError(
                path,
                f"wrong byte count in .emlx: {count} bytes of message are not followed by its "
                "property list",
            )
        try:
            plist = plistlib.loads(trailer.lstrip())
        except Exception as error:  # plistlib raises several types for a damaged list
            extra["emlx_plist_error"] = f"{type(error).__name__}: {error}"
        else:
            extra["emlx"] = _jsonable(plist)
            flags = plist.get("flags") if isinstance(plist, dict) else None
            if isinstance(flags, int):
                extra["emlx_flags"] = {
                    name: bool(flags >> bit & 1) for name, bit in _EMLX_FLAG_BITS.items()
                }
    return message, extra


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


# -- mbox ----------------------------------------------------------------------------------------


def split_mbox(data: bytes) -> Iterator[bytes]:
    """The messages of an mbox, without their ``From `` envelope lines.

    A message starts at a ``From `` envelope line (sender, then an asctime date) at the top of
    the file or after a blank line; requiring the date, as mutt does, keeps an unquoted "From
    here on…" in a body from splitting the message. ``>From `` quoting is undone (mboxrd).
    """
    current: list[bytes] = []
    started = False
    previous_blank = True
    for line in data.splitlines(keepends=True):
        if line.startswith(b"From ") and previous_blank and _ENVELOPE.match(line):
            if started:
                yield _unquote(current)
            current = []
            started = True
        elif started:
            current.append(line)
        previous_blank = line in (b"\n", b"\r\n")
    if started:
        yield _unquote(current)


_QUOTED_FROM = re.compile(rb"^>(>*From )")
_ENVELOPE = re.compile(rb"^From \S+ .*\d{1,2}:\d{2}.*\d{4}")


def _unquote(lines: list[bytes]) -> bytes:
    return b"".join(_QUOTED_FROM.sub(rb"\1", line) for line in lines)


def extract_parts(path: Path, data: bytes, spec: ExtractorSpec) -> list[tuple[str, Extraction]]:
    return [(key, as_extraction(message, spec)) for key, message in mbox_messages(path, data)]


def mbox_messages(path: Path, data: bytes) -> list[tuple[str, MailMessage]]:
    """Each message of an mbox with its key: the Message-ID, or ``position-N`` (from 1) when
    the message has none or shares it with an earlier one (a message filed twice)."""
    if data.strip() and not data.lstrip().startswith(b"From "):
        raise ExtractionError(path, "not an mbox file: it does not start with a 'From ' line")
    found: list[tuple[str, MailMessage]] = []
    keys: set[str] = set()
    for position, raw in enumerate(split_mbox(data), start=1):
        try:
            message = parse_message(path, raw)
        except ExtractionError as error:
            raise ExtractionError(path, f"message {position}: {error.reason}") from None
        key = (message.message_id or "").strip().strip("<>").strip()
        if not key or key in keys:
            key = f"position-{position}"
        keys.add(key)
        found.append((key, message))
    return found


# -- one message --------------------------------------------------------------------------------


def parse_message(path: Path, data: bytes) -> MailMessage:
    if data.startswith(b"From "):  # an mbox envelope line left on a saved message
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    if not _FIELD.match(data):
        raise ExtractionError(path, "not an RFC 822 message: it does not start with header fields")
    message = _PARSER.parsebytes(data)
    notes: dict[str, object] = {}
    headers = {name: _header(message, name) for name in _HEADER_NAMES}
    sender = _sender(message)
    to, cc = _addresses(message, "to"), _addresses(message, "cc")
    body = _body(message, notes)
    attachments = _attachments(message)
    message_id = _header(message, "message-id").strip() or None
    extra: dict[str, object] = {}
    in_reply_to = _header(message, "in-reply-to").strip()
    if in_reply_to:
        extra["in_reply_to"] = in_reply_to
    defects = sorted({type(d).__name__ for part in message.walk() for d in part.defects})
    if defects:
        extra["defects"] = defects
    return compose(
        headers=headers,
        sender=sender,
        to=to,
        cc=cc,
        date=_iso_date(headers["date"]),
        body=body,
        attachments=attachments,
        message_id=message_id,
        extra=extra | notes,
    )


def _header(message: Message, name: str) -> str:
    """A header's decoded value; a header the modern parser chokes on falls back to its raw
    text (with encoded words decoded where possible) rather than failing the message."""
    try:
        value = message.get(name)
    except Exception:
        value = None
        raw = message.get_all(name, failobj=None) if hasattr(message, "get_all") else None
        if raw:
            value = str(raw[0])
    if value is None:
        return ""
    try:
        text = str(value)
    except Exception:
        text = repr(value)
    return " ".join(text.split())


def _sender(message: Message) -> tuple[str | None, str | None]:
    for field in ("from", "sender"):
        value = _header(message, field)
        if value:
            name, address = email.utils.parseaddr(value)
            return (name or None, address.lower() or None)
    return (None, None)


def _addresses(message: Message, field: str) -> list[dict[str, str | None]]:
    value = _header(message, field)
    if not value:
        return []
    return [
        address_dict((name or None, address.lower() or None))
        for name, address in email.utils.getaddresses([value])
        if name or address
    ]


def _iso_date(value: str) -> str | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError):
        return None


def _body(message: EmailMessage | Message, notes: dict[str, object]) -> str:
    part: Message | None = None
    if isinstance(message, EmailMessage):
        try:
            part = message.get_body(preferencelist=("plain", "html"))
        except Exception:  # a damaged structure: look for a text part by hand below
            part = None
    if part is None:
        part = next(
            (
                p
                for p in message.walk()
                if p.get_content_maintype() == "text" and not p.get_filename()
            ),
            None,
        )
    if part is None:
        return ""
    text = _decoded(part, notes)
    if part.get_content_subtype() == "html":
        text = html_to_text(text)
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def _decoded(part: Message, notes: dict[str, object]) -> str:
    try:
        content = part.get_content() if isinstance(part, EmailMessage) else None
        if isinstance(content, str):
            return content
    except (LookupError, UnicodeError, ValueError, AssertionError):
        pass  # an unknown or lying charset: decode the bytes ourselves below
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        payload = str(part.get_payload()).encode("utf-8", "replace")
    charset = part.get_content_charset() or "us-ascii"
    try:
        return payload.decode(charset)
    except (LookupError, UnicodeDecodeError):
        notes["charset_fallback"] = f"{charset!r} is unknown or wrong; read as UTF-8"
        return payload.decode("utf-8", "replace")


def _attachments(message: Message) -> list[str]:
    names = []
    for part in message.walk():
        if part.is_multipart():
            continue
        try:
            name = part.get_filename()
        except Exception:
            name = None
        disposition = part.get_content_disposition()
        if name or disposition == "attachment":
            names.append(" ".join((name or "(unnamed attachment)").split()))
    return names
