"""Grouping representatives across the corpus: the full run, and the incremental attach.

Full run: each representative's ``neighbors`` nearest neighbours give it a density (their mean
similarity). Densest first, a seed and its neighbours at ``seed_threshold`` or closer form a
core, whose mean is the group's seed. The group then grows by the nearest neighbours of its
centroid while each is ``threshold`` similar to the centroid and to the seed and keeps the
centroid within ``max_drift`` of the seed, stopping at the first that is not. The centroid's
neighbours are sought among its members' nearest neighbours: a point near the centroid is near
some member, and this keeps a run over 10^5 facts to one neighbour search.

Only facts of one class whose claims agree (the guard) can share a group, so each such bucket
is grouped on its own.

Incremental run: each new representative joins the nearest group that passes the same tests
(``attach_candidates`` tried), or stands alone for later ones to join. Groups are never merged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np

from garage.clusters.anchors import stack
from garage.clusters.guard import compatible
from garage.clusters.model import Group, Node, Settings, unit
from garage.clusters.neighbours import CentroidIndex, nearest

Progress = Callable[[int], None]


def buckets(nodes: Iterable[Node]) -> list[list[Node]]:
    by_key: dict[tuple[object, ...], list[Node]] = defaultdict(list)
    for node in nodes:
        by_key[(node.fact_class, node.claim)].append(node)
    return [sorted(b, key=lambda n: n.fact_id) for b in by_key.values()]


def full_groups(
    nodes: Iterable[Node], settings: Settings, progress: Progress | None = None
) -> list[Group]:
    groups: list[Group] = []
    for bucket in buckets(nodes):
        groups += _grow_bucket(bucket, settings)
        if progress is not None:
            progress(len(bucket))
    return groups


def _grow_bucket(nodes: list[Node], settings: Settings) -> list[Group]:
    if len(nodes) == 1:
        return [Group(nodes[0].fact_class, nodes[0].vector, [nodes[0]])]
    vectors = stack(nodes)
    indices, similarities = nearest(vectors, settings.neighbors)
    density = similarities.mean(axis=1)
    order = np.argsort(-density, kind="stable")
    assigned = np.zeros(len(nodes), dtype=bool)
    groups = []
    for s in order:
        if assigned[s]:
            continue
        core = [int(s)] + [
            int(j)
            for j, sim in zip(indices[s], similarities[s], strict=True)
            if sim >= settings.seed_threshold and not assigned[j]
        ]
        assigned[core] = True
        seed = unit(vectors[core].sum(axis=0))
        group = Group(nodes[s].fact_class, seed, [nodes[i] for i in core])
        pool = {int(j) for i in core for j in indices[i]}
        while True:
            candidates = [j for j in pool if not assigned[j]]
            if not candidates:
                break
            centroid = group.centroid
            sims = vectors[candidates] @ centroid
            best = int(np.argmax(sims))
            j = candidates[best]
            if sims[best] < settings.threshold or float(vectors[j] @ seed) < settings.threshold:
                break
            if 1.0 - float(group.centroid_with(nodes[j]) @ seed) > settings.max_drift:
                break
            group.add(nodes[j])
            assigned[j] = True
            pool.update(int(x) for x in indices[j])
        groups.append(group)
    return groups


def passes(group: Group, node: Node, settings: Settings) -> bool:
    """The tests a node must pass to join a grown group."""
    if group.claim is None or node.fact_class != group.fact_class:
        return False
    if not compatible(node.claim, group.claim):
        return False
    if float(node.vector @ group.centroid) < settings.threshold:
        return False
    if float(node.vector @ group.seed) < settings.threshold:
        return False
    return 1.0 - float(group.centroid_with(node) @ group.seed) <= settings.max_drift


class Attacher:
    """Attaches new representatives to the groups there are, one at a time."""

    def __init__(self, groups: Iterable[Group], settings: Settings, dimensions: int):
        self.settings = settings
        self.dimensions = dimensions
        self.by_class: dict[str, CentroidIndex] = {}
        for group in groups:
            if group.anchor_key is None and group.members:
                self._index(group.fact_class).add(group)

    def _index(self, fact_class: str) -> CentroidIndex:
        if fact_class not in self.by_class:
            self.by_class[fact_class] = CentroidIndex(self.dimensions)
        return self.by_class[fact_class]

    def attach(self, node: Node) -> tuple[Group, bool]:
        """The group ``node`` joined, and whether it was an existing one (False: it stands
        alone in a new group)."""
        index = self._index(node.fact_class)
        for group, _ in index.nearest(node.vector, self.settings.attach_candidates):
            if passes(group, node, self.settings):
                group.add(node)
                index.update(group)
                return group, True
        group = Group(node.fact_class, node.vector, [node])
        index.add(group)
        return group, False
