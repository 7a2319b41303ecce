"""The guard as a property over generated pairs, and the grouping rules over generated vectors:
facts that disagree on numbers, dates or negation never share a group, however close their
vectors are."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from garage.clusters.grow import Attacher, full_groups
from garage.clusters.guard import compatible, disagreement, read_claim
from garage.clusters.level1 import restatements
from garage.clusters.model import Group, Node, Settings, unit

SUBJECTS = ["The Lisbon office", "Acme", "The night train", "Maria's team", "The garden shed"]
VERBS = ["opens", "has", "leaves", "meets", "closes"]
OBJECTS = ["employees", "visitors", "engineers", "rooms", "windows"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Friday", "Sunday"]
MONTHS = ["March", "June", "October", "December"]
NUMBER_WORDS = {"twelve": 12, "four": 4, "twenty": 20}


def sentence(rng: random.Random, number: int | str, day: str | None, negated: bool) -> str:
    subject = rng.choice(SUBJECTS)
    verb = rng.choice(VERBS)
    neg = " not" if negated else ""
    when = f" on {day}" if day else ""
    return f"{subject} does{neg} say it {verb} {number} {rng.choice(OBJECTS)}{when}."


def test_generated_pairs_are_compatible_exactly_when_they_agree() -> None:
    rng = random.Random(17)
    differing = {"numbers": 0, "dates": 0, "negation": 0}
    for _ in range(5000):
        number = rng.randint(1, 5000)
        day = rng.choice([None, *DAYS, *MONTHS])
        negated = rng.random() < 0.5
        a = sentence(rng, number, day, negated)
        change = rng.choice(["none", "numbers", "dates", "negation"])
        other_number, other_day, other_negated = number, day, negated
        if change == "numbers":
            other_number = number + rng.randint(1, 50)
        elif change == "dates":
            other_day = rng.choice([d for d in [None, *DAYS, *MONTHS] if d != day])
        elif change == "negation":
            other_negated = not negated
        # The same claim in other words: subject, verb and object are drawn again.
        b = sentence(rng, other_number, other_day, other_negated)
        agrees = compatible(read_claim(a), read_claim(b))
        assert agrees == (change == "none"), (a, b)
        if change != "none":
            assert disagreement(read_claim(a), read_claim(b)) == change, (a, b)
            differing[change] += 1
    assert all(count > 1000 for count in differing.values())


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Acme has 42 employees.", "Acme has 45 employees."),
        ("The meeting is on Tuesday.", "The meeting is not on Tuesday."),
        ("The office opens in March.", "The office opens in June."),
        ("She will come.", "She won't come."),
        ("Twelve engineers joined.", "Thirteen engineers joined."),
        ("It costs 1,000 euros.", "It costs 1,001 euros."),
        ("Delivered on 3 May.", "Delivered on 4 May."),
    ],
)
def test_known_disagreements(a: str, b: str) -> None:
    assert not compatible(read_claim(a), read_claim(b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Acme has 42 employees.", "Acme employs 42 people."),
        ("Twelve engineers joined.", "12 engineers joined the team."),
        ("It costs 1,000 euros.", "The price is 1000 euros."),
        ("You may go now.", "You can go now."),  # "may" the verb is not a date
    ],
)
def test_agreements_in_other_words(a: str, b: str) -> None:
    assert compatible(read_claim(a), read_claim(b))


def _node(fact_id: int, text: str, vector: np.ndarray, document_id: int = 0) -> Node:
    return Node(fact_id, document_id or fact_id, "fact", text, unit(vector.astype(np.float32)))


def test_close_vectors_never_group_across_a_disagreement() -> None:
    """Every fact is a near copy of one vector (cosine > 0.99 to each other), so similarity
    alone would put them all in one group; the claims split them."""
    rng = np.random.default_rng(3)
    base = rng.normal(size=64)
    texts = [
        f"Acme has {n} employees{' not' if neg else ''} on {day}."
        for n in (40, 41, 42)
        for neg in (False, True)
        for day in ("Monday", "Friday")
    ]
    nodes = [
        _node(i + 1, text, base + 0.01 * rng.normal(size=64)) for i, text in enumerate(texts * 3)
    ]
    loose = Settings(restate_threshold=0.5, seed_threshold=0.5, threshold=0.5, max_drift=0.5)
    groups = full_groups(nodes, loose)
    for group in groups:
        claims = {m.claim for m in group.members}
        assert len(claims) == 1, [m.text for m in group.members]
    assert len(groups) == len(texts)  # each claim's three copies, together

    # Level 1 within one document holds the guard too.
    same_document = [_node(n.fact_id, n.text, n.vector, document_id=7) for n in nodes]
    links = restatements(same_document, 0.5)
    by_id = {n.fact_id: n for n in same_document}
    for fact_id, target in links.items():
        if target is not None:
            assert by_id[fact_id].claim == by_id[target].claim


def test_growth_stops_at_the_drift_limit_and_attach_never_merges() -> None:
    """Points along an arc: each next one is close to the last, so a group that followed its
    centroid would slide along the arc; the drift limit stops it near its seed."""
    angles = np.linspace(0, 1.2, 40)
    vectors = [np.array([math.cos(a), math.sin(a), 0.0]) for a in angles]
    nodes = [_node(i + 1, "The arc point.", v) for i, v in enumerate(vectors)]
    settings = Settings(seed_threshold=0.999, threshold=0.9, max_drift=0.02, neighbors=10)
    groups = full_groups(nodes, settings)
    assert sum(len(g.members) for g in groups) == len(nodes)
    for group in groups:
        spread, radius, drift = group.stats()
        assert drift <= settings.max_drift + 1e-6
        for member in group.members:
            assert float(member.vector @ group.seed) >= settings.threshold - 1e-6
    assert len(groups) > 1

    # Attaching a point between two groups joins at most one of them; no group absorbs another.
    before = {id(g): {m.fact_id for m in g.members} for g in groups}
    attacher = Attacher(groups, settings, 3)
    joined, _ = attacher.attach(_node(1000, "The arc point.", vectors[20]))
    for group in groups:
        members = {m.fact_id for m in group.members}
        expected = before[id(group)] | ({1000} if group is joined else set())
        assert members == expected


@pytest.mark.parametrize("n", [2, 3, 8])
def test_tight_bound_is_the_mean_direction_of_equally_alike_nodes(n: int) -> None:
    """n unit vectors pairwise at cosine s are tight exactly when s >= tight_similarity."""
    for s, tight in ((0.96, True), (0.94, False)):
        # A simplex scaled into a cone: pairwise cosine s around a common axis.
        axis = np.zeros(n + 1)
        axis[-1] = 1.0
        spokes = np.eye(n + 1)[:n] - 1.0 / n * np.eye(n + 1)[:n].sum(axis=0)
        spokes = spokes / np.linalg.norm(spokes, axis=1, keepdims=True)
        c = -1.0 / (n - 1)  # the spokes' pairwise cosine
        height = math.sqrt((s - c) / (1 - c))
        vectors = [height * axis + math.sqrt(1 - height**2) * spoke for spoke in spokes]
        members = [_node(i + 1, "Same.", v) for i, v in enumerate(vectors)]
        assert abs(float(members[0].vector @ members[1].vector) - s) < 1e-4
        group = Group("fact", members[0].vector, members)
        assert group.is_tight(0.95) is tight
