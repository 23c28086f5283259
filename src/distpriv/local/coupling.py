"""Coupling mechanisms (Kawamoto & Murakami, divergence paper Section VI).

Given, for each auxiliary input ``s`` (e.g. the attribute value), an
approximate input distribution ``λ̂_s`` and a common target ``μ``, a coupling
``γ_s ∈ cp(λ̂_s, μ)`` defines the coupling mechanism (Definition 16)

    C(s, x)[y] = γ_s[x, y] / λ̂_s[x],

which pushes ``λ̂_s`` exactly onto ``μ``. With exact knowledge it is
(0, D)-DistP for every divergence; if ``D∞(λ̂_s ‖ λ_s) <= ε`` and
``D∞(λ_s ‖ λ̂_s) <= ε`` for all s then (Theorem 3) it is (2ε, D∞)-DistP,
(2ε e^ε, D_KL)-DistP and (e^ε f(e^{2ε}), D_f)-DistP. A utility-optimal
coupling mechanism (Definition 18) uses ``γ_s ∈ Γ_{1,d}(λ̂_s, μ)`` and its
expected loss is ``W_{1,d}(λ̂_s, μ)`` (Proposition 2); the W∞-optimal variant
minimises the worst-case move ``W_{∞,d}(λ̂_s, μ)``. On a line with convex cost
(``d(x, y) = |x − y|``) the North-West corner rule gives a W1-optimal coupling.

Inputs ``x`` with ``λ̂_s[x] = 0`` have no row in ``γ_s``; their row is filled
with the target ``μ`` (``fill="target"``, the input-independent choice that
keeps ``C#`` close to μ) or with the nearest output (``fill="nearest"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import divergences as dv
from .._validation import check_array, check_choice, check_delta, check_real
from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from ..guarantees import Assumption, AssumptionCode, Calibration, Framework, Guarantee
from ..privacy_profile import Claim, PrivacyProfile
from .coupling_accounting import WorstCase, worst_case
from .mechanism import Mechanism, check_distribution


def _prob(v: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(v, dtype=float)
    if arr.ndim != 1:
        raise InvalidTypeError(f"expected a 1-D probability vector, got shape {arr.shape}", argument=name)
    return check_distribution(arr, arr.size, name)


def north_west_corner(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """North-West corner rule coupling of ``p`` and ``q`` (in the given order of the supports).

    Fills the transport plan greedily from the top-left corner; for ordered 1-D
    supports and a submodular cost such as ``|x − y|`` it is W1-optimal
    (divergence paper Section II-G).
    """
    a = _prob(p, "p").copy()
    b = _prob(q, "q").copy()
    plan = np.zeros((a.size, b.size))
    i = j = 0
    while i < a.size and j < b.size:
        t = min(a[i], b[j])
        plan[i, j] += t
        a[i] -= t
        b[j] -= t
        if a[i] <= 1e-15 and i < a.size - 1:
            i += 1
        elif b[j] <= 1e-15 and j < b.size - 1:
            j += 1
        elif a[i] <= 1e-15 and b[j] <= 1e-15:
            break
        else:  # both last index: put remaining round-off there
            plan[i, j] += max(a[i], b[j])
            break
    return plan


def _check_cost(cost: ArrayLike, shape: tuple[int, int]) -> NDArray[np.float64]:
    d = check_array(cost, "cost", ndim=2)
    if d.shape != shape:
        raise InvalidParameterError(f"cost: expected shape {shape}, got {d.shape}")
    if np.any(d < 0):
        raise InvalidParameterError("cost: distances must be >= 0")
    return d


def _emd(p: NDArray[np.float64], q: NDArray[np.float64], cost: NDArray[np.float64]) -> NDArray[np.float64]:
    import ot

    p2 = p / p.sum()
    q2 = q / q.sum()
    return np.asarray(ot.emd(p2, q2, np.ascontiguousarray(cost), numItermax=10_000_000), dtype=float)


def optimal_coupling(p: ArrayLike, q: ArrayLike, cost: ArrayLike, *, kind: str = "w1") -> NDArray[np.float64]:
    """A coupling γ ∈ cp(p, q) minimising the transport cost.

    ``kind="w1"``: ``Σ d γ`` (exact network simplex, POT ``ot.emd``) — Γ_{1,d};
    ``kind="winf"``: the largest move ``max_{γ>0} d`` (bottleneck, by bisection over
    the sorted distinct costs with an exact feasibility LP), ties broken by W1 —
    Γ_{∞,d}; ``kind="nwc"``: the North-West corner rule (ignores ``cost``).
    """
    a = _prob(p, "p")
    b = _prob(q, "q")
    k = check_choice(kind, "kind", ("w1", "winf", "nwc"))
    if k == "nwc":
        return north_west_corner(a, b)
    d = _check_cost(cost, (a.size, b.size))
    if k == "w1":
        return _emd(a, b, d)
    levels = np.unique(d)
    lo, hi = 0, levels.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        plan = _emd(a, b, (d > levels[mid]).astype(float))
        if float(np.sum(plan * (d > levels[mid]))) <= 1e-12:
            hi = mid
        else:
            lo = mid + 1
    t = levels[lo]
    big = 10.0 * (float(d.max()) + 1.0) * max(a.size, b.size)
    return _emd(a, b, np.where(d > t, d + big, d))


def _accuracy(value: float, name: str) -> float:
    """A D∞ accuracy ε >= 0; ``inf`` (supports differ) is allowed and gives a vacuous bound."""
    if isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    e = check_real(value, name)
    if e < 0:
        raise InvalidParameterError(f"must be >= 0, got {e}", argument=name)
    return e


def coupling_theorem3(epsilon: float, divergence: str = "max") -> float:
    """Theorem 3 (divergence paper): the DistP level given ``D∞`` accuracy ε of every ``λ̂_s``.

    ``"max"``: 2ε (item 1, an (ε, 0) claim); ``"kl"``: 2ε e^ε (item 2); any other
    f-divergence of Table I (item 3): ``e^ε max(f(e^{2ε}), f(e^{−2ε}))``.

    Item 3 reads ``e^ε f(e^{2ε})`` in the paper. Its proof bounds the output
    likelihood ratio in ``[e^{−2ε}, e^{2ε}]`` (every ``C#(s, λ_s)`` lies within a factor
    ``e^{±ε}`` of μ), and a convex f with f(1) = 0 takes its largest value on that
    interval at an end point: at ``e^{2ε}`` for TV, χ², squared Hellinger and
    ``t ln t``, but at ``e^{−2ε}`` for the reverse KL (``f(t) = −ln t``, where
    ``f(e^{2ε}) = −2ε < 0``; Table I's ``−t log t`` is a typo, see
    :mod:`distpriv.divergences`). So the reverse KL bound is ``2ε e^ε``, as for KL.
    """
    e = _accuracy(epsilon, "epsilon")
    name = check_choice(divergence, "divergence", ("max", *dv.F_DIVERGENCES))
    if math.isinf(e):
        return math.inf
    fs: dict[str, Callable[[float], float]] = {
        "tv": lambda t: 0.5 * abs(t - 1.0),
        "chi2": lambda t: (t - 1.0) ** 2,
        "hellinger": lambda t: 0.5 * (math.sqrt(t) - 1.0) ** 2,
        "reverse-kl": lambda t: -math.log(t),
    }
    if name == "max":
        return 2 * e
    if name == "kl":
        return 2 * e * math.exp(e)
    f = fs[name]
    return math.exp(e) * max(f(math.exp(2 * e)), f(math.exp(-2 * e)))


class CouplingMechanism:
    """Coupling mechanism ``C : S × X → DY`` w.r.t. a target μ (divergence paper Definition 16).

    Parameters
    ----------
    couplings:
        ``{s: γ_s}`` with ``γ_s`` an ``(|X|, |Y|)`` coupling whose column sums are μ;
        its row sums are the approximate input distribution ``λ̂_s``.
    target:
        μ over ``Y``.
    fill:
        Row used for inputs with ``λ̂_s[x] = 0``: ``"target"`` (μ) or ``"nearest"``
        (needs ``cost``).
    cost:
        Optional ``(|X|, |Y|)`` ground distances (for ``fill="nearest"`` and losses).
    """

    def __init__(
        self,
        couplings: Mapping[Any, ArrayLike],
        target: ArrayLike,
        *,
        fill: str = "target",
        cost: ArrayLike | None = None,
        kind: str = "custom",
    ) -> None:
        if not isinstance(couplings, Mapping) or len(couplings) == 0:
            raise InvalidParameterError("couplings: expected a non-empty mapping {s: coupling matrix}")
        self.target = _prob(target, "target")
        self.fill = check_choice(fill, "fill", ("target", "nearest"))
        self.kind = kind
        self._gamma: dict[Hashable, NDArray[np.float64]] = {}
        self._matrices: dict[Hashable, NDArray[np.float64]] = {}
        n_x = None
        for s, g in couplings.items():
            gam = check_array(g, f"couplings[{s!r}]", ndim=2)
            if np.any(gam < -1e-12):
                raise InvalidParameterError(f"couplings[{s!r}]: entries must be >= 0")
            gam = np.clip(gam, 0.0, None)
            if gam.shape[1] != self.target.size:
                raise InvalidParameterError(
                    f"couplings[{s!r}]: expected {self.target.size} columns (|Y| of target), got {gam.shape[1]}"
                )
            if not np.allclose(gam.sum(axis=0), self.target, atol=1e-7):
                raise InvalidParameterError(f"couplings[{s!r}]: column sums must equal the target μ")
            if n_x is None:
                n_x = gam.shape[0]
            elif gam.shape[0] != n_x:
                raise InvalidParameterError("couplings: all couplings must have the same number of rows |X|")
            self._gamma[s] = gam
        self.n_inputs = int(n_x or 0)
        self.n_outputs = int(self.target.size)
        self.cost = None if cost is None else _check_cost(cost, (self.n_inputs, self.n_outputs))
        if self.fill == "nearest" and self.cost is None:
            raise InvalidParameterError("cost: fill='nearest' needs the (|X|, |Y|) cost matrix")
        for s, gam in self._gamma.items():
            self._matrices[s] = self._to_matrix(gam)
        self.name = f"Coupling({kind})"

    def _to_matrix(self, gam: NDArray[np.float64]) -> NDArray[np.float64]:
        rows = gam.sum(axis=1)
        m = np.empty_like(gam)
        has = rows > 1e-15
        m[has] = gam[has] / rows[has, None]
        if np.any(~has):
            if self.fill == "target":
                m[~has] = self.target
            else:
                assert self.cost is not None
                near = np.argmin(self.cost[~has], axis=1)
                m[~has] = 0.0
                m[np.flatnonzero(~has), near] = 1.0
        m /= m.sum(axis=1, keepdims=True)
        m.setflags(write=False)
        return m

    @classmethod
    def optimal(
        cls,
        inputs: Mapping[Any, ArrayLike],
        target: ArrayLike,
        cost: ArrayLike,
        *,
        kind: str = "w1",
        fill: str = "target",
    ) -> CouplingMechanism:
        """Utility-optimal coupling mechanism (Definition 18) for ``inputs = {s: λ̂_s}``.

        ``kind="w1"`` uses γ_s ∈ Γ_{1,d}(λ̂_s, μ) (expected loss = W1, Proposition 2);
        ``kind="winf"`` minimises the worst-case loss (W∞); ``kind="nwc"`` uses the
        North-West corner rule (W1-optimal for ordered 1-D supports).
        """
        if not isinstance(inputs, Mapping) or len(inputs) == 0:
            raise InvalidParameterError("inputs: expected a non-empty mapping {s: λ̂_s}")
        mu = _prob(target, "target")
        k = check_choice(kind, "kind", ("w1", "winf", "nwc"))
        d = check_array(cost, "cost", ndim=2)
        gammas = {}
        for s, lam in inputs.items():
            lam_v = _prob(lam, f"inputs[{s!r}]")
            if d.shape != (lam_v.size, mu.size):
                raise InvalidParameterError(f"cost: expected shape {(lam_v.size, mu.size)}, got {d.shape}")
            gammas[s] = optimal_coupling(lam_v, mu, d, kind=k)
        return cls(gammas, mu, fill=fill, cost=d, kind=k)

    # ---------------------------------------------------------------- access
    @property
    def contexts(self) -> list[Hashable]:
        """The auxiliary inputs s."""
        return list(self._gamma)

    def _ctx(self, s: Hashable) -> Hashable:
        if s not in self._gamma:
            raise UnknownLabelError(f"s: unknown auxiliary input {s!r}; known are {list(self._gamma)}")
        return s

    def coupling(self, s: Hashable) -> NDArray[np.float64]:
        """The coupling γ_s."""
        return self._gamma[self._ctx(s)]

    def input_estimate(self, s: Hashable) -> NDArray[np.float64]:
        """λ̂_s, the row marginal of γ_s."""
        return self._gamma[self._ctx(s)].sum(axis=1)

    def matrix(self, s: Hashable) -> NDArray[np.float64]:
        """The ``(|X|, |Y|)`` transition matrix ``C(s, ·)`` (Definition 16)."""
        return self._matrices[self._ctx(s)]

    def mechanism(self, s: Hashable) -> Mechanism:
        """``C(s, ·)`` as a :class:`Mechanism`."""
        return Mechanism(self.matrix(s), name=f"{self.name}[{s}]")

    def lift(self, s: Hashable, lam: ArrayLike) -> NDArray[np.float64]:
        """``C#(s, λ) = λ C(s, ·)``."""
        return self.mechanism(s).lift(lam)

    def expected_loss(self, s: Hashable, cost: ArrayLike | None = None, lam: ArrayLike | None = None) -> float:
        """Expected utility loss ``Σ λ[x] C(s,x)[y] d(x,y)`` (Definition 17); λ defaults to λ̂_s,
        where it equals the transport cost of γ_s (= W1 for the W1-optimal mechanism, Proposition 2)."""
        d = self.cost if cost is None else _check_cost(cost, (self.n_inputs, self.n_outputs))
        if d is None:
            raise InvalidParameterError("cost: needed (no cost matrix stored in the mechanism)")
        lam_v = self.input_estimate(s) if lam is None else check_distribution(lam, self.n_inputs, "lam")
        return self.mechanism(s).expected_loss(lam_v, d)

    def worst_case_loss(self, s: Hashable, cost: ArrayLike | None = None) -> float:
        """``max_{γ_s > 0} d(x, y)`` (= W∞ for the W∞-optimal mechanism)."""
        d = self.cost if cost is None else _check_cost(cost, (self.n_inputs, self.n_outputs))
        if d is None:
            raise InvalidParameterError("cost: needed (no cost matrix stored in the mechanism)")
        g = self.coupling(s)
        return float(d[g > 1e-12].max())

    # ---------------------------------------------------------------- privacy
    def estimation_epsilon(self, actual: Mapping[Any, ArrayLike]) -> float:
        """``max_s max(D∞(λ̂_s ‖ λ_s), D∞(λ_s ‖ λ̂_s))``: the accuracy ε in Theorem 3."""
        vals = [0.0]
        for s, lam in actual.items():
            est = self.input_estimate(self._ctx(s))
            lam_v = check_distribution(lam, self.n_inputs, f"actual[{s!r}]")
            vals.append(dv.symmetric_approx_max_divergence(est, lam_v, 0.0))
        return max(vals)

    def distp(
        self, actual: Mapping[Any, ArrayLike], divergence: str = "max", *, delta: float = 0.0
    ) -> float:
        """Exact DistP level of ``C`` over Ψ = all pairs ((s, λ_s), (s', λ_s')) (Definition 15):
        ``max_{s≠s'} D(C#(s, λ_s) ‖ C#(s', λ_s'))``, both orders. ``divergence`` is a
        name of :func:`distpriv.divergences.divergence` (``"approx-max"`` uses ``delta``)."""
        outs = {s: self.lift(self._ctx(s), lam) for s, lam in actual.items()}
        if len(outs) < 2:
            raise InvalidParameterError("actual: need distributions for at least two auxiliary inputs")
        keys = list(outs)
        best = 0.0
        for i, s in enumerate(keys):
            for t in keys[i + 1 :]:
                for p, q in ((outs[s], outs[t]), (outs[t], outs[s])):
                    best = max(best, dv.divergence(divergence, p, q, delta=delta))
        return best

    def exact_guarantee(self, actual: Mapping[Any, ArrayLike], divergence: str = "max", *,
                        delta: float = 0.0) -> Guarantee:
        """The exact DistP of ``C`` when the actual input distributions λ_s are known (:meth:`distp`).

        ``divergence="max"`` claims the least ε of (ε, δ)-DistP, ``max D^δ∞`` over the pairs of distinct
        contexts, both orders (``delta`` > 0 allowed); an f-divergence claims ``max D(C#(s, λ_s) ‖ C#(s', λ_s'))``.
        The value is computed exactly from the lifted distributions, so it is the least claim that holds —
        Theorem 3 (:meth:`guarantee` with ``method="theorem"``) is a median 2.1× (D∞) and 147× (KL) above it on
        the check-in sweep of ``distpriv reproduce kawamoto-coupling``.
        """
        name = check_choice(divergence, "divergence", ("max", *dv.F_DIVERGENCES))
        dl = check_delta(delta, "delta", allow_zero=True)
        if name != "max" and dl > 0:
            raise InvalidParameterError("delta: only the max divergence (divergence='max') takes a δ")
        val = self.distp(actual, "approx-max" if name == "max" else name, delta=dl)
        keys = [self._ctx(s) for s in actual]
        label = "D^δ∞" if name == "max" else name
        return Guarantee(
            epsilon=val,
            delta=dl if name == "max" else 0.0,
            mechanism=self.name,
            framework=Framework.LOCAL,
            calibration=Calibration.EXACT,
            pairs=tuple((s, t) for i, s in enumerate(keys) for t in keys[i + 1 :]),
            assumptions=("each input x of context s is drawn from exactly the given λ_s",),
            theorem=f"Kawamoto & Murakami (divergence) Definitions 11 and 15; exact {label} of the lifted distributions",
            divergence=None if name == "max" else name,
        )

    def worst_case(self, accuracy_epsilon: float, divergence: str = "max") -> WorstCase:
        """The least DistP level that D∞ accuracy ε of every ``λ̂_s`` proves for these matrices (issue 25).

        ``sup {D(λ C_s ‖ λ' C_s') : e^{−ε}λ̂_s <= λ <= e^ε λ̂_s, e^{−ε}λ̂_s' <= λ' <= e^ε λ̂_s'}`` over every
        ordered pair of distinct contexts: exact for D∞ (greedy linear programmes) and for the
        f-divergences up to 12 free inputs per context (vertex enumeration; joint convexity), else a
        certified bracket (:mod:`distpriv.local.coupling_accounting`). Theorem 3 is an upper bound on it.
        """
        acc = _accuracy(accuracy_epsilon, "accuracy_epsilon")
        name = check_choice(divergence, "divergence", ("max", *dv.F_DIVERGENCES))
        if math.isinf(acc):
            return WorstCase(math.inf, math.inf, "accuracy ε = ∞: no bound")
        if len(self._gamma) < 2:
            raise InvalidParameterError("couplings: the DistP of a coupling mechanism needs at least two contexts")
        mats = {s: np.asarray(self._matrices[s]) for s in self.contexts}
        ins = {s: self.input_estimate(s) for s in self.contexts}
        wc = worst_case(mats, ins, acc, name)
        cap = coupling_theorem3(acc, name)
        if wc.upper > cap:  # Theorem 3 holds too (beyond rounding: the bracket's upper end was looser)
            why = "; upper end Theorem 3" if wc.upper > cap * (1 + 1e-9) else ""
            return WorstCase(min(wc.lower, cap), cap, wc.method + why, wc.pair)
        return wc

    def privacy_profile(self, accuracy_epsilon: float, *, method: str = "exact") -> PrivacyProfile:
        """The privacy map given ``D∞`` accuracy ε of every ``λ̂_s`` (both directions), one value per divergence.

        ``method="exact"`` (default) answers with :meth:`worst_case` — the least level the accuracy
        assumption proves for these matrices (its upper end, never above Theorem 3's);
        ``method="theorem"`` with Theorem 3's value (:func:`coupling_theorem3`), which needs only ε.
        ``profile.guarantee(divergence="kl")`` is a divergence claim; ``profile.guarantee(0.0)`` the (ε, 0)
        max-divergence claim (``divergence="max"``). Ψ is every pair of distinct contexts.
        """
        acc = _accuracy(accuracy_epsilon, "accuracy_epsilon")
        how = check_choice(method, "method", ("exact", "theorem"))

        def at_divergence(divergence: str) -> Claim:
            name = check_choice(divergence, "divergence", ("max", *dv.F_DIVERGENCES))
            val = coupling_theorem3(acc, name)
            item = {"max": "1", "kl": "2"}.get(name, "3")
            label = "D∞" if name == "max" else name
            theorem = f"Kawamoto & Murakami (divergence) Theorem 3({item}), D = {label}"
            notes: tuple[str, ...] = ()
            calibration = Calibration.THEOREM
            if how == "exact" and math.isfinite(acc):
                wc = self.worst_case(acc, name)
                notes = (f"worst case over the accuracy balls: [{wc.lower:.6g}, {wc.upper:.6g}] ({wc.method}); "
                         f"Theorem 3 gives {val:.6g}",)
                val = min(val, wc.upper)
                calibration = Calibration.EXACT
                theorem = (f"exact worst case of D = {label} over D∞(λ̂_s‖λ_s), D∞(λ_s‖λ̂_s) <= ε for the known "
                           f"matrices C(s, ·) (tightens Kawamoto & Murakami (divergence) Theorem 3({item}))")
            return Claim(val, 0.0, notes, calibration, theorem)

        return PrivacyProfile(
            mechanism=self.name,
            framework=Framework.LOCAL,
            pairs=tuple((s, t) for i, s in enumerate(self.contexts) for t in self.contexts[i + 1 :]),
            at_delta=lambda delta: at_divergence("max"),  # an (ε, 0) claim holds at every δ
            at_divergence=at_divergence,
            calibration=Calibration.THEOREM,
            assumptions=(
                Assumption(f"D∞(λ̂_s‖λ_s) <= {acc:g} and D∞(λ_s‖λ̂_s) <= {acc:g} for every s", AssumptionCode.ACCURACY),
                Assumption("each input x of context s is drawn from the actual λ_s", AssumptionCode.INPUT_LAWS),
            ),
        )

    def guarantee(self, accuracy_epsilon: float, divergence: str = "max", *, method: str = "exact") -> Guarantee:
        """The DistP guarantee given ``D∞`` accuracy ε of every ``λ̂_s``: derived from :meth:`privacy_profile`.

        ``divergence="max"`` gives an (ε, 0) claim (``Guarantee.divergence is None``); an f-divergence
        name gives a divergence claim ``D <= value`` with ``Guarantee.divergence`` set to that name and
        ``delta = 0``.
        """
        profile = self.privacy_profile(accuracy_epsilon, method=method)
        name = check_choice(divergence, "divergence", ("max", *dv.F_DIVERGENCES))
        return profile.guarantee(0.0) if name == "max" else profile.guarantee(divergence=name)

    def __repr__(self) -> str:
        return f"CouplingMechanism(kind={self.kind!r}, contexts={self.contexts!r}, |X|={self.n_inputs}, |Y|={self.n_outputs})"

