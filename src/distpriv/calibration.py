"""Noise calibration: Laplace, the papers' classic Gaussian rule, and exact Gaussian calibration.

Gaussian mechanisms in the papers use the classic rule σ >= cΔ/ε with
c = sqrt(2 ln(1.25/δ)) (Dwork & Roth, Thm A.1; Chen & Ohrimenko Thm 5.2),
which is proved only for ε < 1. The *exact* rule is the analytic Gaussian
mechanism (Balle & Wang 2018, Thm 8): two Gaussians with a common covariance
whose means are at Mahalanobis distance D are (ε, δ)-indistinguishable iff

    δ_D(ε) = Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D) <= δ.

Both rules are expressed through one number, the largest admissible
Mahalanobis distance ``D_max``:

* classic: D_max = ε / c, so "(cΔ/ε)²" in the papers equals (Δ/D_max)²;
* exact:   D_max = D*(ε, δ), the root of δ_D(ε) = δ.

Every Gaussian mechanism in distpriv writes its noise bound as (Δ/D_max)² and
its "release without noise" test (Chen & Ohrimenko Thm 5.4) as
Mahalanobis distance <= D_max.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import numpy as np
from scipy import special

from ._validation import check_choice, check_delta, check_epsilon, check_positive, check_real
from .errors import ClassicCalibrationWarning, InvalidParameterError
from .guarantees import Calibration
from .roots import brentq

#: The Gaussian calibration rules a caller may choose (values of :class:`~distpriv.guarantees.Calibration`).
CALIBRATIONS: tuple[str, ...] = (Calibration.CLASSIC.value, Calibration.EXACT.value)


def check_calibration(calibration: str) -> str:
    """``calibration`` must be ``"classic"`` or ``"exact"``."""
    return check_choice(calibration, "calibration", CALIBRATIONS)


@contextmanager
def classic_warnings_suppressed() -> Iterator[None]:
    """Silence :class:`~distpriv.errors.ClassicCalibrationWarning` inside the block.

    The one way callers that report the classic rule's status themselves (release selection, the
    demos and reproductions; each guarantee already states the proven δ, see
    :func:`distpriv.mechanisms.registry.calibrate`) quiet the ε >= 1 warning.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicCalibrationWarning)
        yield


# --------------------------------------------------------------------------- Laplace
def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Laplace scale b = Δ/ε (Dwork & Roth Thm 3.6; Chen & Ohrimenko Thm 4.1, 5.1).

    With ``sensitivity`` the L1 sensitivity (Δ_W, Δ_E,1, or W for (W, δ)-closeness)
    Lap(b) noise on every component gives (ε, 0) (or (ε, δ) for Thm 4.2).
    """
    d = check_positive(sensitivity, "sensitivity", allow_zero=True)
    return d / check_epsilon(epsilon)


def laplace_privacy_loss(shift: float, scale: float) -> float:
    """Worst-case privacy loss |x|/b of a 1-D Laplace shift: max_y ln p(y)/p(y − x) = |x|/b."""
    b = check_positive(scale, "scale")
    return abs(check_real(shift, "shift")) / b


# --------------------------------------------------------------------------- classic Gaussian
def classic_c(delta: float) -> float:
    """c = sqrt(2 ln(1.25/δ)) (Chen & Ohrimenko Thm 5.2; Dwork & Roth Thm A.1)."""
    d = check_delta(delta)
    return math.sqrt(2.0 * math.log(1.25 / d))


def _external_stacklevel() -> int:
    """Stack level of the first frame outside the distpriv package (so warnings point at user code)."""
    import os
    import sys

    pkg = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame = frame.f_back
        level += 1
    return level


def _warn_classic(epsilon: float) -> None:
    if epsilon >= 1.0:
        warnings.warn(
            f"classic Gaussian calibration c = sqrt(2 ln(1.25/δ)) is only proved for ε < 1; "
            f"ε = {epsilon:g} gives no proven guarantee (use calibration='exact')",
            ClassicCalibrationWarning,
            stacklevel=_external_stacklevel(),
        )


# --------------------------------------------------------------------------- exact Gaussian
_ndtr = special.ndtr
_log_ndtr = special.log_ndtr


def _delta_scalar(d: float, e: float) -> float:
    """Scalar δ_D(ε) (same formula and special functions as the vectorised path, no array overhead)."""
    if d <= 0.0:
        return 0.0
    a = _ndtr(d / 2.0 - e / d)
    b = math.exp(e + _log_ndtr(-d / 2.0 - e / d))
    return float(min(max(a - b, 0.0), 1.0))


def _is_scalar(x: object) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)


def gaussian_delta(distance: float | np.ndarray, epsilon: float | np.ndarray) -> np.ndarray | float:
    """Privacy profile of a Gaussian shift of Mahalanobis length D (Balle & Wang 2018, Thm 8).

        δ_D(ε) = Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D)

    Computed in log space (e^ε Φ(x) = exp(ε + log Φ(x))) so it stays accurate
    for large ε. D = 0 gives δ = 0. Vectorised over ``distance`` and ``epsilon``;
    two Python/NumPy scalars take a scalar path (no array allocation, same
    special functions, so both paths agree to rounding).
    """
    if _is_scalar(distance) and _is_scalar(epsilon):
        ds, es = float(distance), float(epsilon)
        if not (math.isfinite(ds) and ds >= 0):
            raise InvalidParameterError("distance: must be finite and >= 0")
        if not (math.isfinite(es) and es >= 0):
            raise InvalidParameterError("epsilon: must be finite and >= 0")
        return _delta_scalar(ds, es)
    d = np.asarray(distance, dtype=float)
    e = np.asarray(epsilon, dtype=float)
    if np.any(d < 0) or np.any(~np.isfinite(d)):
        raise InvalidParameterError("distance: must be finite and >= 0")
    if np.any(e < 0) or np.any(~np.isfinite(e)):
        raise InvalidParameterError("epsilon: must be finite and >= 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(d > 0, d, 1.0)
        a = special.ndtr(safe / 2 - e / safe)
        b = np.exp(e + special.log_ndtr(-safe / 2 - e / safe))
        out = np.where(d > 0, np.clip(a - b, 0.0, 1.0), 0.0)
    return float(out) if out.ndim == 0 else out


def gaussian_max_distance(epsilon: float, delta: float) -> float:
    """D*(ε, δ): the largest Mahalanobis shift that is (ε, δ)-indistinguishable.

    δ_D(ε) is strictly increasing in D (Balle & Wang Lemma 9), so D* is the
    unique root of δ_D(ε) = δ, found by bracketing + scalar Brent (``ndtr`` /
    ``log_ndtr`` on floats) to ~1e-15 relative.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    return _max_distance_scalar(eps, dl)


def _max_distance_scalar(eps: float, dl: float) -> float:
    def f(d: float) -> float:
        return _delta_scalar(d, eps) - dl

    lo, hi = 1e-12, 1.0
    while f(hi) < 0:
        lo, hi = hi, hi * 2.0
        if hi > 1e8:  # pragma: no cover - unreachable for δ in (0, 1)
            raise InvalidParameterError("delta: too close to 1 to calibrate")
    return brentq(f, lo, hi, xtol=1e-15, rtol=4 * float(np.finfo(float).eps), maxiter=500)


def gaussian_max_distance_vectorised(epsilon: float, delta: float) -> float:
    """D*(ε, δ) through the array path of :func:`gaussian_delta` (the pre-0.2 implementation).

    Kept as the reference the scalar path is tested and benchmarked against.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)

    def f(d: float) -> float:
        return float(gaussian_delta(np.asarray(d), np.asarray(eps))) - dl

    lo, hi = 1e-12, 1.0
    while f(hi) < 0:
        hi *= 2.0
    from scipy import optimize  # lazy: ~0.4 s to import, not needed by every release

    return float(optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))


def gaussian_epsilon(distance: float, delta: float) -> float:
    """Inverse profile: least ε >= 0 with δ_D(ε) <= δ, for a shift of Mahalanobis length D.

    δ_D(ε) is strictly decreasing in ε, so this is a 1-D root. Returns 0 when
    even ε = 0 meets δ (D small), and ``inf`` for D = inf.
    """
    d = check_positive(distance, "distance", allow_zero=True)
    dl = check_delta(delta)
    if d == 0 or _delta_scalar(d, 0.0) <= dl:
        return 0.0
    if math.isinf(d):
        return math.inf

    def f(e: float) -> float:
        return _delta_scalar(d, e) - dl

    hi = max(1.0, d * d)
    while f(hi) > 0:
        hi *= 2.0
    return brentq(f, 0.0, hi, xtol=1e-14, rtol=4 * float(np.finfo(float).eps), maxiter=500)


def max_distance(epsilon: float, delta: float, calibration: str = "exact", *, warn: bool = True) -> float:
    """Largest admissible Mahalanobis distance D_max under a calibration rule.

    classic: ε / sqrt(2 ln(1.25/δ)) (warns for ε >= 1); exact: D*(ε, δ).
    """
    cal = check_calibration(calibration)
    eps = check_epsilon(epsilon)
    if cal == Calibration.CLASSIC:
        if warn:
            _warn_classic(eps)
        return eps / classic_c(delta)
    return gaussian_max_distance(eps, delta)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str = "exact") -> float:
    """Per-component Gaussian σ for L2 sensitivity Δ: σ = Δ / D_max.

    classic: σ = cΔ/ε (Chen & Ohrimenko Thm 5.2); exact: σ = Δ / D*(ε, δ)
    (Balle & Wang 2018, Thm 8) — never larger than the classic σ for ε < 1.
    """
    d = check_positive(sensitivity, "sensitivity", allow_zero=True)
    return d / max_distance(epsilon, delta, calibration)
