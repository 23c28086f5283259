"""Tests for distpriv.distances: W∞, (W, δ)-closeness and p-Wasserstein.

Reference values come from an independent formulation: a full coupling LP
(equality marginals, scipy linprog) restricted to / maximising mass on the
thresholded support, binary searched over the sorted pairwise distances.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial.distance import cdist

from distpriv import distances as D
from distpriv.errors import InvalidParameterError, InvalidTypeError

FIG1_X = [1.0, 2.0, 3.0, 100.0]
FIG1_MU = [0.6, 0.2, 0.0, 0.2]
FIG1_NU = [0.4, 0.3, 0.2, 0.1]

METRIC = {1: "cityblock", 2: "euclidean", math.inf: "chebyshev"}


# --------------------------------------------------------------------------- reference solver
def _max_coupled_mass(cost: np.ndarray, p: np.ndarray, q: np.ndarray, t: float) -> float:
    """max γ({d <= t}) over full couplings γ ∈ Γ(p, q) (equality marginals) — Section 4.1 verbatim."""
    n, k = cost.shape
    a_eq = np.zeros((n + k, n * k))
    for i in range(n):
        a_eq[i, i * k : (i + 1) * k] = 1.0
    for j in range(k):
        a_eq[n + j, j::k] = 1.0
    c = -(cost <= t).astype(float).ravel()
    res = linprog(c, A_eq=a_eq, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert res.status == 0
    return -float(res.fun)


def _reference_radius(cost: np.ndarray, p: np.ndarray, q: np.ndarray, delta: float) -> float:
    vals = np.unique(cost)
    lo, hi = -1, vals.size - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _max_coupled_mass(cost, p, q, vals[mid]) >= 1 - delta - 1e-9:
            hi = mid
        else:
            lo = mid
    return float(vals[hi])


def _random_instance(
    rng: np.random.Generator, n: int, k: int, m: int, *, integer_points: bool = False
):
    if integer_points:  # many ties between pairwise distances
        xs = rng.integers(0, 4, size=(n, m)).astype(float)
        ys = rng.integers(0, 4, size=(k, m)).astype(float)
    else:
        xs = rng.normal(size=(n, m))
        ys = rng.normal(size=(k, m)) + 0.3
    p = rng.random(n) + 0.05
    q = rng.random(k) + 0.05
    return xs, p / p.sum(), ys, q / q.sum()


# --------------------------------------------------------------------------- Figure 1
def test_figure1_w_infinity_is_97():
    assert D.w_infinity(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU) == 97.0
    assert D.w_infinity(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, method="general") == 97.0
    # embedded in R^3 (second and third coordinates zero) with every ground norm
    pts = np.column_stack([FIG1_X, np.zeros(4), np.zeros(4)])
    for norm in (1, 2, math.inf):
        assert D.w_infinity(pts, FIG1_MU, pts, FIG1_NU, norm=norm) == 97.0
    assert D.w_infinity_from_cost(cdist(pts, pts, "cityblock"), FIG1_MU, FIG1_NU) == 97.0


def test_figure1_closeness_radius_is_1_at_delta_0_1():
    assert D.closeness_radius(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, 0.1) == 1.0
    assert D.closeness_radius(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, 0.5) == 0.0
    # δ < 0.1: mass 0.1 at 100 must travel to {1, 2, 3}, so only W = 97 works
    assert D.closeness_radius(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, 0.09) == 97.0
    # not (W, 0.1)-close for any W < 1: a full coupling puts at most 0.7 mass at distance 0
    cost = np.abs(np.subtract.outer(FIG1_X, FIG1_X))
    p, q = np.array(FIG1_MU), np.array(FIG1_NU)
    assert _max_coupled_mass(cost, p, q, 0.999) == pytest.approx(0.7, abs=1e-9)
    assert _max_coupled_mass(cost, p, q, 1.0) == pytest.approx(0.9, abs=1e-9)
    assert D.closeness_radius_from_cost(cost, p, q, 0.1) == 1.0
    assert D.closeness_radius_from_cost(cost, p, q, 0.3) == 0.0
    assert D.closeness_radius_from_cost(cost, p, q, 0.29) == 1.0


def test_figure1_real_weight_oracle(monkeypatch):
    """The LP (real-weight) oracle gives the same answers as the integer one."""
    monkeypatch.setattr(D, "_integer_weights", lambda p, q, tol: None)
    assert D.w_infinity(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, method="general") == 97.0
    assert D.w_infinity(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU) == 97.0  # float quantile path
    assert D.closeness_radius(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, 0.1) == 1.0
    assert D.closeness_radius(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, 0.09) == 97.0


# --------------------------------------------------------------------------- agreement with the reference LP
@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("norm", [1, 2, math.inf])
def test_w_infinity_matches_reference_lp(m, norm):
    rng = np.random.default_rng(100 + 10 * m + (3 if norm == math.inf else norm))
    for trial in range(4):
        n, k = rng.integers(2, 7, size=2)
        xs, p, ys, q = _random_instance(rng, int(n), int(k), m, integer_points=trial % 2 == 1)
        cost = cdist(xs, ys, METRIC[norm])
        ref = _reference_radius(cost, p, q, 0.0)
        assert D.w_infinity(xs, p, ys, q, norm=norm, method="general") == ref
        assert D.w_infinity(xs, p, ys, q, norm=norm) == ref
        assert D.w_infinity_from_cost(cost, p, q) == ref


@pytest.mark.parametrize("delta", [0.05, 0.2, 0.5])
def test_closeness_radius_matches_reference_lp(delta):
    rng = np.random.default_rng(int(delta * 1000))
    for trial in range(6):
        m = 1 + trial % 3
        n, k = rng.integers(2, 7, size=2)
        xs, p, ys, q = _random_instance(rng, int(n), int(k), m, integer_points=trial % 2 == 0)
        cost = cdist(xs, ys, "cityblock")
        ref = _reference_radius(cost, p, q, delta)
        assert D.closeness_radius(xs, p, ys, q, delta) == ref
        assert D.closeness_radius_from_cost(cost, p, q, delta) == ref


def test_rational_weights_integer_and_lp_oracles_agree(monkeypatch):
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(6):
        n, k = rng.integers(2, 9, size=2)
        a = rng.integers(1, 5, size=n)
        b = rng.integers(1, 5, size=k)
        cost = rng.integers(0, 6, size=(n, k)).astype(float)  # heavy ties
        cases.append((cost, a / a.sum(), b / b.sum()))
    exact = [
        [D.closeness_radius_from_cost(c, p, q, d) for d in (0.0, 0.1, 0.3)] for c, p, q in cases
    ]
    monkeypatch.setattr(D, "_integer_weights", lambda p, q, tol: None)
    lp = [[D.closeness_radius_from_cost(c, p, q, d) for d in (0.0, 0.1, 0.3)] for c, p, q in cases]
    assert exact == lp
    ref = [[_reference_radius(c, p, q, d) for d in (0.0, 0.1, 0.3)] for c, p, q in cases]
    assert exact == ref


def test_closeness_radius_delta_zero_equals_w_infinity_and_is_monotone():
    rng = np.random.default_rng(11)
    for m in (1, 2, 4):
        xs, p, ys, q = _random_instance(rng, 12, 9, m)
        w = D.w_infinity(xs, p, ys, q)
        assert D.closeness_radius(xs, p, ys, q, 0.0) == w
        radii = [D.closeness_radius(xs, p, ys, q, d) for d in (0.0, 0.01, 0.1, 0.3, 0.6, 0.9)]
        assert all(r1 >= r2 for r1, r2 in itertools.pairwise(radii))
        assert radii[0] == w and radii[-1] < w


# --------------------------------------------------------------------------- one dimension
def test_one_dimensional_fast_path_equals_general_algorithm():
    rng = np.random.default_rng(3)
    for trial in range(25):
        n, k = rng.integers(1, 30, size=2)
        if trial % 3 == 0:  # ties and duplicated support points
            x = rng.integers(0, 6, size=n).astype(float)
            y = rng.integers(0, 6, size=k).astype(float)
        else:
            x, y = rng.normal(size=n), rng.normal(size=k) * 1.5
        p = rng.random(n) + 0.01
        q = rng.random(k) + 0.01
        p, q = p / p.sum(), q / q.sum()
        fast = D.w_infinity(x, p, y, q, method="quantile")
        assert fast == D.w_infinity(x, p, y, q, method="general")
        if trial % 2 == 0:  # rational weights (integer quantile breakpoints)
            a, b = rng.integers(1, 4, size=n), rng.integers(1, 4, size=k)
            pa, qb = a / a.sum(), b / b.sum()
            assert D.w_infinity(x, pa, y, qb) == D.w_infinity(x, pa, y, qb, method="general")


def test_one_dimensional_samples_fast_path_equals_general():
    rng = np.random.default_rng(5)
    for n, k in [(40, 40), (30, 45), (17, 23), (50, 1), (8, 64)]:
        x = rng.exponential(size=n)
        y = rng.normal(size=k)
        fast = D.w_infinity_samples(x, y)
        assert fast == D.w_infinity_samples(x, y, method="general")
        assert fast == D.w_infinity(x, np.full(n, 1 / n), y, np.full(k, 1 / k), method="general")
    # equal sizes: W∞ of sorted samples is max |x_(i) − y_(i)|
    x, y = rng.normal(size=100), rng.normal(size=100)
    assert D.w_infinity_samples(x, y) == np.max(np.abs(np.sort(x) - np.sort(y)))


def test_samples_bottleneck_assignment_brute_force():
    rng = np.random.default_rng(9)
    for m in (2, 3):
        for _ in range(3):
            x = rng.normal(size=(6, m))
            y = rng.normal(size=(6, m))
            cost = cdist(x, y, "cityblock")
            brute = min(
                max(cost[i, perm[i]] for i in range(6)) for perm in itertools.permutations(range(6))
            )
            assert D.w_infinity_samples(x, y) == brute
            assert D.closeness_radius_samples(x, y, 0.0) == brute
            # dropping one of six points: δ = 1/6 allows a matching of size 5
            brute5 = min(
                sorted(cost[i, perm[i]] for i in range(6))[4]
                for perm in itertools.permutations(range(6))
            )
            assert D.closeness_radius_samples(x, y, 1 / 6) == brute5


def test_samples_unequal_sizes_match_reference():
    rng = np.random.default_rng(13)
    x = rng.normal(size=(6, 2))
    y = rng.normal(size=(4, 2))
    cost = cdist(x, y, "cityblock")
    p, q = np.full(6, 1 / 6), np.full(4, 1 / 4)
    assert D.w_infinity_samples(x, y) == _reference_radius(cost, p, q, 0.0)
    assert D.closeness_radius_samples(x, y, 0.25) == _reference_radius(cost, p, q, 0.25)


# --------------------------------------------------------------------------- translations
@pytest.mark.parametrize("m", [1, 2, 5])
def test_translation_distance_is_norm_of_shift(m):
    rng = np.random.default_rng(20 + m)
    xs = rng.normal(size=(15, m))
    p = rng.random(15)
    p /= p.sum()
    c = rng.normal(size=m)
    assert D.w_infinity(xs, p, xs + c, p) == pytest.approx(np.abs(c).sum(), rel=1e-12)
    assert D.w_infinity(xs, p, xs + c, p, norm=2) == pytest.approx(np.linalg.norm(c), rel=1e-12)
    assert D.w_infinity(xs, p, xs + c, p, norm=math.inf) == pytest.approx(
        np.abs(c).max(), rel=1e-12
    )
    samples = rng.normal(size=(40, m))
    assert D.w_infinity_samples(samples, samples + c) == pytest.approx(np.abs(c).sum(), rel=1e-12)
    # translations: all p-Wasserstein distances coincide with ||c||
    assert D.wasserstein(xs, p, xs + c, p, order=1) == pytest.approx(np.abs(c).sum(), rel=1e-9)
    assert D.wasserstein(xs, p, xs + c, p, order=2, norm=2) == pytest.approx(
        np.linalg.norm(c), rel=1e-9
    )


# --------------------------------------------------------------------------- p-Wasserstein
def _w1_cdf_integral(x, p, y, q) -> float:
    """1-D W1 = ∫ |F(t) − G(t)| dt (step functions)."""
    grid = np.unique(np.concatenate([x, y]))
    f = np.array([p[x <= t].sum() for t in grid])
    g = np.array([q[y <= t].sum() for t in grid])
    return float(np.sum(np.abs(f - g)[:-1] * np.diff(grid)))


def test_wasserstein_one_dimensional_closed_forms():
    rng = np.random.default_rng(21)
    for _ in range(8):
        n, k = rng.integers(2, 15, size=2)
        x, y = rng.normal(size=n), rng.normal(size=k) + 0.5
        p, q = rng.random(n), rng.random(k)
        p, q = p / p.sum(), q / q.sum()
        ref = _w1_cdf_integral(x, p, y, q)
        assert D.wasserstein(x, p, y, q) == pytest.approx(ref, rel=1e-9, abs=1e-12)
        assert D.wasserstein(x, p, y, q, method="general") == pytest.approx(
            ref, rel=1e-9, abs=1e-12
        )
        # W2 by quantile formula equals the network simplex
        assert D.wasserstein(x, p, y, q, order=2) == pytest.approx(
            D.wasserstein(x, p, y, q, order=2, method="general"), rel=1e-9
        )
    # Figure 1: W1 = ∫|F − G| = 0.2·1 + 0.1·1 + 0.1·97 = 10
    assert D.wasserstein(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU) == pytest.approx(10.0, rel=1e-12)
    # two point masses: Wp = |a − b| for every p
    assert D.wasserstein([0.0], [1.0], [3.5], [1.0], order=3) == pytest.approx(3.5)


def test_wasserstein_ordering_and_cost_forms():
    rng = np.random.default_rng(22)
    xs, p, ys, q = _random_instance(rng, 10, 8, 3)
    w1 = D.wasserstein(xs, p, ys, q, order=1)
    w2 = D.wasserstein(xs, p, ys, q, order=2)
    winf = D.w_infinity(xs, p, ys, q)
    assert w1 <= w2 + 1e-12 <= winf + 2e-12
    cost = cdist(xs, ys, "cityblock")
    assert D.wasserstein_from_cost(cost, p, q) == pytest.approx(w1, rel=1e-12)
    assert D.wasserstein_from_cost(cost, p, q, order=2) == pytest.approx(w2, rel=1e-12)
    # W1 in R^m with L1 cost: LP reference
    n, k = cost.shape
    a_eq = np.zeros((n + k, n * k))
    for i in range(n):
        a_eq[i, i * k : (i + 1) * k] = 1.0
    for j in range(k):
        a_eq[n + j, j::k] = 1.0
    res = linprog(
        cost.ravel(), A_eq=a_eq, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs"
    )
    assert w1 == pytest.approx(res.fun, rel=1e-9)
    x2, y2 = rng.normal(size=(30, 2)), rng.normal(size=(20, 2))
    assert D.wasserstein_samples(x2, y2, order=2) == pytest.approx(
        D.wasserstein(x2, np.full(30, 1 / 30), y2, np.full(20, 1 / 20), order=2), rel=1e-9
    )
    x1, y1 = rng.normal(size=50), rng.normal(size=70)
    assert D.wasserstein_samples(x1, y1) == pytest.approx(
        D.wasserstein(x1, np.full(50, 1 / 50), y1, np.full(70, 1 / 70), method="general"), rel=1e-9
    )


# --------------------------------------------------------------------------- odds and ends
def test_zero_weight_points_are_not_in_the_support():
    # the point at 1000 has zero mass and must not count
    assert D.w_infinity([0.0, 1000.0], [1.0, 0.0], [2.0], [1.0]) == 2.0
    assert D.w_infinity([[0.0, 0.0], [1e3, 1e3]], [1.0, 0.0], [[1.0, 1.0]], [1.0]) == 2.0


def test_stable_entry_points_via_package():
    import distpriv as dp

    assert dp.distances.w_infinity(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, norm=1) == 97.0
    assert dp.distances.closeness_radius(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, 0.1) == 1.0
    assert dp.distances.wasserstein(FIG1_X, FIG1_MU, FIG1_X, FIG1_NU, order=1) == pytest.approx(
        10.0
    )


def test_cost_matrix_helper():
    x = np.array([[0.0, 0.0], [1.0, 2.0]])
    y = np.array([[3.0, 4.0]])
    assert D.cost_matrix(x, y).ravel().tolist() == [7.0, 4.0]
    assert D.cost_matrix(x, y, norm=2).ravel().tolist() == [5.0, pytest.approx(math.sqrt(8))]
    assert D.cost_matrix(x, y, norm="inf").ravel().tolist() == [4.0, 2.0]


@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [
        ({"p": [0.5, 0.6]}, InvalidParameterError, "p"),
        ({"p": [1.2, -0.2]}, InvalidParameterError, "p"),
        ({"q": [0.3, 0.3, 0.4]}, InvalidParameterError, "q"),
        ({"xs": [[0.0, 1.0], [1.0, 1.0]]}, InvalidParameterError, "dimension"),
        ({"xs": [0.0, np.nan]}, InvalidParameterError, "xs"),
        ({"ys": [np.inf, 1.0]}, InvalidParameterError, "ys"),
        ({"p": [0.5, np.nan]}, InvalidParameterError, "p"),
        ({"norm": 3}, InvalidParameterError, "norm"),
        ({"xs": np.zeros((2, 1, 1))}, InvalidTypeError, "xs"),
    ],
)
def test_validation_errors(kwargs, exc, needle):
    args = {"xs": [0.0, 1.0], "p": [0.5, 0.5], "ys": [2.0, 3.0], "q": [0.5, 0.5], "norm": 1}
    args.update(kwargs)
    with pytest.raises(exc, match=needle):
        D.w_infinity(**args)


def test_validation_delta_order_cost():
    with pytest.raises(InvalidParameterError, match="delta"):
        D.closeness_radius([0.0], [1.0], [1.0], [1.0], 1.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        D.closeness_radius([0.0], [1.0], [1.0], [1.0], -0.1)
    with pytest.raises(InvalidParameterError, match="order"):
        D.wasserstein([0.0], [1.0], [1.0], [1.0], order=0.5)
    with pytest.raises(InvalidParameterError, match="cost"):
        D.w_infinity_from_cost(np.ones((2, 3)), [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(InvalidParameterError, match="cost"):
        D.w_infinity_from_cost([[np.nan]], [1.0], [1.0])
    with pytest.raises(InvalidParameterError, match="cost"):
        D.wasserstein_from_cost([[-1.0]], [1.0], [1.0])
    with pytest.raises(InvalidParameterError, match="method"):
        D.w_infinity([[0.0, 1.0]], [1.0], [[1.0, 1.0]], [1.0], method="quantile")
    with pytest.raises(InvalidParameterError, match="Y"):
        D.w_infinity_samples(np.zeros((3, 2)), np.zeros((3, 3)))
    # weights summing to 1 within the validator tolerance are renormalised
    assert D.w_infinity([0.0, 1.0], [0.5, 0.5 + 1e-11], [0.0, 1.0], [0.5, 0.5]) == 0.0


def test_proposition_4_1_bound_on_closeness():
    """Section 4.2, Prop 4.1: if ||F − E F||_1 <= c w.p. >= 1 − δ/2 then (Δ_E + 2c, δ)-close."""
    rng = np.random.default_rng(31)
    x = rng.standard_t(3, size=(300, 3))
    y = rng.standard_t(3, size=(240, 3)) + np.array([0.2, -0.1, 0.4])
    delta = 0.1
    c = max(
        float(np.quantile(np.abs(s - s.mean(axis=0)).sum(axis=1), 1 - delta / 2, method="higher"))
        for s in (x, y)
    )
    bound = float(np.abs(x.mean(axis=0) - y.mean(axis=0)).sum()) + 2 * c
    radius = D.closeness_radius_samples(x, y, delta)
    assert radius <= bound
    assert radius < D.w_infinity_samples(x, y)


def test_one_dimensional_closeness_band_graph_is_fast():
    """Regression: scipy's maximum_bipartite_matching takes exponential time on the band-shaped
    threshold graphs of 1-D data (scipy gh-26147); the max-flow oracle does not."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    from scipy.special import ndtri

    y = x.mean() + x.std(ddof=1) * ndtri((np.arange(1, 401) - 0.5) / 400)
    r = D.closeness_radius_samples(x, y, 0.05)
    assert 0 < r < D.w_infinity_samples(x, y)
    cost = np.abs(np.subtract.outer(x, y))
    u = np.full(400, 1 / 400)
    assert r == D.closeness_radius_from_cost(cost, u, u, 0.05)


def test_from_cost_accepts_non_metric_costs():
    cost = np.array([[-1.0, 5.0], [2.0, -3.0]])
    assert D.w_infinity_from_cost(cost, [0.5, 0.5], [0.5, 0.5]) == -1.0
    assert D.w_infinity_from_cost(cost, [0.5, 0.5], [0.25, 0.75]) == 5.0
    # δ = 0.25: (0,0) and (1,1) carry 0.25 + 0.5 = 0.75 at threshold −1
    assert D.closeness_radius_from_cost(cost, [0.5, 0.5], [0.25, 0.75], 0.25) == -1.0
    # δ = 0.2: x_0 can only reach y_0 (mass 0.25) below 5
    assert D.closeness_radius_from_cost(cost, [0.5, 0.5], [0.25, 0.75], 0.2) == 5.0


def test_general_algorithm_size_guard(monkeypatch):
    monkeypatch.setattr(D, "MAX_PAIRS", 100)
    with pytest.raises(InvalidParameterError, match="MAX_PAIRS"):
        D.w_infinity_samples(np.zeros((11, 2)), np.ones((10, 2)))
    # the 1-D quantile path needs no distance matrix
    assert D.w_infinity_samples(np.zeros(11), np.ones(10)) == 1.0


@pytest.mark.parametrize("dim,n,delta", [(2, 120, 0.0), (5, 90, 0.0), (2, 150, 0.05), (3, 60, 0.2), (2, 40, 0.0)])
def test_warm_started_matching_equals_the_max_flow_bisection(dim: int, n: int, delta: float) -> None:
    """The warm-started matching search (equal sample sizes) and the plain max-flow bisection agree exactly,
    on Gaussian mixtures, with and without a mass δ left out, including inputs whose lower bound is infeasible."""
    rng = np.random.default_rng(dim * 1000 + n)
    centers = rng.normal(scale=3.0, size=(3, dim))
    x = centers[rng.integers(0, 3, n)] + rng.normal(size=(n, dim))
    y = centers[rng.integers(0, 3, n)] + rng.normal(size=(n, dim)) + 0.3
    cost = D.cost_matrix(x, y)
    u = np.full(n, 1.0 / n)
    need = math.ceil((1.0 - delta) * n - 1e-10 * n - 1e-9)
    fast = D._bottleneck_matching(cost, need, delta == 0.0)
    assert fast == D._bottleneck_maxflow(cost, u, u, delta, 1e-10)
    if delta == 0.0:
        assert fast == D.w_infinity_samples(x, y)
        lower = max(float(cost.min(axis=1).max()), float(cost.min(axis=0).max()))
        assert fast >= lower
