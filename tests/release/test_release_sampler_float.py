"""The sampler's double-precision first pass (issue 26): as exact as the mpmath-only sampler, and the same draws.

* :func:`cdf_float` is checked against the CDF at 400 bits (mpmath): its error must stay far below the 2^-31
  the float comparison assumes;
* seeded draws with the float pass equal those of the mpmath-only sampler bit for bit (K and the bits left in
  the source), also in the deep tails where mpmath must raise its precision;
* on the boundary (U within the float band of G(k)) the float pass declines and mpmath decides;
* a Laplace release path loads no mpmath (checked in a fresh interpreter, on module names).
"""

from __future__ import annotations

import random
import subprocess
import sys
from fractions import Fraction

import mpmath
import pytest

from distpriv.release import sampler
from distpriv.release.sampler import (
    FLOAT_BAND_BITS,
    SeededBits,
    cdf_float,
    sample_rounded,
    sample_rounded_many,
)

CTX = mpmath.MPContext()
CTX.prec = 400


def _exact(law: str, t: Fraction) -> mpmath.mpf:
    x = CTX.mpf(t.numerator) / t.denominator
    if law == "gaussian":  # beyond |x| = 100, F is 0 or 1 to within e^-5000 (mpmath's ncdf overflows at 1e300)
        return CTX.ncdf(x) if abs(x) <= 100 else CTX.mpf(int(x > 0))
    return CTX.exp(x) / 2 if x < 0 else 1 - CTX.exp(-x) / 2


def _arguments() -> list[Fraction]:
    rng = random.Random(26)
    ts = [Fraction(0), Fraction(1, 10**300), Fraction(-1, 10**300), Fraction(7, 3), Fraction(-7, 3)]
    ts += [Fraction(s * m) for s in (-1, 1) for m in (0.5, 1.0, 2.0, 5.0, 8.5, 30.0, 38.0, 700.0, 746.0, 1e6, 1e300)]
    ts += [Fraction(rng.uniform(-12.0, 12.0)) + Fraction(rng.randrange(1, 10**9), 10**15) for _ in range(400)]
    return ts


@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_cdf_float_is_within_the_band_of_the_400_bit_cdf(law: str) -> None:
    """|float F(t) − F(t)| <= 2^-45 over arguments from 1e-300 to 1e300 (the sampler assumes 2^-31)."""
    worst = CTX.mpf(0)
    for t in _arguments():
        g = cdf_float(law, t)  # type: ignore[arg-type]
        assert g is not None
        worst = max(worst, abs(CTX.mpf(g) - _exact(law, t)))
    assert worst <= CTX.mpf(2) ** -45, float(worst)
    assert cdf_float(law, Fraction(10**400)) is None  # type: ignore[arg-type]  # beyond a float: mpmath decides


class Tail:
    """Seeded bits whose first ``depth`` bits are ``bit`` (U in a far tail), then a Mersenne Twister."""

    seeded = True

    def __init__(self, depth: int, bit: int, seed: int) -> None:
        self.left, self.bit, self.rng = depth, bit, random.Random(seed)

    def bits(self, k: int) -> int:
        fixed = min(self.left, k)
        self.left -= fixed
        head = ((1 << fixed) - 1) if self.bit else 0
        return (head << (k - fixed)) | self.rng.getrandbits(k - fixed)


def _draws(monkeypatch: pytest.MonkeyPatch, mpmath_only: bool) -> list[tuple[int, int]]:
    """(K, next 64 bits of the source) for a fixed set of cases, with or without the float pass."""
    with monkeypatch.context() as m:
        if mpmath_only:
            m.setattr(sampler, "cdf_float", lambda law, t: None)
        out = []
        for law in ("gaussian", "laplace"):
            for y, g, s in ((0.3, 0.25, 1.0), (-1.7, 2.0**-10, 2.0), (1e6 + 0.1, 0.125, 0.7), (5.0, 1.0, 1e-3)):
                for seed in range(25):
                    src = SeededBits(seed)
                    out.append((sample_rounded(y, g, law, s, src), src.bits(64)))  # type: ignore[arg-type]
                for depth, bit in ((40, 0), (150, 0), (70, 1)):
                    for seed in range(4):
                        tail = Tail(depth, bit, seed)
                        out.append((sample_rounded(y, g, law, s, tail), tail.bits(64)))  # type: ignore[arg-type]
        src = SeededBits(3)
        many = sample_rounded_many([0.1, 2.5, -3.0], 2.0**-8, ["laplace", "gaussian", "none"], [1.0, 0.5, 0.0], src)
        out += [(k, 0) for k in many] + [(src.bits(64), 0)]
    return out


def test_float_pass_draws_exactly_what_mpmath_alone_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _draws(monkeypatch, mpmath_only=False) == _draws(monkeypatch, mpmath_only=True)


class Fixed:
    """U's first 64 bits given (then a Mersenne Twister): places U where a test wants it."""

    seeded = True

    def __init__(self, first: int, seed: int) -> None:
        self.first, self.rng = first, random.Random(seed)

    def bits(self, k: int) -> int:
        if self.first is not None:
            assert k == sampler.START_BITS
            v, self.first = self.first, None  # type: ignore[assignment]
            return v
        return self.rng.getrandbits(k)


@pytest.mark.parametrize("law", ["gaussian", "laplace"])
def test_on_the_boundary_mpmath_decides(law: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """U within 2^-40 of G(k): the float band (2^-30) cannot decide; mpmath does, and K is the exact inverse CDF."""
    y, g, s = Fraction(3, 10), Fraction(1, 4), Fraction(1)
    calls: list[int] = []
    real = sampler.cdf_floor

    def counted(*args: object) -> int:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sampler, "cdf_floor", counted)
    for k, offset in ((0, 1), (0, -1), (3, 5), (-2, -3)):
        t = ((k + Fraction(1, 2)) * g - y) / s
        exact = _exact(law, t)
        first = int(CTX.floor(CTX.ldexp(exact, 64))) + offset * (1 << 24)  # U within 2^-40 of G(k)
        calls.clear()
        got = sample_rounded(y, g, law, s, Fixed(first, seed=k))  # type: ignore[arg-type]
        assert calls, "the float pass decided inside its band"
        u = Fraction(first, 1 << 64)
        assert got == (k if offset < 0 else k + 1)  # U <= G(k) iff K <= k; here K is k or k + 1
        lo = _exact(law, ((got - Fraction(1, 2)) * g - y) / s)
        hi = _exact(law, ((got + Fraction(1, 2)) * g - y) / s)
        assert lo < CTX.mpf(u.numerator) / u.denominator < hi
    assert FLOAT_BAND_BITS <= 40 - 8  # the offsets above (2^-40) sit well inside the band


def test_a_laplace_draw_and_its_interval_load_no_mpmath() -> None:
    code = ("import sys\n"
            "from distpriv.release.sampler import SeededBits, sample_rounded_many\n"
            "from distpriv.release.intervals import noise_quantile\n"
            "sample_rounded_many([0.3, 1e6], 2.0 ** -10, ['laplace', 'laplace'], [1.0, 2.0], SeededBits(1))\n"
            "noise_quantile(0.975, 0.0, [2.0])\n"
            "print('mpmath' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "False"
