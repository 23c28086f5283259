"""Issue 26: the faster 1-D Gauss ⊛ Laplace cores against the grid computations they replace.

* pure ε: :meth:`GaussLaplaceCoord.sup_bracket` (branch and bound) against :meth:`grid_sup_bracket` (the
  full grid of ``cells()``, the computation before): both are certified brackets, so they must overlap, and the
  new one must be as tight as asked (width ~κ);
* δ(ε): :meth:`delta_bracket` (the δ window, negligible cells unsplit) against the bracket summed from the
  full pure-ε grid (the computation before), and both against the independent oracle (tests/profile_oracle.py).
"""

from __future__ import annotations

import math

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
