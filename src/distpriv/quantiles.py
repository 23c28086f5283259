"""Quantiles of a dataset drawn as Θ prescribes: their exact law, streamed from the engine.

The released q-quantile of a dataset D of n records is the *lower* quantile on a public grid
t_0 < t_1 < … < t_{L−1}: with the bucket b(x) = min(L − 1, max(0, ⌈(x − t_0)/h⌉)) of a value
(h the grid step) and the rank r = max(1, ⌈qn⌉),

    Q(D) = t_i for the least i with C_i(D) = #{x ∈ D : b(x) <= i} >= r.

For an integer column whose population range holds at most :data:`GRID_POINTS` integers the grid
is those integers (h = 1) and Q(D) is the exact lower quantile; otherwise it is :data:`GRID_POINTS`
evenly spaced points from the population's min to its max (Q rounded up to the grid, values beyond
the population's range clamped to its ends). The grid is public: the population's range.

Exact law (Chen & Ohrimenko Sec. 6.1: D holds k = ⌊θn⌉ records drawn without replacement from the
N_P protected population records and n − k from the N_Q others). With K_{g,i} the number of group-g
population records in buckets <= i, C_i = H_P + H_Q with H_P ~ Hypergeometric(N_P, K_{P,i}, k) and
H_Q ~ Hypergeometric(N_Q, K_{Q,i}, n − k) independent, so

    P(Q(D) <= t_i) = P(C_i >= r) = Σ_h P(H_P = h) P(H_Q >= r − h),

exactly (binomials instead of hypergeometrics when datasets are resampled with replacement, as with
``--model-from-data``). No resampling: the per-bucket counts come from one ``GROUP BY`` of the
population in its engine (bounded output: 2L rows; one per column, shared by all its quantile levels),
so a quantile of a 40M-row Parquet population streams in bounded memory (``benchmarks/bench_new_stats.py``:
peak RSS of the whole release ~480 MiB, flat in the number of rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParameterError

#: Points of a quantile's public grid when the column is not a small integer range.
GRID_POINTS = 4096
_B = "__dp_bucket"


def rank(q: float, n: int) -> int:
    """r = max(1, ⌈qn⌉): the rank of the lower q-quantile of n values (q·n rounded to 12 digits first)."""
    return max(1, math.ceil(round(q * n, 12)))


@dataclass(frozen=True)
class Grid:
    """t_i = start + i·step, i = 0..size−1 (public: from the population's range)."""

    start: float
    step: float
    size: int

    @property
    def points(self) -> NDArray[np.float64]:
        return self.start + self.step * np.arange(self.size, dtype=float)

    def bucket_expr(self, column: str) -> nw.Expr:
        """b(x) = min(L − 1, max(0, ⌈(x − t_0)/h⌉)) as an Int64 engine expression."""
        x = nw.col(column).cast(nw.Float64)
        return ((x - self.start) / self.step).ceil().clip(0, self.size - 1).cast(nw.Int64)

    def buckets(self, x: NDArray[np.float64]) -> NDArray[np.int64]:
        """b(x) in numpy (the same formula)."""
        return np.clip(np.ceil((np.asarray(x, dtype=float) - self.start) / self.step), 0, self.size - 1).astype(
            np.int64)

    def describe(self) -> str:
        if self.step == 1.0 and float(self.start).is_integer():
            return f"the integers {int(self.start)}..{int(self.start) + self.size - 1}"
        return f"{self.size} points from {self.start:g} step {self.step:.6g} (rounded up to the grid)"


def grid_for(lo: float, hi: float, integer: bool, points: int = GRID_POINTS) -> Grid:
    """The public grid of a column with population range [lo, hi] (module docstring)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        raise InvalidParameterError(f"the population's range [{lo}, {hi}] cannot define a quantile grid",
                                    argument="stats")
    if hi == lo:
        return Grid(float(lo), 1.0, 1)
    if integer and float(lo).is_integer() and float(hi).is_integer() and hi - lo + 1 <= points:
        return Grid(float(lo), 1.0, int(hi - lo) + 1)
    return Grid(float(lo), (float(hi) - float(lo)) / (points - 1), points)


def bucket_counts(frame: nw.LazyFrame[Any], column: str, grid: Grid, group: str | None,
                  what: str, backend: str) -> NDArray[np.int64]:
    """Rows per bucket (and per group when ``group`` names a boolean column): shape (2, L) with row 0 the
    rows where ``group`` is true, or (1, L). One ``GROUP BY`` in the engine; at most 2L rows come back."""
    from .data.sources import engine_errors

    keys = [_B] if group is None else [group, _B]
    with engine_errors(what, backend):
        got = frame.with_columns(grid.bucket_expr(column).alias(_B)).group_by(*keys).agg(
            nw.len().alias("__dp_len")).collect().to_dict(as_series=False)
    out = np.zeros((1 if group is None else 2, grid.size), dtype=np.int64)
    rows = np.asarray(got["__dp_len"], dtype=np.int64)
    b = np.asarray(got[_B], dtype=np.int64)
    g = np.zeros(len(b), dtype=np.int64) if group is None else 1 - np.asarray(got[group], dtype=bool).astype(np.int64)
    np.add.at(out, (g, b), rows)
    return out


def quantile_of_counts(counts: NDArray[np.int64], r: int, grid: Grid) -> float:
    """Q = t_i for the least i whose cumulative count reaches the rank r."""
    cum = np.cumsum(np.asarray(counts).ravel())
    if cum[-1] < r:
        raise InvalidParameterError(f"a quantile of rank {r} needs at least {r} values, got {int(cum[-1])}",
                                    argument="stats")
    return float(grid.points[int(np.searchsorted(cum, r))])


def hypergeom_rows(lo: int, hi: int, total: int, good: NDArray[np.float64], draws: int) -> NDArray[np.float64]:
    """P(X_i = x) for x = lo..hi (columns) and X_i ~ Hypergeometric(total, good_i, draws) (rows).

    Each row is anchored at its mode m_i (clipped into [lo, hi] and the support), where scipy's pmf is evaluated
    once, and extended by the ratios P(x + 1)/P(x) = (K − x)(d − x) / ((x + 1)(N − K − d + x + 1)) summed in logs:
    relative error ~1e-12 at N = 3·10⁴ and ~3e-9 at N = 4·10⁷ (there mostly Boost's error at the anchor, while
    Boost's pmf itself is off by up to ~8e-9; tests against exact rationals), for one Boost pmf per row instead of
    one per entry (~0.1 ms each).
    """
    from scipy import stats as sps

    x = np.arange(lo, hi + 1, dtype=float)[None, :]
    g = np.asarray(good, dtype=float).reshape(-1, 1)
    bad = float(total) - g
    smin, smax = np.maximum(0.0, draws - bad), np.minimum(g, float(draws))
    inside = (x >= smin) & (x <= smax)
    a_lo, a_hi = np.maximum(float(lo), smin), np.minimum(float(hi), smax)
    ok = a_lo <= a_hi
    anchor = np.clip(np.floor((draws + 1.0) * (g + 1.0) / (total + 2.0)), a_lo, np.maximum(a_lo, a_hi))
    xr = x[:, :-1]
    step = inside[:, :-1] & inside[:, 1:]
    num = np.where(step, (g - xr) * (draws - xr), 1.0)
    den = np.where(step, (xr + 1.0) * (bad - draws + xr + 1.0), 1.0)
    cum = np.concatenate([np.zeros((g.shape[0], 1)), np.cumsum(np.log(num) - np.log(den), axis=1)], axis=1)
    col = np.clip(anchor - lo, 0, x.shape[1] - 1).astype(np.int64)
    with np.errstate(divide="ignore"):
        base = np.log(sps.hypergeom.pmf(anchor[:, 0], total, g[:, 0], draws))[:, None]  # (logpmf: ~1e-10 off)
    logp = base + cum - np.take_along_axis(cum, col, axis=1)
    return np.where(inside & ok, np.exp(np.where(inside & ok, logp, -np.inf)), 0.0)


class QuantileLaw:
    """The exact law of Q(D) (module docstring) for datasets of n records with k protected ones.

    ``counts``: (2, L) population records per bucket, row 0 the protected group P.
    """

    def __init__(self, grid: Grid, counts: NDArray[np.int64], n: int, q: float, *, replace: bool) -> None:
        self.grid = grid
        self.counts = np.asarray(counts, dtype=np.int64)
        self.n = int(n)
        self.q = float(q)
        self.r = rank(q, n)
        self.replace = bool(replace)
        self.totals = self.counts.sum(axis=1)
        self.cum = np.cumsum(self.counts, axis=1)
        self._cdf: dict[int, NDArray[np.float64]] = {}

    def cdf(self, k: int) -> NDArray[np.float64]:
        """P(Q(D) <= t_i) for every grid point, exactly (up to float rounding), for k protected records."""
        if k not in self._cdf:
            self._cdf[k] = self._compute(int(k))
        return self._cdf[k]

    def pmf(self, k: int) -> NDArray[np.float64]:
        """P(Q(D) = t_i) for every grid point."""
        c = self.cdf(k)
        return np.diff(c, prepend=0.0)

    def _compute(self, k: int) -> NDArray[np.float64]:
        n, r = self.n, self.r
        big_p, big_q = (int(t) for t in self.totals)
        if not self.replace and (k > big_p or n - k > big_q):
            raise InvalidParameterError(f"the population holds {big_p} and {big_q} records, fewer than the {k} and "
                                        f"{n - k} a dataset draws", argument="pairs")
        kp, kq = self.cum[0].astype(float), self.cum[1].astype(float)
        # C_i has mean m_i and sd s_i; far from r the probability is 0 or 1 to well below 1e-30
        fp, fq = kp / max(big_p, 1), kq / max(big_q, 1)
        mean = k * fp + (n - k) * fq
        sd = np.sqrt(k * fp * (1 - fp) + (n - k) * fq * (1 - fq))
        out = np.where(mean >= r, 1.0, 0.0)
        live = np.flatnonzero(np.abs(mean - r) <= 14.0 * sd + 2.0)
        if live.size:
            from scipy import stats as sps  # lazy: scipy.stats costs ~0.3 s at import (issue 26)

            # P(H_Q >= r − h) for h = 0..k as P(H_Q > r) plus the running sum of P(H_Q = r − h): one pmf row and
            # one tail per grid point (scipy's sf per (point, h) sums a pmf each: O(k) times the work)
            h = np.arange(k + 1, dtype=float)
            v = (r - h)[None, :]
            if self.replace:
                p_h = sps.binom.pmf(h[None, :], k, fp[live, None]) if k else np.ones((live.size, 1))
                at = sps.binom.pmf(v, n - k, fq[live, None])
                above = sps.binom.sf(r, n - k, fq[live])
            else:
                p_h = hypergeom_rows(0, k, big_p, kp[live], k) if k else np.ones((live.size, 1))
                at = hypergeom_rows(r - k, r, big_q, kq[live], n - k)[:, ::-1]  # columns h = 0..k: value r − h
                above = sps.hypergeom.sf(r, big_q, kq[live], n - k)
            sf = np.nan_to_num(above)[:, None] + np.cumsum(np.nan_to_num(at), axis=1)
            out[live] = np.clip(np.sum(np.nan_to_num(p_h) * sf, axis=1), 0.0, 1.0)
        out = np.maximum.accumulate(out)
        out[-1] = 1.0  # the top bucket holds every value
        return out

    def moments(self, k: int) -> tuple[float, float]:
        """(E[Q], Var[Q]) under the law."""
        p = self.pmf(k)
        t = self.grid.points
        mu = float(p @ t)
        return mu, float(p @ (t - mu) ** 2)

    def inverse(self, k: int, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """F⁻¹(u) = the least t_i with P(Q <= t_i) >= u."""
        c = self.cdf(k)
        i = np.searchsorted(c, np.asarray(u, dtype=float), side="left")
        return np.asarray(self.grid.points[np.minimum(i, self.grid.size - 1)], dtype=float)

    def w_infinity(self, k_a: int, k_b: int) -> float:
        """W∞ between the laws for k_a and k_b protected records: sup_u |F_a⁻¹(u) − F_b⁻¹(u)| (1-D, exact)."""
        ca, cb = self.cdf(k_a), self.cdf(k_b)
        # the quantile functions are left-continuous steps jumping at the CDF values: the sup is attained inside
        # the open intervals between consecutive jumps (jumps closer than 1e-12, float rounding, are merged)
        us = np.unique(np.concatenate([[0.0, 1.0], ca, cb]))
        us = us[(us >= 0) & (us <= 1)]
        us = us[np.concatenate([[True], np.diff(us) > 1e-12])]
        mids = (us[:-1] + us[1:]) / 2
        return float(np.max(np.abs(self.inverse(k_a, mids) - self.inverse(k_b, mids)))) if mids.size else 0.0
