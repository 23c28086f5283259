"""Brent's root finder in pure Python, step for step the one of ``scipy.optimize.brentq``.

The release path needs one scalar root (the analytic Gaussian's D*(ε, δ), :mod:`distpriv.calibration`);
importing ``scipy.optimize`` for it costs ~0.1–0.4 s of start-up (issue 26). :func:`brentq` repeats
SciPy's C routine (``scipy/optimize/Zeros/brentq.c``: inverse quadratic interpolation or secant steps,
bisection when they do not shrink the bracket fast enough; Brent 1973, *Algorithms for Minimization
without Derivatives*, ch. 4) operation for operation in IEEE double arithmetic, so it returns the same
float as SciPy for the same function and tolerances (checked in ``tests/core/test_roots.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .errors import InvalidParameterError

#: 4 × machine epsilon: the smallest relative tolerance SciPy's brentq accepts.
MIN_RTOL = 4 * 2.220446049250313e-16


def _div(a: float, b: float) -> float:
    """a / b with C's IEEE semantics: ±inf or nan for a zero divisor (Python raises instead)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def brentq(f: Callable[[float], float], a: float, b: float, *, xtol: float = 2e-12, rtol: float = MIN_RTOL,
           maxiter: int = 100) -> float:
    """A root of ``f`` in the bracket [a, b] (f(a), f(b) of opposite signs) to within ``xtol + rtol·|x|``.

    Same contract and result as ``scipy.optimize.brentq(f, a, b, xtol=, rtol=, maxiter=)``; raises
    :class:`~distpriv.errors.InvalidParameterError` for a bracket without a sign change, invalid tolerances
    or no convergence within ``maxiter`` iterations.
    """
    if not xtol > 0:
        raise InvalidParameterError(f"xtol too small ({xtol:g} <= 0)", argument="xtol")
    if not rtol >= MIN_RTOL:
        raise InvalidParameterError(f"rtol too small ({rtol:g} < {MIN_RTOL:g})", argument="rtol")
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre = float(f(xpre))
    fcur = float(f(xcur))
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise InvalidParameterError("f(a) and f(b) must have different signs", argument="a")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk = xpre
            fblk = fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate (secant)
                stry = _div(-fcur * (xcur - xpre), fcur - fpre)
            else:  # extrapolate (inverse quadratic)
                dpre = _div(fpre - fcur, xpre - xcur)
                dblk = _div(fblk - fcur, xblk - xcur)
                stry = _div(-fcur * (fblk * dblk - fpre * dpre), dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # good short step
                spre = scur
                scur = stry
            else:  # bisect
                spre = sbis
                scur = sbis
        else:  # bisect
            spre = sbis
            scur = sbis
        xpre = xcur
        fpre = fcur
        if abs(scur) > delta:
            xcur += scur
        else:
            xcur += delta if sbis > 0 else -delta
        fcur = float(f(xcur))
    raise InvalidParameterError(f"no convergence in {maxiter} iterations (last x = {xcur!r})", argument="maxiter")
