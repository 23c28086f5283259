"""Point obfuscation mechanisms on finite domains (tupling paper Sections 5 and 6.4).

* :func:`randomized_response` — k-ary randomized response (Kairouz et al.,
  tupling paper Example 2): ``A[x, y] = e^ε/(e^ε + n − 1)`` if ``y = x`` and
  ``1/(e^ε + n − 1)`` otherwise; it is ε-DP, hence (ε, 0)-DistP (Theorem 1).
* :func:`planar_laplace` — the exponential mechanism with a Euclidean ground
  distance on a finite grid (planar Laplace discretised to regions):
  ``A[x, y] ∝ exp(−ε d(x, y))``. Normalising per row makes it (2ε, d)-XDP in
  general (``ε``-XDP when the normaliser does not depend on x), hence
  (2ε, W∞,d)-XDistP by Theorem 2.
* :func:`planar_gaussian` — ``A[x, y] ∝ exp(−d(x, y)² / (2σ²))``.
* :func:`restricted_laplace` — the (ε_A, r)-RL mechanism (Definition 12):
  Laplace weights ``exp(−ε_A d(x, y))`` restricted to ``Y_{x,r} = {y : d(x, y) ≤ r}``.

The ground distances are an explicit ``(|X|, |Y|)`` cost matrix, e.g. the
Euclidean distances between region centres from :func:`euclidean_cost`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array, check_epsilon, check_int, check_positive
from ..errors import InvalidParameterError
from .mechanism import Mechanism


def check_cost(cost: ArrayLike, name: str = "cost") -> NDArray[np.float64]:
    """A non-empty 2-D array of finite, non-negative distances ``d(x, y)``."""
    d = check_array(cost, name, ndim=2)
    if d.size == 0:
        raise InvalidParameterError("must not be empty", argument=name)
    if np.any(d < 0):
        raise InvalidParameterError(f"distances must be >= 0, got min {d.min():.3g}", argument=name)
    return d


def euclidean_cost(xs: ArrayLike, ys: ArrayLike | None = None) -> NDArray[np.float64]:
    """Euclidean distances ``‖x_i − y_j‖`` between point sets ``(n, k)`` and ``(m, k)``."""
    a = check_array(xs, "xs", ndim=2)
    b = a if ys is None else check_array(ys, "ys", ndim=2)
    if a.shape[1] != b.shape[1]:
        raise InvalidParameterError(f"ys: expected points of dimension {a.shape[1]}, got {b.shape[1]}")
    diff = a[:, None, :] - b[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))


def randomized_response(n: int, epsilon: float) -> Mechanism:
    """k-ary randomized response on ``n`` values; ε-DP and (ε, 0)-DistP (tupling paper Example 2).

    A[x, y] = e^ε / (e^ε + n − 1) if y = x, else 1 / (e^ε + n − 1).

    Parameters
    ----------
    n : int
        Number of input (and output) values, at least 2.
    epsilon : float
        Privacy parameter ε > 0.

    Returns
    -------
    Mechanism
        The finite channel (``.matrix`` of shape (n, n)).

    Examples
    --------
    >>> from distpriv import local
    >>> import numpy as np
    >>> A = local.randomized_response(3, np.log(2))
    >>> np.round(A.matrix, 6).tolist()
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]"""
    k = check_int(n, "n", minimum=2)
    eps = check_epsilon(epsilon)
    # stable for large ε: p_keep = 1/(1 + (n-1) e^{-ε})
    other = math.exp(-eps)
    denom = 1.0 + (k - 1) * other
    m = np.full((k, k), other / denom)
    np.fill_diagonal(m, 1.0 / denom)
    return Mechanism(m, name=f"RR(eps={eps:g})")


def _row_softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    z = logits - np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=1, keepdims=True)
    w = np.where(np.isfinite(z), np.exp(z), 0.0)
    return w / w.sum(axis=1, keepdims=True)


def exponential_mechanism(cost: ArrayLike, epsilon: float, *, name: str | None = None) -> Mechanism:
    """Exponential mechanism ``A[x, y] ∝ exp(−ε d(x, y))`` for a utility distance d (Section 2.3)."""
    d = check_cost(cost)
    eps = check_epsilon(epsilon)
    return Mechanism(_row_softmax(-eps * d), name=name or f"ExpM(eps={eps:g})")


def planar_laplace(cost: ArrayLike, epsilon: float) -> Mechanism:
    """Planar Laplace on a finite grid: :func:`exponential_mechanism` with Euclidean ``cost``."""
    return exponential_mechanism(cost, epsilon, name=f"PL(eps={check_epsilon(epsilon):g})")


def planar_gaussian(cost: ArrayLike, sigma: float) -> Mechanism:
    """Planar Gaussian on a finite grid: ``A[x, y] ∝ exp(−d(x, y)²/(2σ²))``, σ > 0."""
    d = check_cost(cost)
    s = check_positive(sigma, "sigma")
    return Mechanism(_row_softmax(-(d**2) / (2.0 * s * s)), name=f"PG(sigma={s:g})")


def restricted_laplace(cost: ArrayLike, epsilon: float, radius: float) -> Mechanism:
    """(ε_A, r)-restricted Laplace mechanism (tupling paper Definition 12).

    ``A(x)[y] = exp(−ε_A d(x, y)) / Σ_{y' ∈ Y_{x,r}} exp(−ε_A d(x, y'))`` for
    ``y ∈ Y_{x,r} = {y : d(x, y) ≤ r}`` and 0 otherwise. ``radius`` must be > 0
    and every ``Y_{x,r}`` non-empty. The RL mechanism is not DP (its supports
    differ); the tupling mechanism's dummies restore DistP (Theorem 3).
    """
    d = check_cost(cost)
    eps = check_epsilon(epsilon)
    r = check_positive(radius, "radius")
    inside = d <= r * (1.0 + 1e-12)
    empty = ~inside.any(axis=1)
    if np.any(empty):
        raise InvalidParameterError(
            f"radius: {r:g} leaves input {int(np.argmax(empty))} with no output within distance r; "
            f"the smallest radius covering every input is {float(d.min(axis=1).max()):.6g}"
        )
    logits = np.where(inside, -eps * d, -np.inf)
    return Mechanism(_row_softmax(logits), name=f"RL(eps={eps:g}, r={r:g})")
