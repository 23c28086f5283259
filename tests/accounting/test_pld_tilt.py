"""pld._choose_tilt (all coordinates at once, bisection over the shrinking steps) gives the very λ of the
one-coordinate-at-a-time loop it replaced (issue 25, compare speed-up): the δ brackets built on it are then
bit-identical too."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distpriv.accounting import pld


def _pmfs(rng: np.random.Generator, kind: str) -> tuple[list[np.ndarray], list[int], float, float]:
    """Random coarse-able pmfs of a few coordinates, their grid starts, a width h and a goal."""
    m = int(rng.integers(1, 7))
    h = float(rng.uniform(1e-3, 5e-2))
    pmfs, k_lo = [], []
    for _ in range(m):
        size = int(rng.choice([1, 2, 7, 64, 195, 631, 1010, 1500, 3000]))
        kl = int(rng.integers(-size, 1))
        k = np.arange(size, dtype=float)
        if kind == "bounded":  # a bounded loss: mass up to the last cell (the goal may lie beyond it)
            p = rng.random(size) ** 3
        elif kind == "heavy":  # a heavy right tail: the shrinking steps run
            p = np.exp(-0.5 * np.sqrt(k + 1.0)) * rng.uniform(0.5, 1.0, size)
        else:  # a Gaussian bump with zero cells around it
            c = rng.uniform(0, size)
            p = np.exp(-0.5 * ((k - c) / max(1.0, 0.1 * size)) ** 2)
            p[p < 1e-30] = 0.0
            p[min(int(c), size - 1)] = max(p[min(int(c), size - 1)], 1e-3)
        pmfs.append(p / p.sum())
        k_lo.append(kl)
    top = sum((kl + p.size) * h for kl, p in zip(k_lo, pmfs, strict=True))
    goal = float(rng.uniform(-0.2, 1.3)) * top
    return pmfs, k_lo, h, goal


@pytest.mark.parametrize("kind", ["bounded", "heavy", "bump"])
def test_vectorised_tilt_equals_the_loop(kind: str) -> None:
    rng = np.random.default_rng(25 + len(kind))
    lams = []
    for _ in range(60):
        pmfs, k_lo, h, goal = _pmfs(rng, kind)
        fast = pld._choose_tilt(pmfs, k_lo, h, goal)
        ref = pld._choose_tilt_loop(pmfs, k_lo, h, goal)
        assert fast == ref or (math.isnan(fast) and math.isnan(ref)), (fast, ref)
        lams.append(ref)
    # the draws reach every branch: no tilt, a Newton tilt, and a shrunk one (0.7^k of a Newton step)
    assert min(lams) == 0.0 and max(lams) > 0.0


def test_shrinking_steps_found_by_bisection_are_the_first() -> None:
    """A heavy tail whose Newton λ must shrink many times: the bisection stops at the loop's step."""
    k = np.arange(800, dtype=float)
    p = np.exp(-2.0 * np.sqrt(k + 1.0))
    p /= p.sum()
    h = 0.01
    goal = 7.9  # near the grid's end: Newton drives λ up, the last 1 % of cells then holds too much
    lam = pld._choose_tilt([p, p[:500] / p[:500].sum()], [0, 0], h, goal)
    assert lam == pld._choose_tilt_loop([p, p[:500] / p[:500].sum()], [0, 0], h, goal)
    assert lam > 0.0
    # it is the first of λ·0.7^j whose last 1 % holds <= 1e-6, and the previous one held more
    x = h * k
    e = np.exp(lam * x - (lam * x).max()) * p
    assert e[-8:].sum() / e.sum() <= 1e-6
    e = np.exp(lam / 0.7 * x - (lam / 0.7 * x).max()) * p
    assert e[-8:].sum() / e.sum() > 1e-6


def test_massless_coordinate_falls_back_to_the_loop() -> None:
    p = np.array([0.2, 0.5, 0.3])
    z = np.zeros(4)
    fast = pld._choose_tilt([p, z], [0, 0], 0.1, 0.1)
    ref = pld._choose_tilt_loop([p, z], [0, 0], 0.1, 0.1)
    assert fast == ref or (math.isnan(fast) and math.isnan(ref))
