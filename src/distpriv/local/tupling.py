"""The tupling mechanism with random dummies (Kawamoto & Murakami, the tupling paper, Section 6, Algorithm 1).

``Q^tp_{k,ν,A}(x)``: draw ``s ~ A(x)``, draw ``k`` dummies ``r_1..r_k ~ ν``
i.i.d., insert ``s`` at a uniformly random position and release the
``(k+1)``-tuple. The probability of a tuple ``ȳ`` under input distribution λ is
(proof of Proposition 12)

    Q#(λ)[ȳ] = 1/(k+1) Σ_i A#(λ)[y_i] Π_{j≠i} ν[y_j]
             = 1/(k+1) Π_j ν[y_j] · Σ_i w_λ(y_i),     w_λ(y) = A#(λ)[y] / ν[y].

This module holds the mechanism: construction, the output law, the sampler
and the exact expected quality loss (Definition 11). Its accountant — exact
δ(ε), ε(δ) and KL by convolution, Theorem 3 / 7 bounds, Monte Carlo estimates
and the :class:`~distpriv.guarantees.Guarantee` — is
:class:`~distpriv.local.tupling_accounting.TuplingAccountant`, to which the
accounting methods of :class:`Tupling` delegate.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import RngLike, as_rng, check_array, check_int
from ..errors import InvalidParameterError
from ..guarantees import Guarantee
from ..privacy_profile import PrivacyProfile
from .mechanism import Mechanism, check_distribution, check_stochastic_matrix
from .tupling_accounting import EpsilonResult, Theorem3Bound, TuplingAccountant


class Tupling:
    """The (k, ν, A)-tupling mechanism ``Q^tp_{k,ν,A}`` (tupling paper Algorithm 1).

    Parameters
    ----------
    base:
        The point mechanism ``A`` (a :class:`Mechanism` or a row-stochastic matrix).
    k:
        Number of dummies, ``k >= 1``.
    dummy:
        Distribution ν of the dummies over ``Y``; ``None`` means uniform (the
        setting of Theorem 3 and of the paper's experiments).
    """

    def __init__(self, base: Mechanism | ArrayLike, k: int, dummy: ArrayLike | None = None) -> None:
        if isinstance(base, Mechanism):
            self.base = base
        else:
            self.base = Mechanism(check_stochastic_matrix(base, "base"), name="A")
        self.k = check_int(k, "k", minimum=1)
        m = self.base.n_outputs
        if dummy is None:
            self.dummy = np.full(m, 1.0 / m)
            self.uniform = True
        else:
            self.dummy = check_distribution(dummy, m, "dummy")
            self.uniform = bool(np.allclose(self.dummy, 1.0 / m, rtol=0, atol=1e-15))
        self.dummy.setflags(write=False)
        self.name = f"Tupling(k={self.k}, {self.base.name})"

    # -------------------------------------------------------------- basics
    @property
    def n_inputs(self) -> int:
        """``|X|``."""
        return self.base.n_inputs

    @property
    def n_outputs(self) -> int:
        """``|Y|`` (each release is a tuple in ``Y^{k+1}``)."""
        return self.base.n_outputs

    def __repr__(self) -> str:
        return f"Tupling(k={self.k}, base={self.base!r}, uniform_dummies={self.uniform})"

    def lift(self, lam: ArrayLike) -> NDArray[np.float64]:
        """``A#(λ)``, the law of the real (perturbed) entry of the tuple."""
        return self.base.lift(lam)

    def sample(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.int64]:
        """Algorithm 1 for each input index in ``x``: an ``(len(x), k+1)`` array of output indices."""
        gen = as_rng(rng)
        xs = np.atleast_1d(np.asarray(x))
        s = self.base.sample(xs, gen)
        dummies = gen.choice(self.n_outputs, size=(xs.size, self.k), p=self.dummy)
        pos = gen.integers(0, self.k + 1, size=xs.size)
        out = np.empty((xs.size, self.k + 1), dtype=np.int64)
        cols = np.arange(self.k + 1)[None, :]
        # entries before pos come from dummies[:, j], after pos from dummies[:, j-1]
        src = np.where(cols < pos[:, None], cols, cols - 1)
        out[:] = np.take_along_axis(dummies, np.clip(src, 0, self.k - 1), axis=1)
        out[np.arange(xs.size), pos] = s
        return out

    def release(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.int64]:
        """Release a tuple for each input index in ``x`` (same as :meth:`sample`)."""
        return self.sample(x, rng)

    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.int64]:
        """Release a tuple for every input index of the array ``xs`` (same as :meth:`sample`)."""
        return self.sample(xs, rng)

    def _check_tuples(self, tuples: ArrayLike) -> NDArray[np.int64]:
        t = np.asarray(tuples)
        if t.ndim == 1:
            t = t[None, :]
        if t.ndim != 2 or t.shape[1] != self.k + 1 or not np.issubdtype(t.dtype, np.integer):
            raise InvalidParameterError(f"tuples: expected integer array of shape (n, {self.k + 1})")
        if t.size and (t.min() < 0 or t.max() >= self.n_outputs):
            raise InvalidParameterError(f"tuples: output indices must lie in [0, {self.n_outputs})")
        return t.astype(np.int64)

    def tuple_probability(self, lam: ArrayLike, tuples: ArrayLike) -> NDArray[np.float64]:
        """``Q#(λ)[ȳ] = 1/(k+1) Σ_i A#(λ)[y_i] Π_{j≠i} ν[y_j]`` for each row ȳ of ``tuples``."""
        a = self.lift(lam)
        t = self._check_tuples(tuples)
        nu = self.dummy[t]  # (n, k+1)
        total = np.zeros(t.shape[0])
        for i in range(self.k + 1):
            others = np.prod(np.delete(nu, i, axis=1), axis=1)
            total += a[t[:, i]] * others
        return total / (self.k + 1)

    def output_distribution(self, lam: ArrayLike, *, max_outcomes: int = 5_000_000) -> NDArray[np.float64]:
        """Brute force: the full law of the tuple over ``Y^{k+1}`` (lexicographic order).

        Only for small ``|Y|^{k+1}`` (at most ``max_outcomes``); used to verify the exact methods.
        """
        m, kk = self.n_outputs, self.k + 1
        total = m**kk
        if total > max_outcomes:
            raise InvalidParameterError(
                f"output_distribution: |Y|^(k+1) = {total} exceeds max_outcomes = {max_outcomes}; "
                "use the exact convolution methods instead"
            )
        tuples = np.array(list(itertools.product(range(m), repeat=kk)), dtype=np.int64)
        return self.tuple_probability(lam, tuples)

    # ----------------------------------------------------------- utility
    def expected_loss(self, lam: ArrayLike, cost: ArrayLike) -> float:
        """Exact expected quality loss (tupling paper Definition 11).

        ``L = Σ_x λ[x] Σ_ȳ Q(x)[ȳ] min_i d(x, y_i)``. Given x the tuple is the real
        output ``s ~ A(x)`` plus k i.i.d. dummies, so with ``M`` the distance of the
        nearest dummy, ``E[min(d(x,s), M)] = ∫_0^{d(x,s)} Pr[M > t] dt`` and
        ``Pr[M > t] = ν{y : d(x,y) > t}^k`` — a piecewise-constant integral over the
        sorted distances, O(|Y| log |Y|) per input.
        """
        lam_v = check_distribution(lam, self.n_inputs, "lam")
        d = check_array(cost, "cost", ndim=2)
        if d.shape != (self.n_inputs, self.n_outputs):
            raise InvalidParameterError(f"cost: expected shape {(self.n_inputs, self.n_outputs)}, got {d.shape}")
        if np.any(d < 0):
            raise InvalidParameterError("cost: distances must be >= 0")
        order = np.argsort(d, axis=1, kind="stable")
        ds = np.take_along_axis(d, order, axis=1)  # (X, Y) sorted distances
        nus = self.dummy[order]
        surv = np.clip(1.0 - np.cumsum(nus, axis=1), 0.0, 1.0)  # ν{d > ds[j]} on [ds[j], ds[j+1])
        widths = np.diff(ds, axis=1)
        pieces = surv[:, :-1] ** self.k * widths
        # F(ds[j]) = ∫_0^{ds[j]} Pr[M > t] dt ; Pr[M > t] = 1 on [0, ds[0])
        f_sorted = np.concatenate([ds[:, :1], ds[:, :1] + np.cumsum(pieces, axis=1)], axis=1)
        f = np.empty_like(f_sorted)
        np.put_along_axis(f, order, f_sorted, axis=1)
        per_x = (self.base.matrix * f).sum(axis=1)
        return float(lam_v @ per_x)

    # ------------------------------------------------ accounting (delegated)
    @functools.cached_property
    def accountant(self) -> TuplingAccountant:
        """The accountant of this mechanism (:mod:`distpriv.local.tupling_accounting`)."""
        return TuplingAccountant(self)

    def epsilon_bounds(
        self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, tol: float = 1e-5, bins: int = 1024,
        max_bins: int = 1 << 17,
    ) -> EpsilonResult:
        """Certified bracket of the least ε with (ε, δ)-DistP (:meth:`TuplingAccountant.epsilon_bounds`)."""
        return self.accountant.epsilon_bounds(lam0, lam1, delta, tol=tol, bins=bins, max_bins=max_bins)

    def distp_epsilon(self, lam0: ArrayLike, lam1: ArrayLike, delta: float = 0.0, *, tol: float = 1e-5) -> float:
        """Least ε with (ε, δ)-DistP for the pair (:meth:`TuplingAccountant.distp_epsilon`)."""
        return self.accountant.distp_epsilon(lam0, lam1, delta, tol=tol)

    def delta_bounds(
        self, lam0: ArrayLike, lam1: ArrayLike, epsilon: float, *, rtol: float = 1e-6, max_bins: int = 1 << 18
    ) -> tuple[float, float]:
        """Certified bounds of the least δ for (ε, δ)-DistP (:meth:`TuplingAccountant.delta_bounds`)."""
        return self.accountant.delta_bounds(lam0, lam1, epsilon, rtol=rtol, max_bins=max_bins)

    def distp_delta(self, lam0: ArrayLike, lam1: ArrayLike, epsilon: float) -> float:
        """Least δ for (ε, δ)-DistP of the pair (:meth:`TuplingAccountant.distp_delta`)."""
        return self.accountant.distp_delta(lam0, lam1, epsilon)

    def kl_bounds(self, lam0: ArrayLike, lam1: ArrayLike, *, bins: int = 1024) -> tuple[float, float]:
        """Certified bounds of ``D_KL(Q#λ0 ‖ Q#λ1)`` (:meth:`TuplingAccountant.kl_bounds`)."""
        return self.accountant.kl_bounds(lam0, lam1, bins=bins)

    def distp_divergence(self, lam0: ArrayLike, lam1: ArrayLike, divergence: str = "kl") -> float:
        """(ε, D)-DistP of the pair for KL / reverse KL / max (:meth:`TuplingAccountant.distp_divergence`)."""
        return self.accountant.distp_divergence(lam0, lam1, divergence)

    def monte_carlo_delta(
        self, lam0: ArrayLike, lam1: ArrayLike, epsilon: float, *, n_samples: int = 100_000, rng: RngLike = None
    ) -> tuple[float, float]:
        """Monte Carlo ``(δ̂, standard error)`` (:meth:`TuplingAccountant.monte_carlo_delta`)."""
        return self.accountant.monte_carlo_delta(lam0, lam1, epsilon, n_samples=n_samples, rng=rng)

    def monte_carlo_epsilon(
        self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, n_samples: int = 100_000, rng: RngLike = None
    ) -> float:
        """Monte Carlo least ε with (ε, δ)-DistP (:meth:`TuplingAccountant.monte_carlo_epsilon`)."""
        return self.accountant.monte_carlo_epsilon(lam0, lam1, delta, n_samples=n_samples, rng=rng)

    def monte_carlo_divergence(
        self, lam0: ArrayLike, lam1: ArrayLike, divergence: str = "kl", *, n_samples: int = 100_000,
        rng: RngLike = None,
    ) -> tuple[float, float]:
        """Monte Carlo ``D(Q#λ0 ‖ Q#λ1)`` (:meth:`TuplingAccountant.monte_carlo_divergence`)."""
        return self.accountant.monte_carlo_divergence(lam0, lam1, divergence, n_samples=n_samples, rng=rng)

    def lambda_eta(self, lam: ArrayLike, beta: float) -> float:
        """Least η with ``λ ∈ Λ_{β,η,A}`` (:meth:`TuplingAccountant.lambda_eta`)."""
        return self.accountant.lambda_eta(lam, beta)

    def in_lambda(self, lam: ArrayLike, beta: float, eta: float) -> bool:
        """Membership ``λ ∈ Λ_{β,η,A}`` (:meth:`TuplingAccountant.in_lambda`)."""
        return self.accountant.in_lambda(lam, beta, eta)

    def theorem3_params(
        self, alpha: float, beta: float, eta: float, *, hoeffding_range: float | None = None
    ) -> tuple[float, float]:
        """Theorem 3's ``(ε_α, δ_α)`` (:meth:`TuplingAccountant.theorem3_params`)."""
        return self.accountant.theorem3_params(alpha, beta, eta, hoeffding_range=hoeffding_range)

    def theorem3(self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, beta: float | None = None) -> Theorem3Bound:
        """The smallest Theorem 3 ε_α with δ_α <= δ (:meth:`TuplingAccountant.theorem3`)."""
        return self.accountant.theorem3(lam0, lam1, delta, beta=beta)

    def theorem7(
        self, lam0: ArrayLike, lam1: ArrayLike, *, epsilon_a: float | None = None, beta: float | None = None
    ) -> float:
        """Theorem 7 KL bound (:meth:`TuplingAccountant.theorem7`)."""
        return self.accountant.theorem7(lam0, lam1, epsilon_a=epsilon_a, beta=beta)

    def privacy_profile(self, lam0: ArrayLike, lam1: ArrayLike, *,
                        labels: tuple[Any, Any] = ("lam0", "lam1")) -> PrivacyProfile:
        """The exact privacy map of the pair (:meth:`TuplingAccountant.privacy_profile`)."""
        return self.accountant.privacy_profile(lam0, lam1, labels=labels)

    def guarantee(
        self, lam0: ArrayLike, lam1: ArrayLike, delta: float, *, labels: tuple[Any, Any] = ("lam0", "lam1")
    ) -> Guarantee:
        """Exact (ε, δ)-DistP of the pair as a :class:`Guarantee`: ``privacy_profile(lam0, lam1).guarantee(delta)``."""
        return self.privacy_profile(lam0, lam1, labels=labels).guarantee(delta)
