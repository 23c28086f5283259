"""Exact, floating-point-safe sampling of rounded Gaussian and Laplace noise from uniform bits.

Adding ``numpy`` noise to a statistic in floating point leaks the statistic
through the rounding pattern of the result (Mironov, "On significance of the
least significant bits for differential privacy", CCS 2012): the set of
floats ``x + Z`` can reach depends on ``x``. Here the released quantity is
instead

    K = round((y + Z) / g)        (an integer; the output is K·g)

for the ideal continuous noise Z (normal N(0, σ²) or Laplace Lap(b)) and a grid
step g. K is sampled *exactly from its discrete law*

    P(K <= k) = G(k) = F_Z((k + ½) g − y)

by inverse-CDF sampling: K = k iff G(k − 1) < U <= G(k) for U ~ Uniform(0, 1).
U is never materialised: its bits are drawn lazily (64 at first, then 32 at a
time) from a :class:`BitSource` (the operating system's entropy,
:func:`secrets.randbits`, for a release), so after b bits U is known to lie in
the dyadic interval [a/2^b, (a + 1)/2^b). G(k) is evaluated with ``mpmath`` at
working precision p + 20 bits (p >= 128), from the argument ((k + ½)g − y)/σ
computed exactly in rational arithmetic, and compared with U's interval with a
safety margin of 2^(8 − p): a comparison is decided only when the whole
interval lies on one side of [Ĝ − 2^(8−p), Ĝ + 2^(8−p)]. Otherwise more bits
are drawn, and the precision is raised by 64 bits whenever b comes within 16
bits of p. Every decision is then certain (given the margin), so K has exactly
the law G for every input y: its support is all of ℤ whatever y is, and the
output K·g lies on the grid gℤ — no input-dependent rounding pattern exists.

Double-precision first (issue 26: a release's start-up cost): before mpmath, each
comparison is tried with G(k) evaluated in floats (:func:`cdf_float`: the argument
rounded once, then the C library's ``erfc`` / ``exp``), whose absolute error is at
most 2^−31 (rounding the argument moves F by < 2^−52, since |t|·F′(t) < 1/4; the
library functions are accurate to a few units in the last place, 2^−52, so 2^21
units of slack remain). The float comparison decides only when U's whole interval
lies 2^−30 or more away from the float value, so U is then at least 2^−31 away from
G(k), which is far outside mpmath's band of 2^(10−p): whenever the float path
decides, the mpmath comparison would have decided the same way at that point, and
the bits drawn, the precision steps and K are exactly those of the mpmath-only
sampler. Otherwise (probability about 2^−29 per comparison, or when the argument does
not fit a float) mpmath decides as described above; mpmath is imported only then.

Residual assumptions: ``mpmath``'s ``erfc`` and ``exp`` are accurate to within
2^(8−p) in absolute value at working precision p + 20 (they are designed to be
accurate to a few units in the last place), the C library's double-precision
``erfc`` and ``exp`` to within 2^−31 absolute, and the bit source is uniform.
"""

from __future__ import annotations

import math
import random
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, Protocol

from ..errors import InvalidParameterError

if TYPE_CHECKING:
    import mpmath

Law = Literal["gaussian", "laplace", "none"]

#: Bits of U drawn at first, and per refinement.
START_BITS = 64
MORE_BITS = 32
#: Starting working precision p (bits) of the CDF evaluations, and its increment.
START_PRECISION = 128
PRECISION_STEP = 64
#: Extra bits mpmath works with beyond p.
GUARD_BITS = 20
#: The margin is 2^(MARGIN_BITS − p): G(k) is trusted to lie within it of the computed value.
MARGIN_BITS = 8
#: The float comparison decides only when U's interval lies 2^−FLOAT_BAND_BITS or more from the float G(k).
FLOAT_BAND_BITS = 30
_SQRT1_2 = math.sqrt(0.5)


class BitSource(Protocol):
    """A source of independent uniform random bits."""

    seeded: bool

    def bits(self, k: int) -> int:
        """k uniform random bits as a non-negative integer < 2^k."""
        ...  # pragma: no cover - protocol


class OSBits:
    """Bits from the operating system's entropy (:func:`secrets.randbits`): the source of every release."""

    seeded = False

    def bits(self, k: int) -> int:
        return secrets.randbits(k)


class SeededBits:
    """Reproducible bits from a seeded Mersenne Twister (:class:`random.Random`) — tests only: not private."""

    seeded = True

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidParameterError(f"must be a non-negative integer, got {seed!r}", argument="seed")
        self._rng = random.Random(seed)

    def bits(self, k: int) -> int:
        return self._rng.getrandbits(k)


def bit_source(seed: int | None) -> BitSource:
    """:class:`OSBits` for ``seed=None``, else :class:`SeededBits` (reproducible, and therefore not private)."""
    return OSBits() if seed is None else SeededBits(seed)


#: One mpmath context per thread, shared by every draw of that thread (:func:`mp_context`).
_CONTEXTS = threading.local()


def mp_context() -> mpmath.ctx_mp.MPContext:
    """This thread's mpmath context, created on first use (~1.7 ms CPU each: one per draw cost the release tests
    seconds). Sharing it changes no draw: :func:`cdf_floor` sets the precision before every evaluation, and the
    functions used (erfc, exp, floor, ldexp) keep no per-context state (mpmath caches its constants per process,
    not per context). :mod:`distpriv.release.intervals` uses it the same way (precision set before each use)."""
    ctx = getattr(_CONTEXTS, "ctx", None)
    if ctx is None:
        import mpmath  # lazy (issue 26): only the rare comparisons the float path leaves undecided need it

        ctx = _CONTEXTS.ctx = mpmath.MPContext()
    return ctx


class _LazyContext:
    """One mpmath context, created (and mpmath imported) on first use."""

    def __init__(self, ctx: mpmath.ctx_mp.MPContext | None = None) -> None:
        self._ctx = ctx

    def get(self) -> mpmath.ctx_mp.MPContext:
        if self._ctx is None:
            self._ctx = mp_context()
        return self._ctx


def cdf_float(law: Law, t: Fraction) -> float | None:
    """F(t) in double precision, within 2^−31 of the exact F(t) (module docstring); ``None`` when t overflows a float.

    Normal: F(t) = erfc(−t/√2)/2. Laplace: F(t) = e^t/2 for t < 0, 1 − e^(−t)/2 otherwise. ``t`` is rounded once
    (CPython's integer true division is correctly rounded).
    """
    try:
        x = t.numerator / t.denominator
    except OverflowError:
        return None
    if law == "gaussian":
        return 0.5 * math.erfc(-x * _SQRT1_2)
    if law == "laplace":
        return 0.5 * math.exp(x) if x < 0 else 1.0 - 0.5 * math.exp(-x)
    return None  # pragma: no cover - guarded by the callers


def cdf_floor(ctx: mpmath.ctx_mp.MPContext, law: Law, t: Fraction, p: int) -> int:
    """⌊F(t)·2^p⌋ as computed by mpmath at precision p + 20, F the standard normal or Laplace(1) CDF.

    Normal: F(t) = erfc(−t/√2)/2. Laplace: F(t) = e^t/2 for t < 0, 1 − e^(−t)/2 otherwise.
    ``t`` is exact; it is rounded once to the working precision.
    """
    ctx.prec = p + GUARD_BITS
    x = ctx.mpf(t.numerator) / t.denominator
    if law == "gaussian":
        v = ctx.erfc(-x / ctx.sqrt(2)) / 2
    elif law == "laplace":
        v = ctx.exp(x) / 2 if x < 0 else 1 - ctx.exp(-x) / 2
    else:  # pragma: no cover - guarded by the callers
        raise InvalidParameterError(f"law: expected 'gaussian' or 'laplace', got {law!r}")
    return int(ctx.floor(ctx.ldexp(v, p)))


@dataclass
class _Uniform:
    """U known to lie in [a/2^b, (a + 1)/2^b); precision p of the CDF evaluations."""

    source: BitSource
    a: int
    b: int
    p: int

    def refine(self) -> None:
        self.a = (self.a << MORE_BITS) | self.source.bits(MORE_BITS)
        self.b += MORE_BITS
        if self.b > self.p - 16:
            self.p += PRECISION_STEP

    def compare(self, g_floor: int) -> int:
        """−1 if surely U <= G, +1 if surely U > G, 0 if undecided; G·2^p ∈ [g_floor − E, g_floor + 1 + E)."""
        e = 1 << MARGIN_BITS
        shift = self.p - self.b
        lo, hi = self.a << shift, (self.a + 1) << shift
        if hi <= g_floor - e:
            return -1
        if lo >= g_floor + 1 + e:
            return 1
        return 0

    def compare_float(self, g: float | None) -> int:
        """−1 if surely U <= G, +1 if surely U > G, 0 if undecided, given |G − g| <= 2^−(FLOAT_BAND_BITS + 1).

        Decides only when U's interval [a/2^b, (a + 1)/2^b) lies outside [g − 2^−B, g + 2^−B] (B = FLOAT_BAND_BITS),
        in exact integer arithmetic (everything times 2^b·den·2^B, g = num/den exactly).
        """
        if g is None:
            return 0
        num, den = g.as_integer_ratio()
        centre = num << (self.b + FLOAT_BAND_BITS)
        half = den << self.b
        if ((self.a + 1) * den) << FLOAT_BAND_BITS <= centre - half:
            return -1
        if (self.a * den) << FLOAT_BAND_BITS >= centre + half:
            return 1
        return 0


def _initial_guess(u: float, y: Fraction, grid: Fraction, law: Law, scale: Fraction) -> int:
    """A float estimate of the inverse CDF at u (only a starting point: the search below corrects it)."""
    if law == "gaussian":
        from scipy import special  # lazy (issue 26)

        z = float(special.ndtri(u))
    else:
        z = math.log(2.0 * u) if u < 0.5 else (-math.log(2.0 * (1.0 - u)) if u < 1.0 else math.inf)
    try:
        k = (float(y) + z * float(scale)) / float(grid) + 0.5
        if math.isfinite(k):
            return math.floor(k)
    except (OverflowError, ZeroDivisionError):  # pragma: no cover - extreme magnitudes
        pass
    return math.floor(y / grid + Fraction(1, 2))


def sample_rounded(
    y: Fraction | float,
    grid: Fraction | float,
    law: Law,
    scale: Fraction | float,
    source: BitSource,
    *,
    ctx: mpmath.ctx_mp.MPContext | None = None,
) -> int:
    """Draw K = round((y + Z)/g) exactly from its law, Z ~ N(0, scale²) or Lap(scale) (module docstring).

    ``law="none"`` (or ``scale == 0``) is the deterministic rounding ⌊y/g + ½⌋. ``y``, ``grid`` and
    ``scale`` are used as exact rationals (a float is its exact binary value).
    """
    return _sample(y, grid, law, scale, source, _LazyContext(ctx))


def _sample(y: Fraction | float, grid: Fraction | float, law: Law, scale: Fraction | float, source: BitSource,
            lazy: _LazyContext) -> int:
    """:func:`sample_rounded` with a shared, lazily created mpmath context."""
    yq, gq, sq = Fraction(y), Fraction(grid), Fraction(scale)
    if gq <= 0:
        raise InvalidParameterError(f"grid: must be > 0, got {grid}")
    if sq < 0:
        raise InvalidParameterError(f"scale: must be >= 0, got {scale}")
    if law == "none" or sq == 0:
        return math.floor(yq / gq + Fraction(1, 2))
    if law not in ("gaussian", "laplace"):
        raise InvalidParameterError(f"law: expected 'gaussian', 'laplace' or 'none', got {law!r}")
    u = _Uniform(source, source.bits(START_BITS), START_BITS, START_PRECISION)
    cache: dict[int, tuple[int, int]] = {}
    floats: dict[int, float | None] = {}

    def arg(k: int) -> Fraction:
        return ((k + Fraction(1, 2)) * gq - yq) / sq

    def g_floor(k: int) -> int:
        hit = cache.get(k)
        if hit is not None and hit[0] == u.p:
            return hit[1]
        val = cdf_floor(lazy.get(), law, arg(k), u.p)
        cache[k] = (u.p, val)
        return val

    def g_float(k: int) -> float | None:
        if k not in floats:
            floats[k] = cdf_float(law, arg(k))
        return floats[k]

    def below(k: int) -> bool:
        """True iff U <= G(k), deciding with more bits / precision as needed (floats first, module docstring)."""
        while True:
            r = u.compare_float(g_float(k)) or u.compare(g_floor(k))
            if r:
                return r < 0
            u.refine()

    k0 = _initial_guess((u.a + 0.5) / 2.0**u.b, yq, gq, law, sq)
    # bracket: U > G(lo) and U <= G(hi), by galloping from the guess
    step = 1
    if below(k0):
        hi = k0
        while below(hi - step):
            hi -= step
            step *= 2
        lo = hi - step
    else:
        lo = k0
        while not below(lo + step):
            lo += step
            step *= 2
        hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if below(mid):
            hi = mid
        else:
            lo = mid
    return hi


def sample_rounded_many(
    ys: Sequence[Fraction | float],
    grid: Fraction | float,
    laws: Sequence[Law],
    scales: Sequence[Fraction | float],
    source: BitSource,
) -> list[int]:
    """:func:`sample_rounded` for each coordinate (independent draws, one mpmath context)."""
    if not (len(ys) == len(laws) == len(scales)):
        raise InvalidParameterError("ys, laws, scales: must have the same length")
    lazy = _LazyContext()
    return [_sample(y, grid, law, s, source, lazy) for y, law, s in zip(ys, laws, scales, strict=True)]
