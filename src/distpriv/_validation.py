"""Boundary checks shared by every public function.

Each check raises a :mod:`distpriv.errors` exception whose message names the
argument and the allowed range.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidParameterError, InvalidTypeError, UnknownLabelError

RngLike = np.random.Generator | int | np.integer | None


def as_rng(rng: RngLike) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from a Generator, a seed or ``None``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)):
        if rng is not None and int(rng) < 0:
            raise InvalidParameterError(f"rng: seed must be a non-negative integer, got {rng}")
        return np.random.default_rng(None if rng is None else int(rng))
    raise InvalidTypeError(f"rng: expected numpy.random.Generator, int seed or None, got {type(rng).__name__}")


def check_real(value: Any, name: str) -> float:
    """A finite real number."""
    if isinstance(value, bool):
        raise InvalidTypeError("expected a real number, got bool", argument=name)
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"expected a real number, got {value!r}", argument=name) from exc
    if not math.isfinite(x):
        raise InvalidParameterError(f"must be finite, got {x}", argument=name)
    return x


#: Largest ε accepted anywhere (documented in docs/assumptions.md). Beyond it e^ε and the noise scales
#: Δ/ε leave double precision (e^ε overflows past 709, Δ/ε underflows) and the accounting could not
#: certify anything; e^{10^6} already makes any claim vacuous for every event of probability > 0.
EPSILON_MAX = 1e6


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """ε must be a finite number in (0, :data:`EPSILON_MAX`]."""
    eps = check_real(epsilon, name)
    if eps <= 0:
        raise InvalidParameterError(f"must be > 0, got {eps}", argument=name)
    if eps > EPSILON_MAX:
        raise InvalidParameterError(f"must be <= {EPSILON_MAX:g} (larger values are outside what "
                                    f"double precision can account for), got {eps:g}", argument=name)
    return eps


def check_delta(delta: Any, name: str = "delta", *, allow_zero: bool = False) -> float:
    """δ must lie in (0, 1) (or [0, 1) when ``allow_zero``)."""
    d = check_real(delta, name)
    if allow_zero:
        if not 0.0 <= d < 1.0:
            raise InvalidParameterError(f"must be in [0, 1), got {d}", argument=name)
    elif not 0.0 < d < 1.0:
        raise InvalidParameterError(f"must be in (0, 1), got {d}", argument=name)
    return d


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0)."""
    x = check_real(value, name)
    if x < 0 or (x == 0 and not allow_zero):
        raise InvalidParameterError(f"must be {'>= 0' if allow_zero else '> 0'}, got {x}", argument=name)
    return x


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An integer, optionally >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidTypeError(f"expected an integer, got {value!r}", argument=name)
    v = int(value)
    if minimum is not None and v < minimum:
        raise InvalidParameterError(f"must be >= {minimum}, got {v}", argument=name)
    return v


def check_array(
    value: ArrayLike, name: str, *, ndim: int | tuple[int, ...] | None = None, finite: bool = True
) -> NDArray[np.float64]:
    """A float array with the given number of dimensions and no NaN/inf entries."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError("expected a numeric array", argument=name) from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            raise InvalidTypeError(f"expected {' or '.join(map(str, allowed))}-D array, got shape {arr.shape}", argument=name)
    if finite and not np.all(np.isfinite(arr)):
        raise InvalidParameterError("contains NaN or infinite values", argument=name)
    return arr


def check_probability_vector(value: ArrayLike, name: str, *, atol: float = 1e-9) -> NDArray[np.float64]:
    """Non-negative weights summing to 1 (within ``atol``)."""
    p = check_array(value, name, ndim=1)
    if p.size == 0:
        raise InvalidParameterError("must not be empty", argument=name)
    if np.any(p < 0):
        raise InvalidParameterError(f"weights must be >= 0, got min {p.min()}", argument=name)
    s = float(p.sum())
    if abs(s - 1.0) > atol:
        raise InvalidParameterError(f"weights must sum to 1, got {s:.12g}", argument=name)
    return p


def check_psd(value: ArrayLike, name: str, *, dim: int | None = None, tol: float = 1e-9) -> NDArray[np.float64]:
    """A symmetric positive semi-definite (dim × dim) matrix; symmetrised on return."""
    s = check_array(value, name, ndim=2)
    if s.shape[0] != s.shape[1]:
        raise InvalidTypeError(f"covariance must be square, got shape {s.shape}", argument=name)
    if dim is not None and s.shape[0] != dim:
        raise InvalidTypeError(f"expected a {dim}x{dim} matrix, got shape {s.shape}", argument=name)
    scale = max(1.0, float(np.max(np.abs(s)))) if s.size else 1.0
    if not np.allclose(s, s.T, atol=tol * scale, rtol=0):
        raise InvalidParameterError("covariance must be symmetric", argument=name)
    s = 0.5 * (s + s.T)
    if s.size:
        lam_min = float(np.linalg.eigvalsh(s)[0])
        if lam_min < -tol * scale:
            raise InvalidParameterError(
                f"covariance must be positive semi-definite, smallest eigenvalue {lam_min:.3g}", argument=name
            )
    return s


def check_labels_present(labels: Iterable[Hashable], known: Iterable[Hashable], name: str) -> None:
    """Every label in ``labels`` must be one of ``known``."""
    known_set = set(known)
    for lab in labels:
        if lab not in known_set:
            raise UnknownLabelError(f"unknown θ label {lab!r}; known labels are {sorted(map(str, known_set))}", argument=name)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """One of a fixed set of strings."""
    options = list(choices)
    if value not in options:
        raise UnknownLabelError(f"unknown value {value!r}; expected one of {options}", argument=name)
    return str(value)
