"""Exact divergences between finite probability distributions.

Every function takes two probability vectors ``p`` and ``q`` over the same
finite set (same length, non-negative, summing to 1) and returns a float.
They are the building blocks of (divergence) distribution privacy
(Kawamoto & Murakami, *Local obfuscation mechanisms for hiding probability
distributions*, Definition 8 and Appendix B; *Local distribution obfuscation
via probability coupling*, Definitions 5, 6 and 11):

* :func:`hockey_stick` — ``E_γ(p ‖ q) = Σ_y max(0, p[y] − γ q[y])``; it is the
  least δ such that ``p[R] ≤ γ q[R] + δ`` for every set ``R``.
* :func:`approx_max_divergence` — the δ-approximate max-divergence
  ``D^δ_∞(p ‖ q) = max_{R: p[R] > δ} ln((p[R] − δ) / q[R])`` (Chen & Ohrimenko
  Def. 5.1; Kawamoto & Murakami, divergence paper Definition 5). It is the least
  real ε with ``E_{e^ε}(p ‖ q) ≤ δ``, computed exactly from the likelihood-ratio
  ordering (the worst set ``R`` is always a prefix of outcomes sorted by
  ``p/q``). ``δ = 0`` gives the max-divergence ``D_∞``.
* f-divergences ``D_f(p ‖ q) = Σ_y q[y] f(p[y]/q[y])`` (divergence paper
  Definition 6, Table I): :func:`kl`, :func:`reverse_kl`,
  :func:`total_variation`, :func:`chi_square`, :func:`hellinger`, and the
  generic :func:`f_divergence`.

Conventions for zeros (standard, e.g. Liese & Vajda): ``0·f(0/0) = 0`` and,
for ``q[y] = 0 < p[y]``, ``q f(p/q) = p · lim_{t→∞} f(t)/t`` (``+∞`` for KL
and χ², ``1/2`` for total variation and Hellinger). The papers define ``D_f``
only when ``p ≪ q``; the convention extends them continuously.

Table I of the divergence paper lists ``f(t) = −t log t`` for the reverse KL;
that function is concave and is a typo — the reverse KL ``D_KL(q ‖ p)`` is the
f-divergence with ``f(t) = −log t``, which is what :func:`reverse_kl` computes.
The Hellinger entry ``f(t) = ½(√t − 1)²`` is the *squared* Hellinger distance
``½ Σ (√p − √q)²``, which is what :func:`hellinger` returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_delta, check_positive, check_probability_vector, check_real
from .errors import InvalidParameterError, InvalidTypeError, UnknownLabelError

# Tolerance for "sums to one": the inputs are often products of matrices.
_ATOL = 1e-8


def check_pair(
    p: ArrayLike, q: ArrayLike, names: tuple[str, str] = ("p", "q")
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate two probability vectors of equal length; tiny negative round-off is clipped.

    Raises :class:`~distpriv.errors.InvalidParameterError` naming the argument for
    negative weights, weights not summing to 1 (within 1e-8), NaN/inf, or
    :class:`~distpriv.errors.InvalidTypeError` for lengths that differ.
    """
    a = np.asarray(p, dtype=float) if not isinstance(p, np.ndarray) else p.astype(float, copy=False)
    b = np.asarray(q, dtype=float) if not isinstance(q, np.ndarray) else q.astype(float, copy=False)
    # clip negative round-off at the 1e-15 level before the strict check
    a = np.where((a < 0) & (a > -1e-15), 0.0, a)
    b = np.where((b < 0) & (b > -1e-15), 0.0, b)
    a = check_probability_vector(a, names[0], atol=_ATOL)
    b = check_probability_vector(b, names[1], atol=_ATOL)
    if a.shape != b.shape:
        raise InvalidTypeError(
            f"{names[0]}, {names[1]}: distributions must have the same length, got {a.size} and {b.size}"
        )
    return a, b


def hockey_stick(p: ArrayLike, q: ArrayLike, gamma: float) -> float:
    """Hockey-stick divergence ``E_γ(p ‖ q) = Σ_y max(0, p[y] − γ q[y]) = sup_R p[R] − γ q[R]``.

    For ``γ = e^ε`` this is the least δ for which the pair satisfies
    ``p[R] ≤ e^ε q[R] + δ`` for all ``R`` (one direction of Definition 8 of the
    tupling paper). ``gamma`` must be ``>= 0``.
    """
    a, b = check_pair(p, q)
    g = check_positive(gamma, "gamma", allow_zero=True)
    return float(np.maximum(a - g * b, 0.0).sum())


def hockey_stick_profile(p: ArrayLike, q: ArrayLike, epsilon: float | ArrayLike) -> float | NDArray[np.float64]:
    """``δ(ε) = E_{e^ε}(p ‖ q)`` for a scalar or an array of ε (any real ε allowed)."""
    a, b = check_pair(p, q)
    eps = np.asarray(epsilon, dtype=float)
    if not np.all(np.isfinite(eps)):
        raise InvalidParameterError("epsilon: must be finite")
    out = np.maximum(a[None, :] - np.exp(eps.reshape(-1))[:, None] * b[None, :], 0.0).sum(axis=1)
    return float(out[0]) if eps.ndim == 0 else out.reshape(eps.shape)


def approx_max_divergence(p: ArrayLike, q: ArrayLike, delta: float = 0.0) -> float:
    """δ-approximate max-divergence ``D^δ_∞(p ‖ q)`` (exact).

    ``D^δ_∞(p ‖ q) = max_{R: p[R] > δ} ln((p[R] − δ)/q[R])``
    (divergence paper Definition 5; Chen & Ohrimenko Definition 5.1), i.e. the
    least real ε with ``p[R] ≤ e^ε q[R] + δ`` for every ``R``. Sorting outcomes by
    the likelihood ratio ``p/q`` (``+∞`` where ``q = 0``) the maximising ``R`` is a
    prefix, so the value is ``max_j ln((P_j − δ)/Q_j)`` over prefix sums
    ``P_j, Q_j`` with ``P_j > δ``. Returns ``+∞`` when a set with ``p[R] > δ`` has
    ``q[R] = 0``. The value lies in ``[ln(1 − δ), ∞]``; it can be negative when
    ``δ > 0`` (privacy definitions use ``max(0, ·)``).

    ``delta`` must lie in ``[0, 1)``.
    """
    a, b = check_pair(p, q)
    d = check_delta(delta, "delta", allow_zero=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(b > 0, a / np.where(b > 0, b, 1.0), np.where(a > 0, np.inf, 0.0))
    order = np.argsort(-ratio, kind="stable")
    pa = np.cumsum(a[order])
    qb = np.cumsum(b[order])
    # guard cumulative round-off: the full set has p[Y] = q[Y] = 1
    pa[-1] = 1.0
    qb[-1] = 1.0
    valid = pa > d
    if not np.any(valid):  # pragma: no cover - impossible as p[Y] = 1 > δ
        return math.log(1.0 - d)
    num = pa[valid] - d
    den = qb[valid]
    if np.any((den <= 0) & (num > 0)):
        return math.inf
    return float(np.max(np.log(num) - np.log(den)))


def max_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """Max-divergence ``D_∞(p ‖ q) = max_y ln(p[y]/q[y])`` (``δ = 0``)."""
    return approx_max_divergence(p, q, 0.0)


def symmetric_approx_max_divergence(p: ArrayLike, q: ArrayLike, delta: float = 0.0) -> float:
    """``max(D^δ_∞(p ‖ q), D^δ_∞(q ‖ p), 0)``: the least ε ≥ 0 with (ε, δ)-indistinguishability."""
    return max(0.0, approx_max_divergence(p, q, delta), approx_max_divergence(q, p, delta))


def _xlogy_ratio(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """Σ x ln(x/y) with 0 ln 0 = 0 and x ln(x/0) = ∞ for x > 0."""
    mask = x > 0
    if np.any(y[mask] <= 0):
        return math.inf
    return float(np.sum(x[mask] * (np.log(x[mask]) - np.log(y[mask]))))


def kl(p: ArrayLike, q: ArrayLike) -> float:
    """Kullback–Leibler divergence ``D_KL(p ‖ q) = Σ p ln(p/q)`` (f(t) = t ln t, Table I)."""
    a, b = check_pair(p, q)
    return max(0.0, _xlogy_ratio(a, b))


def reverse_kl(p: ArrayLike, q: ArrayLike) -> float:
    """Reverse KL ``D_KL(q ‖ p)`` (f(t) = −ln t; see the module note on Table I)."""
    a, b = check_pair(p, q)
    return max(0.0, _xlogy_ratio(b, a))


def total_variation(p: ArrayLike, q: ArrayLike) -> float:
    """Total variation ``½ Σ |p − q|`` (f(t) = ½|t − 1|); equals ``E_1(p ‖ q)``."""
    a, b = check_pair(p, q)
    return float(0.5 * np.abs(a - b).sum())


def chi_square(p: ArrayLike, q: ArrayLike) -> float:
    """Pearson χ² divergence ``Σ (p − q)²/q`` (f(t) = (t − 1)²); ``∞`` unless p ≪ q."""
    a, b = check_pair(p, q)
    if np.any((b <= 0) & (a > 0)):
        return math.inf
    m = b > 0
    return float(np.sum((a[m] - b[m]) ** 2 / b[m]))


def hellinger(p: ArrayLike, q: ArrayLike) -> float:
    """Squared Hellinger distance ``½ Σ (√p − √q)² = 1 − Σ √(pq)`` (f(t) = ½(√t − 1)², Table I)."""
    a, b = check_pair(p, q)
    return float(max(0.0, 0.5 * np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)))


def f_divergence(
    p: ArrayLike,
    q: ArrayLike,
    f: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    *,
    slope_at_infinity: float = math.inf,
) -> float:
    """Generic ``D_f(p ‖ q) = Σ_{q>0} q f(p/q) + slope_at_infinity · p[{q = 0}]``.

    ``f`` must be a vectorised convex function with ``f(1) = 0`` (divergence paper
    Definition 6). ``slope_at_infinity`` is ``lim_{t→∞} f(t)/t`` used for outcomes
    with ``q = 0 < p`` (``∞`` by default, i.e. the divergence is infinite unless
    ``p ≪ q``).
    """
    a, b = check_pair(p, q)
    if not callable(f):
        raise InvalidTypeError(f"f: expected a callable, got {type(f).__name__}")
    slope = float(slope_at_infinity)
    m = b > 0
    t = a[m] / b[m]
    vals = np.asarray(f(t), dtype=float)
    if vals.shape != t.shape:
        raise InvalidTypeError("f: must be vectorised (return an array of the same shape as its input)")
    total = float(np.sum(b[m] * vals))
    extra = float(a[~m].sum())
    if extra > 0:
        if math.isinf(slope):
            return math.inf
        total += slope * extra
    return total


# name -> (function, description)
F_DIVERGENCES: dict[str, Callable[[ArrayLike, ArrayLike], float]] = {
    "kl": kl,
    "reverse-kl": reverse_kl,
    "tv": total_variation,
    "chi2": chi_square,
    "hellinger": hellinger,
}

DIVERGENCE_NAMES = (*F_DIVERGENCES, "max", "approx-max")


def divergence(name: str, p: ArrayLike, q: ArrayLike, *, delta: float = 0.0) -> float:
    """Divergence by name: ``"kl"``, ``"reverse-kl"``, ``"tv"``, ``"chi2"``, ``"hellinger"``,
    ``"max"`` (``D_∞``) or ``"approx-max"`` (``D^δ_∞`` with the given ``delta``)."""
    if not isinstance(name, str):
        raise InvalidTypeError(f"divergence: expected a name string, got {type(name).__name__}")
    key = name.lower().replace("_", "-")
    aliases = {"kullback-leibler": "kl", "total-variation": "tv", "chi-square": "chi2", "d-inf": "max"}
    key = aliases.get(key, key)
    if key in F_DIVERGENCES:
        return F_DIVERGENCES[key](p, q)
    if key == "max":
        return approx_max_divergence(p, q, 0.0)
    if key == "approx-max":
        return approx_max_divergence(p, q, check_real(delta, "delta"))
    raise UnknownLabelError(f"divergence: unknown value {name!r}; expected one of {list(DIVERGENCE_NAMES)}")
