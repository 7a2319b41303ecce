"""Grounding: a fact is kept only with a span of the text, and its text is that span; the
attributes it quotes are in the text too; a reply cut off keeps what it completed."""

from __future__ import annotations

from langextract.core import data

from garage.facts.grounding import (
    GroundedFact,
    filter_facts,
    ground,
    label_attributes,
    ungrounded_attribute,
)
from garage.facts.language_model import extraction_schema, is_envelope, is_gpt_oss, salvage
from garage.facts.metadata import subject_without_prefixes
from garage.facts.prompts import Example, ExampleFact, FactPrompt
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


RELATIONS = FactPrompt(
    name="relations",
    description="Extract who works where, and every person named.",
    examples=(
        Example(
            text="Jane Doe of Acme Corp presented the Q2 roadmap in Austin on 12 May 2019.",
            extractions=(
                ExampleFact(
                    "relation",
                    "Jane Doe of Acme Corp",
                    {"subject": "Jane Doe", "object": "Acme Corp", "predicate": "WORKS_AT"},
                ),
                ExampleFact("person", "Jane Doe", {"name": "Jane Doe", "role": "presenter"}),
                ExampleFact(
                    "event", "presented the Q2 roadmap", {"name": "Q2 roadmap presentation"}
                ),
            ),
        ),
    ),
)


def test_attributes_the_examples_quote_must_be_in_the_document() -> None:
    # Labels: values the examples do not take from their own text.
    assert label_attributes(RELATIONS) == {
        "relation": frozenset({"predicate"}),
        "person": frozenset({"role"}),
        "event": frozenset({"name"}),
    }
    content = " ".join("Yesterday  ANA LIMA, of Globex, told us she will leave.".casefold().split())
    labels = label_attributes(RELATIONS)

    def fact(fact_class: str, **attributes: object) -> GroundedFact:
        return GroundedFact(fact_class, "x", 0, 1, "match_exact", dict(attributes))

    # Case, runs of whitespace and punctuation at either end do not matter.
    assert ungrounded_attribute(fact("person", name="Ana  Lima"), content, labels) is None
    assert ungrounded_attribute(fact("person", name="Ana Lima,"), content, labels) is None
    # A label need not occur; an empty value quotes nothing.
    assert ungrounded_attribute(fact("person", name="", role="CEO"), content, labels) is None
    relation = fact("relation", subject="Ana Lima", object="Globex", predicate="LEAVES")
    assert ungrounded_attribute(relation, content, labels) is None
    # The example's own name, found nowhere in this document.
    relation = fact("relation", subject="Jane Doe", object="Globex", predicate="WORKS_AT")
    assert ungrounded_attribute(relation, content, labels) == "subject='Jane Doe'"
    listed = fact("relation", subject=["Ana Lima", "Bob"], object="Globex")
    assert ungrounded_attribute(listed, content, labels) == "subject='Bob'"
    # An attribute the examples never show is held to the document too.
    assert ungrounded_attribute(fact("place", city="Paris"), content, labels) == "city='Paris'"


def test_shapes_and_attributes_drop_and_count_each_fact_once() -> None:
    content = "Ana Lima of Globex met him in Lisbon. He agreed. The board meets on Friday."

    def at(fact_class: str, text: str, **attributes: object) -> GroundedFact:
        start = content.index(text)
        return GroundedFact(
            fact_class, text, start, start + len(text), "match_exact", dict(attributes)
        )

    facts = [
        at("person", "Ana Lima", name="Ana Lima", role="member"),
        at("person", "He", name="He"),  # names nothing (the pronoun rule comes first)
        at("relation", "Ana Lima of Globex", subject="Jane Doe", object="Globex"),
        at("relation", "Ana Lima of Globex", subject="Ana Lima", object="Globex"),
        at("event", "The board meets on Friday."),  # a sentence
        at("event", "met him in Lisbon", name="a meeting"),  # a label: kept
    ]
    kept, not_claims, not_names, attributes = filter_facts(content, RELATIONS, facts)
    assert (not_claims, not_names, attributes) == (0, 2, 1)
    assert [(f.fact_class, f.text, f.attributes.get("subject")) for f in kept] == [
        ("person", "Ana Lima", None),
        ("relation", "Ana Lima of Globex", "Ana Lima"),
        ("event", "met him in Lisbon", None),
    ]


def test_a_cut_reply_keeps_its_completed_extractions() -> None:
    whole = '{"extractions": [{"fact": "A b c."}]}'
    assert is_envelope(whole) and not is_envelope('{"extractions": {"fact": "A"}}')
    assert salvage('{ "extractions" : [\n  {"fact": "A b c."},\n  {"fact": "D e') == (whole, 1)
    with_attributes = (
        '{"extractions": [{"person": "Ana", "person_attributes": {"name": "Ana"}}, '
        '{"person": "Bo", "person_attributes": {"na'
    )
    assert salvage(with_attributes) == (
        '{"extractions": [{"person": "Ana", "person_attributes": {"name": "Ana"}}]}',
        1,
    )
    assert salvage('{"extractions": [') == ('{"extractions": []}', 0)
    # Not the envelope at all: nothing to salvage.
    assert salvage("Sure! Here are the facts:") is None
    assert salvage('{"facts": [{"fact": "A"}]}') is None
    assert salvage("") is None


def test_placeholder_attributes_are_left_out() -> None:
    extraction = _extraction("Maria leads twelve engineers.", 36, len(CONTENT))
    extraction.attributes = {"date": "None", "name": "Maria", "kind": " unknown ", "tags": ["n/a"]}
    [fact], _ = ground(CONTENT, [extraction])
    assert fact.attributes == {"name": "Maria"}
