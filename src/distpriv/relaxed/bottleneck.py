"""The largest W∞ over several pairs of equal-size samples, computing exactly only where it decides.

For samples X, Y of N points each (weights 1/N), W∞ (Chen & Ohrimenko Def. 4.1) is the bottleneck
assignment value min_π max_i ||X_i − Y_π(i)||₁: the least entry t of the cost matrix C_ij =
||X_i − Y_j||₁ whose threshold graph {(i, j) : C_ij <= t} has a perfect matching. Deciding
"W∞ <= t" is one maximum bipartite matching (Hopcroft–Karp,
:func:`scipy.sparse.csgraph.maximum_bipartite_matching`).

Lower bound without matching: for any v with ||v||_∞ <= 1, |vᵀ(x − y)| <= ||x − y||₁, so every
coupling of X and Y with L1 cost at most c couples vᵀX and vᵀY with cost at most c, and the 1-D
W∞ of the projections — max_i |sort(vᵀX)_i − sort(vᵀY)_i| (sorted matching is optimal in 1-D) —
is a lower bound on W∞. :func:`projection_lower_bound` takes the coordinates and, for m <= 4, the
2^(m−1) sign vectors.

:func:`max_w_infinity` visits the pairs by decreasing lower bound; a pair whose bound does not
exceed the largest W∞ found so far needs one decision ("W∞ <= best?"), and only a pair that exceeds
it is computed exactly (:func:`w_infinity_equal`: a binary search over the cost values >= its lower
bound, usually one or two matchings). The result is the exact maximum — the same value as the
maximum of :func:`distpriv.distances.w_infinity_samples` over the pairs — at a fraction of the cost
when there are many pairs (a grid Ψ).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching
from scipy.spatial.distance import cdist

from .. import distances

FloatArray = NDArray[np.float64]


def _directions(m: int) -> list[FloatArray]:
    out = [np.eye(m)[k] for k in range(m)]
    if 2 <= m <= 4:
        for signs in itertools.product((1.0, -1.0), repeat=m - 1):
            out.append(np.array((1.0, *signs)))
    return out


def projection_lower_bound(x: FloatArray, y: FloatArray) -> float:
    """max over directions v (||v||_∞ <= 1) of the 1-D W∞ of vᵀX and vᵀY: a lower bound on the L1 W∞."""
    return max(float(np.abs(np.sort(x @ v) - np.sort(y @ v)).max()) for v in _directions(x.shape[1]))


def _cost(x: FloatArray, y: FloatArray) -> FloatArray:
    """L1 cost matrix, computed as :mod:`distpriv.distances` does (the same floats)."""
    if x.shape[1] == 1:
        return np.asarray(np.abs(x[:, 0][:, None] - y[:, 0][None, :]))
    return np.asarray(cdist(x, y, metric="cityblock"))


def _perfect(cost: FloatArray, t: float) -> bool:
    """Does {(i, j) : cost_ij <= t} have a perfect matching (Hopcroft–Karp)?"""
    mask = cost <= t
    if not mask.any(axis=1).all() or not mask.any(axis=0).all():
        return False
    match = maximum_bipartite_matching(csr_array(mask.astype(np.int8)), perm_type="column")
    return bool((match >= 0).all())


def w_infinity_equal(x: FloatArray, y: FloatArray, *, lower: float = 0.0) -> float:
    """Exact L1 W∞ of two samples of the same size (bottleneck assignment), given a lower bound ``lower``.

    Binary search over the distinct cost values >= ``lower`` (the largest is always feasible),
    one perfect-matching test per step.
    """
    cost = _cost(x, y)
    vals = np.unique(cost[cost >= lower])
    lo, hi = -1, vals.size - 1  # vals[hi] feasible; vals[lo] infeasible (lo = -1: below every value)
    if vals.size and _perfect(cost, float(vals[0])):
        return float(vals[0])
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _perfect(cost, float(vals[mid])):
            hi = mid
        else:
            lo = mid
    return float(vals[hi])


def max_w_infinity(pairs: Sequence[tuple[FloatArray, FloatArray]]) -> float:
    """max over ``pairs`` of the L1 W∞ between the two samples of each pair (exact; see the module docstring).

    Pairs of unequal sizes are computed by :func:`distpriv.distances.w_infinity_samples`.
    """
    if not pairs:
        raise ValueError("pairs: give at least one pair of samples")
    best = -np.inf
    equal = []
    for x, y in pairs:
        xa, ya = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
        if xa.shape != ya.shape:
            best = max(best, float(distances.w_infinity_samples(xa, ya, norm=1)))
        else:
            equal.append((projection_lower_bound(xa, ya), xa, ya))
    for lb, xa, ya in sorted(equal, key=lambda t: -t[0]):
        if xa.shape[1] == 1:  # 1-D: the sorted matching is exact
            best = max(best, lb)
            continue
        if lb <= best and _perfect(_cost(xa, ya), float(best)):
            continue  # W∞ of this pair <= best
        # the search starts a little below the bounds: they are floating-point values of other sums
        low = max(lb, best) if np.isfinite(best) else lb
        best = max(best, w_infinity_equal(xa, ya, lower=low - 1e-9 * max(1.0, abs(low))))
    return float(best)
