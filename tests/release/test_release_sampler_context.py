"""The exact sampler's mpmath context is created once per thread and shared by its draws (issue 26: one context per
draw cost ~1.7 ms CPU each): every draw, and every bit it consumes, is the same as with a fresh context per draw."""

from __future__ import annotations

import threading
from fractions import Fraction

import mpmath
import pytest

from distpriv.release import sampler
from distpriv.release.sampler import sample_rounded, sample_rounded_many
from test_release_sampler import PrefixBits, Recording


def test_shared_context_draws_what_a_fresh_context_draws() -> None:
    y, g, s = Fraction(3, 10), Fraction(1, 4), Fraction(1)
    deep = 0
    # deep tails first and last, so the shared context goes from high precision back to low and up again
    for depth, bit in ((150, 0), (0, 0), (40, 1), (40, 0), (150, 1)):
        for law in ("gaussian", "laplace"):
            for seed in range(8):
                shared, fresh = Recording(PrefixBits(depth, bit, seed)), Recording(PrefixBits(depth, bit, seed))
                k = sample_rounded(y, g, law, s, shared)
                assert k == sample_rounded(y, g, law, s, fresh, ctx=mpmath.MPContext())
                assert (shared.a, shared.b) == (fresh.a, fresh.b)  # the same bits drawn, hence the same decisions
                deep += shared.b > 64
    assert deep >= 20  # the mpmath path (bits beyond the first 64) was exercised
    assert sampler.mp_context().prec > 128  # and left at a raised precision, which the next draw resets


def test_many_draws_match_and_each_thread_has_its_own_context() -> None:
    ys = [0.1 * i for i in range(12)]
    laws = ["gaussian", "laplace"] * 6
    want = [sample_rounded(y, 0.5, law, 1.0, PrefixBits(45, i % 2, i), ctx=mpmath.MPContext())
            for i, (y, law) in enumerate(zip(ys, laws, strict=True))]
    got = [sample_rounded_many([y], 0.5, [law], [1.0], PrefixBits(45, i % 2, i))[0]
           for i, (y, law) in enumerate(zip(ys, laws, strict=True))]
    assert got == want
    here = sampler.mp_context()
    assert sampler.mp_context() is here
    other: list[object] = []
    t = threading.Thread(target=lambda: other.append(sampler.mp_context()))
    t.start()
    t.join()
    assert other and other[0] is not here


def test_intervals_on_the_shared_context_match_fresh_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    from distpriv.release import intervals

    cases = [(0.975, 1.3, (0.7,)), (0.95, 0.0, (0.4, 1.1)), (0.99, 2.0, (0.3, 0.9, 1.7)), (0.9, 0.8, ())]
    shared = [intervals._noise_quantile.__wrapped__(*c) for c in cases]
    shared_cdf = [intervals.noise_cdf(1.234, g, cs) for _, g, cs in cases]
    monkeypatch.setattr(intervals, "mp_context", mpmath.MPContext)  # a fresh context for every evaluation
    assert [intervals._noise_quantile.__wrapped__(*c) for c in cases] == shared
    assert [intervals.noise_cdf(1.234, g, cs) for _, g, cs in cases] == shared_cdf
