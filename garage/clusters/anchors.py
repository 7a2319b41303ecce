"""Anchors: ground truth that groups form around.

``enrich-facts`` writes a mail's sender, recipients and subject and a thread's participants as
metadata facts with a key (``author:<id>``, ``address:<a>``, ``name:<n>``, ``subject:<s>``).
Each distinct key becomes one anchored distilled fact. Its metadata facts link to it by key,
whatever their vectors; its centroid is its first fact's vector and never moves. A new inferred
fact first joins the nearest anchor of its class it is ``threshold`` similar to and agrees
with (the guard), before it is grouped anywhere else: no model is asked, nothing drifts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from email.utils import getaddresses

import numpy as np

from garage.clusters.guard import compatible
from garage.clusters.model import Group, Node
from garage.clusters.neighbours import CentroidIndex

# The class of an anchor, from its key: sender, recipient and participant facts all name
# people, so an extracted "person" fact can join the anchor for the same person.
_KEY_CLASSES = {"author": "person", "address": "person", "name": "person", "subject": "subject"}


def anchor_class(key: str) -> str:
    prefix = key.partition(":")[0]
    return _KEY_CLASSES.get(prefix, prefix or "metadata")


def anchor_groups(nodes: Iterable[Node], existing: dict[str, Group]) -> list[Group]:
    """One anchored group per key, holding that key's metadata facts. A key seen before keeps
    its row and its seed (its first fact's vector, fixed when the anchor was made)."""
    by_key: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        if node.key is not None:
            by_key[node.key].append(node)
    groups = []
    for key, members in sorted(by_key.items()):
        members.sort(key=lambda n: n.fact_id)
        old = existing.get(key)
        seed = old.seed if old is not None else members[0].vector
        group = Group(anchor_class(key), seed, list(members), anchor_key=key, status="anchor")
        if old is not None:
            group.id = old.id
            group.members_sha256_stored = old.members_sha256_stored
            group.status_stored = ("anchor", None)
        groups.append(group)
    return groups


def _identity(text: str) -> str:
    return " ".join(text.casefold().split())


def identities(text: str) -> list[tuple[str, bool]]:
    """What a header value names a person by: (address or name, is it an address). "Barry
    Warsaw <barry@python.org>" gives the address and the name; "ppp@zzz.org" the address."""
    if "@" not in text and "<" not in text:
        return [(_identity(text), False)] if text.strip() else []  # a bare name, commas and all
    found = []
    for name, address in getaddresses([text]):
        if "@" in address:
            found.append((_identity(address), True))
        name = name or ("" if "@" in address else address)
        if name.strip():
            found.append((_identity(name), False))
    return found


class AnchorIndex:
    """Anchors by class, for joining inferred facts to them.

    A person fact whose text *is* an anchor's address, or its full name, joins that anchor on
    that evidence before any vector is compared: "barry@python.org" quoted from a mail body and
    the sender "Barry Warsaw <barry@python.org>" are one person, though a sentence model puts
    the two strings further apart than the similarity threshold. A one-word name ("Ana") is
    taken only inside a document the anchor comes from; a name or address two anchors share
    is nobody's.
    """

    def __init__(self, anchors: Iterable[Group], dimensions: int):
        self.by_class: dict[str, CentroidIndex] = {}
        self.by_identity: dict[str, Group | None] = {}  # person anchors' names and addresses
        self.documents: dict[int, set[int]] = {}
        for anchor in anchors:
            self.by_class.setdefault(anchor.fact_class, CentroidIndex(dimensions)).add(anchor)
            self.documents[id(anchor)] = {m.document_id for m in anchor.members}
            if anchor.fact_class != "person":
                continue
            for member in anchor.members:
                for identity, _ in identities(member.text):
                    if self.by_identity.get(identity, anchor) is not anchor:
                        self.by_identity[identity] = None  # two people answer to it: neither
                    else:
                        self.by_identity[identity] = anchor

    def _named(self, node: Node) -> Group | None:
        for identity, is_address in identities(node.text):
            anchor = self.by_identity.get(identity)
            if anchor is None:
                continue
            if is_address or " " in identity or node.document_id in self.documents[id(anchor)]:
                return anchor
        return None

    def join(self, node: Node, threshold: float) -> Group | None:
        """Add ``node`` to the anchor it names, else to the nearest anchor of its class that it
        is similar and agrees with; return it, or None when no anchor takes it."""
        named = self._named(node) if node.fact_class == "person" else None
        if named is not None:
            named.add(node)
            return named
        index = self.by_class.get(node.fact_class)
        if index is None:
            return None
        for anchor, similarity in index.nearest(node.vector, len(index.groups)):
            if similarity < threshold:
                return None  # nearest first: no farther one is similar enough either
            if anchor.claim is not None and compatible(node.claim, anchor.claim):
                anchor.add(node)
                return anchor
        return None


def stack(nodes: list[Node]) -> np.ndarray:
    return np.stack([n.vector for n in nodes]).astype(np.float32)
