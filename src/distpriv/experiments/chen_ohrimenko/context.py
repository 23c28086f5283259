"""The cached Adult data context of the Chen & Ohrimenko experiments (Section 6.1, appendix C.1).

One :class:`Context` per (seed, n, model_samples) holds the loaded Adult frame,
the paper's seeded split (10,000 auxiliary / 10,000 test / the rest for
modelling), the property models and the fitted Gaussian models N(μ_θ, Σ_θ);
at most :data:`CONTEXT_CACHE_SIZE` contexts stay cached (least recently used).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_int
from ...attacks import AttackData, FreshSplits, sample_attack_data
from .settings import MODEL_SAMPLES, N_RECORDS, PROPERTIES, _rng


@dataclass
class Context:
    """Loaded data, the paper's split, property models and fitted Gaussian models (cached per seed)."""

    seed: int
    n: int
    model_samples: int
    population: Any
    split: Any
    query: Any
    sensitivities: NDArray[np.float64]
    _property_models: dict[tuple[str, str], Any] = field(default_factory=dict)
    _gaussians: dict[tuple[str, float, float], Any] = field(default_factory=dict)
    _empiricals: dict[tuple[str, float, float], Any] = field(default_factory=dict)
    _attack_splits: list[Any] = field(default_factory=list)
    #: calibrated mechanisms, see :func:`.measures.calibrate_row`: key -> (model, mechanism, warning lines)
    _mechanisms: dict[tuple[Any, ...], tuple[Any, Any, tuple[str, ...]]] = field(default_factory=dict)

    def property_model(self, prop: str, part: str = "model") -> Any:
        """PropertyModel over the ``part`` ("model", "aux", "test") records of the main split."""
        key = (prop, part)
        if key not in self._property_models:
            self._property_models[key] = _property_model(getattr(self.split, part), prop, self.query, self.n)
        return self._property_models[key]

    def empirical(self, prop: str, p1: float, p2: float) -> Any:
        """The empirical f_θ: ``model_samples`` datasets per θ ∈ {p1, p2} from the modelling records (appendix C.1)."""
        key = (prop, p1, p2)
        if key not in self._empiricals:
            pm = self.property_model(prop)
            self._empiricals[key] = pm.empirical_model(
                [p1, p2], size=self.model_samples, rng=_rng(self.seed, "gaussian", prop, p1, p2),
                claim_scope="papers")  # the papers' treatment (issue 27: research models default to "samples")
        return self._empiricals[key]

    def gaussian(self, prop: str, p1: float, p2: float) -> Any:
        """N(μ_θ, Σ_θ) fitted to :meth:`empirical` (``model_samples`` datasets per θ; appendix C.1)."""
        key = (prop, p1, p2)
        if key not in self._gaussians:
            self._gaussians[key] = self.empirical(prop, p1, p2).to_gaussian()
        return self._gaussians[key]

    def attack_splits(self, reps: int) -> list[Any]:
        """``reps`` fresh auxiliary/test splits of Adult (Section 6.3.1), drawn once and reused."""
        from ...datasets import split_adult

        while len(self._attack_splits) < reps:
            i = len(self._attack_splits)
            self._attack_splits.append(split_adult(self.population, _rng(self.seed, "attack-split", i)))
        return self._attack_splits[:reps]

    def split_model(self, prop: str, index: int, part: str) -> Any:
        """PropertyModel over the ``part`` records of fresh attack split ``index`` (cached)."""
        key = (prop, f"{part}#{index}")
        if key not in self._property_models:
            split = self.attack_splits(index + 1)[index]
            self._property_models[key] = _property_model(getattr(split, part), prop, self.query, self.n)
        return self._property_models[key]

    def attack_data(
        self, prop: str, p1: float, p2: float, reps: int, *, n_shadow: int, n_test: int, fresh_splits: bool
    ) -> AttackData:
        """Shadow/test query values for the meta-classifier attack."""
        rng = _rng(self.seed, "attack-data", prop, p1, p2, reps, n_shadow, n_test, fresh_splits)
        if not fresh_splits:
            samplers = (self.property_model(prop, "aux").sample_query, self.property_model(prop, "test").sample_query)
            return sample_attack_data(samplers, p1, p2, n_shadow=n_shadow, n_test=n_test, reps=reps, rng=rng)
        self.attack_splits(reps)
        counter = iter(range(reps))

        def factory(_: np.random.Generator) -> tuple[Any, Any]:
            i = next(counter)
            return self.split_model(prop, i, "aux").sample_query, self.split_model(prop, i, "test").sample_query

        return sample_attack_data(FreshSplits(factory), p1, p2, n_shadow=n_shadow, n_test=n_test, reps=reps, rng=rng)


def _property_model(df: Any, prop: str, query: Any, n: int) -> Any:
    from ...property import PropertyModel
    from ...queries import as_predicate

    return PropertyModel(df, as_predicate(PROPERTIES[prop]["predicate"]), query, n)


#: At most this many data contexts (each holds the Adult frame and its fitted models) stay cached.
CONTEXT_CACHE_SIZE = 4


@functools.lru_cache(maxsize=CONTEXT_CACHE_SIZE)
def _build_context(seed: int, n: int, model_samples: int) -> Context:
    from ...datasets import load_adult, split_adult
    from ...queries import ADULT_QUERY

    df = load_adult()
    split = split_adult(df, _rng(seed, "main-split"))
    return Context(seed, n, model_samples, df, split, ADULT_QUERY, ADULT_QUERY.record_sensitivities(df, n))


def get_context(seed: int = 0, *, n: int = N_RECORDS, model_samples: int = MODEL_SAMPLES) -> Context:
    """Load Adult, split it (seeded) and build the models; cached per (seed, n, model_samples).

    The cache is bounded (least recently used, :data:`CONTEXT_CACHE_SIZE` contexts).
    """
    seed = check_int(seed, "seed", minimum=0)
    n = check_int(n, "n", minimum=2)
    model_samples = check_int(model_samples, "model_samples", minimum=10)
    return _build_context(seed, n, model_samples)
