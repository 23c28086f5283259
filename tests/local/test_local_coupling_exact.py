"""Exact divergences of the coupling mechanism (issue 25) against independent computations.

* :meth:`CouplingMechanism.exact_guarantee` (actual λ_s known) equals the divergences of λ_s C(s, ·)
  computed here by hand; the "Why" figure: Theorem 3 claims a median 2.1× (D∞) and > 100× (KL) that.
* :meth:`CouplingMechanism.worst_case` (only the accuracy ε known) against a brute force written here:
  the vertices of the accuracy ball found by scipy's linprog with random objectives, and per-output
  linear programmes for D∞.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize

from distpriv import local


def own_div(name: str, p: np.ndarray, q: np.ndarray) -> float:
    """Table I of the divergence paper, written out."""
    if name == "max":
        m = p > 0
        return math.inf if np.any(q[m] <= 0) else max(0.0, float(np.max(np.log(p[m] / q[m]))))
    if name == "kl":
        m = p > 0
        return math.inf if np.any(q[m] <= 0) else float(np.sum(p[m] * np.log(p[m] / q[m])))
    if name == "reverse-kl":
        return own_div("kl", q, p)
    if name == "tv":
        return 0.5 * float(np.abs(p - q).sum())
    if name == "chi2":
        return float(np.sum((p - q) ** 2 / q))
    if name == "hellinger":
        return 0.5 * float(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2))
    raise ValueError(name)


def instance(seed: int, n: int = 5, m: int = 4, size: int = 60):
    """True λ_s, estimates λ̂_s from ``size`` samples (add-one smoothing), target μ, W1-optimal coupling mechanism."""
    rng = np.random.default_rng(seed)
    cost = rng.uniform(0, 1, size=(n, m))
    true = {s: rng.dirichlet(np.ones(n) * 2) for s in ("a", "b")}
    est = {s: (np.bincount(rng.choice(n, size=size, p=true[s]), minlength=n) + 1.0) / (size + n) for s in true}
    mu = rng.dirichlet(np.ones(m) * 2)
    return local.CouplingMechanism.optimal(inputs=est, target=mu, cost=cost), true, est


@pytest.mark.parametrize("seed", range(4))
def test_exact_guarantee_equals_the_divergence_of_the_lifted_distributions(seed: int) -> None:
    c, true, _ = instance(seed)
    pa, pb = true["a"] @ c.matrix("a"), true["b"] @ c.matrix("b")
    for name in ("max", "kl", "reverse-kl", "tv", "chi2", "hellinger"):
        g = c.exact_guarantee(true, name)
        want = max(own_div(name, pa, pb), own_div(name, pb, pa))
        assert g.epsilon == pytest.approx(want, rel=1e-10, abs=1e-14)
        assert g.calibration == "exact" and (g.divergence is None) == (name == "max")
    # (ε, δ): the least ε of the hockey-stick profile, checked at the claimed ε by own sums
    g = c.exact_guarantee(true, "max", delta=0.01)
    e = math.exp(g.epsilon)
    assert max(np.maximum(pa - e * pb, 0).sum(), np.maximum(pb - e * pa, 0).sum()) <= 0.01 + 1e-12


def test_why_theorem3_is_far_above_the_exact_divergence() -> None:
    """The issue's figure (check-in sweep: 2.1× for D∞, 147× for KL) on small synthetic sweeps."""
    rd, rk = [], []
    for seed in range(12):
        c, true, _ = instance(seed, n=8, m=6, size=200)
        acc = c.estimation_epsilon(true)
        rd.append(local.coupling_theorem3(acc, "max") / c.exact_guarantee(true, "max").epsilon)
        rk.append(local.coupling_theorem3(acc, "kl") / c.exact_guarantee(true, "kl").epsilon)
    assert np.median(rd) > 1.5 and np.median(rk) > 20
    assert min(rd) >= 1.0 - 1e-12 and min(rk) >= 1.0 - 1e-12  # Theorem 3 is a valid bound


def ball_vertices_by_linprog(lam_hat: np.ndarray, eps: float, rng: np.random.Generator, tries: int = 100):
    lo, up = lam_hat * math.exp(-eps), np.minimum(lam_hat * math.exp(eps), 1.0)
    found = set()
    for _ in range(tries):
        r = optimize.linprog(rng.normal(size=lam_hat.size), A_eq=np.ones((1, lam_hat.size)), b_eq=[1.0],
                             bounds=list(zip(lo, up, strict=True)), method="highs")
        found.add(tuple(np.round(r.x, 12)))
    return np.array(sorted(found)), lo, up


@pytest.mark.parametrize("seed", range(3))
def test_worst_case_over_the_accuracy_ball_against_brute_force(seed: int) -> None:
    c, true, est = instance(seed, n=5, m=4, size=40)
    eps = c.estimation_epsilon(true)
    rng = np.random.default_rng(100 + seed)
    va, lo_a, up_a = ball_vertices_by_linprog(est["a"], eps, rng)
    vb, lo_b, up_b = ball_vertices_by_linprog(est["b"], eps, rng)
    pa, pb = va @ c.matrix("a"), vb @ c.matrix("b")
    for name in ("kl", "reverse-kl", "tv", "chi2", "hellinger", "max"):
        brute = max(max(own_div(name, x, y), own_div(name, y, x)) for x in pa for y in pb)
        wc = c.worst_case(eps, name)
        assert wc.exact
        assert wc.upper >= brute * (1 - 1e-9) - 1e-12  # sound: every vertex pair is below the claim
        assert wc.upper <= brute * 1.01 + 1e-12  # tight: the claim is (within 1%) attained
        g = c.guarantee(eps, name)
        assert g.epsilon == pytest.approx(wc.upper) and g.epsilon <= local.coupling_theorem3(eps, name) * (1 + 1e-12)
        # the actual λ_s lie in the balls, so their exact divergence is below the claim too
        assert c.exact_guarantee(true, name).epsilon <= g.epsilon * (1 + 1e-9) + 1e-12
    # D∞ by per-output linear programmes (independent of the greedy rule)
    worst = 0.0
    for y in range(c.n_outputs):
        hi = -optimize.linprog(-c.matrix("a")[:, y], A_eq=np.ones((1, 5)), b_eq=[1.0],
                               bounds=list(zip(lo_a, up_a, strict=True)), method="highs").fun
        low = optimize.linprog(c.matrix("b")[:, y], A_eq=np.ones((1, 5)), b_eq=[1.0],
                               bounds=list(zip(lo_b, up_b, strict=True)), method="highs").fun
        worst = max(worst, math.log(hi / low))
        hi2 = -optimize.linprog(-c.matrix("b")[:, y], A_eq=np.ones((1, 5)), b_eq=[1.0],
                                bounds=list(zip(lo_b, up_b, strict=True)), method="highs").fun
        low2 = optimize.linprog(c.matrix("a")[:, y], A_eq=np.ones((1, 5)), b_eq=[1.0],
                                bounds=list(zip(lo_a, up_a, strict=True)), method="highs").fun
        worst = max(worst, math.log(hi2 / low2))
    assert c.worst_case(eps, "max").upper == pytest.approx(worst, rel=1e-9)


def test_large_domain_gives_a_certified_bracket(monkeypatch: pytest.MonkeyPatch) -> None:
    from distpriv.local import coupling_accounting as ca

    monkeypatch.setattr(ca, "SECTOR_NODES", 8)  # soundness here; tightness in test_sector_branch_and_bound_*
    c, true, est = instance(5, n=20, m=10, size=400)
    eps = c.estimation_epsilon(true)
    wc = c.worst_case(eps, "kl")
    assert not wc.exact and wc.lower <= wc.upper
    assert c.exact_guarantee(true, "kl").epsilon <= wc.upper
    g = c.guarantee(eps, "kl")
    assert g.epsilon <= local.coupling_theorem3(eps, "kl")
    assert "bracket" in g.notes[0]
    # the chord bound of the likelihood-ratio range is at most ln M = the exact worst-case D∞ (KL <= D∞)
    assert g.epsilon <= c.worst_case(eps, "max").upper * (1 + 1e-9)
    for name in ("reverse-kl", "tv", "chi2", "hellinger"):
        h = c.worst_case(eps, name)
        assert h.lower <= h.upper <= local.coupling_theorem3(eps, name)
        assert c.exact_guarantee(true, name).epsilon <= h.upper


@pytest.mark.slow
def test_why_figure_on_the_checkin_sweep() -> None:
    """The issue's numbers on `distpriv reproduce kawamoto-coupling --quick`: Theorem 3 is a median 2.1× (D∞)
    and > 100× (KL) above the exact divergence of the lifted distributions (what exact_guarantee claims)."""
    from distpriv.experiments import kawamoto_coupling as kc

    rows = kc.run_kawamoto_coupling(quick=True, show_progress=False)["sweep"]["rows"]
    rd = [r["bound_dinf"] / r["exact_dinf"] for r in rows]
    rk = [r["bound_kl"] / r["exact_kl"] for r in rows]
    assert 1.9 < float(np.median(rd)) < 2.3
    assert float(np.median(rk)) > 100


def _bracket_case(seed: int):
    from distpriv.local import coupling_accounting as ca

    c, true, _ = instance(seed, n=7, m=5, size=60)
    eps = c.estimation_epsilon(true)
    mats = {s: np.asarray(c.matrix(s)) for s in c.contexts}
    balls = {s: ca.ball(c.input_estimate(s), eps) for s in c.contexts}
    verts = {s: ca.vertices(*balls[s]) for s in c.contexts}
    return ca, c, eps, mats, balls, verts


@pytest.mark.parametrize("seed", range(3))
def test_lagrangian_bound_is_sound_and_tighter(seed: int) -> None:
    """The Lagrangian bound (issue 25) is above every vertex pair (brute force) and below the corner bound."""
    ca, c, eps, mats, balls, verts = _bracket_case(seed)
    s, t = c.contexts[:2]
    for name in ("kl", "chi2", "hellinger", "tv", "reverse-kl"):
        for a, b in ((s, t), (t, s)):
            lag = ca._lagrangian_bound(name, mats[a], mats[b], balls[a], balls[b])
            brute = max(own_div(name, x, y) for x in verts[a] @ mats[a] for y in verts[b] @ mats[b])
            lifts = [ca.extreme_lift(m, *balls[k], maximise=mx) for m, k in ((mats[a], a), (mats[b], b))
                     for mx in (False, True)]
            corner = ca._box_bound(name, *lifts)
            assert brute * (1 - 1e-9) - 1e-12 <= lag <= corner * (1 + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
def test_bracket_contains_the_exact_worst_case(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the bracket path (vertex enumeration off) where the exact value is known: sound, and within 1.01×
    (issue 25: the KL claim was up to 1.11× beyond 12 free inputs, then 1.07×; the ratio-sector branch and
    bound stops at a 0.95% bracket)."""
    ca, c, eps, *_ = _bracket_case(seed)
    names = ("kl", "chi2", "hellinger", "tv")
    exact = {name: c.worst_case(eps, name) for name in names}
    assert all(w.exact for w in exact.values())
    monkeypatch.setattr(ca, "MAX_FREE", 0)
    for name in names:
        wc = c.worst_case(eps, name)
        assert not wc.exact
        assert wc.lower <= exact[name].upper * (1 + 1e-9) and wc.upper >= exact[name].upper * (1 - 1e-9)
        assert wc.upper <= exact[name].upper * 1.01


def own_vertices(lo: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Every vertex of {lo <= λ <= up, Σλ = 1}: all coordinates at a bound but one, which takes the rest."""
    n = lo.size
    out = []
    for free in range(n):
        others = [i for i in range(n) if i != free]
        for bits in itertools.product((0, 1), repeat=n - 1):
            v = lo.copy()
            for i, b in zip(others, bits, strict=True):
                v[i] = up[i] if b else lo[i]
            v[free] = 1.0 - (v.sum() - v[free])
            if lo[free] - 1e-12 <= v[free] <= up[free] + 1e-12:
                out.append(v)
    return np.array(out)


@pytest.mark.parametrize("seed", range(3))
def test_sector_branch_and_bound_is_sound_and_within_1_percent(seed: int) -> None:
    """The ratio-sector branch and bound (issue 25's 1.01× goal) against a brute force over every vertex pair of
    the accuracy balls (joint convexity: the supremum is at a vertex pair), one ordered pair, n = 8 inputs."""
    from distpriv.local import coupling_accounting as ca

    c, true, est = instance(40 + seed, n=8, m=5, size=60)
    eps = c.estimation_epsilon(true)
    ma, mb = np.asarray(c.matrix("a")), np.asarray(c.matrix("b"))
    ba = (est["a"] * math.exp(-eps), np.minimum(est["a"] * math.exp(eps), 1.0))
    bb = (est["b"] * math.exp(-eps), np.minimum(est["b"] * math.exp(eps), 1.0))
    pa, pb = own_vertices(*ba) @ ma, own_vertices(*bb) @ mb
    x, y = pa[:, None, :], pb[None, :, :]  # every vertex pair, Table I written out (all entries > 0 here)
    table = {"kl": (x * np.log(x / y)).sum(axis=2), "reverse-kl": (y * np.log(y / x)).sum(axis=2),
             "chi2": ((x - y) ** 2 / y).sum(axis=2), "hellinger": 0.5 * ((np.sqrt(x) - np.sqrt(y)) ** 2).sum(axis=2)}
    assert pa.min() > 0 and pb.min() > 0
    for name in ("kl", "chi2", "hellinger", "reverse-kl"):
        brute = float(table[name].max())
        lo, hi = ca._sector_branch_and_bound(name, ma, mb, ba, bb, 0.0, math.inf, nodes=3000, gap=0.008)
        assert lo <= brute * (1 + 1e-9)  # the lower end is the value at a point of the balls
        assert hi >= brute * (1 - 1e-9)  # sound
        assert hi <= brute * 1.01 and hi <= lo * 1.008 * (1 + 1e-12)


def test_bracket_over_both_orders_is_sound_against_every_vertex_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bracket path refines the ordered pairs of contexts against the best lower end of all of them (issue 25):
    its claim still covers the brute-force maximum over every vertex pair in both orders, within 1.01×."""
    from distpriv.local import coupling_accounting as ca

    c, true, est = instance(7, n=6, m=4, size=60)
    eps = c.estimation_epsilon(true)
    ma, mb = np.asarray(c.matrix("a")), np.asarray(c.matrix("b"))
    va = own_vertices(est["a"] * math.exp(-eps), np.minimum(est["a"] * math.exp(eps), 1.0)) @ ma
    vb = own_vertices(est["b"] * math.exp(-eps), np.minimum(est["b"] * math.exp(eps), 1.0)) @ mb
    monkeypatch.setattr(ca, "MAX_FREE", 0)
    for name in ("kl", "hellinger"):
        brute = max(max(own_div(name, x, y), own_div(name, y, x)) for x in va for y in vb)
        wc = c.worst_case(eps, name)
        assert not wc.exact
        assert wc.lower <= brute * (1 + 1e-9) and wc.upper >= brute * (1 - 1e-9)
        assert wc.upper <= brute * 1.01


def test_solver_points_are_put_back_into_the_accuracy_ball() -> None:
    """Review finding: the branch and bound's lower end was the divergence at the solver's point clipped to the box,
    whose sum could be 1 − 2e-8 (outside the ball), so the reported lower end exceeded the exact supremum by
    1.6e-7. ``_into_ball`` returns a point of {lo <= λ <= up, Σλ = 1}."""
    from distpriv.local import coupling_accounting as ca

    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        est = rng.dirichlet(np.ones(n))
        eps = float(rng.uniform(0.05, 2.0))
        lo, up = est * math.exp(-eps), np.minimum(est * math.exp(eps), 1.0)
        x = est + rng.normal(0, float(rng.choice([1e-8, 1e-3, 0.3])), n)  # a solver's slightly infeasible point
        y = ca._into_ball(x, lo, up)
        assert np.all(y >= lo) and np.all(y <= up)
        assert abs(float(y.sum()) - 1.0) <= 1e-14


def _brute_both_orders(name: str, c, est: dict, eps: float) -> float:
    """max of D over every vertex pair of the two accuracy balls, both orders (vertices written out here)."""
    ma, mb = np.asarray(c.matrix("a")), np.asarray(c.matrix("b"))
    va = own_vertices(est["a"] * math.exp(-eps), np.minimum(est["a"] * math.exp(eps), 1.0)) @ ma
    vb = own_vertices(est["b"] * math.exp(-eps), np.minimum(est["b"] * math.exp(eps), 1.0)) @ mb
    best = 0.0
    for k in range(0, va.shape[0], 64):
        x, y = va[k:k + 64, None, :], vb[None, :, :]
        if name == "hellinger":
            table = 0.5 * ((np.sqrt(x) - np.sqrt(y)) ** 2).sum(axis=2)  # symmetric in (x, y): both orders at once
        else:
            table = 0.5 * np.abs(x - y).sum(axis=2)
        best = max(best, float(table.max()))
    return best


@pytest.mark.parametrize("seed", [3, 7])
def test_symmetric_divergences_on_the_family_of_the_hellinger_outlier(seed: int, monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    """Issue 25: the benchmark's 24-input, 10-output Hellinger bracket ended at 1.018× its lower end. Hellinger and TV
    are symmetric, so each unordered pair of contexts is refined once (with the two orders' budget). A small member of
    the same family (bench_coupling's generator, 10 outputs, 400 samples, 9 inputs, bracket path forced) against every
    vertex pair in both orders: sound, and within 1.01× the exact supremum and the certified lower end."""
    from distpriv.local import coupling_accounting as ca

    c, true, est = instance(seed, n=9, m=10, size=400)
    eps = c.estimation_epsilon(true)
    monkeypatch.setattr(ca, "MAX_FREE", 0)
    for name in ("hellinger", "tv"):
        brute = _brute_both_orders(name, c, est, eps)
        wc = c.worst_case(eps, name)
        assert not wc.exact and "symmetric" in wc.method
        assert wc.lower <= brute * (1 + 1e-9) and wc.upper >= brute * (1 - 1e-9)
        assert wc.upper <= brute * 1.01 and wc.upper <= wc.lower * 1.01


def test_a_pair_wider_than_the_goal_gets_more_nodes() -> None:
    """Issue 25: a pair whose bracket is still wider than 0.99% at the node budget is refined further (at most
    ``extra`` nodes), until it is within the goal; checked against every vertex pair (8 inputs, Hellinger)."""
    from distpriv.local import coupling_accounting as ca

    c, true, est = instance(41, n=8, m=5, size=60)
    eps = c.estimation_epsilon(true)
    ma, mb = np.asarray(c.matrix("a")), np.asarray(c.matrix("b"))
    ba = (est["a"] * math.exp(-eps), np.minimum(est["a"] * math.exp(eps), 1.0))
    bb = (est["b"] * math.exp(-eps), np.minimum(est["b"] * math.exp(eps), 1.0))
    brute = _brute_both_orders("hellinger", c, est, eps)
    lo0, hi0 = ca._sector_branch_and_bound("hellinger", ma, mb, ba, bb, 0.0, math.inf, nodes=3, gap=0.0)
    assert hi0 > lo0 * 1.0099  # the budget alone leaves the bracket wider than the goal
    lo, hi = ca._sector_branch_and_bound("hellinger", ma, mb, ba, bb, 0.0, math.inf, nodes=3, gap=0.0,
                                         extra=4000, goal=0.0099)
    assert lo <= brute * (1 + 1e-9) and hi >= brute * (1 - 1e-9)
    assert hi <= lo * 1.0099 * (1 + 1e-12)


@pytest.mark.slow
def test_the_24_input_hellinger_outlier_is_within_1_percent() -> None:
    """Regression (issue 25): bench_coupling's 24-input, 10-output instance (seed 7) claimed Hellinger 1.018× its
    certified lower end (the node budget ran out in each order); now within 1.01× (about 6 CPU s)."""
    c, true, _ = instance(7, n=24, m=10, size=400)
    eps = c.estimation_epsilon(true)
    wc = c.worst_case(eps, "hellinger")
    assert not wc.exact
    assert c.exact_guarantee(true, "hellinger").epsilon <= wc.upper
    assert wc.upper <= wc.lower * 1.01
