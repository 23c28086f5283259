"""Query-distribution models f_θ and secret-pair sets Ψ.

For a property model Θ (e.g. datasets whose share of high earners is p) and a
query F, f_θ is the distribution of F(Data) when Data ~ θ (Chen & Ohrimenko
Section 4). Mechanisms are calibrated from f_θ: either a Gaussian model
N(μ_θ, Σ_θ) (Section 5.3) or an empirical model made of sampled values of F.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import check_array, check_labels_present, check_positive, check_psd
from .errors import InvalidParameterError, InvalidTypeError

Label = Hashable
# Label-keyed inputs are typed ``Mapping[Any, ...]``: ``Mapping`` is invariant in its key, so
# ``Mapping[Hashable, ...]`` would reject a caller's ``dict[str, ...]`` or ``dict[float, ...]``.
Pair = tuple[Label, Label]


class QueryModel:
    """Common interface of f_θ models: labels, dimension, means and covariances."""

    labels: tuple[Label, ...]
    dim: int

    def mean(self, label: Label) -> NDArray[np.float64]:  # pragma: no cover - interface
        raise NotImplementedError

    def covariance(self, label: Label) -> NDArray[np.float64]:  # pragma: no cover - interface
        raise NotImplementedError

    def check_label(self, label: Label, name: str = "label") -> None:
        """Raise :class:`UnknownLabelError` when ``label`` is not a θ of this model."""
        check_labels_present([label], self.labels, name)


class GaussianModel(QueryModel):
    """f_θ = N(μ_θ, Σ_θ) for each θ label (Chen & Ohrimenko Section 5.3).

    Parameters
    ----------
    means:
        θ label -> mean vector μ_θ (length m).
    covariances:
        θ label -> (m × m) positive semi-definite Σ_θ. The same labels as ``means``.
    """

    def __init__(self, means: Mapping[Any, ArrayLike], covariances: Mapping[Any, ArrayLike]) -> None:
        if not isinstance(means, Mapping) or not isinstance(covariances, Mapping):
            raise InvalidTypeError("means, covariances: expected dicts mapping θ labels to arrays")
        if not means:
            raise InvalidParameterError("means: need at least one θ label")
        if set(means) != set(covariances):
            raise InvalidParameterError(
                f"covariances: labels {sorted(map(str, covariances))} do not match means labels {sorted(map(str, means))}"
            )
        self.labels = tuple(means)
        mu = {k: check_array(v, f"means[{k!r}]", ndim=1) for k, v in means.items()}
        dims = {v.shape[0] for v in mu.values()}
        if len(dims) != 1:
            raise InvalidTypeError(f"means: all mean vectors must have the same length, got {sorted(dims)}")
        self.dim = dims.pop()
        self._means = mu
        self._covs = {k: check_psd(covariances[k], f"covariances[{k!r}]", dim=self.dim) for k in self.labels}

    def mean(self, label: Label) -> NDArray[np.float64]:
        self.check_label(label)
        return self._means[label]

    def covariance(self, label: Label) -> NDArray[np.float64]:
        self.check_label(label)
        return self._covs[label]

    def sample(self, label: Label, size: int, rng: np.random.Generator | int | None = None) -> NDArray[np.float64]:
        """Draw ``size`` query values from N(μ_θ, Σ_θ)."""
        from ._validation import as_rng, check_int

        n = check_int(size, "size", minimum=1)
        return as_rng(rng).multivariate_normal(self.mean(label), self.covariance(label), size=n, method="eigh")

    def __repr__(self) -> str:
        return f"GaussianModel(labels={list(self.labels)}, dim={self.dim})"


class EmpiricalModel(QueryModel):
    """f_θ given by N sampled query values per θ (Chen & Ohrimenko appendix C.1).

    Parameters
    ----------
    samples:
        θ label -> (N, m) array of query values F(Data) for Data ~ θ
        (a 1-D array is read as m = 1).
    claim_scope:
        ``"samples"`` (default): :func:`distpriv.calibrate` accounts the claim on the samples' own
        (empirical) law exactly (:mod:`distpriv.accounting.empirical`), topping the noise up where the
        papers' assumptions fail on them. ``"release"``: the sampled model of ``distpriv release``, whose
        claims rest on the assumptions the release tests (translation, Gaussian fit). ``"papers"``: the
        papers' own treatment (translation, Gaussian fit, stated as assumptions), for the reproductions of
        Chen & Ohrimenko's tables and the demo built on them.
    """

    def __init__(self, samples: Mapping[Any, ArrayLike], *, claim_scope: str = "samples") -> None:
        if claim_scope not in ("samples", "release", "papers"):
            raise InvalidParameterError(f"claim_scope: expected 'samples', 'release' or 'papers', got {claim_scope!r}")
        self.claim_scope = claim_scope
        if not isinstance(samples, Mapping) or not samples:
            raise InvalidTypeError("samples: expected a non-empty dict mapping θ labels to (N, m) arrays")
        self.labels = tuple(samples)
        data: dict[Label, NDArray[np.float64]] = {}
        for k, v in samples.items():
            arr = check_array(v, f"samples[{k!r}]", ndim=(1, 2))
            if arr.ndim == 1:
                arr = arr[:, None]
            if arr.shape[0] < 2:
                raise InvalidParameterError(f"samples[{k!r}]: need at least 2 samples, got {arr.shape[0]}")
            data[k] = arr
        dims = {a.shape[1] for a in data.values()}
        if len(dims) != 1:
            raise InvalidTypeError(f"samples: all sample arrays must have the same number of columns, got {sorted(dims)}")
        self.dim = dims.pop()
        self._samples = data

    def samples(self, label: Label) -> NDArray[np.float64]:
        """The (N, m) sample array of θ = ``label``."""
        self.check_label(label)
        return self._samples[label]

    def mean(self, label: Label) -> NDArray[np.float64]:
        return self.samples(label).mean(axis=0)

    def covariance(self, label: Label) -> NDArray[np.float64]:
        return np.atleast_2d(np.cov(self.samples(label), rowvar=False))

    def to_gaussian(self) -> GaussianModel:
        """Fit N(μ̂_θ, Σ̂_θ) to each θ's samples (sample mean and unbiased covariance).

        Returns
        -------
        GaussianModel
            One N(μ̂_θ, Σ̂_θ) per label, μ̂_θ = (1/N) Σ x_i and Σ̂_θ = (1/(N − 1)) Σ (x_i − μ̂_θ)(x_i − μ̂_θ)ᵀ.

        Examples
        --------
        >>> import numpy as np, distpriv as dp
        >>> emp = dp.EmpiricalModel(samples={0: np.array([[0.0], [2.0]]), 1: np.array([[1.0], [3.0]])})
        >>> float(emp.to_gaussian().covariance(0)[0, 0])
        2.0
        """
        return GaussianModel(
            means={k: self.mean(k) for k in self.labels},
            covariances={k: self.covariance(k) for k in self.labels},
        )

    def __repr__(self) -> str:
        sizes = {str(k): self._samples[k].shape[0] for k in self.labels}
        return f"EmpiricalModel(dim={self.dim}, samples={sizes})"


# --------------------------------------------------------------------------- pairs Ψ
def normalize_pairs(pairs: Iterable[Sequence[Label]], labels: Iterable[Label] | None = None) -> tuple[Pair, ...]:
    """Validate Ψ: unordered pairs of distinct θ labels, de-duplicated, order of first appearance kept.

    (θ_i, θ_j) and (θ_j, θ_i) are the same secret pair: distribution privacy is
    required in both orders (Chen & Ohrimenko Definition 3.2).
    """
    if isinstance(pairs, (str, bytes)):
        raise InvalidTypeError("pairs: expected a list of (θ_i, θ_j) tuples")
    out: list[Pair] = []
    seen: set[frozenset[Label]] = set()
    for item in pairs:
        try:
            a, b = item
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(f"pairs: each entry must be a 2-tuple of θ labels, got {item!r}") from exc
        if a == b:
            raise InvalidParameterError(f"pairs: a pair must join two different θ labels, got ({a!r}, {b!r})")
        key = frozenset((a, b))
        if key not in seen:
            seen.add(key)
            out.append((a, b))
    if not out:
        raise InvalidParameterError("pairs: Ψ must contain at least one pair")
    if labels is not None:
        known = list(labels)
        check_labels_present([x for p in out for x in p], known, "pairs")
    return tuple(out)


def pairs_from_grid(values: Iterable[float], max_gap: float, *, tol: float = 1e-9) -> tuple[Pair, ...]:
    """Ψ = {(p, q) : p < q, q − p <= Δp} over a grid of property values.

    E.g. ``pairs_from_grid([0.3, 0.4, 0.5], 0.1)`` -> ((0.3, 0.4), (0.4, 0.5)).
    """
    vals = sorted({float(v) for v in values})
    gap = check_positive(max_gap, "max_gap")
    out = [(a, b) for a, b in itertools.combinations(vals, 2) if b - a <= gap + tol]
    if not out:
        raise InvalidParameterError(f"max_gap: no two grid values are within {gap} of each other")
    return tuple(out)


@dataclass(frozen=True)
class PairStats:
    """Mean differences over Ψ: the sensitivities used by the Expected Value mechanisms."""

    diffs: NDArray[np.float64]  # (|Ψ|, m) rows μ_θi − μ_θj
    l1: float  # Δ_E,1 = max ||μ_i − μ_j||_1 (Section 5.1)
    l2: float  # Δ_E,2 = max ||μ_i − μ_j||_2 (Section 5.1)


def pair_stats(model: QueryModel, pairs: Sequence[Pair]) -> PairStats:
    """Δ_E,1 and Δ_E,2 over Ψ (Chen & Ohrimenko Section 5.1, Prop 4.1)."""
    diffs = np.array([model.mean(a) - model.mean(b) for a, b in pairs], dtype=float).reshape(len(pairs), model.dim)
    return PairStats(diffs=diffs, l1=float(np.abs(diffs).sum(axis=1).max()), l2=float(np.linalg.norm(diffs, axis=1).max()))
