"""Coupling mechanisms (divergence paper Definitions 16–18, Theorem 3, Proposition 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distpriv import distances, local
from distpriv import divergences as dv
from distpriv.errors import InvalidParameterError, UnknownLabelError

LAM = np.array([0.2, 0.5, 0.3])
MU = np.array([0.3, 0.2, 0.5])
POS = np.array([1.0, 2.0, 3.0])
COST = np.abs(POS[:, None] - POS[None, :])
FIG2 = np.array([[0.2, 0.0, 0.0], [0.1, 0.2, 0.2], [0.0, 0.0, 0.3]])


def test_fig2_coupling_and_example2_mechanism() -> None:
    np.testing.assert_allclose(local.north_west_corner(LAM, MU), FIG2, atol=1e-15)
    c = local.CouplingMechanism.optimal(inputs={"s": LAM}, target=MU, cost=COST)
    m = c.matrix("s")
    assert m.shape == (3, 3)
    # Example 2: input 2 -> 1 w.p. 20 %, -> 3 w.p. 40 %
    assert m[1, 0] == pytest.approx(0.2) and m[1, 2] == pytest.approx(0.4)
    np.testing.assert_allclose(c.lift("s", LAM), MU, atol=1e-12)
    # Proposition 2: expected loss = W1 = 0.3
    assert c.expected_loss("s") == pytest.approx(0.3)
    assert distances.wasserstein_from_cost(COST, LAM, MU) == pytest.approx(0.3)


def test_w1_and_winf_optimal_couplings() -> None:
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1, size=(7, 2))
    d = local.euclidean_cost(pts)
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    g1 = local.optimal_coupling(p, q, d, kind="w1")
    np.testing.assert_allclose(g1.sum(axis=1), p, atol=1e-12)
    np.testing.assert_allclose(g1.sum(axis=0), q, atol=1e-12)
    assert float(np.sum(g1 * d)) == pytest.approx(distances.wasserstein_from_cost(d, p, q), rel=1e-9)
    ginf = local.optimal_coupling(p, q, d, kind="winf")
    np.testing.assert_allclose(ginf.sum(axis=1), p, atol=1e-9)
    assert float(d[ginf > 1e-12].max()) == pytest.approx(distances.w_infinity_from_cost(d, p, q), rel=1e-9)
    c = local.CouplingMechanism.optimal(inputs={"a": p}, target=q, cost=d, kind="winf")
    assert c.worst_case_loss("a") == pytest.approx(distances.w_infinity_from_cost(d, p, q), rel=1e-9)


def test_nwc_is_w1_optimal_on_a_line() -> None:
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 1, 8))
    d = np.abs(x[:, None] - x[None, :])
    for _ in range(3):
        p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
        g = local.north_west_corner(p, q)
        assert float(np.sum(g * d)) == pytest.approx(distances.wasserstein_from_cost(d, p, q), abs=1e-12)


def test_exact_knowledge_gives_zero_distp_and_theorem3_holds() -> None:
    rng = np.random.default_rng(2)
    n = 6
    d = local.euclidean_cost(rng.uniform(0, 1, size=(n, 2)))
    lam = {s: rng.dirichlet(np.ones(n) * 3) for s in ("a", "b")}
    mu = rng.dirichlet(np.ones(n) * 3)
    c = local.CouplingMechanism.optimal(inputs=lam, target=mu, cost=d)
    assert c.distp(lam, "max") == pytest.approx(0.0, abs=1e-9)
    assert c.distp(lam, "kl") == pytest.approx(0.0, abs=1e-9)
    # perturbed knowledge: Theorem 3 bounds dominate the exact values
    for scale in (0.05, 0.2, 0.5):
        est = {}
        for s, v in lam.items():
            w = v * np.exp(scale * rng.uniform(-1, 1, n))
            est[s] = w / w.sum()
        c = local.CouplingMechanism.optimal(inputs=est, target=mu, cost=d)
        acc = c.estimation_epsilon(lam)
        assert acc == pytest.approx(max(dv.symmetric_approx_max_divergence(est[s], lam[s]) for s in lam))
        for name in ("max", "kl", "reverse-kl", "tv", "hellinger", "chi2"):
            assert c.distp(lam, name) <= local.coupling_theorem3(acc, name) + 1e-9
            assert c.distp(lam, name) <= c.guarantee(acc, name).epsilon + 1e-9
        assert c.guarantee(acc, "kl", method="theorem").epsilon == pytest.approx(2 * acc * math.exp(acc))


def test_guarantee_forms() -> None:
    """Theorem 3: D∞ is an (ε, 0) claim; KL and the other f-divergences are divergence claims."""
    c = local.CouplingMechanism.optimal(inputs={"a": LAM, "b": MU}, target=MU, cost=COST)
    e = 0.5
    g = c.guarantee(e, "max", method="theorem")
    assert g.divergence is None and g.epsilon == pytest.approx(1.0) and g.delta == 0.0
    assert str(g) == "(1, 0)-local-distribution-privacy [Coupling(w1), theorem]"
    assert g.calibration == "theorem" and g.pairs == (("a", "b"),) and "Theorem 3(1)" in g.theorem
    kl = c.guarantee(e, "kl", method="theorem")
    assert kl.divergence == "kl" and kl.delta == 0.0 and "Theorem 3(2)" in kl.theorem
    assert str(kl) == "KL ≤ 1.649 local-distribution-privacy [Coupling(w1), theorem]"
    assert kl.to_dict()["divergence"] == "kl"
    # item 3: e^ε max(f(e^{2ε}), f(e^{−2ε})), closed forms at ε = 1/2 (e^{2ε} = e)
    r = math.exp(0.5)
    expected = {
        "tv": r * 0.5 * (math.e - 1),
        "chi2": r * (math.e - 1) ** 2,
        "hellinger": r * 0.5 * (r - 1) ** 2,
        "reverse-kl": r * 1.0,  # f(t) = −ln t is largest at e^{−2ε}: 2ε e^ε, as for KL
    }
    for name, val in expected.items():
        h = c.guarantee(e, name, method="theorem")
        assert h.divergence == name and h.epsilon == pytest.approx(val, rel=1e-12) and "Theorem 3(3)" in h.theorem
    assert c.guarantee(math.inf, "kl").epsilon == math.inf
    with pytest.raises(InvalidParameterError, match="accuracy_epsilon"):
        c.guarantee(-0.1, "kl")
    with pytest.raises(UnknownLabelError, match="divergence"):
        c.guarantee(0.1, "renyi")


def test_theorem3_max_bound_is_attained() -> None:
    """λ̂ = (p, 1 − p) coupled to itself; λ_a, λ_b tilt x0 by e^{±ε}: the exact D∞ DistP is 2ε = the bound."""
    p, e = 0.1, 0.3
    lam_hat = np.array([p, 1 - p])
    c = local.CouplingMechanism({"a": np.diag(lam_hat), "b": np.diag(lam_hat)}, lam_hat)
    actual = {"a": np.array([math.exp(e) * p, 1 - math.exp(e) * p]),
              "b": np.array([math.exp(-e) * p, 1 - math.exp(-e) * p])}
    acc = c.estimation_epsilon(actual)
    assert acc == pytest.approx(e, rel=1e-12)
    assert c.distp(actual, "max") == pytest.approx(2 * e, rel=1e-12)
    assert c.guarantee(acc, "max").epsilon == pytest.approx(c.distp(actual, "max"), rel=1e-12)
    for name in ("kl", "reverse-kl", "tv", "chi2", "hellinger"):
        assert c.distp(actual, name) <= c.guarantee(acc, name).epsilon


def test_zero_mass_rows_are_filled_and_bad_inputs() -> None:
    lam = np.array([0.0, 0.6, 0.4])
    c = local.CouplingMechanism.optimal(inputs={"s": lam}, target=MU, cost=COST)
    np.testing.assert_allclose(c.matrix("s")[0], MU)
    c2 = local.CouplingMechanism.optimal(inputs={"s": lam}, target=MU, cost=COST, fill="nearest")
    np.testing.assert_allclose(c2.matrix("s")[0], [1.0, 0.0, 0.0])
    with pytest.raises(UnknownLabelError):
        c.matrix("t")
    with pytest.raises(InvalidParameterError, match="cost"):
        local.CouplingMechanism.optimal(inputs={"s": LAM}, target=MU, cost=np.ones((2, 3)))
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        local.CouplingMechanism.optimal(inputs={"s": [0.5, 0.6, 0.1]}, target=MU, cost=COST)
    with pytest.raises(InvalidParameterError, match="column sums"):
        local.CouplingMechanism({"s": FIG2.T}, MU)
