"""Outlook ``.msg``: one message saved by Outlook, read as mail like an ``.eml``.

A ``.msg`` is an OLE compound file (magic D0 CF 11 E0 A1 B1 1A E1) holding the message's MAPI
properties ([MS-OXMSG]): each variable-length property is a stream named
``__substg1.0_<id><type>`` (``001F`` UTF-16LE, ``001E`` 8-bit in the message's code page,
``0102`` binary), the fixed-length ones (dates, numbers) sit in ``__properties_version1.0``,
and each recipient and attachment is a storage of its own properties.

``olefile`` (BSD-2-Clause, maintained) reads the container; the few properties a document needs
are read here. ``extract-msg`` would do it all, but it is GPL-3.0 and Garage is MIT.

The message becomes the same document an ``.eml`` does (``compose.compose``): subject, from, to,
cc, date and attachment names, then the body — the plain-text body when the message has one,
else its HTML body as text. A message that has only an RTF body keeps its headers and says so
in ``metadata["body"]``. Attachments are named, never extracted, as for any mail.
"""

from __future__ import annotations

import codecs
import datetime as dt
import email.utils
import io
import re
import struct
from collections.abc import Callable
from email.parser import HeaderParser
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

from garage.extract.compose import MailMessage, compose
from garage.extract.html import html_to_text
from garage.extract.types import ExtractionError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

# MAPI property ids ([MS-OXPROPS]).
SUBJECT = 0x0037
MESSAGE_CLASS = 0x001A
SENT_REPRESENTING_NAME, SENT_REPRESENTING_ADDRESS = 0x0042, 0x0065
SENDER_NAME, SENDER_ADDRESS_TYPE, SENDER_ADDRESS = 0x0C1A, 0x0C1E, 0x0C1F
SENDER_SMTP, SENT_REPRESENTING_SMTP = 0x5D01, 0x5D02
BODY, HTML, RTF_COMPRESSED = 0x1000, 0x1013, 0x1009
TRANSPORT_HEADERS = 0x007D
MESSAGE_ID, IN_REPLY_TO = 0x1035, 0x1042
CLIENT_SUBMIT_TIME, DELIVERY_TIME = 0x0039, 0x0E06
INTERNET_CPID, MESSAGE_CODEPAGE = 0x3FDE, 0x3FFD
DISPLAY_TO, DISPLAY_CC = 0x0E04, 0x0E03
DISPLAY_NAME, ADDRESS_TYPE, EMAIL_ADDRESS, SMTP_ADDRESS = 0x3001, 0x3002, 0x3003, 0x39FE
RECIPIENT_TYPE = 0x0C15  # 1 To, 2 Cc, 3 Bcc
ATTACH_LONG_FILENAME, ATTACH_FILENAME = 0x3707, 0x3704

_PT_STRING, _PT_STRING8, _PT_BINARY = 0x001F, 0x001E, 0x0102
_PT_LONG, _PT_SYSTIME = 0x0003, 0x0040
_STREAM = re.compile(r"__substg1\.0_([0-9A-F]{4})([0-9A-F]{4})")
_FILETIME_EPOCH = dt.datetime(1601, 1, 1, tzinfo=dt.UTC)
# Windows code pages Python knows under another name.
_CODEPAGES = {65001: "utf-8", 20127: "ascii", 28591: "latin-1", 1200: "utf-16-le"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w-]+)""", re.IGNORECASE)


def is_outlook_msg(data: bytes) -> bool:
    """An OLE compound file: whether it holds a message is decided when it is read."""
    return data.startswith(OLE_MAGIC)


class _Object:
    """One MAPI object (the message, a recipient, an attachment): its properties by id."""

    def __init__(self, streams: dict[int, tuple[int, bytes]], fixed: dict[int, bytes], cp: str):
        self.streams = streams  # id -> (type, raw bytes)
        self.fixed = fixed  # id -> the 8-byte value of a fixed-length property
        self.codepage = cp

    def text(self, pid: int) -> str:
        found = self.streams.get(pid)
        if found is None:
            return ""
        kind, raw = found
        if kind == _PT_STRING:
            value = raw.decode("utf-16-le", "replace")
        elif kind == _PT_STRING8:
            value = raw.decode(self.codepage, "replace")
        else:
            return ""
        return value.replace("\x00", "").strip()

    def binary(self, pid: int) -> bytes | None:
        found = self.streams.get(pid)
        return found[1] if found is not None and found[0] == _PT_BINARY else None

    def long(self, pid: int) -> int | None:
        raw = self.fixed.get(pid)
        return struct.unpack_from("<I", raw)[0] if raw is not None else None

    def time(self, pid: int) -> dt.datetime | None:
        raw = self.fixed.get(pid)
        if raw is None:
            return None
        ticks = struct.unpack_from("<Q", raw)[0]  # 100 ns since 1601 (a FILETIME)
        try:
            return _FILETIME_EPOCH + dt.timedelta(microseconds=ticks // 10) if ticks else None
        except OverflowError:
            return None


def parse_msg(path: Path, data: bytes) -> MailMessage:
    """The message in an Outlook ``.msg`` file, or an ExtractionError naming the file."""
    import olefile

    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
    except Exception as error:  # olefile raises OSError and its own errors for a damaged file
        raise ExtractionError(path, f"not a readable Outlook .msg file ({error})") from None
    with ole:
        entries = ole.listdir(streams=True, storages=False)
        if not any(len(e) == 1 and _STREAM.fullmatch(e[0]) for e in entries):
            raise ExtractionError(
                path,
                "an OLE compound file but not an Outlook message (no MAPI properties): "
                "perhaps an old binary Word, Excel or PowerPoint file",
            )
        try:
            return _message(ole, entries)
        except (OSError, struct.error, ValueError) as error:
            raise ExtractionError(path, f"damaged Outlook .msg file ({error})") from None


def _message(ole: Any, entries: list[list[str]]) -> MailMessage:
    def read(entry: list[str]) -> bytes:
        return bytes(ole.openstream(entry).read())

    top = _object(read, entries, [], header=32, codepage="cp1252")
    codepage = _codepage(top.long(INTERNET_CPID) or top.long(MESSAGE_CODEPAGE))
    top.codepage = codepage
    transport = _transport_headers(top.text(TRANSPORT_HEADERS))

    sender = _sender(top, transport)
    recipients = [
        _object(read, entries, [storage], header=8, codepage=codepage)
        for storage in _storages(entries, "__recip_version1.0_#")
    ]
    to = [_recipient(r) for r in recipients if r.long(RECIPIENT_TYPE) in (1, None)]
    cc = [_recipient(r) for r in recipients if r.long(RECIPIENT_TYPE) == 2]
    attachments = [
        _attachment_name(_object(read, entries, [storage], header=8, codepage=codepage))
        for storage in _storages(entries, "__attach_version1.0_#")
    ]
    when = _date(top, transport)
    notes: dict[str, object] = {"format": "outlook-msg"}
    body = message_body(top, notes)
    headers = {
        "subject": " ".join(top.text(SUBJECT).split()),
        "from": _display([{"name": sender[0], "email": sender[1]}]),
        "to": _display(to) or " ".join(top.text(DISPLAY_TO).split()),
        "cc": _display(cc) or " ".join(top.text(DISPLAY_CC).split()),
        "date": email.utils.format_datetime(when) if when else "",
    }
    message_class = top.text(MESSAGE_CLASS)
    if message_class:
        notes["message_class"] = message_class
    in_reply_to = top.text(IN_REPLY_TO) or transport.get("in-reply-to", "")
    if in_reply_to:
        notes["in_reply_to"] = in_reply_to
    return compose(
        headers=headers,
        sender=sender,
        to=to,
        cc=cc,
        date=when.isoformat() if when else None,
        body=body,
        attachments=attachments,
        message_id=top.text(MESSAGE_ID) or transport.get("message-id") or None,
        extra=notes,
    )


def _storages(entries: list[list[str]], prefix: str) -> list[str]:
    """The recipient or attachment storages directly under the root, in their order."""
    return sorted({e[0] for e in entries if len(e) > 1 and e[0].startswith(prefix)})


def _object(
    read: Callable[[list[str]], bytes],
    entries: list[list[str]],
    where: list[str],
    *,
    header: int,
    codepage: str,
) -> _Object:
    """The properties of the object stored at ``where`` (root: []), not of objects inside it
    (an attached message has its own recipients and attachments)."""
    depth = len(where) + 1
    streams: dict[int, tuple[int, bytes]] = {}
    fixed: dict[int, bytes] = {}
    for entry in entries:
        if len(entry) != depth or entry[:-1] != where:
            continue
        name = entry[-1]
        match = _STREAM.fullmatch(name)
        if match:
            streams[int(match[1], 16)] = (int(match[2], 16), read(entry))
        elif name == "__properties_version1.0":
            table = read(entry)
            # Each entry: the tag (type, then id), flags, and 8 bytes of value.
            for offset in range(header, len(table) - 15, 16):
                kind, pid = struct.unpack_from("<HH", table, offset)
                if kind in (_PT_LONG, _PT_SYSTIME):
                    fixed[pid] = table[offset + 8 : offset + 16]
    return _Object(streams, fixed, codepage)


def _codepage(number: int | None) -> str:
    if number is None:
        return "cp1252"  # what Outlook writes 8-bit strings in when it names no code page
    name = _CODEPAGES.get(number, f"cp{number}")
    try:
        codecs.lookup(name)
    except LookupError:
        return "cp1252"
    return name


def _transport_headers(raw: str) -> dict[str, str]:
    """The RFC 822 header block a received message keeps (absent in drafts and sent items)."""
    if not raw:
        return {}
    parsed = HeaderParser(policy=default_policy).parsestr(raw, headersonly=True)
    found: dict[str, str] = {}
    for name in ("from", "date", "message-id", "in-reply-to"):
        try:
            value = parsed.get(name)
        except Exception:  # a malformed header costs that header only
            value = None
        if value:
            found[name] = " ".join(str(value).split())
    return found


def _sender(top: _Object, transport: dict[str, str]) -> tuple[str | None, str | None]:
    """(name, address) of who sent it. Exchange stores an X.500 path as the address of
    internal senders ("EX"): the SMTP address, or the transport header's, is the one people
    know."""
    name = top.text(SENDER_NAME) or top.text(SENT_REPRESENTING_NAME)
    address = top.text(SENDER_SMTP) or top.text(SENT_REPRESENTING_SMTP)
    if not address and top.text(SENDER_ADDRESS_TYPE).upper() != "EX":
        address = top.text(SENDER_ADDRESS) or top.text(SENT_REPRESENTING_ADDRESS)
    if not address and "from" in transport:
        header_name, address = email.utils.parseaddr(transport["from"])
        name = name or header_name
    address = address if "@" in address else ""
    return (name or None, address.lower() or None)


def _recipient(r: _Object) -> dict[str, str | None]:
    address = r.text(SMTP_ADDRESS)
    if not address and r.text(ADDRESS_TYPE).upper() != "EX":
        address = r.text(EMAIL_ADDRESS)
    name = r.text(DISPLAY_NAME)
    return {"name": name if name and name != address else None, "email": address.lower() or None}


def _display(people: list[dict[str, str | None]]) -> str:
    return ", ".join(
        email.utils.formataddr((p["name"] or "", p["email"])) if p["email"] else (p["name"] or "")
        for p in people
        if p["name"] or p["email"]
    )


def _attachment_name(a: _Object) -> str:
    # An attached message has no file name: its display name is its subject.
    name = a.text(ATTACH_LONG_FILENAME) or a.text(ATTACH_FILENAME) or a.text(DISPLAY_NAME)
    return " ".join(name.split()) or "(unnamed attachment)"


def _date(top: _Object, transport: dict[str, str]) -> dt.datetime | None:
    """When it was sent: the transport Date header (with the sender's offset), else the time
    the client submitted it, else when it arrived."""
    if "date" in transport:
        try:
            return email.utils.parsedate_to_datetime(transport["date"])
        except (TypeError, ValueError, IndexError):
            pass
    return top.time(CLIENT_SUBMIT_TIME) or top.time(DELIVERY_TIME)


def message_body(top: _Object, notes: dict[str, object]) -> str:
    """The plain-text body, else the HTML body as text; ``notes["body"]`` says which."""
    plain = top.text(BODY)
    if plain:
        notes["body"] = "plain"
        return _newlines(plain)
    html = _html(top)
    if html:
        notes["body"] = "html"
        return _newlines(html_to_text(html))
    if RTF_COMPRESSED in top.streams:
        notes["body"] = "rtf only, not read"
    return ""


def _html(top: _Object) -> str:
    """PR_HTML is binary in the HTML's own charset (the message's internet code page, or the
    one its meta tag names), or a string property in some writers."""
    text = top.text(HTML)
    if text:
        return text
    raw = top.binary(HTML)
    if not raw:
        return ""
    charset = top.codepage if top.long(INTERNET_CPID) else None
    if charset is None:
        meta = _META_CHARSET.search(raw[:4096])
        charset = meta[1].decode("ascii") if meta else "utf-8"
    try:
        return raw.decode(charset, "replace")
    except LookupError:
        return raw.decode("utf-8", "replace")


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()
