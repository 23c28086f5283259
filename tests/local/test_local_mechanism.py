"""local.Mechanism, compositions, point mechanisms and exact DistP accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distpriv import divergences as dv
from distpriv import local
from distpriv.errors import InvalidParameterError, InvalidTypeError


def test_randomized_response_matrix_and_api() -> None:
    a = local.randomized_response(4, math.log(3))
    assert isinstance(a, local.Mechanism)
    assert a.matrix.shape == (4, 4)
    np.testing.assert_allclose(np.diag(a.matrix), 3 / 6)
    np.testing.assert_allclose(a.matrix[0, 1], 1 / 6)


@pytest.mark.parametrize("n,eps", [(2, 0.5), (5, 1.0), (10, 2.5)])
def test_rr_distp_is_exactly_epsilon_on_point_distributions(n: int, eps: float) -> None:
    """DP ⇒ DistP (Theorem 1) is tight on point distributions (Theorem 6)."""
    a = local.randomized_response(n, eps)
    e0, e1 = local.point_distribution(n, 0), local.point_distribution(n, n - 1)
    assert local.distp_epsilon(a, e0, e1, 0.0) == pytest.approx(eps, abs=1e-12)
    assert local.dp_epsilon(a) == pytest.approx(eps, abs=1e-12)
    # any other pair: at most ε (Theorem 1 with Φ = X × X)
    rng = np.random.default_rng(n)
    for _ in range(5):
        l0, l1 = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        assert local.distp_epsilon(a, l0, l1, 0.0) <= eps + 1e-12


def test_rr_delta_on_point_distributions_closed_form() -> None:
    n, eps = 3, 1.0
    a = local.randomized_response(n, eps)
    e0, e1 = local.point_distribution(n, 0), local.point_distribution(n, 1)
    # E_{e^ε'}(A(0) ‖ A(1)) = (p_keep − e^{ε'} p_other)^+  for 0 <= ε' <= ε
    keep, other = math.e / (math.e + 2), 1 / (math.e + 2)
    assert local.distp_delta(a, e0, e1, 0.5) == pytest.approx(keep - math.exp(0.5) * other)
    # and the least ε for that δ recovers 0.5
    assert local.distp_epsilon(a, e0, e1, keep - math.exp(0.5) * other) == pytest.approx(0.5)


def test_lifting_and_sampling() -> None:
    rng = np.random.default_rng(0)
    m = rng.dirichlet(np.ones(5), size=3)
    a = local.Mechanism(m)
    lam = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(a.lift(lam), lam @ m)
    draws = a.sample(np.full(40_000, 2), rng=1)
    freq = np.bincount(draws, minlength=5) / draws.size
    # 5 standard errors of a binomial proportion with n = 40000
    assert np.all(np.abs(freq - m[2]) < 5 * np.sqrt(m[2] * (1 - m[2]) / draws.size))


def test_post_processing_never_increases_distp() -> None:
    """Proposition 4: post-processing keeps (ε, δ)-DistP and D_f-DistP."""
    rng = np.random.default_rng(5)
    a = local.Mechanism(rng.dirichlet(np.ones(6), size=4))
    b = local.Mechanism(rng.dirichlet(np.ones(3), size=6))
    ab = a.post_process(b)
    np.testing.assert_allclose(ab.matrix, a.matrix @ b.matrix)
    for _ in range(5):
        l0, l1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        for d in (0.0, 0.05):
            assert local.distp_epsilon(ab, l0, l1, d) <= local.distp_epsilon(a, l0, l1, d) + 1e-12
        assert local.distp_divergence(ab, l0, l1, "kl") <= local.distp_divergence(a, l0, l1, "kl") + 1e-12


def test_sequential_independent_lifting_equation_4() -> None:
    """(A1 • A0)#(λ0 × λ1) = A1#(A0#(λ0), λ1) (equation (4))."""
    rng = np.random.default_rng(2)
    a0 = local.Mechanism(rng.dirichlet(np.ones(3), size=2))
    stage = rng.dirichlet(np.ones(4), size=(3, 2))  # A1(y0, x1) over Y1
    comp = local.sequential_independent(a0, stage)
    l0, l1 = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    lifted = comp.lift(np.kron(l0, l1)).reshape(3, 4)
    expected = a0.lift(l0)[:, None] * np.einsum("x,yxz->yz", l1, stage)
    np.testing.assert_allclose(lifted, expected)
    # composition bound of Table 1 for independent inputs: ε adds up
    e0 = local.distp_epsilon(a0, l0, l1)
    mech1 = local.Mechanism(stage[0])
    e1 = local.distp_epsilon(mech1, l0, l1)
    non_adaptive = local.sequential_independent(a0, mech1)
    assert local.distp_epsilon(non_adaptive, np.kron(l0, l0), np.kron(l1, l1)) <= e0 + e1 + 1e-12


def test_sequential_shared_composition() -> None:
    rng = np.random.default_rng(4)
    a0 = local.Mechanism(rng.dirichlet(np.ones(3), size=4))
    a1 = local.Mechanism(rng.dirichlet(np.ones(2), size=4))
    both = local.sequential_shared(a0, a1)
    np.testing.assert_allclose(both.matrix.reshape(4, 3, 2), a0.matrix[:, :, None] * a1.matrix[:, None, :])
    last = local.sequential_shared(a0, a1, release="last")
    np.testing.assert_allclose(last.matrix, a1.matrix)
    # DP composes additively (basis of Proposition 3)
    assert local.dp_epsilon(both) <= local.dp_epsilon(a0) + local.dp_epsilon(a1) + 1e-12


def test_point_mechanisms() -> None:
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    d = local.euclidean_cost(pts)
    pl = local.planar_laplace(d, 1.0)
    w = np.exp(-d[0])
    np.testing.assert_allclose(pl.matrix[0], w / w.sum())
    pg = local.planar_gaussian(d, 0.5)
    w = np.exp(-(d[1] ** 2) / 0.5)
    np.testing.assert_allclose(pg.matrix[1], w / w.sum())
    rl = local.restricted_laplace(d, 1.0, 1.5)
    assert rl.matrix[0, 2] == 0.0 and rl.matrix[2, 0] == 0.0
    np.testing.assert_allclose(rl.matrix[0, :2], np.exp([0, -1]) / np.exp([0, -1]).sum())
    # RL is not DP (disjoint supports)
    assert local.dp_epsilon(rl) == math.inf
    # the exponential mechanism is (2ε, d)-XDP: D∞(A(x)‖A(x')) <= 2 ε d(x, x')
    for i in range(3):
        for j in range(3):
            if i != j:
                assert dv.max_divergence(pl.matrix[i], pl.matrix[j]) <= 2 * d[i, j] + 1e-12


def test_xdistp_planar_laplace_theorem2() -> None:
    """Theorem 2: an (ε', d)-XDP mechanism is (ε', W∞,d)-XDistP."""
    rng = np.random.default_rng(7)
    pts = rng.uniform(0, 1, size=(6, 2))
    d = local.euclidean_cost(pts)
    pl = local.planar_laplace(d, 2.0)
    for _ in range(4):
        l0, l1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        x_inf = local.xdistp_epsilon(pl, l0, l1, d, metric="w_inf")
        assert x_inf <= 2 * 2.0 + 1e-9
        # Theorem 5 (KL is 2ε'-XDP too, since KL <= D∞): (ε, W1, KL)-XDistP
        x_kl = local.xdistp_epsilon(pl, l0, l1, d, metric="w1", divergence="kl")
        assert x_kl <= 2 * 2.0 + 1e-9


def test_distp_over_a_set_of_pairs_and_guarantee() -> None:
    rng = np.random.default_rng(9)
    a = local.Mechanism(rng.dirichlet(np.ones(5), size=4))
    lams = {t: rng.dirichlet(np.ones(4)) for t in "abc"}
    g = local.distp_guarantee(a, lams, delta=0.01)
    pairs = [(lams[s], lams[t]) for s, t in (("a", "b"), ("a", "c"), ("b", "c"))]
    assert g.epsilon == pytest.approx(local.distp_epsilon_pairs(a, pairs, 0.01))
    assert g.epsilon == pytest.approx(max(local.distp_epsilon(a, p, q, 0.01) for p, q in pairs))
    assert g.framework == "local-distribution-privacy" and len(g.pairs) == 3


def test_bad_inputs() -> None:
    with pytest.raises(InvalidParameterError, match=">= 0"):
        local.Mechanism([[1.2, -0.2], [0.5, 0.5]])
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        local.Mechanism([[0.6, 0.6], [0.5, 0.5]])
    a = local.randomized_response(3, 1.0)
    with pytest.raises(InvalidParameterError, match="distribution over 3"):
        a.lift([0.5, 0.5])
    with pytest.raises(InvalidParameterError, match="delta"):
        local.distp_epsilon(a, [1, 0, 0], [0, 1, 0], 1.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        local.distp_epsilon(a, [1, 0, 0], [0, 1, 0], -0.1)
    with pytest.raises(InvalidParameterError, match="radius"):
        local.restricted_laplace(np.ones((2, 2)), 1.0, 0.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        local.randomized_response(3, 0.0)
    with pytest.raises(InvalidTypeError):
        local.distp_epsilon("not a mechanism", [1.0], [1.0], 0.0)
