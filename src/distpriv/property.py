"""Property models Θ over a population table and fast sampling of the query distributions f_θ.

Chen & Ohrimenko (Section 6.1; AISTATS appendix C.1) model each θ ∈ Θ as the
distribution of datasets of n = 100 Adult records whose global sensitive
property — e.g. the share p_I of records with income > $50K — equals p, and
estimate f_θ by computing the query F on 1000 such datasets.

:class:`PropertyModel` makes that precise: θ_p is the uniform distribution over
datasets D of n distinct population records with exactly k = round(p·n)
records satisfying the sensitive predicate, i.e. k records drawn without
replacement from the sub-population S⁺ that satisfies it and n − k from the
complement S⁻. Because every supported statistic is linear in per-row values
(:mod:`distpriv.queries`),

    F(D) = s(n) ⊙ ( Σ_{r ∈ D⁺} V[r] + Σ_{r ∈ D⁻} V[r] ),

so ``size`` datasets are sampled at once as two index matrices (size × k and
size × (n − k)), gathered from the precomputed column matrix V and summed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._validation import RngLike, as_rng, check_int, check_real
from .errors import InvalidParameterError, InvalidTypeError
from .models import EmpiricalModel, GaussianModel
from .queries import Predicate, Query, as_predicate, as_query

# Rows of random keys materialised at once by the sort-based sampler (bounds memory to ~32 MB).
_ARGPARTITION_CHUNK = 4_000_000
# Index entries per chunk when sampling many datasets (int64: ~32 MB per sub-population).
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


class PropertyModel:
    """Θ = {θ_p}: datasets of n population records of which exactly round(p·n) satisfy ``predicate``.

    Parameters
    ----------
    population:
        The table datasets are drawn from (e.g. the modelling part of
        :func:`distpriv.datasets.split_adult`).
    predicate:
        The sensitive record-level predicate whose share is the global property,
        e.g. ``"income=>50K"`` (p_I) or ``"workclass=Private"`` (p_W).
    query:
        The released statistics F (e.g. :data:`distpriv.queries.ADULT_QUERY`);
        a list of statistic strings is accepted.
    n:
        Records per dataset (the paper uses n = 100).

    Notes
    -----
    p must make p·n an integer: k = round(p·n) is accepted only when
    |p·n − k| ≤ 1e-9·max(1, n), so θ_p always has property value exactly p
    (0.45 with n = 100 gives k = 45; 0.455 is rejected). Datasets are sets of
    distinct population rows (sampling without replacement within each dataset;
    different datasets are independent).
    """

    def __init__(
        self,
        population: pd.DataFrame,
        predicate: Predicate | str,
        query: Query | Iterable[Any],
        n: int,
    ) -> None:
        if not isinstance(population, pd.DataFrame):
            raise InvalidTypeError(f"population: expected a pandas DataFrame, got {type(population).__name__}")
        if len(population) == 0:
            raise InvalidParameterError("population: must contain at least one record")
        self.n = check_int(n, "n", minimum=1)
        self.predicate = as_predicate(predicate)
        self.query = as_query(query)  # type: ignore[arg-type]
        self.population = population
        mask = self.predicate.mask(population)
        self.mask: NDArray[np.bool_] = mask
        self.satisfying: NDArray[np.int64] = np.flatnonzero(mask).astype(np.int64)
        self.other: NDArray[np.int64] = np.flatnonzero(~mask).astype(np.int64)
        if self.satisfying.size == 0:
            raise InvalidParameterError(
                f"predicate: {str(self.predicate)!r} matches no record of the population "
                f"({len(population)} records); the property share is always 0"
            )
        if self.other.size == 0:
            raise InvalidParameterError(
                f"predicate: {str(self.predicate)!r} matches every record of the population "
                f"({len(population)} records); the property share is always 1"
            )
        self.matrix: NDArray[np.float64] = self.query.column_matrix(population)
        # Column-major copies per sub-population: gathering one contiguous 1-D column
        # at a time is ~3x faster than gathering (k, m) row blocks (bench_sampler.py).
        self._vt_sat = np.ascontiguousarray(self.matrix[self.satisfying].T)
        self._vt_oth = np.ascontiguousarray(self.matrix[self.other].T)

    # ------------------------------------------------------------------ θ bookkeeping
    @property
    def population_share(self) -> float:
        """Share of the population satisfying the predicate."""
        return float(self.satisfying.size / len(self.population))

    def count_for(self, p: float) -> int:
        """k = p·n, the number of records satisfying the predicate in a dataset of θ_p.

        Raises :class:`InvalidParameterError` when p ∉ [0, 1], p·n is not an
        integer (within 1e-9·max(1, n)), or a sub-population is too small to
        supply k (resp. n − k) distinct records.
        """
        pv = check_real(p, "p")
        if not 0.0 <= pv <= 1.0:
            raise InvalidParameterError(f"p: property value must be in [0, 1], got {pv}")
        exact = pv * self.n
        k = int(round(exact))
        if abs(exact - k) > 1e-9 * max(1.0, float(self.n)):
            raise InvalidParameterError(
                f"p: p·n = {pv}·{self.n} = {exact:.6g} is not an integer; achievable values are "
                f"multiples of 1/n = {1 / self.n:.6g}"
            )
        if k > self.satisfying.size:
            raise InvalidParameterError(
                f"p: θ_p needs {k} records satisfying {str(self.predicate)!r} but the population has only "
                f"{self.satisfying.size}; the largest achievable p is {self.achievable_range()[1]:.6g}"
            )
        if self.n - k > self.other.size:
            raise InvalidParameterError(
                f"p: θ_p needs {self.n - k} records not satisfying {str(self.predicate)!r} but the population "
                f"has only {self.other.size}; the smallest achievable p is {self.achievable_range()[0]:.6g}"
            )
        return k

    def achievable_range(self) -> tuple[float, float]:
        """(p_min, p_max): the population can supply θ_p for every p = k/n in this interval."""
        k_min = max(0, self.n - self.other.size)
        k_max = min(self.n, self.satisfying.size)
        return k_min / self.n, k_max / self.n

    # ------------------------------------------------------------------ sampling
    def sample_indices(self, p: float, size: int, rng: RngLike = None) -> NDArray[np.int64]:
        """(size, n) positional row indices into ``population``, one dataset of θ_p per row.

        Columns 0..k−1 hold records satisfying the predicate, k..n−1 the others;
        indices within a row are distinct.
        """
        k = self.count_for(p)
        count = check_int(size, "size", minimum=1)
        out = np.empty((count, self.n), dtype=np.int64)
        for start, sat, oth in self._local_indices(k, count, as_rng(rng)):
            stop = start + sat.shape[0]
            out[start:stop, :k] = self.satisfying[sat]
            out[start:stop, k:] = self.other[oth]
        return out

    def _local_indices(
        self, k: int, size: int, gen: np.random.Generator
    ) -> Iterator[tuple[int, NDArray[np.int64], NDArray[np.int64]]]:
        """Chunks (first row, k-subsets of S⁺, (n−k)-subsets of S⁻) bounding index memory to ~32 MB."""
        rows = max(1, _INDEX_CHUNK // self.n)
        for start in range(0, size, rows):
            chunk = min(rows, size - start)
            sat = sample_without_replacement(self.satisfying.size, k, chunk, gen)
            oth = sample_without_replacement(self.other.size, self.n - k, chunk, gen)
            yield start, sat, oth

    def sample_query(self, p: float, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """(size, m) query values F(D) of ``size`` independent datasets D ~ θ_p, in one vectorised step.

        F(D) = s(n) ⊙ (Σ_{r∈D⁺} V⁺[r] + Σ_{r∈D⁻} V⁻[r]) with V the query's column
        matrix (:meth:`Query.column_matrix`). Same ``rng`` → the datasets of
        :meth:`sample_indices`.
        """
        k = self.count_for(p)
        count = check_int(size, "size", minimum=1)
        sums = np.zeros((count, self.query.dim), dtype=float)
        for start, sat, oth in self._local_indices(k, count, as_rng(rng)):
            block = sums[start : start + sat.shape[0]]
            for j in range(self.query.dim):
                if k:
                    block[:, j] += self._vt_sat[j].take(sat).sum(axis=1)
                if self.n - k:
                    block[:, j] += self._vt_oth[j].take(oth).sum(axis=1)
        return sums * self.query.scales(self.n)

    def sample_query_reference(self, p: float, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """Slow reference for :meth:`sample_query`: one ``DataFrame.sample`` pair and one
        ``Query.evaluate`` per dataset (the straightforward pandas implementation)."""
        k = self.count_for(p)
        count = check_int(size, "size", minimum=1)
        gen = as_rng(rng)
        sat_frame = self.population.iloc[self.satisfying]
        oth_frame = self.population.iloc[self.other]
        out = np.empty((count, self.query.dim), dtype=float)
        for i in range(count):
            data = pd.concat(
                [sat_frame.sample(n=k, random_state=gen), oth_frame.sample(n=self.n - k, random_state=gen)]
            )
            out[i] = self.query.evaluate(data)
        return out

    def sample_datasets(self, p: float, size: int, rng: RngLike = None) -> list[pd.DataFrame]:
        """``size`` datasets of θ_p as DataFrames (for inspection; use :meth:`sample_query` for speed)."""
        idx = self.sample_indices(p, size, rng)
        return [self.population.iloc[row] for row in idx]

    # ------------------------------------------------------------------ f_θ models
    def _labels(self, ps: Iterable[float]) -> list[float]:
        if isinstance(ps, (str, bytes)) or not isinstance(ps, Iterable):
            raise InvalidTypeError(f"ps: expected a list of property values, got {type(ps).__name__}")
        labels = [check_real(p, "ps") for p in ps]
        if not labels:
            raise InvalidParameterError("ps: need at least one property value")
        if len(set(labels)) != len(labels):
            raise InvalidParameterError(f"ps: property values must be distinct, got {labels}")
        for p in labels:
            self.count_for(p)
        return labels

    def empirical_model(self, ps: Iterable[float], size: int = 1000, rng: RngLike = None, *,
                        claim_scope: str = "samples") -> EmpiricalModel:
        """f_θ for each p in ``ps`` as ``size`` sampled query values (AISTATS appendix C.1: 1000 per θ).

        Labels are the floats ``float(p)``; all θ share one random stream ``rng``. ``claim_scope``: see
        :class:`~distpriv.EmpiricalModel` (the reproductions pass ``"papers"``).
        """
        labels = self._labels(ps)
        count = check_int(size, "size", minimum=2)
        gen = as_rng(rng)
        return EmpiricalModel(samples={p: self.sample_query(p, count, gen) for p in labels}, claim_scope=claim_scope)

    def gaussian_model(self, ps: Iterable[float], size: int = 1000, rng: RngLike = None) -> GaussianModel:
        """N(μ̂_θ, Σ̂_θ) fitted to ``size`` samples per θ (Chen & Ohrimenko Section 6.1, "Modeling")."""
        return self.empirical_model(ps, size=size, rng=rng).to_gaussian()

    def __repr__(self) -> str:
        return (
            f"PropertyModel(predicate={str(self.predicate)!r}, n={self.n}, population={len(self.population)}, "
            f"satisfying={self.satisfying.size}, query={list(self.query.names)})"
        )
