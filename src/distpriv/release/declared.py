"""A declared f_θ model (``--model FILE``): per-θ means and covariances, public with respect to the secret.

Instead of a reference population, the curator may declare f_θ = N(μ_θ, Σ_θ)
for every θ in Ψ — e.g. from a census publication or domain knowledge. The
file is JSON (``.json``) or TOML (``.toml``)::

    statistics = ["mean:age", "count:sex=Female"]   # the --stat specs, in order

    [theta."0.45"]
    mean = [40.1, 520.0]
    covariance = [[4.0, 0.5], [0.5, 90.0]]

    [theta."0.55"]
    mean = [41.2, 560.0]
    covariance = [[4.0, 0.5], [0.5, 90.0]]

(JSON: ``{"statistics": [...], "theta": {"0.45": {"mean": [...], "covariance": [[...]]}, ...}}``.)
Validation: exactly these keys; the statistics equal the release's ``--stat``
specs in order; every θ label a number in [0, 1], every value of the pairs Ψ
declared (extra labels are ignored); means of length m and covariances m × m,
finite, symmetric (to 10⁻⁹ of their largest entry) and positive semi-definite
(smallest eigenvalue >= −10⁻⁹ of the largest entry).

Because the model *is* Gaussian, its assumptions are known exactly rather than
tested (:func:`declared_diagnostics`): f_θ are Gaussian; they are translates
of each other iff the declared covariances are equal (compared exactly), and
then W∞(f_θi, f_θj) = ||μ_i − μ_j||₁ (the translation coupling attains the
lower bound ||E X − E Y||₁). With unequal covariances W∞ is infinite and only
the assumption-free Approximate Wasserstein mechanism applies. Parameter
ranges (sets of means) are not supported: the guarantee is for the declared
values.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataUnavailableError, InvalidParameterError, arg
from ..models import GaussianModel
from ..queries import Statistic
from .assumptions import TestResult
from .selection import Diagnostics

if sys.version_info >= (3, 11):  # pragma: no cover - version dependent
    import tomllib
else:  # pragma: no cover - version dependent
    import tomli as tomllib

_TOL = 1e-9


@dataclass(frozen=True)
class DeclaredModel:
    """A validated model file: its SHA-256 (a public input) and f_θ = N(μ_θ, Σ_θ) for the θ in Ψ."""

    path: Path
    sha256: str
    statistics: tuple[str, ...]
    model: GaussianModel


def _bad(path: Path, msg: str) -> InvalidParameterError:
    return InvalidParameterError(f"{path.name}: {msg}", argument="model")


def _matrix(value: Any, shape: tuple[int, ...], what: str, path: Path) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise _bad(path, f"{what} must be a list of numbers") from None
    if arr.shape != shape:
        raise _bad(path, f"{what} has shape {list(arr.shape)}, expected {list(shape)}")
    if not np.all(np.isfinite(arr)):
        raise _bad(path, f"{what} contains non-finite numbers")
    return arr


def load_model_file(path: str | Path, stats: Sequence[str], pairs: Sequence[tuple[float, float]]) -> DeclaredModel:
    """Read and validate a model file for the statistics ``stats`` and the pairs Ψ (module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise DataUnavailableError(f"file not found: {p}", argument="model")
    raw = p.read_bytes()
    suffix = p.suffix.lower()
    try:
        if suffix == ".json":
            doc = json.loads(raw.decode("utf-8"))
        elif suffix == ".toml":
            doc = tomllib.loads(raw.decode("utf-8"))
        else:
            raise _bad(p, f"unsupported file type {suffix!r}; expected .json or .toml")
    except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        msg = " ".join(str(exc).split())
        raise _bad(p, f"malformed {suffix[1:].upper()}: {msg}") from None
    if not isinstance(doc, dict) or set(doc) != {"statistics", "theta"}:
        keys = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
        raise _bad(p, f"expected exactly the keys 'statistics' and 'theta', got {keys}")
    declared = doc["statistics"]
    if not isinstance(declared, list) or not all(isinstance(s, str) for s in declared):
        raise _bad(p, "'statistics' must be a list of statistic specs such as 'mean:age'")
    try:
        canon = [str(Statistic.parse(s)) for s in declared]
    except Exception as exc:  # noqa: BLE001 - any parse error is a bad file
        raise _bad(p, f"'statistics': {exc}") from None
    want = [str(Statistic.parse(s)) for s in stats]
    if canon != want:
        raise _bad(p, f"declares statistics {canon}, but the release asks for {want} (same specs, same order)")
    m = len(want)
    theta = doc["theta"]
    if not isinstance(theta, dict) or not theta:
        raise _bad(p, "'theta' must map property values to {mean, covariance}")
    means: dict[float, np.ndarray] = {}
    covs: dict[float, np.ndarray] = {}
    for key, entry in theta.items():
        try:
            lab = float(key)
        except ValueError:
            raise _bad(p, f"θ label {key!r} is not a number") from None
        if not math.isfinite(lab) or not 0.0 <= lab <= 1.0:
            raise _bad(p, f"θ label {key!r} is outside [0, 1] (a share of records)")
        if lab in means:
            raise _bad(p, f"θ = {lab} is declared twice")
        if not isinstance(entry, dict) or set(entry) != {"mean", "covariance"}:
            raise _bad(p, f"θ = {key}: expected exactly the keys 'mean' and 'covariance'")
        mu = _matrix(entry["mean"], (m,), f"θ = {key}: mean", p)
        cov = _matrix(entry["covariance"], (m, m), f"θ = {key}: covariance", p)
        scale = max(float(np.abs(cov).max()), 1e-300)
        if np.abs(cov - cov.T).max() > _TOL * scale:
            raise _bad(p, f"θ = {key}: covariance is not symmetric")
        cov = 0.5 * (cov + cov.T)
        lam = float(np.linalg.eigvalsh(cov)[0])
        if lam < -_TOL * scale:
            raise _bad(p, f"θ = {key}: covariance is not positive semi-definite (smallest eigenvalue {lam:.3g})")
        means[lab], covs[lab] = mu, cov
    needed = list(dict.fromkeys(v for pr in pairs for v in pr))
    missing = [v for v in needed if float(v) not in means]
    if missing:
        raise _bad(p, f"no θ = {missing[0]} declared (declared: {sorted(means)}); every value of {arg('pairs')} needs one")
    model = GaussianModel({v: means[float(v)] for v in needed}, {v: covs[float(v)] for v in needed})
    return DeclaredModel(p, hashlib.sha256(raw).hexdigest(), tuple(want), model)


def equal_covariances(model: GaussianModel, pairs: Sequence[tuple[Hashable, Hashable]]) -> bool:
    """Σ_θi = Σ_θj exactly (after symmetrisation) for every pair."""
    return all(np.array_equal(model.covariance(a), model.covariance(b)) for a, b in pairs)


def declared_diagnostics(
    model: GaussianModel, pairs: Sequence[tuple[Hashable, Hashable]], *, epsilon: float, delta: float
) -> Diagnostics:
    """The assumption 'tests' and gaps of :mod:`distpriv.release.selection`, known exactly for a declared model."""
    labs = list(dict.fromkeys(v for pr in pairs for v in pr))
    eq = equal_covariances(model, pairs)
    how = "declared Gaussian model"
    tests = {
        "translation": TestResult("translation", 1.0 if eq else 0.0, eq,
                                  f"{how}: translates iff the declared covariances are equal", code="declared"),
        "gaussian": TestResult("gaussian", 1.0, True, f"{how}: Gaussian by declaration", code="declared"),
        "equal_covariance": TestResult("equal_covariance", 1.0 if eq else 0.0, eq,
                                       f"{how}: covariances compared exactly", code="declared"),
    }
    pooled = sum(model.covariance(lab) for lab in labs) / len(labs)
    gauss = GaussianModel({lab: model.mean(lab) for lab in labs}, {lab: pooled for lab in labs})
    ww = max(float(np.abs(model.mean(a) - model.mean(b)).sum()) for a, b in pairs) if eq else math.inf
    gap = 0.0 if eq else math.inf
    eta = 0.5 * delta * math.exp(-float(np.logaddexp(0.0, epsilon)))  # δ/(2(1 + e^ε)) without overflow
    return Diagnostics(tests, gap, ww, gap, gap, eta, gauss, labs[0])
