"""SSP quantizer accounting shortcuts (issue 25, ``reproduce compare`` in seconds) against the full computation.

* :meth:`FiniteLoss.loss_range` leaves out at most ``tail`` of the P-mass (the PLD grid then ends there);
* :func:`ssp.quantizer_delta`'s full bracket decides the second order on a coarse grid instead of bracketing
  it to ``rtol``: the answer must equal the old one (both orders bracketed, max of the ends) and contain
  the brute-force δ of the joint output law;
* :func:`ssp.quantizer_tv` brackets one order: TV is the same number in both orders.

The brute force enumerates the joint bins of a 2-D model with scipy.stats (independent of the code under test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import distpriv as dp
from distpriv.accounting import pld
from distpriv.mechanisms import ssp

MODEL_2D = dp.GaussianModel(means={0: [0.0, 0.0], 1: [1.0, 0.5]},
                            covariances={0: [[1.0, 0.3], [0.3, 2.0]], 1: [[1.1, 0.3], [0.3, 2.0]]})
#: Narrow enough that the joint output has > ssp.DIRECT_ATOMS atoms (the PLD path), wide enough to enumerate here.
FINE = 0.008


def _joint_laws(pb: ssp.PairBasis, width: float) -> tuple[np.ndarray, np.ndarray]:
    laws = []
    for k in range(pb.w.shape[1]):
        sd = max(math.sqrt(pb.v0[k]), math.sqrt(pb.v1[k]))
        j = math.ceil(9.5 * sd / width) + 2  # beyond: < 1e-20 of either law
        edges = pb.centre[k] + (np.arange(-j, j + 1) + 0.5) * width
        p = np.diff(stats.norm.cdf(edges, pb.m0[k], math.sqrt(pb.v0[k])))
        q = np.diff(stats.norm.cdf(edges, pb.m1[k], math.sqrt(pb.v1[k])))
        laws.append((p, q))
    (p0, q0), (p1, q1) = laws
    return np.outer(p0, p1), np.outer(q0, q1)


def _brute(pj: np.ndarray, qj: np.ndarray, epsilon: float) -> tuple[float, float]:
    """(δ(ε) of P against Q, δ(ε) of Q against P)."""
    e = math.exp(epsilon)
    return float(np.maximum(pj - e * qj, 0).sum()), float(np.maximum(qj - e * pj, 0).sum())


@pytest.fixture(scope="module", params=[(0, 1), (1, 0)], ids=["second-order-larger", "second-order-decided"])
def fine(request) -> tuple[ssp.PairBasis, np.ndarray, np.ndarray, bool]:  # noqa: ANN001
    pb = ssp.pair_basis(MODEL_2D, *request.param)
    orders = [ssp.coordinate_losses(pb, FINE, reverse=r) for r in (False, True)]
    assert ssp._direct_delta(orders[0], 1.0) is None  # the PLD path is the one under test
    return (pb, *_joint_laws(pb, FINE), request.param == (0, 1))


def test_loss_range_leaves_out_at_most_the_tail(fine) -> None:  # noqa: ANN001
    pb = fine[0]
    for c in ssp.coordinate_losses(pb, FINE):
        for tail in (pld.TAIL, 1e-12, 1e-6):
            lo, hi = c.loss_range(tail)
            out = float(c.mass[(c.loss < lo) | (c.loss > hi)].sum())
            assert out <= tail * (1 + 1e-9) and lo <= hi
        assert c.loss_range(0.0) == (float(c.loss.min()), float(c.loss.max()))
        assert c.loss.min() < c.loss_range()[0] or c.loss.max() > c.loss_range()[1]  # the trim does trim here


@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_full_bracket_equals_both_orders_and_holds_the_brute_force(fine, epsilon: float) -> None:  # noqa: ANN001
    pb, pj, qj, second_larger = fine
    lo, up = ssp.quantizer_delta(pb, FINE, epsilon)
    old = [pld.pld_bracket(ssp.coordinate_losses(pb, FINE, reverse=r), epsilon, rtol=1e-3) for r in (False, True)]
    assert (lo, up) == (max(b.lower for b in old), max(b.upper for b in old))
    # (0, 1): the second order (θ1 → θ0) has the larger δ and is bracketed in full; (1, 0): it is decided below
    if second_larger:
        assert old[1].lower > old[0].upper
    else:
        assert old[1].upper < old[0].lower
    exact = max(_brute(pj, qj, epsilon))
    assert lo <= exact * (1 + 1e-9) and exact <= up * (1 + 1e-9)
    assert up - lo <= 1e-3 * up + 1e-14


def test_tv_is_one_order_and_holds_the_brute_force(fine) -> None:  # noqa: ANN001
    pb, pj, qj, _ = fine
    a, b = _brute(pj, qj, 0.0)
    assert a == pytest.approx(b, rel=1e-9)  # TV: the same number in both orders
    lo, up = ssp.quantizer_tv(pb, FINE)
    assert lo <= a * (1 + 1e-9) and a <= up * (1 + 1e-9) and up - lo <= 1e-3 * up
    rev = pld.pld_bracket(ssp.coordinate_losses(pb, FINE, reverse=True), 0.0, rtol=1e-3)
    assert max(lo, rev.lower) <= min(up, rev.upper)  # the dropped order's bracket bounds the same value
