"""Certified expectations of sums of n i.i.d. draws from a finite law with a wide range of values.

The tupling accountant (:mod:`distpriv.local.tupling_accounting`) needs, for a finite law
P(X = x_y) = ν_y and S = X_1 + ... + X_n,

* E[(S)^+] (the hockey-stick divergence δ(ε) of the tuple laws), and
* E ln(c + S) for X >= 0 and several c > 0 (their KL divergence).

With uniform dummies the values x_y = |Y|(a_0 − e^ε a_1)(y) lie in a moderate range and a grid
of the whole range works. With non-uniform dummies x_y = (...)/ν_y: a rarely drawn output (ν_y
small) has a huge value, the grid spacing h = range/bins becomes as large as the values that
matter, and the grid bounds become loose (δ up to 46× the exact value, KL bounds infinite).

Here the atoms are split into *rare* atoms R (the far-out values, total mass ν(R) small) and the
*bulk*. Conditioning on the counts c = (c_y)_{y ∈ R} of rare draws (a multinomial, enumerated
exactly up to a total r_max) leaves a sum of n − |c| i.i.d. bulk draws, whose law is put on a grid
by the mean-preserving split of :func:`_split_grid` and
convolved by FFT. Bounds:

* hinge: E[(s + S_grid)^+] >= E[(s + S)^+] (mean-preserving spread, convex function) and
  E[(s + S)^+] >= E[(s + S_grid)^+] − j h · P(|s + S_grid| < 2 j h) (j bulk draws; the hinge is
  linear except within j h of 0);
* log: E ln(c + s + S_grid) <= E ln(c + s + S) (concave: Jensen) and
  E ln(c + s + S) <= E ln(c + s + S_grid + j h) (|S_grid − S| <= j h in the coupling of the split).

The draws with more than r_max rare values are bounded in absolute terms: for the hinge by
n·Σ_y ν_y x_y^+ P(enough other rare draws) (E[S^+ 1_T] <= Σ_i E[X_i^+ 1_T], by symmetry), for the
log by P(T)·[ln(c + n min x), ln(c + n max x)]. When the number of multisets of n draws is small
(C(n + m − 1, m − 1) <= :data:`EXACT_LIMIT`) every multiset is enumerated: the value is exact up
to floating-point rounding (lower = upper).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

#: Enumerate every multiset of the n draws when there are at most this many.
EXACT_LIMIT = 50_000
#: Largest number of enumerated rare-count vectors in the split mode.
ENUM_LIMIT = 20_000
#: Rare atoms may carry at most this expected number of draws (n ν(R)).
RARE_MASS = 0.02
#: At most this many rare atoms.
MAX_RARE = 8
#: The enumeration stops once the draws with more rare values have probability <= TAIL / n.
TAIL = 1e-12


@functools.lru_cache(maxsize=64)
def _compositions(total: int, parts: int) -> NDArray[np.int64]:
    """All count vectors of ``parts`` non-negative integers summing to ``total``, shape (N, parts) (read-only)."""
    if parts == 0:
        out = np.zeros((1 if total == 0 else 0, 0), dtype=np.int64)
    elif total == 0:
        out = np.zeros((1, parts), dtype=np.int64)
    else:
        combos = np.array(list(itertools.combinations_with_replacement(range(parts), total)), dtype=np.int64)
        combos = combos.reshape(-1, total)
        out = np.zeros((combos.shape[0], parts), dtype=np.int64)
        for col in range(total):
            np.add.at(out, (np.arange(combos.shape[0]), combos[:, col]), 1)
    out.setflags(write=False)
    return out


def _log_multinomial(counts: NDArray[np.int64], logp: NDArray[np.float64], rest: int, log_rest: float,
                     n: int) -> NDArray[np.float64]:
    """ln P(rare counts = c, the other ``rest`` draws in the bulk) for each row c."""
    head = special.gammaln(n + 1) - special.gammaln(rest + 1) - special.gammaln(counts + 1).sum(axis=1)
    with np.errstate(invalid="ignore"):
        terms = np.where(counts > 0, counts * logp[None, :], 0.0).sum(axis=1)
    return np.asarray(head + terms + (rest * log_rest if rest else 0.0), dtype=np.float64)


def _split_grid(
    values: NDArray[np.float64], probs: NDArray[np.float64], n: int
) -> tuple[NDArray[np.float64], float, float]:
    """Mean-preserving split of a discrete law onto a grid of ``n`` intervals spanning [min, max]."""
    # ``n`` intervals, n + 1 points: grids with 2^j intervals are nested, so a
    # coarser split is a further mean-preserving spread of a finer one.
    vmin = float(values.min())
    vmax = float(values.max())
    if vmax <= vmin:
        point = np.zeros(n + 1)
        point[0] = 1.0
        return point, vmin, 0.0
    h = (vmax - vmin) / n
    u = (values - vmin) / h
    lo = np.clip(np.floor(u).astype(np.int64), 0, n - 1)
    frac = np.clip(u - lo, 0.0, 1.0)
    size = n + 1
    pmf = np.asarray(np.bincount(lo, probs * (1.0 - frac), minlength=size)
                     + np.bincount(lo + 1, probs * frac, minlength=size), dtype=np.float64)
    return pmf, vmin, h


@dataclass(frozen=True)
class _Block:
    """Rare draws with a given total r: shifts s_c = Σ c_y x_y and probabilities, plus the bulk sum law of n − r draws."""

    shifts: NDArray[np.float64]
    probs: NDArray[np.float64]
    draws: int  # bulk draws j = n − r
    pmf: NDArray[np.float64]  # grid law of the bulk sum (empty when draws = 0)
    base: float  # value of grid point 0: j · min(bulk)
    h: float
    noise: float


class IidSum:
    """The law of S = X_1 + ... + X_n, X_i i.i.d. on ``values`` with ``probs``, prepared for certified expectations.

    ``bins``: grid intervals of one bulk draw. The enumeration of rare counts stops once the draws with
    more rare values than enumerated have probability <= TAIL/n (or at :data:`ENUM_LIMIT` vectors);
    what remains is bounded in absolute terms (module docstring).
    """

    def __init__(self, values: NDArray[np.float64], probs: NDArray[np.float64], n: int, *, bins: int = 1024) -> None:

        keep = probs > 0
        self.values = np.asarray(values, dtype=float)[keep]
        self.probs = np.asarray(probs, dtype=float)[keep]
        self.probs = self.probs / self.probs.sum()
        self.n = n
        m = self.values.size
        multisets = math.comb(n + m - 1, m - 1)
        self.exact = multisets <= EXACT_LIMIT and multisets * m <= 50 * EXACT_LIMIT  # (count matrix <= 20 MB)
        logp = np.log(self.probs)
        self.blocks: list[_Block] = []
        if self.exact:
            counts = _compositions(n, m)
            lp = _log_multinomial(counts, logp, 0, 0.0, n)
            self.blocks.append(_Block(counts @ self.values, np.exp(lp), 0, np.zeros(0), 0.0, 0.0, 0.0))
            self.rare = np.arange(m)
            self.tail_prob = 0.0
            self.tail_count = n
            self._rare_mass = 1.0
            return
        # rare atoms: farthest from the weighted median first, while n ν(R) <= RARE_MASS
        order = np.argsort(self.values)
        cdf = np.cumsum(self.probs[order])
        med = float(self.values[order][np.searchsorted(cdf, 0.5)])
        far = np.argsort(-np.abs(self.values - med), kind="stable")
        rare: list[int] = []
        mass = 0.0
        for y in far:
            if len(rare) >= MAX_RARE or n * (mass + self.probs[y]) > RARE_MASS:
                break
            rare.append(int(y))
            mass += float(self.probs[y])
        self.rare = np.array(sorted(rare), dtype=np.int64)
        bulk = np.setdiff1d(np.arange(m), self.rare)
        pb = self.probs[bulk] / self.probs[bulk].sum()
        pmf1, vmin, h = _split_grid(self.values[bulk], pb, bins)
        log_bulk = math.log(max(1.0 - mass, 1e-300))
        lp_rare = logp[self.rare]
        enumerated = 0
        r = 0
        parts: list[tuple[NDArray[np.int64], int]] = []
        while True:
            counts = _compositions(r, self.rare.size)
            parts.append((counts, n - r))
            enumerated += counts.shape[0]
            tail = float(stats.binom.sf(r, n, mass)) if mass > 0 else 0.0
            if tail <= TAIL / n or r == n or enumerated >= ENUM_LIMIT:
                break
            r += 1
        laws = _powers(pmf1, [j for _, j in parts])
        for counts, j in parts:
            spmf, noise = laws[j]
            lp = _log_multinomial(counts, lp_rare, j, log_bulk, n)
            self.blocks.append(_Block(counts @ self.values[self.rare], np.exp(lp), j, spmf, j * vmin, h, noise))
        self.tail_count = r
        self.tail_prob = float(stats.binom.sf(r, n, mass)) if mass > 0 and r < n else 0.0
        self._rare_mass = mass

    # ---------------------------------------------------------------- hinge
    def hinge(self) -> tuple[float, float]:
        """Certified (lower, upper) of E[S^+]."""
        lower = upper = 0.0
        for b in self.blocks:
            if b.draws == 0:
                v = float(np.dot(b.probs, np.maximum(b.shifts, 0.0)))
                lower += v
                upper += v
                continue
            lo, up = _hinge_grid(b, b.shifts)
            lower += float(np.dot(b.probs, lo))
            upper += float(np.dot(b.probs, up))
        if self.tail_prob > 0:
            upper += self._hinge_tail()
        return max(lower, 0.0), upper

    def _hinge_tail(self) -> float:
        """E[S^+ 1{more than r_max rare draws}] <= n Σ_y ν_y x_y^+ P(the other n − 1 draws make it)."""
        r, n, mass = self.tail_count, self.n, self._rare_mass
        pos = np.maximum(self.values, 0.0) * self.probs
        in_rare = np.zeros(self.values.size, dtype=bool)
        in_rare[self.rare] = True
        p_if_rare = float(stats.binom.sf(r - 1, n - 1, mass))  # >= r of the other draws rare
        p_if_bulk = float(stats.binom.sf(r, n - 1, mass))
        return n * (float(pos[in_rare].sum()) * p_if_rare + float(pos[~in_rare].sum()) * p_if_bulk)

    # ---------------------------------------------------------------- log
    def elog_work(self, count: int) -> int:
        """Number of logarithms :meth:`elog` evaluates for ``count`` values of c (its cost)."""
        return count * sum(b.shifts.size * max(b.pmf.size, 1) for b in self.blocks)

    def elog(self, c: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Certified (lower, upper) of E ln(c_j + S) for each c_j > 0 (values must be >= 0)."""
        c = np.asarray(c, dtype=float)
        lower = np.zeros(c.size)
        upper = np.zeros(c.size)
        with np.errstate(divide="ignore"):
            for b in self.blocks:
                if b.draws == 0:
                    v = np.log(c[:, None] + b.shifts[None, :]) @ b.probs
                    lower += v
                    upper += v
                    continue
                vals = b.base + b.h * np.arange(b.pmf.size)
                pm = b.pmf / b.pmf.sum()
                slack = b.draws * b.h
                for i, s in enumerate(b.shifts):
                    arg = c[:, None] + s + vals[None, :]
                    low = np.log(arg) @ pm
                    # two bounds on the Jensen gap E ln(u + S) − E ln(u + S_grid): the shift |S − S_grid| <= jh,
                    # and the second-order one ½ (jh)² E[1/(u + S_grid − 2jh)²] (|ln''| = 1/(u + ·)²)
                    shift_gap = np.log(arg + slack) @ pm - low
                    under = arg - 2.0 * slack
                    inv2 = np.where(under > 0, 1.0 / np.where(under > 0, under, 1.0) ** 2, np.inf)
                    with np.errstate(invalid="ignore"):
                        second = 0.5 * slack * slack * (inv2 @ pm)
                    second = np.where(np.isnan(second), np.inf, second)
                    lower += b.probs[i] * low
                    upper += b.probs[i] * (low + np.minimum(shift_gap, second))
            if self.tail_prob > 0:
                top = self.n * float(self.values.max())
                bottom = self.n * float(self.values.min())
                lower += self.tail_prob * np.log(c + bottom)
                upper += self.tail_prob * np.log(c + top)
        return lower, upper


def _powers(pmf: NDArray[np.float64], js: list[int]) -> dict[int, tuple[NDArray[np.float64], float]]:
    """The j-fold self-convolutions of ``pmf`` for every j in ``js`` from one FFT (pmf, round-off floor).

    The floor is that of :func:`~distpriv.local.tupling_accounting._sum_pmf`: the most negative
    output plus 4 machine epsilons × max × log2(size).
    """
    from scipy import fft as sfft

    out: dict[int, tuple[NDArray[np.float64], float]] = {}
    todo = sorted({j for j in js if j > 0})
    for j in js:
        if j <= 0:
            out[j] = (np.ones(1), 0.0)
    if not todo:
        return out
    n = pmf.size
    size = sfft.next_fast_len(todo[-1] * (n - 1) + 1, real=True)
    f = sfft.rfft(pmf, size)
    first = todo[0]
    acc = np.ones_like(f)
    base, e = f.copy(), first
    while e:
        if e & 1:
            acc = acc * base
        e >>= 1
        if e:
            base = base * base
    prev = first
    eps = float(np.finfo(float).eps)
    for j in todo:
        for _ in range(j - prev):
            acc = acc * f
        prev = j
        length = j * (n - 1) + 1
        res = sfft.irfft(acc, size)[:length]
        noise = max(float(-res.min()), 0.0) + 4.0 * eps * max(float(res.max()), 0.0) * math.log2(size + 1)
        out[j] = (np.clip(res, 0.0, None), noise)
    return out


def _hinge_grid(b: _Block, shifts: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lower, upper) of E[(s + S_grid)^+] for each shift s (module docstring), vectorised.

    With grid values v_i = base + h i and P_ge[i] = Σ_{l>=i} p_l, G[i] = Σ_{l>i} P_ge[l] (all sums of
    non-negative terms, no cancellation): E[(s + S)^+] = (s + v_{i0}) P_ge[i0] + h G[i0], i0 the
    first index with s + v_i > 0.
    """
    p = b.pmf
    size = p.size
    p_ge = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])  # P_ge[i], i = 0..size
    s_ge = np.cumsum(p_ge[::-1])[::-1]  # Σ_{l>=i} P_ge[l]
    g = np.concatenate([s_ge[1:], [0.0]])  # G[i] = Σ_{l>i} P_ge[l]
    # first index with base + h i > −s
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (-shifts - b.base) / b.h
    i0 = np.clip(np.floor(x).astype(np.int64) + 1, 0, size)
    first = shifts + b.base + b.h * i0  # in (0, h] when 0 < i0 < size
    up = np.where(i0 < size, first * p_ge[i0] + b.h * g[i0], 0.0)
    # near mass: P(|s + S| < 2 j h)
    w = 2.0 * b.draws * b.h
    lo_idx = np.clip(np.floor((-shifts - w - b.base) / b.h).astype(np.int64) + 1, 0, size)
    hi_idx = np.clip(np.ceil((-shifts + w - b.base) / b.h).astype(np.int64), 0, size)
    near = p_ge[lo_idx] - p_ge[hi_idx] + b.noise * np.maximum(hi_idx - lo_idx, 0)
    cnt = size - i0
    allowance = b.noise * (first * cnt + b.h * cnt * (cnt - 1) / 2.0)  # round-off of the FFT, per grid point
    upper = up + allowance
    lower = np.maximum(up - allowance - b.draws * b.h * near, 0.0)
    return lower, upper
