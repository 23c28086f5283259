"""Finite-domain local obfuscation mechanisms as row-stochastic matrices.

Kawamoto & Murakami (tupling paper, Section 2.1): a randomized algorithm
``A : X → DY`` on finite ``X, Y`` is a matrix ``A[x, y] = Pr[A(x) = y]`` whose
rows are distributions. Its *lifting* pushes an input distribution forward:
``A#(λ)[y] = Σ_x λ[x] A[x, y]``, i.e. ``A#(λ) = λ A``.

Compositions (tupling paper Appendix C.5–C.6, Table 1):

* post-processing ``A1 ∘ A0`` (Proposition 4): matrix product ``A0 A1``;
* sequential composition with shared input ``A1 ⊙ A0`` (Definition 19):
  ``(A1 ⊙ A0)(x) = A1(A0(x), x)``;
* sequential composition with independent inputs ``A1 • A0`` (Definition 20):
  ``(A1 • A0)(x0, x1) = A1(A0(x0), x1)``, whose lifting on ``λ0 × λ1`` is
  ``A1#(A0#(λ0), λ1)`` (equation (4)).

An adaptive second stage ``A1 : Y0 × X → DY1`` is given as an array of shape
``(|Y0|, |X|, |Y1|)``; a plain :class:`Mechanism` is the non-adaptive case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import (
    RngLike,
    as_rng,
    check_array,
    check_choice,
    check_int,
    check_probability_vector,
)
from ..errors import InvalidParameterError, InvalidTypeError

_ROW_ATOL = 1e-8


def check_stochastic_matrix(matrix: ArrayLike, name: str = "matrix") -> NDArray[np.float64]:
    """A 2-D float array with entries >= 0 and rows summing to 1 (within 1e-8)."""
    m = check_array(matrix, name, ndim=2)
    if m.shape[0] == 0 or m.shape[1] == 0:
        raise InvalidParameterError(f"must have at least one row and one column, got shape {m.shape}", argument=name)
    if np.any(m < 0):
        i, j = np.argwhere(m < 0)[0]
        raise InvalidParameterError(f"entries must be >= 0, got {m[i, j]:.3g} at [{i}, {j}]", argument=name)
    sums = m.sum(axis=1)
    bad = np.abs(sums - 1.0) > _ROW_ATOL
    if np.any(bad):
        i = int(np.argmax(bad))
        raise InvalidParameterError(f"every row must sum to 1, row {i} sums to {sums[i]:.12g}", argument=name)
    return m


def check_distribution(lam: ArrayLike, n: int, name: str = "lam") -> NDArray[np.float64]:
    """A probability vector of length ``n`` (clear error for the wrong length)."""
    arr = np.asarray(lam, dtype=float)
    if arr.ndim != 1:
        raise InvalidTypeError(f"expected a 1-D probability vector, got shape {arr.shape}", argument=name)
    if arr.size != n:
        raise InvalidParameterError(f"expected a distribution over {n} inputs, got length {arr.size}", argument=name)
    arr = np.where((arr < 0) & (arr > -1e-15), 0.0, arr)
    return check_probability_vector(arr, name, atol=1e-8)


def point_distribution(n: int, index: int) -> NDArray[np.float64]:
    """The point distribution η_x over ``n`` values (tupling paper Definition 18)."""
    n = check_int(n, "n", minimum=1)
    i = check_int(index, "index", minimum=0)
    if i >= n:
        raise InvalidParameterError(f"index: must be < n = {n}, got {i}")
    out = np.zeros(n)
    out[i] = 1.0
    return out


class LocalMechanism:
    """A local obfuscation mechanism ``A : X → DY`` given by its row-stochastic matrix.

    Also importable as ``distpriv.local.Mechanism`` (the name before issue 13; an alias kept for
    users' code). It satisfies :class:`distpriv.protocol.PrivacyMechanism`: :meth:`release` /
    :meth:`release_batch` draw outputs; its distribution-privacy guarantee depends on the pair of
    input distributions (λ0, λ1) and is stated by :func:`distpriv.local.distp_guarantee`.

    Parameters
    ----------
    matrix:
        ``(|X|, |Y|)`` array, ``matrix[x, y] = Pr[A(x) = y]``; entries >= 0 and
        rows summing to 1 (validated; rows are renormalised to remove round-off).
    name:
        A label used in reports and guarantees.
    inputs, outputs:
        Optional labels of ``X`` and ``Y`` (sequences of the right length).
    """

    def __init__(
        self,
        matrix: ArrayLike,
        *,
        name: str = "mechanism",
        inputs: Sequence[Any] | None = None,
        outputs: Sequence[Any] | None = None,
    ) -> None:
        m = check_stochastic_matrix(matrix)
        m = m / m.sum(axis=1, keepdims=True)
        m.setflags(write=False)
        self._matrix = m
        self.name = str(name)
        if inputs is not None and len(inputs) != m.shape[0]:
            raise InvalidParameterError(f"inputs: expected {m.shape[0]} labels, got {len(inputs)}")
        if outputs is not None and len(outputs) != m.shape[1]:
            raise InvalidParameterError(f"outputs: expected {m.shape[1]} labels, got {len(outputs)}")
        self.inputs = None if inputs is None else list(inputs)
        self.outputs = None if outputs is None else list(outputs)

    # ------------------------------------------------------------------ basics
    @property
    def matrix(self) -> NDArray[np.float64]:
        """The ``(|X|, |Y|)`` transition matrix (read-only)."""
        return self._matrix

    @property
    def n_inputs(self) -> int:
        """``|X|``."""
        return int(self._matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        """``|Y|``."""
        return int(self._matrix.shape[1])

    def __repr__(self) -> str:
        return f"Mechanism(name={self.name!r}, |X|={self.n_inputs}, |Y|={self.n_outputs})"

    def lift(self, lam: ArrayLike) -> NDArray[np.float64]:
        """Lifting ``A#(λ) = λ A`` (tupling paper Section 2.1): the output distribution."""
        lam_v = check_distribution(lam, self.n_inputs, "lam")
        out = lam_v @ self._matrix
        return np.clip(out, 0.0, None) / max(out.sum(), 1e-300)

    __call__ = lift

    def row(self, x: int) -> NDArray[np.float64]:
        """``A(x)``, the output distribution of input index ``x``."""
        xi = check_int(x, "x", minimum=0)
        if xi >= self.n_inputs:
            raise InvalidParameterError(f"x: must be < |X| = {self.n_inputs}, got {xi}")
        return self._matrix[xi]

    def sample(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.int64]:
        """Draw one output index for each input index in ``x`` (vectorised inverse-CDF sampling)."""
        gen = as_rng(rng)
        xs = np.atleast_1d(np.asarray(x))
        if xs.size and (not np.issubdtype(xs.dtype, np.integer) or xs.min() < 0 or xs.max() >= self.n_inputs):
            raise InvalidParameterError(f"x: input indices must be integers in [0, {self.n_inputs})")
        cdf = np.cumsum(self._matrix, axis=1)
        u = gen.random(xs.shape)
        idx = (u[..., None] > cdf[xs]).sum(axis=-1)
        return np.minimum(idx, self.n_outputs - 1).astype(np.int64)

    def release(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.int64]:
        """Release ``A(x)``: one output index per input index in ``x`` (same as :meth:`sample`)."""
        return self.sample(x, rng)

    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.int64]:
        """Release ``A(x)`` for every input index of the array ``xs`` (same as :meth:`sample`)."""
        return self.sample(xs, rng)

    def expected_loss(self, lam: ArrayLike, cost: ArrayLike) -> float:
        """Expected utility loss ``Σ_{x,y} λ[x] A[x,y] d(x,y)`` (divergence paper Definition 17)."""
        lam_v = check_distribution(lam, self.n_inputs, "lam")
        d = check_array(cost, "cost", ndim=2)
        if d.shape != self._matrix.shape:
            raise InvalidParameterError(f"cost: expected shape {self._matrix.shape}, got {d.shape}")
        return float(lam_v @ (self._matrix * d).sum(axis=1))

    # ------------------------------------------------------------ compositions
    def post_process(self, other: LocalMechanism | ArrayLike) -> LocalMechanism:
        """Post-processing ``other ∘ self`` (tupling paper Proposition 4): matrix ``A0 A1``."""
        b = other.matrix if isinstance(other, LocalMechanism) else check_stochastic_matrix(other, "other")
        if b.shape[0] != self.n_outputs:
            raise InvalidParameterError(
                f"other: post-processing needs {self.n_outputs} input rows (|Y| of self), got {b.shape[0]}"
            )
        return LocalMechanism(self._matrix @ b, name=f"post({self.name})")

    def then(self, other: LocalMechanism | ArrayLike) -> LocalMechanism:
        """Alias of :meth:`post_process`."""
        return self.post_process(other)

    def restrict_inputs(self, indices: ArrayLike) -> LocalMechanism:
        """The mechanism on a subset of inputs (rows ``indices``)."""
        idx = np.asarray(indices)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or idx.size == 0:
            raise InvalidParameterError("indices: expected a non-empty 1-D array of integer row indices")
        if idx.min() < 0 or idx.max() >= self.n_inputs:
            raise InvalidParameterError(f"indices: must lie in [0, {self.n_inputs})")
        return LocalMechanism(self._matrix[idx], name=self.name)


#: The pre-issue-13 name of :class:`LocalMechanism`, kept as an alias.
Mechanism = LocalMechanism


def _second_stage(a1: LocalMechanism | ArrayLike, n_y0: int, n_x: int) -> NDArray[np.float64]:
    """Normalise a second stage to an array ``(|Y0|, |X|, |Y1|)``."""
    if isinstance(a1, LocalMechanism):
        if a1.n_inputs != n_x:
            raise InvalidParameterError(f"a1: expected a mechanism on |X| = {n_x} inputs, got {a1.n_inputs}")
        return np.broadcast_to(a1.matrix[None, :, :], (n_y0, n_x, a1.n_outputs))
    arr = check_array(a1, "a1", ndim=3)
    if arr.shape[:2] != (n_y0, n_x):
        raise InvalidParameterError(f"a1: expected shape ({n_y0}, {n_x}, |Y1|), got {arr.shape}")
    if np.any(arr < 0) or np.any(np.abs(arr.sum(axis=2) - 1.0) > _ROW_ATOL):
        raise InvalidParameterError("a1: every A1(y0, x) must be a distribution (entries >= 0, summing to 1)")
    return arr


def sequential_shared(a0: LocalMechanism, a1: LocalMechanism | ArrayLike, *, release: str = "both") -> LocalMechanism:
    """Sequential composition with shared input ``A1 ⊙ A0`` (tupling paper Definition 19).

    ``(A1 ⊙ A0)(x) = A1(A0(x), x)``. With ``release="both"`` the composite
    releases the pair ``(y0, y1)`` (output index ``y0 · |Y1| + y1``), as in the
    DP composition theorem behind Proposition 3; ``release="last"`` releases
    only ``y1`` as in Definition 19 (a post-processing of the former).
    """
    if not isinstance(a0, LocalMechanism):
        raise InvalidTypeError(f"a0: expected a Mechanism, got {type(a0).__name__}")
    mode = check_choice(release, "release", ("both", "last"))
    stage = _second_stage(a1, a0.n_outputs, a0.n_inputs)  # (Y0, X, Y1)
    joint = a0.matrix[:, :, None] * np.transpose(stage, (1, 0, 2))  # (X, Y0, Y1)
    if mode == "last":
        return LocalMechanism(joint.sum(axis=1), name=f"shared({a0.name})")
    return LocalMechanism(joint.reshape(a0.n_inputs, -1), name=f"shared({a0.name})")


def sequential_independent(a0: LocalMechanism, a1: LocalMechanism | ArrayLike, *, release: str = "both") -> LocalMechanism:
    """Sequential composition with independent inputs ``A1 • A0`` (tupling paper Definition 20).

    The composite has input set ``X × X`` (input index ``x0 · |X| + x1``):
    ``(A1 • A0)(x0, x1) = A1(A0(x0), x1)``. Its lifting of ``λ0 × λ1``
    (``np.kron(λ0, λ1)``) equals ``A1#(A0#(λ0), λ1)`` (equation (4)).
    ``release`` as in :func:`sequential_shared`.
    """
    if not isinstance(a0, LocalMechanism):
        raise InvalidTypeError(f"a0: expected a Mechanism, got {type(a0).__name__}")
    mode = check_choice(release, "release", ("both", "last"))
    n_x = a0.n_inputs
    stage = _second_stage(a1, a0.n_outputs, n_x)  # (Y0, X, Y1)
    # joint[x0, x1, y0, y1] = A0[x0, y0] * A1[y0, x1, y1]
    joint = a0.matrix[:, None, :, None] * np.transpose(stage, (1, 0, 2))[None, :, :, :]
    if mode == "last":
        return LocalMechanism(joint.sum(axis=2).reshape(n_x * n_x, -1), name=f"independent({a0.name})")
    return LocalMechanism(joint.reshape(n_x * n_x, -1), name=f"independent({a0.name})")
