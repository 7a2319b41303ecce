"""Grounding: a fact is kept only with a span of the text, and its text is that span."""

from __future__ import annotations

from langextract.core import data

from garage.facts.grounding import ground
from garage.facts.language_model import extraction_schema, is_gpt_oss
from garage.facts.metadata import subject_without_prefixes
from garage.inference.egress import is_cloud_model

CONTENT = "The Lisbon office opens on 3 March. Maria leads twelve engineers."


def _extraction(text: str, start: int | None, end: int | None) -> data.Extraction:
    interval = None if start is None else data.CharInterval(start_pos=start, end_pos=end)
    return data.Extraction(
        "fact",
        text,
        char_interval=interval,
        alignment_status=data.AlignmentStatus.MATCH_EXACT if interval else None,
    )


def test_located_extractions_are_kept_with_their_span() -> None:
    start = CONTENT.index("Maria")
    facts, dropped = ground(
        CONTENT,
        [
            _extraction("Maria leads twelve engineers.", start, len(CONTENT)),
            _extraction("The moon is made of cheese.", None, None),
            _extraction("out of range", 10, len(CONTENT) + 5),
            _extraction("Maria leads twelve engineers.", start, len(CONTENT)),  # twice: once
        ],
    )
    assert dropped == 2
    assert [(f.text, f.start, f.end) for f in facts] == [
        ("Maria leads twelve engineers.", start, len(CONTENT))
    ]
    assert all(CONTENT[f.start : f.end] == f.text for f in facts)


def test_a_fuzzy_alignment_stores_the_aligned_span_not_the_quote() -> None:
    extraction = _extraction("Lisbon office opening", 4, 17)
    extraction.alignment_status = data.AlignmentStatus.MATCH_FUZZY
    [fact], dropped = ground(CONTENT, [extraction])
    assert dropped == 0 and fact.text == CONTENT[4:17] == "Lisbon office"
    assert fact.alignment == "match_fuzzy"


def test_the_schema_names_one_class_per_item_and_bounds_the_reply() -> None:
    schema = extraction_schema(["person", "place"], {"person": ["name", "role"]})
    items = schema["properties"]["extractions"]
    assert items["maxItems"] > 0
    person, place = items["items"]["anyOf"]
    assert person["required"] == ["person"] and place["required"] == ["place"]
    assert set(person["properties"]["person_attributes"]["properties"]) == {"name", "role"}
    assert "place_attributes" not in place["properties"]


def test_subjects_lose_reply_and_forward_markers() -> None:
    assert subject_without_prefixes("Re: Fwd: RE: Lunch on Friday") == "Lunch on Friday"
    assert subject_without_prefixes("AW: Re[2]: Budget") == "Budget"
    assert subject_without_prefixes("Regarding the move") == "Regarding the move"


def test_gpt_oss_is_a_local_model_not_a_cloud_id() -> None:
    assert is_gpt_oss("gpt-oss:20b") and not is_cloud_model("gpt-oss:20b")
    assert is_cloud_model("gpt-4o") and is_cloud_model("openai/gpt-4o-mini")
