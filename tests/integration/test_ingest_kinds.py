"""The kinds people keep on disk, ingested end to end: a scan rendered from a real PDF page, a
LaTeX-typeset PDF whose words pypdf runs together, CSV exports, macro-enabled Office files,
Outlook messages (one renamed .eml), a workbook openpyxl cannot open."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import psycopg

from garage.search import search
from garage.search.types import SearchQuery
from tests.integration.ingest_helpers import make_config, rows, run_ingest
from tests.material import material
from tests.unit.test_extract_pdf import scan_of
from tests.unit.test_extract_xlsx_inline import NOTES, ORDERS, inline_workbook


def folder(root: Path) -> Path:
    root.mkdir()
    pypdf = material("pypdf") / "resources"
    (root / "scanned-letter.pdf").write_bytes(scan_of(pypdf / "crazyones.pdf"))
    card = material("debian-refcard") / "usr/share/doc/debian-refcard/refcard-en-a4.pdf.gz"
    (root / "refcard.pdf").write_bytes(gzip.decompress(card.read_bytes()))
    shutil.copy(material("vega-datasets") / "la-riots.csv", root / "riots.csv")
    pptx = material("python-pptx") / "features" / "steps" / "test_files"
    shutil.copy(pptx / "act-props.pptm", root / "actions.pptm")
    outlook = material("msg-parser") / "tests" / "files"
    shutil.copy(outlook / "complete.msg", root / "newsletter.msg")
    shutil.copy(outlook / "other.msg", root / "bounce.eml")  # an Outlook message renamed .eml
    # Inline strings and no sharedStrings.xml: openpyxl raises KeyError on it.
    (root / "orders.xlsx").write_bytes(inline_workbook({"Orders": ORDERS, "Notes": NOTES}))
    return root


def test_every_kind_is_indexed_and_the_scan_is_found(migrated_db: str, tmp_path: Path) -> None:
    root = folder(tmp_path / "home")
    config = make_config(tmp_path, [{"name": "home", "roots": [str(root)]}])
    report = run_ingest(migrated_db, config, "home")
    assert report.completed and report.failed == 0 and report.rejected == 0, report.errors
    assert report.indexed == 7
    extractors = dict(rows(migrated_db, "SELECT uri, extractor FROM documents"))
    assert sorted(extractors.values()) == ["csv", "eml", "msg", "pdf", "pdf", "pptx", "xlsx"]
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        for phrase, name in [
            ("round pegs in the square holes", "scanned-letter.pdf"),  # printed on the scan
            ("query installed packages", "refcard.pdf"),  # run together by pypdf
            ("hybrid smartwatch", "newsletter.msg"),
            ("The recipients is locked", "bounce.eml"),
            ("Analytical engine punch cards", "orders.xlsx"),
        ]:
            hits = search(conn, config, SearchQuery(phrase, mode="keyword")).hits
            assert hits and Path(hits[0].uri).name == name, (phrase, hits)
    [(meta,)] = rows(migrated_db, "SELECT metadata FROM documents WHERE uri LIKE %s", "%scanned%")
    assert meta["ocr_pages"] == [1] and meta["pages"] == 1


def test_the_ocr_budget_defers_a_scan_to_the_next_run(migrated_db: str, tmp_path: Path) -> None:
    root = tmp_path / "scans"
    root.mkdir()
    page = material("pypdf") / "resources" / "crazyones.pdf"
    (root / "a.pdf").write_bytes(scan_of(page))
    (root / "b.pdf").write_bytes(scan_of(page, copies=2))
    config = make_config(
        tmp_path, [{"name": "scans", "roots": [str(root)]}], limits={"ocr_max_pages_per_run": 2}
    )
    first = run_ingest(migrated_db, config, "scans")
    assert first.indexed == 1 and first.failed == 1
    assert "left in this run's budget (limits.ocr_max_pages_per_run)" in first.errors[0]
    second = run_ingest(migrated_db, config, "scans")  # b.pdf is read now, a.pdf left alone
    assert second.indexed == 1 and second.failed == 0, second.errors
    assert len(rows(migrated_db, "SELECT 1 FROM documents")) == 2


def test_outlook_messages_are_mail_and_a_damaged_one_loses_nothing(
    migrated_db: str, tmp_path: Path
) -> None:
    root = tmp_path / "mail"
    root.mkdir()
    outlook = material("msg-parser") / "tests" / "files"
    shutil.copy(outlook / "other.msg", root / "bounce.eml")
    shutil.copy(outlook / "outer.msg", root / "draft.msg")
    config = make_config(tmp_path, [{"name": "mail", "roots": [str(root)]}])
    first = run_ingest(migrated_db, config, "mail")
    assert first.indexed == 2 and first.failed == 0, first.errors
    docs = {
        Path(uri).name: (cls, attribution, signal, email)
        for uri, cls, attribution, signal, email in rows(
            migrated_db,
            "SELECT d.uri, d.corpus_class, d.attribution, d.attribution_signal, a.email"
            " FROM documents d LEFT JOIN authors a ON a.id = d.author_id",
        )
    }
    # Filed as communication whatever the source's class, attributed by the sender.
    assert docs["bounce.eml"] == (
        "communication", "received", "sender", "mailer-daemon@tjdpf.org.cn",
    )  # fmt: skip
    assert docs["draft.msg"][0] == "communication"
    before = rows(migrated_db, "SELECT content FROM documents WHERE uri LIKE %s", "%bounce.eml")
    # The file is cut short (a sync that stopped): the error names it, the document stays.
    data = (root / "bounce.eml").read_bytes()
    (root / "bounce.eml").write_bytes(data[:3000])
    second = run_ingest(migrated_db, config, "mail")
    assert second.failed == 1 and second.errors[0].startswith(str(root / "bounce.eml"))
    assert "bounce.eml: not a readable Outlook .msg file" in second.errors[0]
    after = rows(migrated_db, "SELECT content FROM documents WHERE uri LIKE %s", "%bounce.eml")
    assert after == before and "The recipients is locked" in after[0][0]
