"""Exact distribution-privacy accounting for finite mechanisms.

For a pair of input distributions (λ0, λ1) and a mechanism A the lifted
outputs ``A#(λ0)`` and ``A#(λ1)`` are finite distributions, so every privacy
notion of Kawamoto & Murakami is a divergence computed exactly:

* (ε, δ)-DistP (tupling paper Definition 8) holds for the pair iff
  ``D^δ_∞(A#(λ0) ‖ A#(λ1)) ≤ ε`` and ``D^δ_∞(A#(λ1) ‖ A#(λ0)) ≤ ε``
  (divergence paper Proposition 1); :func:`distp_epsilon` returns the least such ε ≥ 0.
* (ε, D)-DistP for a divergence D (tupling paper Definition 16, divergence
  paper Definition 11): :func:`distp_divergence` returns
  ``max(D(A#λ0 ‖ A#λ1), D(A#λ1 ‖ A#λ0))``.
* (ε, W, D)-XDistP (Definitions 9 and 17): the least ε with
  ``D(A#λ0 ‖ A#λ1) ≤ ε W(λ0, λ1)``, for ``W = W∞,d`` (Theorem 2) or
  ``W = W1,d`` (Theorem 5): :func:`xdistp_epsilon`.
* Over a set Ψ of pairs the least ε is the maximum over its pairs.

Every function takes a :class:`~distpriv.local.LocalMechanism` (computed here from its lifted
distributions) or a :class:`~distpriv.local.Tupling` (recognised by type; its own exact
convolution methods ``distp_epsilon``, ``distp_delta`` and ``distp_divergence`` are used).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import divergences as dv
from .._validation import check_choice, check_delta, check_real
from ..errors import InvalidParameterError, InvalidTypeError
from ..guarantees import Assumption, AssumptionCode, Calibration, Guarantee
from ..privacy_profile import Claim, PrivacyProfile
from .mechanism import LocalMechanism
from .tupling import Tupling

#: The assumption of every exact local claim: the inputs follow the stated λ.
EXACT_INPUTS: str = Assumption("the users' inputs follow exactly the given distributions λ", AssumptionCode.INPUT_LAWS)

def _check_mech(mech: object) -> None:
    if not isinstance(mech, (LocalMechanism, Tupling)):
        raise InvalidTypeError(f"mech: expected a local.Mechanism or local.Tupling, got {type(mech).__name__}")


def distp_epsilon(mech: LocalMechanism | Tupling, lam0: ArrayLike, lam1: ArrayLike, delta: float = 0.0) -> float:
    """Least ε ≥ 0 such that ``mech`` is (ε, δ)-DistP for the pair (λ0, λ1), both orders.

    ``ε = max(0, D^δ_∞(A#λ0 ‖ A#λ1), D^δ_∞(A#λ1 ‖ A#λ0))`` (tupling paper Definition 8;
    divergence paper Definition 5 and Proposition 1), computed exactly. For a
    :class:`~distpriv.local.Tupling` the exact convolution method of
    :meth:`~distpriv.local.Tupling.distp_epsilon` is used.

    Parameters
    ----------
    mech : LocalMechanism or Tupling
        The finite channel A[x, y] (or the tupling mechanism).
    lam0, lam1 : array_like
        The input distributions λ0, λ1 over the inputs (non-negative, summing to 1).
    delta : float
        δ in [0, 1).

    Returns
    -------
    float
        The least ε >= 0 (``inf`` when no finite ε works at this δ).

    Examples
    --------
    >>> from distpriv import local
    >>> A = local.randomized_response(2, 1.0)
    >>> round(local.distp_epsilon(A, [1.0, 0.0], [0.0, 1.0]), 6)
    1.0
    """
    _check_mech(mech)
    d = check_delta(delta, "delta", allow_zero=True)
    if isinstance(mech, Tupling):
        return float(mech.distp_epsilon(lam0, lam1, d))
    p, q = mech.lift(lam0), mech.lift(lam1)
    return dv.symmetric_approx_max_divergence(p, q, d)


def distp_delta(mech: LocalMechanism | Tupling, lam0: ArrayLike, lam1: ArrayLike, epsilon: float) -> float:
    """Least δ such that ``mech`` is (ε, δ)-DistP for the pair: ``max`` of the two hockey-stick divergences
    ``E_{e^ε}(A#λ0 ‖ A#λ1)``, ``E_{e^ε}(A#λ1 ‖ A#λ0)``. ``epsilon >= 0``."""
    _check_mech(mech)
    eps = check_real(epsilon, "epsilon")
    if eps < 0:
        raise InvalidParameterError(f"epsilon: must be >= 0, got {eps}")
    if isinstance(mech, Tupling):
        return float(mech.distp_delta(lam0, lam1, eps))
    p, q = mech.lift(lam0), mech.lift(lam1)
    g = math.exp(eps)
    return max(dv.hockey_stick(p, q, g), dv.hockey_stick(q, p, g))


def distp_divergence(mech: LocalMechanism | Tupling, lam0: ArrayLike, lam1: ArrayLike, divergence: str = "kl") -> float:
    """Least ε with (ε, D)-DistP for the pair (Definition 16): ``max(D(A#λ0‖A#λ1), D(A#λ1‖A#λ0))``.

    ``divergence`` is one of :data:`distpriv.divergences.F_DIVERGENCES` (``"kl"``,
    ``"reverse-kl"``, ``"tv"``, ``"chi2"``, ``"hellinger"``) or ``"max"``.
    """
    _check_mech(mech)
    name = check_choice(divergence, "divergence", (*dv.F_DIVERGENCES, "max"))
    if isinstance(mech, Tupling):
        return float(mech.distp_divergence(lam0, lam1, name))
    p, q = mech.lift(lam0), mech.lift(lam1)
    return max(dv.divergence(name, p, q), dv.divergence(name, q, p))


def _w_distance(metric: str, cost: ArrayLike, lam0: ArrayLike, lam1: ArrayLike) -> float:
    from .. import distances

    if metric == "w_inf":
        return float(distances.w_infinity_from_cost(cost, lam0, lam1))
    return float(distances.wasserstein_from_cost(cost, lam0, lam1, order=1))


def xdistp_epsilon(
    mech: LocalMechanism | Tupling,
    lam0: ArrayLike,
    lam1: ArrayLike,
    cost: ArrayLike,
    *,
    metric: str = "w_inf",
    divergence: str = "approx-max",
    delta: float = 0.0,
) -> float:
    """Least ε with (ε, W, D)-XDistP for the pair (tupling paper Definitions 9 and 17).

    ``ε = max(D(A#λ0 ‖ A#λ1), D(A#λ1 ‖ A#λ0)) / W(λ0, λ1)`` with ``W = W∞,d``
    (``metric="w_inf"``, Theorem 2) or ``W = W1,d`` (``metric="w1"``, Theorem 5),
    where ``d`` is the ``(|X|, |X|)`` ground ``cost``. ``divergence="approx-max"``
    uses ``D^δ_∞`` (with ``delta``); otherwise a name accepted by
    :func:`distp_divergence`. Returns 0 when both are 0 and ``inf`` when only W is 0.
    """
    m = check_choice(metric, "metric", ("w_inf", "w1"))
    if divergence == "approx-max":
        num = distp_epsilon(mech, lam0, lam1, delta)
    else:
        num = distp_divergence(mech, lam0, lam1, divergence)
    w = _w_distance(m, cost, lam0, lam1)
    if w <= 0:
        return 0.0 if num <= 0 else math.inf
    return num / w


def distp_epsilon_pairs(
    mech: LocalMechanism | Tupling, pairs: Sequence[tuple[ArrayLike, ArrayLike]], delta: float = 0.0, *, divergence: str | None = None
) -> float:
    """Least ε for (ε, δ)-DistP (or (ε, D)-DistP when ``divergence`` is given) over a set Ψ of pairs."""
    if len(pairs) == 0:
        raise InvalidParameterError("pairs: need at least one pair (λ0, λ1)")
    vals = []
    for i, pair in enumerate(pairs):
        if len(pair) != 2:
            raise InvalidParameterError(f"pairs[{i}]: expected a pair (lam0, lam1)")
        if divergence is None:
            vals.append(distp_epsilon(mech, pair[0], pair[1], delta))
        else:
            vals.append(distp_divergence(mech, pair[0], pair[1], divergence))
    return max(vals)


def privacy_profile(
    mech: LocalMechanism | Tupling,
    distributions: Mapping[Any, ArrayLike],
    pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
) -> PrivacyProfile:
    """The exact privacy map of ``mech`` over labelled pairs Ψ (:class:`~distpriv.privacy_profile.PrivacyProfile`).

    δ ↦ least ε with (ε, δ)-DistP (:func:`distp_epsilon_pairs`, exact hockey-stick accounting of the lifted
    channel, Kawamoto & Murakami tupling paper Definition 8) and D ↦ the largest D(A#λ0 ‖ A#λ1) over Ψ, both
    orders (divergence paper Definition 11). ``distributions`` maps labels (e.g. ``"male"``) to input
    distributions; ``pairs`` defaults to all unordered pairs of labels.
    """
    labels = list(distributions)
    if len(labels) < 2:
        raise InvalidParameterError("distributions: need at least two labelled distributions")
    if pairs is None:
        pairs = [(labels[i], labels[j]) for i in range(len(labels)) for j in range(i + 1, len(labels))]
    for a, b in pairs:
        for lab in (a, b):
            if lab not in distributions:
                raise InvalidParameterError(f"pairs: unknown label {lab!r}; known labels are {labels}")
    laws = [(distributions[a], distributions[b]) for a, b in pairs]

    def at_delta(delta: float) -> Claim:
        d = check_delta(delta, "delta", allow_zero=True)
        return Claim(distp_epsilon_pairs(mech, laws, d), d)

    def at_divergence(name: str) -> Claim:
        return Claim(distp_epsilon_pairs(mech, laws, divergence=name))

    return PrivacyProfile(
        mechanism=getattr(mech, "name", type(mech).__name__),
        framework="local-distribution-privacy",
        pairs=tuple(pairs),
        at_delta=at_delta,
        at_divergence=at_divergence,
        calibration=Calibration.EXACT,
        assumptions=(EXACT_INPUTS,),
        theorem="Kawamoto & Murakami (tupling) Definition 8; exact hockey-stick accounting",
    )


def distp_guarantee(
    mech: LocalMechanism | Tupling,
    distributions: Mapping[Any, ArrayLike],
    pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
    delta: float = 0.0,
) -> Guarantee:
    """The exact (ε, δ)-DistP guarantee of ``mech`` over labelled pairs Ψ: ``privacy_profile(...).guarantee(delta)``.

    ``distributions`` maps labels (e.g. ``"male"``) to input distributions; ``pairs``
    defaults to all unordered pairs of labels.
    """
    return privacy_profile(mech, distributions, pairs).guarantee(delta)


def dp_epsilon(mech: LocalMechanism, delta: float = 0.0) -> float:
    """Least ε with (ε, δ)-DP of a plain mechanism over all input pairs (Definition 1).

    By Theorem 6 this equals its DistP ε over point distributions, and by
    Theorem 1 (δ = 0) it bounds DistP for every pair of input distributions.
    """
    if not isinstance(mech, LocalMechanism):
        raise InvalidTypeError(f"mech: expected a local.Mechanism, got {type(mech).__name__}")
    d = check_delta(delta, "delta", allow_zero=True)
    a = mech.matrix
    if d == 0.0:
        with np.errstate(divide="ignore"):
            la = np.log(a)
        # max over y of (max_x log A - min_x log A); -inf - -inf = nan for all-zero columns
        col_max = la.max(axis=0)
        col_min = la.min(axis=0)
        present = np.isfinite(col_max)
        if np.any(present & ~np.isfinite(col_min)):
            return math.inf
        return float(max(0.0, np.max(col_max[present] - col_min[present])))
    best = 0.0
    for i in range(mech.n_inputs):
        for j in range(mech.n_inputs):
            if i != j:
                best = max(best, dv.approx_max_divergence(a[i], a[j], d))
    return best
