"""The largest W∞ over several sample pairs (distpriv.relaxed.bottleneck) against distances.w_infinity_samples.

Cross-check of two independent computations: the max-flow bisection of :mod:`distpriv.distances` and the
projection bound + Hopcroft–Karp decisions of :mod:`distpriv.relaxed.bottleneck`, on continuous samples and
on tie-heavy (lattice) samples like the release's count statistics; and the gaps of a grid Ψ computed both
ways (``estimate_gaps(max_only=True)`` gives the same three maxima).
"""

from __future__ import annotations

import numpy as np
import pytest

from distpriv import distances
from distpriv.models import EmpiricalModel
from distpriv.relaxed import estimate_gaps
from distpriv.relaxed.bottleneck import max_w_infinity, projection_lower_bound, w_infinity_equal


def _pairs(kind: str, seed: int, n: int = 120, m: int = 2, count: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    g = np.random.default_rng(seed)
    out = []
    for k in range(count):
        if kind == "lattice":  # many equal costs: integer coordinates
            x = np.round(g.normal(0, 3, (n, m)))
            y = np.round(g.normal(0.3 * k, 3 + 0.2 * k, (n, m)))
        else:
            x = g.standard_normal((n, m)) * np.linspace(1.0, 0.5, m)
            y = g.standard_normal((n, m)) * (1 + 0.1 * k) + 0.2 * k
        out.append((x, y))
    return out


@pytest.mark.parametrize("kind", ["continuous", "lattice"])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_max_w_infinity_equals_the_max_of_exact_bottlenecks(kind: str, m: int) -> None:
    pairs = _pairs(kind, 7 + m, m=m)
    exact = [distances.w_infinity_samples(x, y, norm=1) for x, y in pairs]
    for (x, y), w in zip(pairs, exact, strict=True):
        assert projection_lower_bound(x, y) <= w * (1 + 1e-12) + 1e-12
        assert w_infinity_equal(x, y) == w
    assert max_w_infinity(pairs) == max(exact)
    assert max_w_infinity(pairs[::-1]) == max(exact)


def test_unequal_sizes_fall_back_to_distances() -> None:
    g = np.random.default_rng(3)
    pairs = [(g.standard_normal((40, 2)), g.standard_normal((60, 2)) + 1.0), *_pairs("continuous", 4, n=50, count=2)]
    assert max_w_infinity(pairs) == max(distances.w_infinity_samples(x, y) for x, y in pairs)


def test_estimate_gaps_max_only_gives_the_same_maxima() -> None:
    g = np.random.default_rng(11)
    labs = [0.2, 0.3, 0.4, 0.5]
    model = EmpiricalModel({t: np.column_stack([np.round(g.normal(40 * t, 2, 150)), g.normal(t, 0.1 + t, 150)])
                            for t in labs})
    pairs = list(zip(labs[:-1], labs[1:], strict=True))
    a = estimate_gaps(model, pairs, eta=1e-4, rng=0)
    b = estimate_gaps(model, pairs, eta=1e-4, rng=0, max_only=True)
    assert (a.translation_w, a.wasserstein_w, a.max_gaussian_w) == (b.translation_w, b.wasserstein_w, b.max_gaussian_w)
    assert a.divergence == b.divergence and np.array_equal(a.pooled_covariance, b.pooled_covariance)
