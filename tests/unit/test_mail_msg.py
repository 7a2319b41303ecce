"""Outlook .msg on real messages (msg-parser's test files): headers from MAPI properties, the
body, attachment names, code pages, and the same file under an .eml or .txt name."""

from __future__ import annotations

import shutil
from pathlib import Path

import olefile
import pytest

from garage.extract import ExtractionError, extract, extractor_for
from tests.material import material


def msg_file(name: str) -> Path:
    return material("msg-parser") / "tests" / "files" / f"{name}.msg"


def read(name: str, as_name: str | None = None):  # type: ignore[no-untyped-def]
    path = msg_file(name)
    return extract(Path(as_name or path.name), path.read_bytes())


def test_a_newsletter_with_ten_attachments() -> None:
    result = read("complete")
    assert result.spec.name == "msg" and result.spec.corpus_class == "communication"
    lines = result.text.splitlines()
    assert lines[:5] == [
        "Subject: Test Multiple attachments complete email!!",
        "From: Vikram Arsid <admin@fegraph.onmicrosoft.com>",
        "To: qademo@hiddenfire.onmicrosoft.com, invotas.cnb@gmail.com",
        "Cc: quarantine@hiddenfire.onmicrosoft.com, abuse@hiddenfire.onmicrosoft.com",
        "Date: Mon, 29 Oct 2018 18:12:29 +0000",  # the transport headers' Date
    ]
    assert lines[6] == ""  # the header block, a blank line, then the body
    assert "Nokia Health is now Withings" in result.text
    assert result.sender == ("Vikram Arsid", "admin@fegraph.onmicrosoft.com")
    assert result.title == "Test Multiple attachments complete email!!"
    meta = result.metadata
    # Six attached messages are named by their subjects, the four files by their file names.
    assert meta["attachments"] == [
        "Create a database on Azure in 90 seconds", "How fast can you deploy a web app?",
        "Virtual machines for any scenario", "A few ways to get started with Azure",
        "Welcome to Azure Security Center", "Welcome to your Azure free account",
        "[MS-OXPROPS]-181001.docx", "[MS-OXPROPS].txt", "[MS-OXPROPS].pdf",
        "hugues-de-buyer-mimeure-313867-unsplash.jpg",
    ]  # fmt: skip
    assert lines[5].startswith("Attachments: Create a database on Azure in 90 seconds, ")
    assert meta["date"] == "2018-10-29T18:12:29+00:00" and meta["body"] == "plain"
    assert meta["cc"] == [
        {"name": None, "email": "quarantine@hiddenfire.onmicrosoft.com"},
        {"name": None, "email": "abuse@hiddenfire.onmicrosoft.com"},
    ]
    assert meta["message_id"] == (
        "<BL0PR1701MB26411CF32259103CC8B78AD8EEF30@BL0PR1701MB2641.namprd17.prod.outlook.com>"
    )
    # Attachments are named, never extracted: none of the attached PDF's text is here.
    assert "MS-OXPROPS" not in result.text.split("\n\n", 1)[1]


def test_a_bounce_in_chinese_keeps_its_sender_offset_and_characters() -> None:
    result = read("other")
    assert result.title == "投递状态通知 (Failure Notice)"
    assert result.sender == ("Mail Delivery Subsystem", "mailer-daemon@tjdpf.org.cn")
    assert result.metadata["date"] == "2017-11-27T17:44:30+08:00"
    assert "到以下收信人地址的邮件投递失败" in result.text
    assert result.metadata["attachments"] == ["default_attachment.eml"]


def test_a_draft_has_no_sender_and_dates_from_its_properties() -> None:
    result = read("outer")  # never sent: no transport headers, no sender properties
    assert result.sender == (None, None)
    assert result.text.startswith("Subject: outer subject\nTo: outer@foo.bar\nDate: ")
    assert result.text.endswith("\n\nOuter body\n")
    assert result.metadata["date"].startswith("2016-11-15T23:29:05")
    assert result.metadata["attachments"] == ["test"]  # the attached message's subject


@pytest.mark.parametrize("name", ["renamed.eml", "saved.txt", "notes.md"])
def test_the_bytes_decide_not_the_name(name: str) -> None:
    proper = read("other")
    renamed = read("other", as_name=name)
    assert renamed.text == proper.text and renamed.sender == proper.sender
    assert renamed.spec.corpus_class == "communication"
    # The spec keeps the name's extractor and version, which ingest compares on the next run.
    spec = extractor_for(name)
    assert spec is not None and (renamed.spec.name, renamed.spec.version) == (
        spec.name,
        spec.version,
    )


def test_html_is_the_body_when_the_plain_body_is_empty(tmp_path: Path) -> None:
    copy = tmp_path / "complete.msg"
    shutil.copy(msg_file("complete"), copy)
    with olefile.OleFileIO(str(copy), write_mode=True) as ole:
        size = ole.get_size("__substg1.0_1000001F")
        ole.write_stream("__substg1.0_1000001F", b"\x00" * size)  # the plain body blanked
    result = extract(copy, copy.read_bytes())
    assert result.metadata["body"] == "html"
    body = result.text.split("\n\n", 1)[1]
    assert "Our newest hybrid smartwatch is here" in body
    assert "<td" not in body and "<style" not in body and "{" not in body[:200]


def test_a_damaged_msg_is_an_error_naming_the_file() -> None:
    data = msg_file("outer").read_bytes()
    with pytest.raises(ExtractionError) as error:
        extract(Path("cut.msg"), data[:2048])
    assert str(error.value).startswith("cut.msg: ") and "Outlook .msg" in str(error.value)
    with pytest.raises(ExtractionError) as error:
        extract(Path("cut.eml"), data[:2048])  # under a mail name it fails as a .msg, too
    assert str(error.value).startswith("cut.eml: ") and "Outlook .msg" in str(error.value)


def test_a_msg_holding_rfc822_text_is_read_as_such() -> None:
    eml = material("libpython3.11-testsuite") / "usr/lib/python3.11/test/test_email/data"
    result = extract(Path("saved.msg"), (eml / "msg_07.txt").read_bytes())
    assert result.spec.name == "msg" and result.title == "Here is your dingus fish"
