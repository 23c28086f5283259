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

|T − k| is of order √k, so steps 2–3 touch about √k balls per dataset, while
step 1 is one vectorised Poisson draw (0.5–0.8 of the time of numpy's
binomial chain for s = 4,000 and k/s from 4 to 1,000, ``benchmarks/bench_resample.py``). :func:`resample_counts` uses it when k/s ≥
:data:`POISSON_MIN_RATE` and numpy's ``multinomial`` otherwise, so that the
random streams (and seeded results) of small tables stay as they were.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: Smallest k/s at which :func:`resample_counts` switches to the Poissonised sampler.
POISSON_MIN_RATE = 16.0


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
    w = rng.poisson(lam, size=(size, s)).astype(np.int64, copy=False)  # numpy's poisson is int64 already
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
