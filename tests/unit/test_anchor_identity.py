"""A person fact that names an anchor's address or full name joins that anchor on the name
itself; vectors are made orthogonal here so that only the identity rule can join anything."""

from __future__ import annotations

import numpy as np

from garage.clusters.anchors import AnchorIndex, anchor_groups, identities
from garage.clusters.model import Node

DIM = 16


def _node(fact_id: int, document_id: int, cls: str, text: str, key: str | None = None) -> Node:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[fact_id % DIM] = 1.0  # every node orthogonal to every other
    return Node(fact_id, document_id, cls, text, vector, key=key)


def _index() -> AnchorIndex:
    metadata = [
        _node(1, 10, "sender", "Barry Warsaw <barry@python.org>", "author:3"),
        _node(2, 11, "recipient", "barry@python.org", "author:3"),
        _node(3, 12, "sender", "Ana <ana@example.org>", "address:ana@example.org"),
        _node(4, 12, "recipient", "Ana Lima <ana.lima@example.net>", "author:9"),
        _node(5, 13, "sender", "Ana Lima <lima@example.com>", "author:10"),
        _node(6, 13, "subject", "Lyrics", "subject:lyrics"),
    ]
    return AnchorIndex(anchor_groups(metadata, {}), DIM)


def test_identities_of_header_values() -> None:
    assert identities("Barry Warsaw <barry@python.org>") == [
        ("barry@python.org", True),
        ("barry warsaw", False),
    ]
    assert identities("ppp@zzz.org") == [("ppp@zzz.org", True)]
    assert identities("Fred L.  Drake, Jr.") == [("fred l. drake, jr.", False)]
    assert identities("  ") == []


def test_a_person_named_by_address_or_full_name_joins_the_anchor() -> None:
    index = _index()
    by_address = index.join(_node(20, 99, "person", "barry@python.org"), threshold=0.85)
    by_name = index.join(_node(21, 98, "person", "Barry  WARSAW"), threshold=0.85)
    assert by_address is not None and by_address.anchor_key == "author:3"
    assert by_name is by_address
    assert [m.fact_id for m in by_address.members] == [1, 2, 20, 21]


def test_a_one_word_name_joins_only_inside_the_anchors_documents() -> None:
    index = _index()
    assert index.join(_node(22, 99, "person", "Ana"), threshold=0.85) is None
    inside = index.join(_node(23, 12, "person", "Ana"), threshold=0.85)
    assert inside is not None and inside.anchor_key == "address:ana@example.org"


def test_a_name_two_anchors_share_is_nobodys_and_other_classes_never_match_by_name() -> None:
    index = _index()
    # "Ana Lima" is the name of two addresses (author:9 and author:10): neither takes it.
    assert index.join(_node(24, 13, "person", "Ana Lima"), threshold=0.85) is None
    # A subject is matched by vectors only; an organization never by a person's name.
    assert index.join(_node(25, 13, "subject", "Lyrics"), threshold=0.99) is None
    assert index.join(_node(26, 10, "organization", "Barry Warsaw"), threshold=0.85) is None
