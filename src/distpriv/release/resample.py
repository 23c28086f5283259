"""Exact multinomial counts Multinomial(k; 1/s, …, 1/s) for many datasets at once, fast when k ≫ s.

The sampler of f_θ built from a table (:class:`distpriv.release.data.MomentSampler`)
resamples datasets with replacement: a dataset takes k records uniformly with
replacement from the s rows of a group's subsample, i.e. row counts
w ~ Multinomial(k; 1/s, …, 1/s), and F is read off w·v. numpy draws a
multinomial vector as s − 1 sequential binomials, which for a table modelled
from itself (k in the millions, s = 4,000, 1,000 datasets per θ and group) was
the largest single cost of the release.

:func:`uniform_multinomial` draws the same law by Poissonisation and an exact
correction (no approximation):

1. Draw N_1, …, N_s i.i.d. Poisson(k/s) and T = Σ N_i. Given T = t, (N_i) is
   Multinomial(t; 1/s, …): t balls, each in a uniform bin independently.
2. If t < k, throw k − t more balls, each in a uniform bin: the counts are the
   labels of t + (k − t) = k independent uniform balls, Multinomial(k; 1/s, …).
3. If t > k, remove t − k of the t balls chosen uniformly without replacement:
   the labels of the k balls left are k of t i.i.d. uniform labels, chosen
   independently of the labels, hence again i.i.d. uniform — Multinomial(k; …).

The Poisson draws of step 1 come from an alias table of the Poisson(λ) law (:func:`poisson_alias`:
one uniform per draw, 2.2× faster than numpy's ``Generator.poisson`` at λ ≈ 1,000, which was most of the
release's time for a table modelled from itself), built on λ ± (14√λ + 30), where the law has all its mass
but < 1e-19, with probabilities from the ratios p_j/p_{j−1} = λ/j (within 1e-9 relative or 1e-16 absolute,
below the 2⁻⁵³ resolution of the uniforms): the same law as numpy's sampler to floating-point
accuracy, not the same stream (seeded results of tables with k/s ≥ :data:`POISSON_MIN_RATE` changed with
it, issue 26).

|T − k| is of order √k, so steps 2–3 touch about √k balls per dataset, while
step 1 is one vectorised Poisson draw (with numpy's Poisson sampler, 0.5–0.8 of the time of numpy's
binomial chain for s = 4,000 and k/s from 4 to 1,000, ``benchmarks/bench_resample.py``; less with the
alias table: 0.07 s instead of 0.11 s for 500 datasets at k = 4M, s = 4,000). :func:`resample_counts` uses it when k/s ≥
:data:`POISSON_MIN_RATE` and numpy's ``multinomial`` otherwise, so that the
random streams (and seeded results) of small tables stay as they were.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: Smallest k/s at which :func:`resample_counts` switches to the Poissonised sampler.
POISSON_MIN_RATE = 16.0


def _vose(p: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Walker's alias table of the probabilities ``p`` (summing to 1), by Vose's construction: with
    K = len(p), cell i keeps its own index with probability prob[i] and gives alias[i] otherwise, so that
    index j is drawn with probability (prob[j] + Σ_{i: alias[i] = j} (1 − prob[i])) / K = p[j]."""
    size = p.size
    q = (p * size).tolist()
    prob = [1.0] * size
    alias = list(range(size))
    small = [i for i, x in enumerate(q) if x < 1.0]
    large = [i for i, x in enumerate(q) if x >= 1.0]
    while small and large:
        lo, hi = small.pop(), large.pop()
        prob[lo], alias[lo] = q[lo], hi
        q[hi] = (q[hi] + q[lo]) - 1.0
        (small if q[hi] < 1.0 else large).append(hi)
    return np.asarray(prob), np.asarray(alias, dtype=np.int64)  # cells left over keep prob 1 (rounding)


def poisson_table(lam: float) -> tuple[int, NDArray[np.float64], NDArray[np.int64]]:
    """(lo, prob, alias): the alias table (:func:`_vose`) of Poisson(λ), λ > 0, on j = lo, …, lo + K − 1
    (:func:`poisson_alias`); p_j ∝ exp(Σ log(λ/i)) from the mode, normalised over the table."""
    mode = int(np.floor(lam))
    half = int(np.ceil(14.0 * np.sqrt(lam) + 30.0))
    lo, hi = max(0, mode - half), mode + half
    up = np.cumsum(np.log(lam / np.arange(mode + 1, hi + 1, dtype=float)))  # log p_j/p_mode, j = mode+1..hi
    down = np.cumsum(np.log(np.arange(mode, lo, -1, dtype=float) / lam))  # j = mode-1 down to lo
    p = np.exp(np.concatenate([down[::-1], [0.0], up]))
    prob, alias = _vose(p / p.sum())
    return lo, prob, alias


def poisson_alias(lam: float, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.int64]:
    """Poisson(λ) draws of the given shape by an alias table (module docstring): one uniform u per draw,
    cell i = ⌊uK⌋ and the fraction uK − i pick i or its alias.

    The table covers j ∈ [max(0, ⌊λ⌋ − h), ⌊λ⌋ + h] with h = ⌈14√λ + 30⌉: by the Chernoff bounds
    P(X ≥ λ + t) ≤ exp(−t²/(2(λ + t/3))) and P(X ≤ λ − t) ≤ exp(−t²/(2λ)) with t = 14√λ + 30 (exponents
    ≥ 45 and ≥ 98 for every λ) the mass outside is below 1e-19, far under the 2⁻⁵³ resolution of the uniforms. log p_j − log p_⌊λ⌋ is a running sum of log(λ/i), and the
    probabilities are normalised over the table. When the table would have more cells than there are draws
    (a huge λ, few draws), numpy's ``Generator.poisson`` draws them instead (same law, bounded set-up work)."""
    if lam < 0 or not np.isfinite(lam):
        raise ValueError(f"poisson_alias: need a finite rate >= 0, got {lam}")
    if lam == 0:
        return np.zeros(shape, dtype=np.int64)
    if 2.0 * (14.0 * np.sqrt(lam) + 31.0) > np.prod(shape, dtype=float):  # a table larger than the draws
        return rng.poisson(lam, size=shape).astype(np.int64, copy=False)
    lo, prob, alias = poisson_table(lam)
    cells = prob.size
    u = rng.random(shape)
    u *= cells
    i = np.minimum(u.astype(np.int64), cells - 1)  # u·K may round up to K
    u -= i
    out = np.where(u < prob[i], i, alias[i])
    out += lo
    return out


def uniform_multinomial(
    k: int, s: int, size: int, rng: np.random.Generator, *, rate: float | None = None
) -> NDArray[np.int64]:
    """``size`` independent draws of Multinomial(k; 1/s, …, 1/s), shape (size, s), by Poissonisation with an
    exact correction of the total (module docstring). Every row sums to k exactly.

    The Poisson rate is λ = (k − 2√k)/s rather than k/s (``rate`` overrides it): any λ > 0 gives the same law
    (the correction is exact), and this one makes T > k, whose correction (step 3) runs row by row, rare
    (P ≈ 2%), while step 2 is vectorised over all rows."""
    if k < 0 or s < 1 or size < 0:
        raise ValueError(f"uniform_multinomial: need k >= 0, s >= 1, size >= 0 (got k={k}, s={s}, size={size})")
    lam = max(0.0, k - 2.0 * np.sqrt(k)) / s if rate is None else float(rate)
    w = poisson_alias(lam, (size, s), rng)
    totals = w.sum(axis=1)
    need = np.maximum(k - totals, 0)
    if need.any():  # step 2: throw the missing balls into uniform bins (one flat bincount over all rows)
        flat = rng.integers(0, s, size=int(need.sum()))
        flat += np.repeat(np.arange(0, size * s, s, dtype=np.int64), need)  # row i's balls go to i·s + bin
        w.reshape(-1)[:] += np.bincount(flat, minlength=size * s)
    for i in np.flatnonzero(totals > k):  # step 3: remove t - k uniformly chosen balls
        t = int(totals[i])
        balls = rng.choice(t, size=t - k, replace=False)  # ball indices 0..t-1, bins in order
        bins = np.searchsorted(np.cumsum(w[i]), balls, side="right")
        w[i] -= np.bincount(bins, minlength=s)
    return w


def resample_counts(k: int, s: int, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """Row counts of ``size`` datasets of k records drawn uniformly with replacement from s rows
    (Multinomial(k; 1/s, …)), as floats: numpy's sequential multinomial for k/s below
    :data:`POISSON_MIN_RATE`, :func:`uniform_multinomial` above (same law)."""
    if k >= POISSON_MIN_RATE * s:
        return uniform_multinomial(k, s, size, rng).astype(float)
    return rng.multinomial(k, np.full(s, 1.0 / s), size=size).astype(float)
