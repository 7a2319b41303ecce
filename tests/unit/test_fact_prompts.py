"""Fact prompts: the merge with the built-in default, validation at config load, hashing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garage.config import ConfigError, load_config
from garage.facts.prompts import DEFAULT_PROMPT, merge_prompts, select_prompts

ENTITIES = {
    "name": "entities",
    "description": "Extract every named person, place and organization. Quote each exactly.",
    "examples": [
        {
            "text": "Jane Doe of Acme Corp spoke in Austin.",
            "extractions": [
                {"class": "person", "text": "Jane Doe", "attributes": {"name": "Jane Doe"}},
                {"class": "organization", "text": "Acme Corp"},
                {"class": "place", "text": "Austin"},
            ],
        }
    ],
}


def _config(tmp_path: Path, prompts: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    path = tmp_path / "garage.json"
    path.write_text(json.dumps({"facts": {"prompts": prompts}}))
    return load_config(path, env={})


def test_no_entries_is_the_builtin_default(tmp_path: Path) -> None:
    prompts = merge_prompts(_config(tmp_path, []).facts.prompts)
    assert [p.name for p in prompts] == ["default"]
    assert prompts[0] == DEFAULT_PROMPT and prompts[0].enabled


def test_default_entry_overrides_field_by_field(tmp_path: Path) -> None:
    off = merge_prompts(_config(tmp_path, [{"name": "default", "enabled": False}]).facts.prompts)
    assert off[0].enabled is False
    # Fields left out keep the built-in's, so the hash (what was asked) is unchanged.
    assert off[0].description == DEFAULT_PROMPT.description
    assert off[0].examples == DEFAULT_PROMPT.examples
    assert off[0].sha256 == DEFAULT_PROMPT.sha256

    reworded = merge_prompts(
        _config(tmp_path, [{"name": "default", "description": "Only dates."}]).facts.prompts
    )
    assert reworded[0].description == "Only dates."
    assert reworded[0].examples == DEFAULT_PROMPT.examples and reworded[0].enabled
    assert reworded[0].sha256 != DEFAULT_PROMPT.sha256


def test_other_entries_are_added_after_the_default(tmp_path: Path) -> None:
    prompts = merge_prompts(_config(tmp_path, [ENTITIES]).facts.prompts)
    assert [p.name for p in prompts] == ["default", "entities"]
    assert prompts[1].classes == ("person", "organization", "place")
    assert prompts[1].examples[0].extractions[0].attributes == {"name": "Jane Doe"}
    # Disabling the default and adding one: only the added one runs by default, and naming
    # the disabled default runs it anyway.
    both = merge_prompts(
        _config(tmp_path, [{"name": "default", "enabled": False}, ENTITIES]).facts.prompts
    )
    assert [p.name for p in select_prompts(both, [])] == ["entities"]
    assert [p.name for p in select_prompts(both, ["default"])] == ["default"]
    with pytest.raises(KeyError, match="no fact prompt named nope"):
        select_prompts(both, ["nope"])


def test_scope_is_not_part_of_the_hash(tmp_path: Path) -> None:
    scoped = dict(ENTITIES, scope={"corpus_classes": ["communication"], "sources": ["mail"]})
    [_, plain] = merge_prompts(_config(tmp_path, [ENTITIES]).facts.prompts)
    [_, narrow] = merge_prompts(_config(tmp_path, [scoped]).facts.prompts)
    assert plain.sha256 == narrow.sha256
    assert narrow.applies_to("communication", "mail")
    assert not narrow.applies_to("document", "mail")
    assert not narrow.applies_to("communication", "notes")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"name": "entities", "description": "x"},
            "facts.prompts: Value error, [0:entities].examples: required",
        ),
        (
            {**ENTITIES, "examples": [{"text": "a b", "extractions": [{"text": "a"}]}]},
            "facts.prompts[0:entities].examples[0].extractions[0].class: Field required",
        ),
        (
            {
                **ENTITIES,
                "examples": [{"text": "a b", "extractions": [{"class": "x", "text": "c"}]}],
            },
            "facts.prompts[0:entities].examples[0]: Value error, extractions[0].text 'c' does "
            "not occur",
        ),
        ({**ENTITIES, "enabeld": True}, "facts.prompts[0:entities].enabeld: unknown key"),
        ({**ENTITIES, "name": "Bad Name"}, "facts.prompts[0:Bad Name].name: Value error"),
        ({**ENTITIES, "name": "metadata"}, "'metadata' is reserved"),
        (
            {**ENTITIES, "scope": {"corpus_classes": ["mail"]}},
            "facts.prompts[0:entities].scope.corpus_classes[0]: Input should be",
        ),
    ],
)
def test_invalid_entries_are_refused_naming_entry_and_field(
    tmp_path: Path, entry: dict[str, object], expected: str
) -> None:
    with pytest.raises(ConfigError) as error:
        _config(tmp_path, [entry])
    assert expected in str(error.value)


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[1:entities\]: a second prompt with this name"):
        _config(tmp_path, [ENTITIES, ENTITIES])


def test_prompts_survive_a_save_and_load(tmp_path: Path) -> None:
    from garage.config import save_config

    config = _config(tmp_path, [ENTITIES])
    path = save_config(config, tmp_path / "saved.json")
    again = load_config(path, env={})
    assert merge_prompts(again.facts.prompts) == merge_prompts(config.facts.prompts)
    assert (
        json.loads(path.read_text())["facts"]["prompts"][0]["examples"][0]["extractions"][0][
            "class"
        ]
        == "person"
    )


def _drawing(name: str, graph: dict[str, object]) -> dict[str, object]:
    """A prompt of its own (ENTITIES under another name) with the given graph block."""
    return {**ENTITIES, "name": name, "graph": graph}


PERSON = {"class": "person", "label": "Person", "title": "name"}
RELATION = {
    "class": "relation", "source": "subject", "source_class": "person",
    "target": "object", "target_class": "organization",
}  # fmt: skip


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        # A class drawn as a vertex in one prompt and as an edge in another.
        (
            {"vertices": [PERSON]},
            {"edges": [{**RELATION, "class": "person"}]},
            r"class 'person' is drawn as the vertex label 'Person' \(\[\d:\w+\]\.graph\.vertices"
            r"\[0\]\); a class is a vertex or an edge",
        ),
        # A class given edges in two prompts: one would be ignored without a word.
        (
            {"edges": [{**RELATION, "label": "WORKS_AT"}]},
            {"edges": [{**RELATION, "label": "KNOWS"}]},
            r"class 'relation' is already drawn as an edge \(\[\d:\w+\]\.graph\.edges\[0\]\)",
        ),
        # A class given the same label twice, with another title.
        (
            {"vertices": [PERSON]},
            {"vertices": [{**PERSON, "title": "full_name"}]},
            r"class 'person' already has the label 'Person' \(\[\d:\w+\]\.graph\.vertices\[0\]\)",
        ),
    ],
    ids=["vertex-and-edge", "edges-twice", "vertex-twice"],
)
def test_a_class_drawn_in_two_prompts_is_refused_in_either_order(
    tmp_path: Path, first: dict[str, object], second: dict[str, object], message: str
) -> None:
    for prompts in (
        [_drawing("people", first), _drawing("links", second)],
        [_drawing("links", second), _drawing("people", first)],
    ):
        with pytest.raises(ConfigError, match=message) as error:
            _config(tmp_path, prompts)
        # Both places are named: the one refused, and the one drawn first.
        assert "[0:" in str(error.value) and "[1:" in str(error.value)


def test_classes_drawn_once_across_prompts_load_in_either_order(tmp_path: Path) -> None:
    people = _drawing("people", {"vertices": [PERSON]})
    links = _drawing(
        "links",
        {
            "vertices": [{"class": "organization", "label": "Organization"}],
            "edges": [{**RELATION, "label_attribute": "predicate", "labels": ["works at"]}],
        },
    )
    for prompts in ([people, links], [links, people]):
        graphs = [p.graph for p in _config(tmp_path, prompts).facts.prompts]
        drawn = {v.vertex_class for g in graphs if g for v in g.vertices}
        assert drawn == {"person", "organization"}
        assert [e.edge_class for g in graphs if g for e in g.edges] == ["relation"]
