"""Nearest neighbours by cosine similarity over normalized vectors, in memory.

Exact search by tiles of matrix products: at the sizes one person's facts reach (10^4-10^5
representatives) this needs no index to keep in step with the groups and gives the same answer
every run. The similarity is symmetric, so each pair of tiles is multiplied once and offered to
both sides; and a tile's similarities are kept only where they beat the k-th best a row has so
far, so choosing the nearest costs a comparison per pair rather than a selection over each row.
Ties go to the lower index, so the answer does not depend on the tiling.
"""

from __future__ import annotations

import numpy as np

from garage.clusters.model import Group, Vector

TILE = 4096  # rows and columns per product: 4096 x 4096 float32 similarities is 64 MB
# Before a row has k neighbours, its k-th best among this many of a tile's columns bounds
# what can still enter, so the first tile a row meets is not kept whole.
SAMPLE = 256
_LOWEST = np.finfo(np.float32).min  # above the -inf that marks a row itself


def nearest(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the indices and similarities of its ``k`` nearest other rows, nearest
    first (ties: the lower index first)."""
    n = len(vectors)
    k = min(k, n - 1)
    if k <= 0:
        return np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0), dtype=np.float32)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    best_sim = np.full((n, k), -np.inf, dtype=np.float32)
    best_idx = np.full((n, k), -1, dtype=np.int64)
    mask = np.empty((min(n, TILE), min(n, TILE)), dtype=bool)
    for a in range(0, n, TILE):
        rows = vectors[a : a + TILE]
        for b in range(a, n, TILE):
            sims = rows @ vectors[b : b + TILE].T
            if a == b:
                np.fill_diagonal(sims, -np.inf)  # not its own neighbour
            r, c = sims.shape
            hits = mask[:r, :c]
            # Rows a.. against columns b.. (columns reach every row in increasing order, so a
            # new one that only ties the k-th best loses to the lower index already kept) ...
            np.greater_equal(sims, _entry(best_sim[a : a + r], sims, k)[:, None], out=hits)
            flat = np.flatnonzero(hits)
            _keep_best(best_sim, best_idx, a + flat // c, b + flat % c, sims.ravel()[flat])
            if a != b:
                # ... and rows b.. against columns a.., from the same product.
                np.greater_equal(sims, _entry(best_sim[b : b + c], sims.T, k)[None, :], out=hits)
                flat = np.flatnonzero(hits)
                _keep_best(best_sim, best_idx, b + flat % c, a + flat // c, sims.ravel()[flat])
    return best_idx, best_sim


def _entry(best: np.ndarray, sims: np.ndarray, k: int) -> np.ndarray:
    """Per row of ``sims``, the least similarity that can still be among its ``k`` nearest."""
    floor = best[:, -1]
    if not np.isneginf(floor).any():
        return floor
    width = min(sims.shape[1], SAMPLE)
    if width <= k:
        return np.full(len(floor), _LOWEST, dtype=np.float32)
    # The k-th best of a few columns is at most the k-th best of them all.
    sample = np.ascontiguousarray(sims[:, :width])
    cut = np.partition(sample, width - k, axis=1)[:, width - k]
    return np.maximum(np.maximum(cut, floor), _LOWEST)


def _keep_best(
    best_sim: np.ndarray, best_idx: np.ndarray, rows: np.ndarray, cols: np.ndarray,
    sims: np.ndarray,
) -> None:  # fmt: skip
    """Merge candidate (row, column, similarity) triples into each row's ``k`` best."""
    if len(rows) == 0:
        return
    k = best_sim.shape[1]
    by_row = np.argsort(rows, kind="stable")  # keeps each row's columns ascending
    rows, cols, sims = rows[by_row], cols[by_row], sims[by_row]
    touched, starts, counts = np.unique(rows, return_index=True, return_counts=True)
    # One line per touched row: its k best so far, then its candidates, padded with -inf.
    width = k + int(counts.max())
    line_sim = np.full((len(touched), width), -np.inf, dtype=np.float32)
    line_idx = np.full((len(touched), width), -1, dtype=np.int64)
    line_sim[:, :k] = best_sim[touched]
    line_idx[:, :k] = best_idx[touched]
    line = np.repeat(np.arange(len(touched)), counts)
    place = k + np.arange(len(rows)) - np.repeat(starts, counts)
    line_sim[line, place] = sims
    line_idx[line, place] = cols
    # Stable, so among equal similarities the lower index (kept earlier, or further left)
    # stays first.
    order = np.argsort(-line_sim, axis=1, kind="stable")[:, :k]
    best_sim[touched] = np.take_along_axis(line_sim, order, axis=1)
    best_idx[touched] = np.take_along_axis(line_idx, order, axis=1)


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
