"""When the model says no to a group, its members stand alone, but the same text quoted in
two documents stays one distilled fact (the case that showed it: a 1.5B model's "python"
organizations from two mails, grown together with "Python language" and refused)."""

from __future__ import annotations

import numpy as np

from garage.clusters.model import Group, Node, unit
from garage.clusters.run import _dissolve


def _node(fact_id: int, document_id: int, text: str, axis: int) -> Node:
    vector = np.zeros(8, dtype=np.float32)
    vector[axis] = 1.0
    return Node(fact_id, document_id, "organization", text, vector)


def test_a_refused_group_keeps_identical_texts_together() -> None:
    members = [
        _node(192, 6, "python", 0),
        _node(201, 11, "Python", 0),
        _node(150, 4, "Python language", 1),
        _node(151, 4, "Python documentation", 2),
    ]
    group = Group("organization", unit(sum(m.vector for m in members)), members, id=127)
    parts = _dissolve(group)
    assert sorted(sorted(m.fact_id for m in p.members) for p in parts) == [
        [150], [151], [192, 201],
    ]  # fmt: skip
    by_first = {p.members[0].fact_id: p for p in parts}
    assert by_first[192].status == "tight" and by_first[150].status == "single"
    # The row goes to the part holding the representative (the longest text).
    assert group.representative is not None and group.representative.fact_id == 151
    assert by_first[151].id == 127 and by_first[192].id is None and by_first[150].id is None
