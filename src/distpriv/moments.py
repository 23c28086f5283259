"""Closed-form moment models f_θ of linear statistics, from per-group aggregates.

Every statistic of :mod:`distpriv.queries` is linear in per-record values,
F_j(D) = s_j(n) Σ_{r∈D} v_j(r) (Chen & Ohrimenko Section 6.1, Table 1). A dataset
of the property model θ holds k = round(θn) records of the protected group P
(records satisfying the protected predicate) and n − k of the rest Q (Section
6.1, "Modeling"; :class:`distpriv.property.PropertyModel`). The two parts are
drawn independently, so with U_g the sum of the drawn records' vectors v of
group g,

    E[F]   = s ⊙ (k a_P + (n − k) a_Q)
    Cov[F] = diag(s) (C_P(k) + C_Q(n − k)) diag(s),

where a_g is the group's mean vector and S_g its covariance with divisor N_g
(the group's size). Drawing c records

* **without replacement** (datasets of distinct records from a population):
  C_g(c) = c S_g (N_g − c) / (N_g − 1), the finite-population correction
  (Cochran, *Sampling Techniques*, 3rd ed., Theorem 2.2 and eq. 2.8, applied to
  the sum and to every pair of coordinates through the polarisation identity);
* **with replacement** (resampling a table, the release's bootstrap): C_g(c) = c S_g.

These are exact moments of the sampler, not approximations; only the
Gaussian *shape* of :meth:`GroupMoments.gaussian_model` is an approximation (a
central-limit one, as in the paper's own Gaussian fit), and it is exactly what
the Gaussian-model mechanisms consume (Section 5.3).

:class:`GroupMoments` keeps the per-group aggregates (count N_g, Σ v and the
centred scatter Σ (v − a_g)(v − a_g)ᵀ) so that any n and θ reuse one aggregate
pass over the table (:mod:`distpriv.data` computes them inside a query engine).

:class:`DatasetSampler` draws F over datasets of that law (k rows of P, n − k of
Q) from the two groups' contribution vectors, beside its closed-form moments: the
one f_θ sampler of the library. :class:`distpriv.property.PropertyModel` draws
from a whole population with it; the release's
:class:`distpriv.release.data.MomentSampler` extends it (draws from a bounded
subsample, matched to the closed-form moments).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import RngLike, as_rng, check_array, check_int, check_real
from .errors import InvalidParameterError, InvalidTypeError
from .models import GaussianModel
from .queries import Predicate, Query, as_predicate, as_query

if TYPE_CHECKING:
    import pandas as pd

#: Row order of the per-group arrays: the protected group P, then the rest Q.
GROUPS: tuple[str, str] = ("protected", "other")


def protected_count(theta: float, n: int) -> int:
    """k = round(θ·n), the protected records of a dataset of n records with share θ.

    Python's ``round`` (half to even), as the release's samplers
    (``distpriv.release.data``) realise θ.
    """
    t = check_real(theta, "theta")
    if not 0.0 <= t <= 1.0:
        raise InvalidParameterError(f"theta: property share must be in [0, 1], got {t}")
    size = check_int(n, "n", minimum=1)
    return int(round(t * size))


@dataclass(frozen=True)
class GroupMoments:
    """Per-group aggregates of the per-record contribution vectors v(r) of a query.

    Attributes
    ----------
    query:
        The linear statistics F (its scales s_j(n) turn sums into F).
    counts:
        (2,) record counts (N_P, N_Q) of the protected group and the rest.
    sums:
        (2, m) Σ_{r∈g} v(r) per group.
    scatter:
        (2, m, m) centred scatter Σ_{r∈g} (v(r) − a_g)(v(r) − a_g)ᵀ per group,
        a_g = sums[g] / counts[g]; zero for an empty group.
    predicate:
        The protected predicate defining P (kept for display), or ``None``.

    The raw cross-products Σ v vᵀ (:attr:`cross_products`) are equivalent
    information; the centred form is what engines and numpy can compute without
    cancellation and what merges exactly (:meth:`merge`).
    """

    query: Query
    counts: NDArray[np.int64]
    sums: NDArray[np.float64]
    scatter: NDArray[np.float64]
    predicate: Predicate | None = None

    def __post_init__(self) -> None:
        q = as_query(self.query)
        m = q.dim
        counts = np.asarray(self.counts)
        if counts.shape != (2,) or not np.issubdtype(counts.dtype, np.integer) or np.any(counts < 0):
            raise InvalidTypeError(f"counts: expected two non-negative integers (N_P, N_Q), got {self.counts!r}")
        sums = check_array(self.sums, "sums", ndim=2)
        if sums.shape != (2, m):
            raise InvalidTypeError(f"sums: expected shape (2, {m}), got {sums.shape}")
        scatter = check_array(self.scatter, "scatter", ndim=3)
        if scatter.shape != (2, m, m):
            raise InvalidTypeError(f"scatter: expected shape (2, {m}, {m}), got {scatter.shape}")
        scatter = 0.5 * (scatter + np.swapaxes(scatter, 1, 2))
        for g in range(2):
            if counts[g] == 0 and (np.any(sums[g] != 0) or np.any(scatter[g] != 0)):
                raise InvalidParameterError(f"sums: group {GROUPS[g]!r} is empty but has non-zero sums")
            diag = np.diagonal(scatter[g])
            scale = max(1.0, float(np.max(np.abs(scatter[g]))) if m else 1.0)
            if np.any(diag < -1e-9 * scale):
                raise InvalidParameterError(
                    f"scatter: group {GROUPS[g]!r} has a negative variance {float(diag.min()):.3g}"
                )
        object.__setattr__(self, "query", q)
        object.__setattr__(self, "counts", counts.astype(np.int64))
        object.__setattr__(self, "sums", sums)
        object.__setattr__(self, "scatter", scatter)
        if self.predicate is not None:
            object.__setattr__(self, "predicate", as_predicate(self.predicate))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_rows(
        cls,
        matrix: ArrayLike,
        protected: ArrayLike,
        query: Query | Sequence[str],
        predicate: Predicate | str | None = None,
    ) -> GroupMoments:
        """Aggregates of a column matrix V (:meth:`Query.column_matrix`) split by a boolean mask.

        Two-pass centred scatter per group in numpy (the in-memory reference for
        the engine path of :func:`distpriv.data.summarize`).
        """
        q = as_query(query)
        v = check_array(matrix, "matrix", ndim=2)
        mask = np.asarray(protected)
        if mask.dtype != bool or mask.shape != (v.shape[0],):
            raise InvalidTypeError(f"protected: expected a boolean ({v.shape[0]},) mask, got {mask.dtype} {mask.shape}")
        if v.shape[1] != q.dim:
            raise InvalidTypeError(f"matrix: expected {q.dim} columns, got shape {v.shape}")
        counts = np.zeros(2, dtype=np.int64)
        sums = np.zeros((2, q.dim))
        scatter = np.zeros((2, q.dim, q.dim))
        for g, rows in enumerate((v[mask], v[~mask])):
            counts[g] = rows.shape[0]
            if rows.shape[0]:
                sums[g] = rows.sum(axis=0)
                centred = rows - rows.mean(axis=0)
                scatter[g] = centred.T @ centred
        return cls(q, counts, sums, scatter, None if predicate is None else as_predicate(predicate))

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, query: Query | Sequence[str], predicate: Predicate | str
    ) -> GroupMoments:
        """Aggregates of an in-memory pandas table: V from :meth:`Query.column_matrix`, P from the predicate."""
        q = as_query(query)
        pred = as_predicate(predicate)
        return cls.from_rows(q.column_matrix(frame), pred.mask(frame), q, pred)

    @classmethod
    def from_cross_products(
        cls,
        query: Query | Sequence[str],
        counts: ArrayLike,
        sums: ArrayLike,
        cross_products: ArrayLike,
        *,
        shift: ArrayLike | None = None,
        predicate: Predicate | str | None = None,
    ) -> GroupMoments:
        """From raw per-group sums of w = v − c and Σ w wᵀ, with c = ``shift`` (2, m) (default 0).

        scatter = Σ w wᵀ − N ā_w ā_wᵀ and Σ v = Σ w + N c: the shift makes the
        subtraction well conditioned when c is near the group mean.
        """
        q = as_query(query)
        n = np.asarray(counts, dtype=np.int64)
        s = check_array(sums, "sums", ndim=2)
        t = check_array(cross_products, "cross_products", ndim=3)
        c = np.zeros_like(s) if shift is None else check_array(shift, "shift", ndim=2)
        if n.shape != (2,) or s.shape != (2, q.dim) or t.shape != (2, q.dim, q.dim) or c.shape != s.shape:
            raise InvalidTypeError(
                f"counts, sums, cross_products, shift: expected shapes (2,), (2, m), (2, m, m), (2, m) with m = {q.dim}"
            )
        scatter = np.zeros_like(t)
        out_sums = np.zeros_like(s)
        for g in range(2):
            if n[g]:
                mean_w = s[g] / n[g]
                scatter[g] = t[g] - n[g] * np.outer(mean_w, mean_w)
                out_sums[g] = s[g] + n[g] * c[g]
        # Rounding may leave tiny negative variances where a group is constant.
        for g in range(2):
            d = np.diagonal(scatter[g]).copy()
            tiny = (d < 0) & (d > -1e-9 * np.maximum(1.0, np.abs(np.diagonal(t[g]))))
            idx = np.flatnonzero(tiny)
            scatter[g][idx, :] = 0.0
            scatter[g][:, idx] = 0.0
        return cls(q, n, out_sums, scatter, None if predicate is None else as_predicate(predicate))

    # ------------------------------------------------------------------ views
    @property
    def dim(self) -> int:
        """m, the number of statistics."""
        return self.query.dim

    @property
    def means(self) -> NDArray[np.float64]:
        """(2, m) group means a_g (NaN for an empty group)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sums / self.counts[:, None]

    @property
    def covariances(self) -> NDArray[np.float64]:
        """(2, m, m) group covariances S_g with divisor N_g (zero for an empty group)."""
        out = np.zeros_like(self.scatter)
        for g in range(2):
            if self.counts[g]:
                out[g] = self.scatter[g] / self.counts[g]
        return out

    @property
    def cross_products(self) -> NDArray[np.float64]:
        """(2, m, m) raw Σ_{r∈g} v(r) v(r)ᵀ = scatter + sums sumsᵀ / N_g."""
        out = self.scatter.copy()
        for g in range(2):
            if self.counts[g]:
                out[g] += np.outer(self.sums[g], self.sums[g]) / self.counts[g]
        return out

    @property
    def rows(self) -> int:
        """N_P + N_Q."""
        return int(self.counts.sum())

    @property
    def share(self) -> float:
        """N_P / (N_P + N_Q), the protected share of the table."""
        return float(self.counts[0] / max(1, self.rows))

    def statistics(self) -> NDArray[np.float64]:
        """F over every row of the table: s(N) ⊙ (Σ_P v + Σ_Q v), N = N_P + N_Q."""
        if self.rows == 0:
            raise InvalidParameterError("data: the table has no rows")
        return self.query.reduce(self.sums.sum(axis=0), self.rows)

    def merge(self, other: GroupMoments) -> GroupMoments:
        """Aggregates of the union of two disjoint tables (Chan, Golub & LeVeque 1979 pairwise update).

        scatter = scatter₁ + scatter₂ + (N₁N₂/N) δ δᵀ with δ = a₂ − a₁, per group.
        """
        if not isinstance(other, GroupMoments) or other.query != self.query:
            raise InvalidTypeError("other: expected GroupMoments of the same query")
        counts = self.counts + other.counts
        scatter = self.scatter + other.scatter
        for g in range(2):
            n1, n2 = int(self.counts[g]), int(other.counts[g])
            if n1 and n2:
                delta = other.sums[g] / n2 - self.sums[g] / n1
                scatter[g] += (n1 * n2 / (n1 + n2)) * np.outer(delta, delta)
        return GroupMoments(self.query, counts, self.sums + other.sums, scatter, self.predicate)

    # ------------------------------------------------------------------ dataset moments
    def check_counts(self, k: int, n: int, *, replace: bool) -> None:
        """Raise unless the groups can supply k protected and n − k other records."""
        need = (k, n - k)
        for g in range(2):
            have = int(self.counts[g])
            if need[g] == 0:
                continue
            if have == 0:
                raise InvalidParameterError(
                    f"theta: datasets need {need[g]} records of the {GROUPS[g]} group, but the table has none"
                )
            if not replace and need[g] > have:
                k_min = max(0, n - int(self.counts[1]))
                k_max = min(n, int(self.counts[0]))
                raise InvalidParameterError(
                    f"theta: a dataset of n = {n} records without replacement needs {need[g]} records of the "
                    f"{GROUPS[g]} group, but the table has {have}; achievable shares are "
                    f"{k_min / n:.6g}..{k_max / n:.6g}"
                )

    def dataset_sum_moments(
        self, k: int, n: int, *, replace: bool
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mean and covariance of U = Σ_{r∈D} v(r) for k protected and n − k other records (module docstring)."""
        size = check_int(n, "n", minimum=1)
        kk = check_int(k, "k", minimum=0)
        if kk > size:
            raise InvalidParameterError(f"k: at most n = {size} protected records, got {kk}")
        self.check_counts(kk, size, replace=replace)
        mean = np.zeros(self.dim)
        cov = np.zeros((self.dim, self.dim))
        cov_g = self.covariances
        for g, c in enumerate((kk, size - kk)):
            if c == 0:
                continue
            big_n = int(self.counts[g])
            mean += c * (self.sums[g] / big_n)
            if replace:
                factor = float(c)
            else:
                factor = 0.0 if big_n == 1 else c * (big_n - c) / (big_n - 1)
            cov += factor * cov_g[g]
        return mean, 0.5 * (cov + cov.T)

    def dataset_moments(
        self, theta: float, n: int, *, replace: bool = False
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(E[F], Cov[F]) over datasets of n records with k = round(θn) protected ones (module docstring)."""
        k = protected_count(theta, n)
        mean_u, cov_u = self.dataset_sum_moments(k, n, replace=replace)
        s = self.query.scales(n)
        return mean_u * s, cov_u * np.outer(s, s)

    def gaussian_model(
        self, thetas: Iterable[float], n: int, *, replace: bool = False
    ) -> GaussianModel:
        """f_θ = N(E[F], Cov[F]) for each θ (labels are the given values, e.g. the pairs' shares)."""
        labels = _labels(thetas)
        means, covs = {}, {}
        for t in labels:
            means[t], covs[t] = self.dataset_moments(t, n, replace=replace)
        return GaussianModel(means=means, covariances=covs)

    def __repr__(self) -> str:
        pred = "" if self.predicate is None else f"predicate={str(self.predicate)!r}, "
        return (
            f"GroupMoments({pred}counts=({int(self.counts[0])}, {int(self.counts[1])}), "
            f"query={list(self.query.names)})"
        )


def _labels(thetas: Iterable[float]) -> list[float]:
    if isinstance(thetas, (str, bytes)) or not isinstance(thetas, Iterable):
        raise InvalidTypeError(f"thetas: expected a list of property shares, got {type(thetas).__name__}")
    labels = list(dict.fromkeys(thetas))
    if not labels:
        raise InvalidParameterError("thetas: need at least one property share")
    for t in labels:
        check_real(t, "thetas")
    return labels


def dataset_moments(
    moments: GroupMoments, theta: float, n: int, *, replace: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Function form of :meth:`GroupMoments.dataset_moments`."""
    return moments.dataset_moments(theta, n, replace=replace)


def moment_model(
    moments: GroupMoments,
    pairs: Iterable[Sequence[float]],
    n: int,
    *,
    replace: bool = False,
) -> GaussianModel:
    """The Gaussian f_θ model of every share in Ψ, labels = the pairs' values in order of appearance.

    ``replace=False`` models datasets drawn from a population without
    replacement; ``replace=True`` resampling a table with replacement.
    """
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise InvalidTypeError("pairs: expected a list of (θ_i, θ_j) tuples")
    values: list[float] = []
    for item in pairs:
        try:
            a, b = item
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"pairs: each entry must be a 2-tuple of shares, got {item!r}") from exc
        values += [a, b]
    if not values:
        raise InvalidParameterError("pairs: Ψ must contain at least one pair")
    return moments.gaussian_model(values, n, replace=replace)


# --------------------------------------------------------------------------- drawing datasets of the law
# Rows of random keys materialised at once by the sort-based sampler (bounds memory to ~32 MB).
_ARGPARTITION_CHUNK = 4_000_000
# Index entries per chunk when sampling many datasets (int64: ~32 MB per group).
_INDEX_CHUNK = 4_000_000
# The redraw sampler is used while k / N stays below this (collision rate per draw < 1/4).
_REDRAW_MAX_FRACTION = 0.25


def _redraw_sampler(pool: int, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Draw k iid indices per row, then redraw the surplus copies of repeated values until all differ.

    Each round keeps one copy of every distinct value and redraws the others
    uniformly from range(pool). The procedure commutes with any relabelling of
    range(pool), so the final k-set of each row is uniform over all k-subsets.
    Expected rounds are O(log(size·k) / log(N/k)); used when k ≤ N/4.
    """
    out = rng.integers(0, pool, size=(size, k), dtype=np.int64)
    while True:
        out.sort(axis=1)
        dup = out[:, 1:] == out[:, :-1]
        n_dup = int(np.count_nonzero(dup))
        if n_dup == 0:
            return out
        tail = out[:, 1:]
        tail[dup] = rng.integers(0, pool, size=n_dup, dtype=np.int64)


def _argpartition_sampler(pool: int, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """The k smallest of pool iid uniform keys per row: a uniform k-subset (a partial random permutation)."""
    out = np.empty((size, k), dtype=np.int64)
    rows = max(1, _ARGPARTITION_CHUNK // pool)
    for start in range(0, size, rows):
        stop = min(size, start + rows)
        keys = rng.random((stop - start, pool))
        out[start:stop] = np.argpartition(keys, k - 1, axis=1)[:, :k]
    return out


def sample_without_replacement(
    pool: int, k: int, size: int, rng: RngLike = None
) -> NDArray[np.int64]:
    """``size`` independent uniform k-subsets of range(pool), as a (size, k) int64 array.

    Strategy (measured in ``benchmarks/bench_sampler.py``): for k ≤ pool/4,
    iid draws with vectorised redraw of repeats (O(size·k·log k)); otherwise the
    k smallest of ``pool`` random keys per row (O(size·pool)), in chunks.
    """
    pool = check_int(pool, "pool", minimum=1)
    k = check_int(k, "k", minimum=0)
    size = check_int(size, "size", minimum=0)
    if k > pool:
        raise InvalidParameterError(f"k: cannot draw {k} distinct items from a pool of {pool}")
    gen = as_rng(rng)
    if k == 0 or size == 0:
        return np.empty((size, k), dtype=np.int64)
    if k == pool:
        return np.tile(np.arange(pool, dtype=np.int64), (size, 1))
    if k <= _REDRAW_MAX_FRACTION * pool:
        return _redraw_sampler(pool, k, size, gen)
    return _argpartition_sampler(pool, k, size, gen)


class DatasetSampler:
    """F(D) for datasets D of n records, k = round(θn) of the protected group P and n − k of the rest Q.

    This is the law of the module docstring (Chen & Ohrimenko Section 6.1,
    "Modeling"): the two parts drawn independently, each uniformly without
    replacement (``replace=False``: datasets of distinct records of a population)
    or with replacement (``replace=True``: resampling a table). ``pos`` (N_P, m)
    and ``neg`` (N_Q, m) are the per-record contribution vectors v(r) of the two
    groups (rows of :meth:`distpriv.queries.Query.column_matrix`) and ``moments``
    their aggregates, so :meth:`exact_moments` gives (E[F], Cov[F]) of the draws
    in closed form (:meth:`GroupMoments.dataset_moments`).

    :meth:`raw` draws a dataset as row positions — per chunk of datasets, the k
    positions in P (:func:`sample_without_replacement`, or iid with replacement),
    then the n − k in Q — and sums the rows' vectors by one gather per statistic:
    F = s(n) ⊙ (Σ_{r∈D⁺} v(r) + Σ_{r∈D⁻} v(r)), O(size · n log n) whatever the
    group sizes. Subclasses may draw the same law by another route
    (:class:`distpriv.release.data.MomentSampler`).
    """

    def __init__(
        self,
        pos: NDArray[np.float64],
        neg: NDArray[np.float64],
        moments: GroupMoments,
        n: int,
        *,
        replace: bool,
    ) -> None:
        self.pos = pos
        self.neg = neg
        self.moments = moments
        self.query = moments.query
        self.n = int(n)
        self.replace = bool(replace)

    def _k(self, p: float) -> int:
        k = int(round(float(p) * self.n))
        if not 0 <= k <= self.n:
            raise InvalidParameterError(f"p: property value {p} is outside [0, 1]")
        return k

    def exact_moments(self, p: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(E[F], Cov[F]) of the sampler at θ = p, in closed form."""
        return self.moments.dataset_moments(self._k(p) / self.n, self.n, replace=self.replace)

    @cached_property
    def _columns(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        # Column-major copies per group: gathering one contiguous 1-D column at a time is ~3x faster than
        # gathering (k, m) row blocks (benchmarks/bench_sampler.py).
        return np.ascontiguousarray(self.pos.T), np.ascontiguousarray(self.neg.T)

    def positions(
        self, k: int, size: int, gen: np.random.Generator
    ) -> Iterator[tuple[int, NDArray[np.int64], NDArray[np.int64]]]:
        """Chunks (first dataset, (rows, k) positions in P, (rows, n − k) positions in Q), ~32 MB of indices each.

        Without replacement the positions of a row are distinct (uniform k-subsets); with replacement iid.
        """
        rows = max(1, _INDEX_CHUNK // self.n)
        for start in range(0, size, rows):
            chunk = min(rows, size - start)
            yield start, self._draw(len(self.pos), k, chunk, gen), self._draw(len(self.neg), self.n - k, chunk, gen)

    def _draw(self, pool: int, k: int, size: int, gen: np.random.Generator) -> NDArray[np.int64]:
        if not self.replace:
            return sample_without_replacement(pool, k, size, gen)
        if k == 0:
            return np.empty((size, 0), dtype=np.int64)
        return gen.integers(0, pool, size=(size, k), dtype=np.int64)

    def raw(self, p: float, size: int, rng: RngLike) -> NDArray[np.float64]:
        """``size`` draws of F at θ = p, (size, m)."""
        k = self._k(p)
        self.moments.check_counts(k, self.n, replace=self.replace)
        vt_pos, vt_neg = self._columns
        sums = np.zeros((size, self.query.dim), dtype=float)
        for start, sat, oth in self.positions(k, size, as_rng(rng)):
            block = sums[start : start + sat.shape[0]]
            for j in range(self.query.dim):
                if k:
                    block[:, j] += vt_pos[j].take(sat).sum(axis=1)
                if self.n - k:
                    block[:, j] += vt_neg[j].take(oth).sum(axis=1)
        return self.query.reduce(sums, self.n)
