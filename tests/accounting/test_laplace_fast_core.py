"""Issue 26: the faster 1-D Gauss ⊛ Laplace cores against the grid computations they replace.

* pure ε: :meth:`GaussLaplaceCoord.sup_bracket` (branch and bound) against :meth:`grid_sup_bracket` (the
  full grid of ``cells()``, the computation before): both are certified brackets, so they must overlap, and the
  new one must be as tight as asked (width ~κ);
* δ(ε): :meth:`delta_bracket` (the δ window, negligible cells unsplit) against the bracket summed from the
  full pure-ε grid (the computation before), and both against the independent oracle (tests/profile_oracle.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from distpriv.accounting import laplace as lap
from distpriv.accounting import pld
from profile_oracle import laplace_1d

#: (μ_p, s_p, μ_q, s_q, b): the off-assumption 1-D models of test_independent_profile at scales they calibrate to
COORDS = [
    (0.0, 1.0, 1.0, 3.0, 0.5),  # strong-1d
    (0.0, 1.0, 1.0, 3.0, 0.02),  # strong-1d, large ε (wide pure-ε window)
    (0.0, 0.1, 0.3, math.sqrt(0.02), 0.05),  # narrow-1d
    (28.05, math.sqrt(18.31), 25.5, math.sqrt(18.03), 2.0),  # adult-1d
    (0.0, 1.0, 0.05, math.sqrt(1.1), 5.0),  # close-1d
    (0.0, 1.0, 0.5, math.sqrt(1.5), 0.3),  # wider-1d
]


def _old_delta(coord: lap.GaussLaplaceCoord, epsilon: float) -> tuple[float, float]:
    """δ bracket summed over the full pure-ε grid (``cells()``), as delta_bracket did before issue 26."""
    c = coord.cells()
    up = float(c["mass_hi"] @ pld._weights(c["lmax"], epsilon)) + c["tail"]
    lo = float(c["mass_lo"] @ pld._weights(c["lmin"], epsilon))
    return max(0.0, lo), min(1.0, up)


@pytest.mark.parametrize("params", COORDS)
def test_branch_and_bound_sup_matches_the_grid(params: tuple[float, ...]) -> None:
    for kappa in (0.1, 1e-3, 1.25e-4):
        coord = lap.GaussLaplaceCoord(*params, kappa=kappa)
        new, old = coord.sup_bracket(), coord.grid_sup_bracket()
        assert new[0] <= old[1] + 1e-12 and old[0] <= new[1] + 1e-12  # sup ℓ: the brackets overlap
        assert new[2] <= old[3] + 1e-12 and old[2] <= new[3] + 1e-12  # inf ℓ
        assert new[1] - new[0] <= 1.01 * kappa + 1e-9 and new[3] - new[2] <= 1.01 * kappa + 1e-9
        assert new[0] >= old[0] - kappa and new[3] <= old[3] + kappa  # as good a point value as the grid's


@pytest.mark.parametrize("params", COORDS)
def test_delta_window_matches_the_full_grid_and_the_oracle(params: tuple[float, ...]) -> None:
    mp, sp, mq, sq, b = params
    for epsilon in (0.2, 1.0, 5.0):
        coord = lap.GaussLaplaceCoord(*params, kappa=1e-3)
        lo, up = coord.delta_bracket(epsilon)
        old_lo, old_up = _old_delta(coord, epsilon)
        assert lo <= old_up + 1e-15 and old_lo <= up + 1e-15
        assert up - lo <= (old_up - old_lo) * 1.01 + 1e-15  # not looser than the full grid
        truth = laplace_1d(mp, sp * sp, mq, sq * sq, b, epsilon)
        assert lo - truth.tol <= truth.forward <= up + truth.tol


# --------------------------------------------------------------------------- review29c regressions
def _attained_pure_epsilon(mu_p: float, s_p: float, mu_q: float, s_q: float, b: float) -> float:
    """max(sup ℓ, −inf ℓ) over values ℓ attains (a lower bound on the true pure ε, tight at the extremes): the
    closed-form limits ℓ(±∞) = (s_p² − s_q²)/2b² ∓ (μ_p − μ_q)/b and a dense grid of the independent density
    (tests/profile_oracle.py) refined by a bounded scalar search around its best points."""
    from scipy.optimize import minimize_scalar

    from profile_oracle import gl_logpdf as ref_logpdf

    def ell(y: np.ndarray) -> np.ndarray:
        return ref_logpdf(y - mu_p, s_p, b) - ref_logpdf(y - mu_q, s_q, b)

    base = 0.5 * (s_p * s_p - s_q * s_q) / (b * b)
    best = abs(base) + abs(mu_p - mu_q) / b
    reach = 40.0 * max(s_p, s_q) + 60.0 * b
    y = np.linspace(min(mu_p, mu_q) - reach, max(mu_p, mu_q) + reach, 400_001)
    v = ell(y)
    step = y[1] - y[0]
    for sign in (1.0, -1.0):
        i = int(np.argmax(sign * v))
        res = minimize_scalar(lambda t, sg=sign: -sg * float(ell(np.array([t]))[0]), bounds=(y[i] - step, y[i] + step),
                              method="bounded", options={"xatol": 1e-10})
        best = max(best, float(sign * v[i]), -float(res.fun))
    return best


#: b >> s: at small κ the first split pass of the branch and bound used to exceed MAX_CELLS and keep every cell's
#: κ = 0.1 bound (pure ε claimed 0.1088 against a true 0.009265, review29c)
WIDE_B = (0.0, 1.0, 1.0, math.sqrt(3.0), 113.43938316311032)


def test_pure_epsilon_b_much_larger_than_s_is_tight() -> None:
    truth = _attained_pure_epsilon(*WIDE_B)
    assert truth == pytest.approx(0.009264826018242675, rel=1e-6)  # review29c's 60-digit mpmath oracle
    lower, upper = lap.gl_pure_epsilon([lap.GaussLaplaceCoord(*WIDE_B)])
    assert lower <= truth * (1 + 1e-9) + 1e-15 <= upper * (1 + 2e-9) + 2e-15
    assert upper <= 1.01 * truth
    # the finest κ alone (the pass that used to end over budget) is within a few κ of the truth
    sup_lo, sup_up, _, _ = lap._sup_search(*WIDE_B, 1.5625e-5)
    assert sup_lo <= truth + 1e-12 and truth <= sup_up + 1e-12 and sup_up <= truth + 1e-3
    # μ 0 vs 30, σ² 1 vs 1.01 at the scale ε = 0.3 calibrates to: claimed within 1% of the truth
    coord = (0.0, 1.0, 30.0, math.sqrt(1.01), 100.02179373692289)
    truth = _attained_pure_epsilon(*coord)
    lower, upper = lap.gl_pure_epsilon([lap.GaussLaplaceCoord(*coord)])
    assert truth <= upper * (1 + 2e-9) + 2e-15 and upper <= 1.01 * truth


@pytest.mark.slow  # ~9 s: a full pure-ε calibration
def test_calibrate_small_pure_epsilon_with_b_much_larger_than_s() -> None:
    import warnings

    import distpriv as dp

    model = dp.GaussianModel({0: [0.0], 1: [1.0]}, {0: [[1.0]], 1: [[3.0]]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=0.01)
    b = float(mech.noise_std[0]) / math.sqrt(2.0)
    assert mech.guarantee.epsilon == pytest.approx(0.01) and mech.guarantee.delta == 0.0
    assert b <= 113.5  # the code before issue 26 calibrated b = 113.44; the branch and bound used to refuse
    truth = _attained_pure_epsilon(0.0, 1.0, 1.0, math.sqrt(3.0), b)
    assert 0.0097 <= truth <= 0.01 * (1 + 1e-9)  # meets the target, not over-noised


def test_delta_extreme_sigma_ratio_not_looser_than_the_full_grid() -> None:
    """σ 1 vs 100, b << σ: the δ grid's κ subdivision fills MAX_CELLS over Q's window, so the adaptive pass has no
    room left; it must fall back to (intersect with) the full-grid refinement (review29c)."""
    args = (0.0, 1.0, 0.0, 100.0, 0.01083801933)
    truth = 0.24942804458503026  # review29c: independent 60-digit mpmath computation (review/oracle.py true_delta)
    lo, up, _, _ = lap.gl_delta_adaptive(*args, 4.0)
    old_lo, old_up, _ = lap.gl_delta_bracket(*args, 4.0)
    assert lo <= truth <= up
    assert lo >= old_lo - 1e-15 and up <= old_up + 1e-15
    assert up - lo <= 0.005 * truth
