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

The model is the release's f_θ stack on an in-memory population: the groups'
aggregates are a :class:`distpriv.moments.GroupMoments` (the closed-form mean and
covariance of F under θ_p, :meth:`PropertyModel.exact_moments`, as the release's
:class:`~distpriv.release.data.MomentSampler` matches them), and the datasets are
drawn by :class:`distpriv.moments.DatasetSampler`, the sampler the release's
moment sampler extends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._validation import RngLike, as_rng, check_int, check_real
from .errors import InvalidParameterError, InvalidTypeError
from .models import EmpiricalModel, GaussianModel
from .moments import DatasetSampler, GroupMoments
from .queries import Predicate, Query, as_predicate, as_query


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
        #: per-group aggregates of V: the closed-form moments of f_θ (:meth:`exact_moments`)
        self.moments = GroupMoments.from_rows(self.matrix, mask, self.query, self.predicate)
        #: draws datasets of θ_p: k = p·n rows of S⁺ and n − k of S⁻, without replacement
        self.sampler = DatasetSampler(self.matrix[self.satisfying], self.matrix[self.other], self.moments, self.n,
                                      replace=False)

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
        for start, sat, oth in self.sampler.positions(k, count, as_rng(rng)):
            stop = start + sat.shape[0]
            out[start:stop, :k] = self.satisfying[sat]
            out[start:stop, k:] = self.other[oth]
        return out

    def sample_query(self, p: float, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """(size, m) query values F(D) of ``size`` independent datasets D ~ θ_p, in one vectorised step.

        F(D) = s(n) ⊙ (Σ_{r∈D⁺} V⁺[r] + Σ_{r∈D⁻} V⁻[r]) with V the query's column
        matrix (:meth:`Query.column_matrix`), drawn by :meth:`DatasetSampler.raw`.
        Same ``rng`` → the datasets of :meth:`sample_indices`.
        """
        self.count_for(p)
        return self.sampler.raw(p, check_int(size, "size", minimum=1), rng)

    def exact_moments(self, p: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(E[F], Cov[F]) over θ_p in closed form (:meth:`GroupMoments.dataset_moments`, without replacement:
        the finite-population correction), what :meth:`sample_query`'s draws estimate."""
        self.count_for(p)
        return self.sampler.exact_moments(p)

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

    def moment_model(self, ps: Iterable[float]) -> GaussianModel:
        """f_θ = N(E[F], Cov[F]) for each p in ``ps`` with the exact moments (:meth:`exact_moments`), no sampling."""
        labels = self._labels(ps)
        return self.moments.gaussian_model(labels, self.n, replace=False)

    def __repr__(self) -> str:
        return (
            f"PropertyModel(predicate={str(self.predicate)!r}, n={self.n}, population={len(self.population)}, "
            f"satisfying={self.satisfying.size}, query={list(self.query.names)})"
        )
