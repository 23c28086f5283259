"""distpriv.roots.brentq returns the very float scipy.optimize.brentq returns (issue 26: no scipy.optimize at start-up)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from distpriv.calibration import _delta_scalar, gaussian_epsilon, max_distance
from distpriv.errors import InvalidParameterError
from distpriv.roots import brentq

EPS4 = 4 * float(np.finfo(float).eps)

FUNCS = [
    (lambda x: x * x - 2.0, 0.0, 2.0),
    (lambda x: math.cos(x) - x, 0.0, 1.0),
    (lambda x: x**3 - 2 * x - 5, 2.0, 3.0),
    (lambda x: math.exp(x) - 1e6, 0.0, 20.0),
    (lambda x: math.tanh(50 * (x - 0.3)), -1.0, 1.0),
    (lambda x: (x - 1.0) ** 5, 0.0, 3.0),  # flat root: many bisection steps
    (lambda x: math.log(x) + 3.0, 1e-6, 1.0),
    (lambda x: -1.0 if x < 0.7 else 1.0, 0.0, 1.0),  # a step: flat values, zero divisors in the interpolation
    (lambda x: max(-1e-300, min(1e-300, x - 0.3)), 0.0, 1.0),
]


@pytest.mark.parametrize("i", range(len(FUNCS)))
@pytest.mark.parametrize("xtol", [1e-15, 1e-12, 1e-6])
def test_bit_identical_to_scipy(i: int, xtol: float) -> None:
    f, a, b = FUNCS[i]
    ours = brentq(f, a, b, xtol=xtol, rtol=EPS4, maxiter=500)
    theirs = optimize.brentq(f, a, b, xtol=xtol, rtol=EPS4, maxiter=500)
    assert ours == theirs  # the same float, not only close
    assert brentq(f, b, a, xtol=xtol, rtol=EPS4, maxiter=500) == optimize.brentq(f, b, a, xtol=xtol, rtol=EPS4, maxiter=500)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-3), (3.0, 1e-8), (10.0, 0.2), (1e-3, 1e-12),
                                          (710.0, 1e-3), (1e6, 1e-300), (1e6, 1e-3)])
def test_calibration_roots_unchanged(eps: float, delta: float) -> None:
    """D*(ε, δ) and the inverse profile: the release's roots equal SciPy's on the same functions."""
    def f(d: float) -> float:
        return _delta_scalar(d, eps) - delta

    lo, hi = 1e-12, 1.0
    while f(hi) < 0:
        lo, hi = hi, hi * 2.0
    ref = float(optimize.brentq(f, lo, hi, xtol=1e-15, rtol=EPS4, maxiter=500))
    assert max_distance(eps, delta) == ref
    assert _delta_scalar(ref, eps) == pytest.approx(delta, rel=1e-9)
    d = 2.0 * ref

    def g(e: float) -> float:
        return _delta_scalar(d, e) - delta

    hi = max(1.0, d * d)
    while g(hi) > 0:
        hi *= 2.0
    assert gaussian_epsilon(d, delta) == float(optimize.brentq(g, 0.0, hi, xtol=1e-14, rtol=EPS4, maxiter=500))


def test_refusals() -> None:
    with pytest.raises(InvalidParameterError, match="different signs"):
        brentq(lambda x: x * x + 1.0, -1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="rtol"):
        brentq(lambda x: x, -1.0, 1.0, rtol=1e-20)
    with pytest.raises(InvalidParameterError, match="no convergence"):
        brentq(lambda x: (x - 1.0) ** 5, 0.0, 3.0, xtol=1e-15, maxiter=3)
    assert brentq(lambda x: x, 0.0, 1.0) == 0.0  # a root at an end of the bracket
