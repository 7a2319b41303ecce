"""Reading judged collections in the TREC formats, and the errors a broken file gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from garage.evaluate.trec import CollectionError, Judgment, read_qrels, read_queries


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_one_query_a_line_tab_or_spaces_with_or_without_a_header(tmp_path: Path) -> None:
    tabs = write(
        tmp_path / "q.tsv", "qid\tquery\n1\tsecure boot firmware\n\n2\tlist   comprehensions\n"
    )
    assert read_queries(tabs) == {"1": "secure boot firmware", "2": "list comprehensions"}
    spaces = write(tmp_path / "q.txt", "301 international organized crime\n302 poliomyelitis\n")
    assert read_queries(spaces) == {"301": "international organized crime", "302": "poliomyelitis"}


def test_trec_topics_take_the_title(tmp_path: Path) -> None:
    topics = write(
        tmp_path / "topics.301",
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n\n<desc> Description:\n"
        "Identify organizations that participate in international criminal activity.\n"
        "<narr> Narrative:\nA relevant document must ...\n</top>\n\n"
        "<top>\n<num> Number: 302 <title> Poliomyelitis and Post-Polio\n</top>\n",
    )
    assert read_queries(topics) == {
        "301": "International Organized Crime",
        "302": "Poliomyelitis and Post-Polio",
    }


def test_beir_json_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path / "queries.jsonl",
        '{"_id": "4", "text": "0-dimensional biomaterials", "metadata": {}}\n'
        '{"qid": 9, "query": "ALDH1 expression"}\n',
    )
    assert read_queries(path) == {"4": "0-dimensional biomaterials", "9": "ALDH1 expression"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\tfine\n2\n", r"q:2: expected a query id and its text"),
        ("1\tfine\n1\tagain\n", r"q:2: query '1' appears twice"),
        ('{"_id": "1", "text": "a"}\n{"_id": "2"}\n', r"q:2: a query needs an id"),
        ('{"_id": "1", "text": "a"}\n{not json\n', r"q:2: not a JSON object"),
        ("<top><num> Number: 7 <desc> only a description </top>", r"q:1: topic '7' has no"),
        ("\n\n", r"q: no queries in the file"),
    ],
)
def test_broken_queries_files_are_named_by_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "q", text)
    with pytest.raises(CollectionError, match=message):
        read_queries(path)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CollectionError, match=r"absent\.tsv: no such file"):
        read_queries(tmp_path / "absent.tsv")


def test_qrels_four_and_three_columns(tmp_path: Path) -> None:
    trec = write(
        tmp_path / "qrels", "1 0 notes/a.md 2\n1 0 /home/j/b.txt 0\n2\t0\tfile:///c.txt\t1\n"
    )
    assert read_qrels(trec) == [
        Judgment("1", "notes/a.md", 2.0, 1),
        Judgment("1", "/home/j/b.txt", 0.0, 2),
        Judgment("2", "file:///c.txt", 1.0, 3),
    ]
    beir = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\n4\tMED-10\t1\n")
    assert read_qrels(beir) == [Judgment("4", "MED-10", 1.0, 2)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 0 a 1\n1 0 c 1 x\n", r"qrels:2: expected 'QUERY_ID ITERATION DOCUMENT"),
        ("1 0 a 1\n1 b 1\n", r"qrels:2: 3 fields, where the lines before have 4"),
        ("1 0 a 1\n1 0 b high\n", r"qrels:2: relevance 'high' is not a number"),
        ("1 0 a 1\n1 0 a 2\n", r"qrels:2: query '1' judges 'a' a second time \(first on line 1\)"),
        ("1 0 a nan\n", r"qrels:1: relevance 'nan' is not a number"),
        ("\n", r"qrels: no judgments in the file"),
    ],
)
def test_broken_qrels_are_named_by_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "qrels", text)
    with pytest.raises(CollectionError, match=message):
        read_qrels(path)
