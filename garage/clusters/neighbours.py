"""Nearest neighbours by cosine similarity over normalized vectors, in memory.

Exact search by blocks of matrix products: at the sizes one person's facts reach (10^4-10^5
representatives) this is seconds on two cores, needs no index to keep in step with the
groups, and gives the same answer every run.
"""

from __future__ import annotations

import numpy as np

from garage.clusters.model import Group, Vector

BLOCK = 256  # rows per product: 256 x 100k float32 similarities is 100 MB


def nearest(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the indices and similarities of its ``k`` nearest other rows, nearest
    first."""
    n = len(vectors)
    k = min(k, n - 1)
    if k <= 0:
        return np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0), dtype=np.float32)
    indices = np.empty((n, k), dtype=np.int64)
    similarities = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, BLOCK):
        block = vectors[start : start + BLOCK] @ vectors.T
        rows = np.arange(block.shape[0])
        block[rows, rows + start] = -np.inf  # not its own neighbour
        top = np.argpartition(-block, k - 1, axis=1)[:, :k]
        top_sims = np.take_along_axis(block, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        indices[start : start + BLOCK] = np.take_along_axis(top, order, axis=1)
        similarities[start : start + BLOCK] = np.take_along_axis(top_sims, order, axis=1)
    return indices, similarities


class CentroidIndex:
    """The groups of one class, searchable by their centroids as the centroids move."""

    def __init__(self, dimensions: int):
        self.groups: list[Group] = []
        self._matrix = np.zeros((16, dimensions), dtype=np.float32)
        self._row: dict[int, int] = {}  # id(group) -> row

    def add(self, group: Group) -> None:
        if len(self.groups) == len(self._matrix):
            grown = np.zeros((2 * len(self._matrix), self._matrix.shape[1]), dtype=np.float32)
            grown[: len(self.groups)] = self._matrix[: len(self.groups)]
            self._matrix = grown
        self._row[id(group)] = len(self.groups)
        self._matrix[len(self.groups)] = group.centroid
        self.groups.append(group)

    def update(self, group: Group) -> None:
        self._matrix[self._row[id(group)]] = group.centroid

    def nearest(self, vector: Vector, k: int) -> list[tuple[Group, float]]:
        n = len(self.groups)
        if n == 0 or k <= 0:
            return []
        sims = self._matrix[:n] @ vector
        k = min(k, n)
        top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.groups[i], float(sims[i])) for i in top]
