"""The tiled nearest-neighbour search against every pair compared, where ties are many: small
integer vectors make similarities exact and often equal, and the rule is the lower index first."""

from __future__ import annotations

import numpy as np
import pytest

from garage.clusters import neighbours


def _every_pair(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    sims = vectors.astype(np.float64) @ vectors.astype(np.float64).T
    np.fill_diagonal(sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(sims, order, axis=1).astype(np.float32)


@pytest.mark.parametrize("tile, sample", [(5, 3), (7, 30), (64, 24)])
def test_tiled_search_equals_every_pair_ties_to_the_lower_index(tile: int, sample: int) -> None:
    rng = np.random.default_rng(tile)
    vectors = rng.integers(-2, 3, size=(150, 12)).astype(np.float32)
    vectors[40:45] = vectors[3]  # the same vector several times
    expected_idx, expected_sim = _every_pair(vectors, 20)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(neighbours, "TILE", tile)
        patch.setattr(neighbours, "SAMPLE", sample)
        found_idx, found_sim = neighbours.nearest(vectors, 20)
    assert np.array_equal(found_sim, expected_sim)
    assert np.array_equal(found_idx, expected_idx)


def test_fewer_rows_than_neighbours() -> None:
    vectors = np.eye(4, dtype=np.float32)
    indices, similarities = neighbours.nearest(vectors, 20)
    assert indices.shape == (4, 3)
    assert sorted(indices[0].tolist()) == [1, 2, 3]
    assert neighbours.nearest(vectors[:1], 20)[0].shape == (1, 0)
