"""Peer mechanisms (issue 25 item 3): SSP quantizer, Ding (L), Kantorovich — their own numbers, then our accounting.

Every privacy number is checked against a computation written here independently of the code under
test (brute-force enumeration of the quantizer's joint output law with scipy.stats, closed forms).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import distpriv as dp
from distpriv.errors import AssumptionError, InvalidParameterError
from distpriv.mechanisms import MECHANISMS, ding, ssp
from distpriv.mechanisms.metadata import AUTOMATIC
from distpriv.mechanisms.registry import PEERS

MODEL_2D = dp.GaussianModel(means={0: [0.0, 0.0], 1: [1.0, 0.5]},
                            covariances={0: [[1.0, 0.3], [0.3, 2.0]], 1: [[1.1, 0.3], [0.3, 2.0]]})


# --------------------------------------------------------------------------- their published numbers
def test_ssp_mean_quantizer_reproduces_their_readme_example() -> None:
    # fjxmlzn/summary_statistic_privacy README: mean_mechanism(samples=[0.1, 0.2, 0.3], s=0.1) -> [0.15, 0.25, 0.35]
    np.testing.assert_allclose(ssp.ssp_mean_release([0.1, 0.2, 0.3], 0.1), [0.15, 0.25, 0.35], atol=1e-12)
    # README: quantile_mechanism(samples=[0.1, 0.2, 0.3], s=0.2, alpha=0.5) -> [0.15, 0.3, 0.45]
    np.testing.assert_allclose(ssp.ssp_quantile_release([0.1, 0.2, 0.3], 0.2, 0.5), [0.15, 0.3, 0.45], atol=1e-12)
    # the released mean is always the bin midpoint, and the shape of the sample is kept
    out = ssp.ssp_mean_release([3.0, 4.0, 8.0], 2.0)
    assert out.mean() == pytest.approx(5.0) and np.ptp(out) == pytest.approx(5.0)


def test_ding_1d_is_the_papers_mean_plus_sd_calibration() -> None:
    # 1-D: b = (|μ1 − μ0| + |σ1 − σ0|·z_{1−δ/2})/ε, and the Monge displacement exceeds bε with probability δ exactly
    mu0, s0, mu1, s1, eps, delta = 0.0, 1.0, 0.8, 1.5, 0.7, 1e-3
    model = dp.GaussianModel(means={0: [mu0], 1: [mu1]}, covariances={0: [[s0**2]], 1: [[s1**2]]})
    mech = dp.calibrate("ding-laplace", model, [(0, 1)], epsilon=eps, delta=delta)
    b = (abs(mu1 - mu0) + abs(s1 - s0) * stats.norm.isf(delta / 2)) / eps
    assert mech.laplace_scale == pytest.approx(b, rel=1e-9)
    # displacement T(X) − X = Δμ + (σ1/σ0 − 1)(X − μ0) ~ N(Δμ, (σ1 − σ0)²) (order 0 → 1)
    d = stats.norm(loc=mu1 - mu0, scale=abs(s1 - s0))
    assert d.sf(b * eps) + d.cdf(-b * eps) <= delta * (1 + 1e-9)
    # our exact accounting proves at most the paper's δ, and the claim is the smaller one
    assert mech.guarantee.delta <= delta and mech.guarantee.delta == pytest.approx(mech.details["exact_delta"])


# --------------------------------------------------------------------------- SSP quantizer: exact accounting
def _brute_delta(pb: ssp.PairBasis, width: float, epsilon: float) -> float:
    """Σ_y (P(y) − e^ε Q(y))_+ over the joint bins (both orders), from scipy.stats.norm CDFs."""
    laws = []
    for k in range(pb.w.shape[1]):
        edges = pb.centre[k] + (np.arange(-300, 301) + 0.5) * width
        p = np.diff(stats.norm.cdf(edges, pb.m0[k], math.sqrt(pb.v0[k])))
        q = np.diff(stats.norm.cdf(edges, pb.m1[k], math.sqrt(pb.v1[k])))
        laws.append((p, q))
    (p0, q0), (p1, q1) = laws
    pj, qj = np.outer(p0, p1), np.outer(q0, q1)
    return max(float(np.maximum(pj - math.exp(epsilon) * qj, 0).sum()),
               float(np.maximum(qj - math.exp(epsilon) * pj, 0).sum()))


@pytest.mark.parametrize("width,epsilon", [(0.5, 1.0), (2.0, 0.3), (7.6, 1.0)])
def test_ssp_delta_matches_brute_force_enumeration(width: float, epsilon: float) -> None:
    pb = ssp.pair_basis(MODEL_2D, 0, 1)
    lo, up = ssp.quantizer_delta(pb, width, epsilon)
    exact = _brute_delta(pb, width, epsilon)
    assert lo <= exact * (1 + 1e-9) + 1e-15 and exact <= up * (1 + 1e-9) + 1e-15
    assert up - lo <= 1e-9 + 1e-6 * exact


def test_ssp_basis_makes_coordinates_independent_under_both_secrets() -> None:
    pb = ssp.pair_basis(MODEL_2D, 0, 1)
    np.testing.assert_allclose(pb.w.T @ MODEL_2D.covariance(0) @ pb.w, np.eye(2), atol=1e-10)
    np.testing.assert_allclose(pb.w.T @ MODEL_2D.covariance(1) @ pb.w, np.diag(pb.v1), atol=1e-10)


def test_ssp_calibrated_claim_is_exact_and_meets_the_target() -> None:
    mech = dp.calibrate("ssp-quantizer", MODEL_2D, [(0, 1)], epsilon=1.0, delta=1e-3)
    exact = _brute_delta(ssp.pair_basis(MODEL_2D, 0, 1), mech.width, 1.0)
    assert exact <= mech.guarantee.delta <= 1e-3
    assert mech.guarantee.delta == pytest.approx(exact, rel=1e-6)
    # their notion: attacker success (1 + TV)/2 under a uniform prior on the pair; TV = δ(0)
    tv = _brute_delta(ssp.pair_basis(MODEL_2D, 0, 1), mech.width, 0.0)
    assert mech.details["attacker_success"] == pytest.approx((1 + tv) / 2, abs=1e-9)


def test_ssp_release_is_a_bounded_deterministic_quantizer() -> None:
    mech = dp.calibrate("ssp-quantizer", MODEL_2D, [(0, 1)], epsilon=1.0, delta=1e-3, width=0.7)
    x = MODEL_2D.sample(0, 2000, np.random.default_rng(3))
    y = mech.release_batch(x, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(y, mech.release_batch(x, rng=np.random.default_rng(2)))  # no randomness
    u = (y @ mech.basis - mech.centre) / mech.width
    np.testing.assert_allclose(u, np.round(u), atol=1e-9)  # outputs on the lattice of bin midpoints
    assert np.linalg.norm(y - x, axis=1).max() <= mech.distortion * (1 + 1e-12)
    np.testing.assert_array_equal(mech.release(x[0]), y[0])


def test_ssp_refuses_several_pairs() -> None:
    model = dp.GaussianModel(means={0: [0.0], 1: [1.0], 2: [2.0]}, covariances={k: [[1.0]] for k in range(3)})
    with pytest.raises(InvalidParameterError, match="pairs"):
        dp.calibrate("ssp-quantizer", model, [(0, 1), (1, 2)], epsilon=1.0, delta=1e-3)


# --------------------------------------------------------------------------- Kantorovich
def test_kantorovich_1d_plan_is_the_monotone_coupling() -> None:
    # in 1-D the E|X − Y|-optimal assignment pairs sorted samples, so Δ_K = max |x_(k) − y_(k)| = W∞
    g = np.random.default_rng(0)
    x, y = g.normal(0, 1, 300), g.normal(0.4, 1.3, 300)
    emp = dp.EmpiricalModel(samples={0: x[:, None], 1: y[:, None]})
    mech = dp.calibrate("kantorovich", emp, [(0, 1)], epsilon=0.5)
    sens = float(np.abs(np.sort(x) - np.sort(y)).max())
    assert mech.details["kantorovich_sensitivity"] == pytest.approx(sens, rel=1e-12)
    assert mech.laplace_scale == pytest.approx(sens / 0.5) and mech.guarantee.delta == 0.0


def test_kantorovich_gaussian_equal_covariances_and_refusal() -> None:
    eq = dp.GaussianModel(means={0: [0.0, 1.0], 1: [0.5, -1.0]}, covariances={0: np.eye(2), 1: np.eye(2)})
    assert dp.calibrate("kantorovich", eq, [(0, 1)], epsilon=2.0).laplace_scale == pytest.approx(2.5 / 2.0)
    with pytest.raises(AssumptionError, match="Kantorovich"):
        dp.calibrate("kantorovich", MODEL_2D, [(0, 1)], epsilon=1.0)


def test_kantorovich_multidimensional_sensitivity_is_at_least_w_infinity() -> None:
    g = np.random.default_rng(4)
    emp = dp.EmpiricalModel(samples={0: g.normal(size=(60, 2)), 1: g.normal(0.3, 1.0, size=(60, 2))})
    k = dp.calibrate("kantorovich", emp, [(0, 1)], epsilon=1.0)
    w = dp.calibrate("wasserstein", emp, [(0, 1)], epsilon=1.0)
    assert k.laplace_scale >= w.laplace_scale * (1 - 1e-12)


# --------------------------------------------------------------------------- registry
def test_peers_are_built_by_name_but_never_selected_automatically() -> None:
    assert set(PEERS) == {"ssp-quantizer", "ding-laplace", "kantorovich"}
    assert not set(PEERS) & set(MECHANISMS) and not set(PEERS) & set(AUTOMATIC)
    assert {lab for lab, _, _ in PEERS.values()} == {"SSP quantizer", "Ding (L)", "Kantorovich"}
    with pytest.raises(InvalidParameterError, match="not an option"):
        dp.calibrate("ding-laplace", MODEL_2D, [(0, 1)], epsilon=1.0, delta=1e-3, width=2.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        dp.calibrate("ssp-quantizer", MODEL_2D, [(0, 1)], epsilon=1.0)


def test_ding_multidimensional_claim_is_proven_by_the_exact_core() -> None:
    mech = dp.calibrate("ding-laplace", MODEL_2D, [(0, 1)], epsilon=1.0, delta=1e-3)
    assert mech.kind == "laplace" and mech.guarantee.delta <= 1e-3
    assert mech.details["exact_delta"] <= 1e-3  # the coupling bound Ding's scale rests on is valid
    shift, r, _ = ding.ding_radius(MODEL_2D.mean(0), MODEL_2D.covariance(0), MODEL_2D.mean(1), MODEL_2D.covariance(1), 1e-3)
    assert shift == pytest.approx(1.5) and r > 0


def test_ding_proof_uses_the_tight_bounds_of_the_core() -> None:
    """review32 F5: Ding (L)'s proven δ came from the coupling bound alone (3.8e-6 on docs/peers.md's model, where
    the certified 2-D grid proves 8.6e-18); it now uses the tight bounds ``distpriv.calibrate`` uses by default."""
    from distpriv.accounting.release import NoiseLaw, proven_delta

    model = dp.GaussianModel(means={0.45: [0.0, 0.0], 0.55: [1.0, 0.5]},
                             covariances={0.45: [[1.0, 0.3], [0.3, 2.0]], 0.55: [[1.1, 0.3], [0.3, 2.0]]})
    mech = dp.calibrate("ding-laplace", model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    loose = proven_delta(model, [(0.45, 0.55)], NoiseLaw.laplace(mech.basis, mech.scales), 1.0, rtol=1e-2)
    assert loose.delta_upper > 1e-6
    assert mech.guarantee.delta == mech.details["exact_delta"] <= 1e-15
    assert any("2-D Gaussian ⊛ Laplace" in n for n in mech.guarantee.notes)


# --------------------------------------------------------------------------- the independent oracle
@pytest.mark.parametrize("model", [
    dp.GaussianModel(means={0: [0.0], 1: [0.8]}, covariances={0: [[1.0]], 1: [[2.25]]}),
    MODEL_2D,
], ids=["1d", "2d"])
def test_ding_claim_passes_the_independent_oracle(model: dp.GaussianModel) -> None:
    from profile_oracle import claim, noise_law, output_delta

    mech = dp.calibrate("ding-laplace", model, [(0, 1)], epsilon=0.7, delta=1e-3)
    eps, delta = claim(mech)
    truth = output_delta(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1), noise_law(mech), eps)
    assert not truth.violates(delta), (truth, delta)
    if model.dim == 1:  # 1-D Gauss⊛Laplace profiles are tight: the claim is within 20% of the oracle's δ
        assert delta <= 1.2 * truth.delta + truth.tol
