"""Mail extraction on real messages: CPython's email test corpus and real mailing-list posts."""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest

from garage.extract import ExtractionError, extract, extract_parts, extractor_for
from garage.extract.html import html_to_text
from garage.extract.mail import split_mbox
from tests.material import material


def corpus() -> Path:
    return material("libpython3.11-testsuite") / "usr/lib/python3.11/test/test_email/data"


def fedora_posts() -> list[bytes]:
    folder = material("freediscovery") / "freediscovery/data/fedora-devel-list-2008-October"
    return [(folder / str(n)).read_bytes() for n in range(1, 6)]


def eml(name: str):  # type: ignore[no-untyped-def]
    return extract(Path(f"{name}.eml"), (corpus() / f"{name}.txt").read_bytes())


def emlx_bytes(message: bytes, flags: int = 0b1_0000_0101) -> bytes:
    plist = plistlib.dumps({"flags": flags, "date-received": 987809702, "remote-id": "4711"})
    return f"{len(message)}\n".encode() + message + plist


def test_header_block_then_plain_body() -> None:
    result = eml("msg_07")  # multipart/mixed with a GIF attachment
    lines = result.text.splitlines()
    assert lines[:5] == [
        "Subject: Here is your dingus fish",
        "From: Barry <barry@digicool.com>",
        "To: Dingus Lovers <cravindogs@cravindogs.com>",
        "Date: Fri, 20 Apr 2001 19:35:02 -0400",
        "Attachments: dingusfish.gif",
    ]
    assert "This is the dingus fish." in result.text
    assert "R0lGODdh" not in result.text  # the GIF is listed by name, never extracted
    assert result.title == "Here is your dingus fish"
    assert result.sender == ("Barry", "barry@digicool.com")
    assert result.spec.corpus_class == "communication"
    assert result.metadata["attachments"] == ["dingusfish.gif"]
    assert result.metadata["date"] == "2001-04-20T19:35:02-04:00"
    assert result.metadata["to"] == [
        {"name": "Dingus Lovers", "email": "cravindogs@cravindogs.com"}
    ]


def test_plain_part_preferred_and_transfer_encodings_decoded() -> None:
    result = eml("msg_10")  # 7bit plain first, then quoted-printable HTML and base64 parts
    body = result.text.split("\n\n", 1)[1]
    assert body.startswith("This is a 7bit encoded message.")
    assert "=A1" not in result.text


def test_encoded_words_and_charsets() -> None:
    # A real message (CPython's corpus has none with encoded words) with its subject, sender
    # and body re-encoded the way non-ASCII mail arrives: RFC 2047 words and a Latin-1 body.
    from email.header import Header

    raw = (corpus() / "msg_01.txt").read_bytes()
    subject = Header("Café au lait, s'il vous plaît", "iso-8859-1").encode().encode()
    sender = Header("Zoë Ångström", "utf-8").encode().encode() + b" <zoe@example.org>"
    raw = raw.replace(b"Subject: This is a test message", b"Subject: " + subject)
    raw = raw.replace(b"From: bbb@ddd.com (John X. Doe)", b"From: " + sender)
    raw = raw.replace(b"charset=us-ascii", b"charset=iso-8859-1")
    raw = raw.replace(b"Hi,", "Grüße,".encode("latin-1"))
    assert b"=?" in raw and b"Gr\xfc\xdfe" in raw
    result = extract(Path("cafe.eml"), raw)
    assert result.title == "Café au lait, s'il vous plaît"
    assert result.sender == ("Zoë Ångström", "zoe@example.org")
    assert "From: Zoë Ångström <zoe@example.org>" in result.text
    assert "Grüße," in result.text


def test_html_only_mail_is_stripped_to_text() -> None:
    raw = (corpus() / "msg_07.txt").read_bytes()
    html = (
        b"MIME-Version: 1.0\nFrom: Anne <anne@example.org>\nSubject: Menu\n"
        b"Content-Type: text/html; charset=utf-8\n\n"
        b"<html><head><style>p {color: red}</style></head><body><h1>Caf&eacute; menu</h1>"
        b"<p>Soup&nbsp;of the day</p><script>alert(1)</script><ul><li>bread</li></ul></body>"
    )
    assert raw
    result = extract(Path("menu.eml"), html)
    body = result.text.split("\n\n", 1)[1].rstrip("\n")
    assert body == "Café menu\n\nSoup of the day\n\nbread"
    assert (
        html_to_text("<p>a<br>b</p><table><tr><td>x</td><td>y</td></tr></table>") == "a\nb\n\nx y"
    )


def test_broken_mime_is_kept_with_its_defects_named() -> None:
    result = eml("msg_25")  # a multipart whose boundary is missing
    assert result.title and result.title.startswith("Returned mail")
    assert "NoBoundaryInMultipartDefect" in result.metadata["defects"]  # type: ignore[operator]
    assert len(result.text) > 100


def test_unknown_charset_is_read_as_utf8_and_said() -> None:
    raw = (corpus() / "msg_01.txt").read_bytes()
    raw = raw.replace(b"charset=us-ascii", b"charset=x-martian-7")
    result = extract(Path("odd.eml"), raw)
    assert "charset_fallback" in result.metadata
    assert "x-martian-7" in str(result.metadata["charset_fallback"])
    assert result.text.split("\n\n", 1)[1].strip()


def test_not_mail_is_a_clear_error() -> None:
    with pytest.raises(ExtractionError, match=r"^msg_19\.eml: not an RFC 822 message"):
        eml("msg_19")  # a body with no headers
    with pytest.raises(ExtractionError, match="not an RFC 822 message"):
        extract(Path("x.eml"), b"\x89PNG\r\n\x1a\n\x00\x00")


def test_emlx_flags_become_metadata() -> None:
    message = (corpus() / "msg_07.txt").read_bytes()
    result = extract(Path("12345.emlx"), emlx_bytes(message))
    assert result.spec.name == "emlx"
    assert result.title == "Here is your dingus fish"
    flags = result.metadata["emlx_flags"]
    assert flags == {  # bits 0, 2 and 8
        "read": True, "deleted": False, "answered": True, "encrypted": False, "flagged": False,
        "recent": False, "draft": False, "forwarded": True, "redirected": False,
    }  # fmt: skip
    assert result.metadata["emlx"]["remote-id"] == "4711"  # type: ignore[index]


def test_emlx_truncated_or_with_a_wrong_byte_count() -> None:
    message = (corpus() / "msg_07.txt").read_bytes()
    whole = emlx_bytes(message)
    with pytest.raises(ExtractionError, match=r"^1\.emlx: truncated \.emlx: the byte count says"):
        extract(Path("1.emlx"), whole[: len(whole) // 2])
    wrong = f"{len(message) - 40}\n".encode() + message + plistlib.dumps({"flags": 1})
    with pytest.raises(ExtractionError, match=r"wrong byte count in \.emlx"):
        extract(Path("2.emlx"), wrong)
    with pytest.raises(ExtractionError, match="first line is not a byte count"):
        extract(Path("3.emlx"), message)
    # No plist at all (a partial download) is fine: the flags are simply unknown.
    bare = extract(Path("4.emlx"), f"{len(message)}\n".encode() + message)
    assert "emlx_flags" not in bare.metadata


def test_mbox_one_document_per_message_keyed_by_message_id() -> None:
    mbox = b"".join(post.rstrip(b"\n") + b"\n\n" for post in fedora_posts())
    parts = extract_parts(Path("fedora-devel.mbox"), mbox)
    assert len(parts) == 5
    key, first = parts[0]
    assert key == "20081001022458.GA14186@jadzia.bu.edu"
    assert first.title == "tab completion less useful now, due to sbin in path"
    assert first.sender == ("Matthew Miller", "mattdm@mattdm.org")
    assert "Received:" not in first.text and "X-Mailman" not in first.text
    assert all(p[1].title and p[1].title.endswith("sbin in path") for p in parts)
    assert extractor_for("/var/mail/mbox") is not None


def test_mbox_duplicates_get_their_position_and_from_lines_are_unquoted() -> None:
    post = fedora_posts()[0].rstrip(b"\n") + b"\n\n"
    quoted = post.replace(b"\n\n", b"\n\n>From the archive: a quoted line\n\n", 1)
    parts = extract_parts(Path("dup.mbox"), post + quoted)
    assert [k for k, _ in parts] == ["20081001022458.GA14186@jadzia.bu.edu", "position-2"]
    assert "\nFrom the archive: a quoted line" in parts[1][1].text
    envelope = b"From anne@example.org Tue Sep 30 22:25:11 2008\n"
    assert len(list(split_mbox(envelope + b"Subject: x\n\nFrom here on, no split\n"))) == 1
    with pytest.raises(ExtractionError, match="not an mbox file"):
        extract_parts(Path("x.mbox"), b"Subject: no envelope\n\nbody\n")
    assert extract_parts(Path("empty.mbox"), b"") == []
