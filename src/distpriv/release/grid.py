"""Ψ from public knowledge: the adjacent pairs of a public grid of shares, and what Ψ says k gaps apart.

``--range LO:HI --gap G`` (Python: :func:`grid`) protects every adjacent pair of
the grid LO, LO + G, …, HI (Chen & Ohrimenko Def. 3.2 with Ψ = {(t_i, t_{i+1})}).
The range must come from public knowledge (a census margin, an industry range),
never from the private table: Ψ is published, so a range centred on the private
share would publish that share to the grid's resolution whatever ε is.

Values k gaps apart, (t_i, t_{i+k}), are not in Ψ. Chaining the adjacent
guarantee k times (group privacy) gives (kε, δ(e^{kε} − 1)/(e^ε − 1)), which is
far weaker than what the release proves: :func:`gap_profiles` computes, for every
k, the exact δ(kε) of the pairs k gaps apart from the accounting core
(:func:`distpriv.accounting.release.proven_delta`) for the noise law of the
chosen mechanism — a certified bracket, not a chained bound.

Decisions (documented in docs/howto-own-data.md): the gap must divide HI − LO
(to 10⁻⁹ relative; refused otherwise, never truncated, so the published range is
exactly the one protected); the grid has at most :data:`MAX_POINTS` points; the
points are rounded to 12 decimals so that 0.1 + 2·0.1 is published as 0.3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DistPrivError, InvalidParameterError, InvalidTypeError

#: Most points a grid may have (each θ is a modelled distribution f_θ).
MAX_POINTS = 101
#: Relative tolerance for "G divides HI − LO" and for recognising a grid in a list of pairs.
_TOL = 1e-9
_DECIMALS = 12
#: Relative width of the certified δ brackets of the k-gap table (the upper end is what is reported).
RTOL = 1e-2


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidTypeError(f"expected a number, got {value!r}", argument=what)
    v = float(value)
    if not math.isfinite(v):
        raise InvalidParameterError(f"must be a finite number, got {value!r}", argument=what)
    return v


def grid(lo: float, hi: float, gap: float) -> tuple[tuple[float, float], ...]:
    """The adjacent pairs (t_i, t_{i+1}) of the public grid t_i = LO + i·G, i = 0 … (HI − LO)/G.

    Requires 0 <= LO < HI <= 1 (shares of records), G > 0, G dividing HI − LO (to 10⁻⁹ relative: a
    gap that does not divide the range is refused rather than truncated) and at most :data:`MAX_POINTS`
    points. Raises :class:`~distpriv.errors.InvalidParameterError` naming ``range`` or ``gap``.
    ``grid(0.2, 0.5, 0.1)`` -> ((0.2, 0.3), (0.3, 0.4), (0.4, 0.5)).
    """
    a, b, g = _number(lo, "range"), _number(hi, "range"), _number(gap, "gap")
    if not 0.0 <= a <= 1.0 or not 0.0 <= b <= 1.0:
        raise InvalidParameterError(f"LO:HI must lie in [0, 1] (shares of records), got {a:g}:{b:g}", argument="range")
    if not a < b:
        raise InvalidParameterError(f"LO must be < HI, got {a:g}:{b:g}", argument="range")
    if not g > 0:
        raise InvalidParameterError(f"must be > 0, got {g:g}", argument="gap")
    steps = (b - a) / g
    k = round(steps)
    if k < 1 or abs(steps - k) > _TOL * max(1.0, steps):
        raise InvalidParameterError(
            f"{g:g} does not divide the range {a:g}:{b:g} ((HI − LO)/G = {steps:.6g}); choose a gap that "
            "divides HI − LO, e.g. " + f"{(b - a) / max(1, math.ceil(steps)):.6g}", argument="gap")
    if k + 1 > MAX_POINTS:
        raise InvalidParameterError(f"{g:g} makes {k + 1} grid points over {a:g}:{b:g}; at most {MAX_POINTS}", argument="gap")
    pts = [round(a + i * (b - a) / k, _DECIMALS) for i in range(k + 1)]
    return tuple(zip(pts[:-1], pts[1:], strict=True))


def parse_range(text: Any) -> tuple[float, float]:
    """``"0.2:0.5"`` (or a TOML ``[0.2, 0.5]``) -> (0.2, 0.5); one-line error naming ``--range`` otherwise."""
    if isinstance(text, (list, tuple)):
        parts = list(text)
    elif isinstance(text, str):
        parts = [p.strip() for p in text.split(":")]
    else:
        raise InvalidTypeError(f"expected LO:HI such as 0.2:0.5, got {text!r}", argument="range")
    if len(parts) != 2 or any(p == "" for p in parts):
        raise InvalidParameterError(f"expected LO:HI such as 0.2:0.5, got {text!r}", argument="range")
    try:
        lo, hi = (float(p) for p in parts)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"LO and HI must be numbers, got {text!r}", argument="range") from None
    return lo, hi


@dataclass(frozen=True)
class GridSpec:
    """A public grid recognised in Ψ: ``points`` t_0 < … < t_K evenly spaced by ``gap``, Ψ its adjacent pairs."""

    lo: float
    hi: float
    gap: float
    points: tuple[float, ...]

    @property
    def steps(self) -> int:
        """K: the number of adjacent pairs."""
        return len(self.points) - 1

    def pairs_apart(self, k: int) -> list[tuple[float, float]]:
        """The pairs (t_i, t_{i+k}) of values k gaps apart."""
        return [(self.points[i], self.points[i + k]) for i in range(len(self.points) - k)]

    def to_dict(self) -> dict[str, Any]:
        return {"range": [self.lo, self.hi], "gap": self.gap, "points": list(self.points)}


def grid_of(pairs: Sequence[Sequence[float]]) -> GridSpec | None:
    """The grid whose adjacent pairs Ψ is (in either order of each pair), or ``None``.

    A function of the public Ψ only: ``--range`` and ``protect(pairs=grid(...))`` give the same answer.
    A single pair is a one-step grid.
    """
    ps = [tuple(sorted((float(a), float(b)))) for a, b in pairs]
    if not ps:
        return None
    pts = sorted({v for p in ps for v in p})
    if len(pts) != len(ps) + 1:
        return None
    diffs = np.diff(pts)
    gap = float(diffs.mean())
    if not np.all(np.abs(diffs - gap) <= _TOL * max(gap, 1e-300) + 1e-12):
        return None
    if sorted(ps) != [(pts[i], pts[i + 1]) for i in range(len(pts) - 1)]:
        return None
    return GridSpec(pts[0], pts[-1], round(gap, _DECIMALS), tuple(pts))


def chained_delta(epsilon: float, delta: float, k: int) -> float:
    """δ of chaining an (ε, δ) guarantee k times: δ·(e^{kε} − 1)/(e^ε − 1) = δ·Σ_{j<k} e^{jε} (capped at 1)."""
    if k <= 1:
        return min(1.0, delta)
    # Σ_{j<k} e^{jε} in log space
    log_sum = float(np.logaddexp.reduce(np.arange(k) * float(epsilon)))
    return float(min(1.0, math.exp(min(log_sum + math.log(delta), 0.0)))) if delta > 0 else 0.0


def noise_law_of(candidate: Any) -> tuple[Any, str]:
    """The accounting core's noise law for a chosen candidate, and what it leaves out.

    The stage-1 noise of the base mechanism (or, for a noiseless base, the Theorem 5.7 Laplace noise on every
    component). Any other independent noise (the Theorem 5.7 stage, the grid rounding) is post-processing of
    this release and can only lower δ, so a profile of this law is a valid bound for what was published.
    """
    from ..noise import NoiseLaw

    dim = candidate.dim
    if candidate.base is not None:
        law = candidate.base.noise
        left = ("; the Theorem 5.7 Laplace noise added on top is left out (post-processing can only lower δ)"
                if candidate.extra_laplace_scale > 0 else "")
        return law, left
    if candidate.extra_laplace_scale > 0:
        return NoiseLaw.laplace(np.eye(dim), [candidate.extra_laplace_scale] * dim), ""
    return NoiseLaw.none(dim), ""


def gap_profiles(model: Any, spec: GridSpec, candidate: Any, *, epsilon: float, delta: float,
                 max_k: int | None = None, prune: bool = True) -> dict[str, Any]:
    """Per adjacent pair its δ(ε), and for k = 1 … K the exact δ(kε) over the pairs k gaps apart.

    ``model``: the release's f_θ model (an EmpiricalModel enters through its Gaussian fit, the accounting
    core's model); ``candidate``: the chosen candidate (:func:`noise_law_of`); ``epsilon``, ``delta``: the
    release's guarantee. For an ordered pair (P, Q) of output laws δ(ε) = sup_S P(S) − e^ε Q(S) (hockey-stick
    divergence); a row's δ is the largest certified upper end over both orders of its pairs
    (:func:`distpriv.accounting.release.pair_profiles`), beside the chained bound :func:`chained_delta`.

    Only the worst pair of a row k >= 2 is published, so (``prune``) a pair is not searched when a certified
    upper end of its δ(kε) is already below the row's worst computed one (:func:`_row`): the row's δ is still a
    certified upper end for every pair of the row (every skipped pair's δ lies below it), and the same value as
    without pruning in the cases measured.
    """
    from ..accounting.release import gaussian_view

    g = gaussian_view(model)
    law, left = noise_law_of(candidate)
    top = spec.steps if max_k is None else min(spec.steps, max_k)
    per_pair: list[dict[str, Any]] = []
    rows = []
    ratio: float | None = None  # split ε₁/(kε) of the previous row's worst pair (coupling bound), if any
    for k in range(1, top + 1):
        pairs = spec.pairs_apart(k)
        computed, ratio = _row(g, pairs, law, k * epsilon, ratio if (prune and k >= 2) else None)
        worst_up = worst_lo = 0.0
        method = ""
        for a, b in pairs:
            if (a, b) not in computed:
                continue  # certified below the row's worst (_row)
            p1, p2 = computed[(a, b)]
            up = min(1.0, max(p1.delta_upper, p2.delta_upper))
            lo = min(1.0, max(p1.delta_lower, p2.delta_lower))
            if k == 1:
                per_pair.append({"pair": [a, b], "epsilon": epsilon, "delta": up, "delta_lower": lo})
            if up >= worst_up:
                worst_up, worst_lo = up, lo
                method = (p1 if p1.delta_upper >= p2.delta_upper else p2).method
        rows.append({"k": k, "apart": round(k * spec.gap, _DECIMALS), "pairs": len(pairs),
                     "epsilon": k * epsilon, "delta": worst_up, "delta_lower": worst_lo,
                     "chained_delta": chained_delta(epsilon, delta, k), "method": method})
    basis = ("δ computed by the accounting core (exact hockey-stick divergence of the output laws, certified upper "
             "end, both orders of every pair) for the noise law of the chosen mechanism, with f_θ the Gaussian fit "
             "N(μ̂_θ, Σ̂_θ) of the model" + left)
    return {**spec.to_dict(), "basis": basis, "per_pair": per_pair, "k_gaps": rows}


def _profiles(g: Any, a: float, b: float, law: Any, eps: float) -> tuple[Any, Any]:
    """:func:`distpriv.accounting.release.pair_profiles` at ``eps`` (relative width :data:`RTOL`), or the trivial
    bound δ <= 1 where no profile is computable."""
    from ..accounting.profile import Profile
    from ..accounting.release import pair_profiles

    try:
        return pair_profiles(g, a, b, law, eps, rtol=RTOL)
    except DistPrivError as exc:  # no profile computable: δ <= 1 is the only claim
        p = Profile(eps, 1.0, 0.0, f"not computable ({exc}): trivial bound δ <= 1")
        return p, p


def _quick_upper(g: Any, a: float, b: float, law: Any, eps: float, ratio: float) -> float | None:
    """A certified upper end of max(δ_{a‖b}, δ_{b‖a}) at ``eps`` from one split ε₁ = ratio·eps of the coupling
    bound (:func:`distpriv.accounting.release.composition_bounds_at`), or ``None`` (not a coupling pair, or not
    computable: the pair is then computed in full)."""
    from ..accounting.release import composition_bounds_at

    try:
        both = composition_bounds_at(g, a, b, law, eps, ratio * eps)
    except DistPrivError:
        return None
    return None if both is None else max(both)


def _row(g: Any, pairs: list[tuple[float, float]], law: Any, eps: float, ratio: float | None
         ) -> tuple[dict[tuple[float, float], tuple[Any, Any]], float | None]:
    """The profiles of a row's pairs that can be its worst, and the split ratio of that worst pair.

    Without ``ratio`` (k = 1: every pair is published; or no pruning) every pair is computed. With it, each pair
    first gets a certified upper end C from one split ε₁ = ratio·ε (:func:`_quick_upper`; the worst pairs of
    consecutive rows split ε in nearly the same proportion, so C is close to the searched value); pairs are then
    computed in full by decreasing C, and a pair whose C is below the largest certified upper end M computed so far
    is skipped: its δ <= C < M, so M — the published worst — still bounds every pair of the row. It never exceeds
    the full computation's row (a maximum over more pairs), and equals it whenever a skipped pair's search would
    not return more than its C (the search's minimum over splits is at most the value at any split it visits; on
    Adult's ten pairs and in tests/release/test_release_range.py the rows are identical). Pairs without C (exact
    or closed-form methods, cheap) are always computed.
    """
    out: dict[tuple[float, float], tuple[Any, Any]] = {}
    quick: list[tuple[float, tuple[float, float]]] = []
    for a, b in pairs:
        c = _quick_upper(g, a, b, law, eps, ratio) if ratio is not None and len(pairs) > 1 else None
        if c is None:
            out[(a, b)] = _profiles(g, a, b, law, eps)
        else:
            quick.append((c, (a, b)))
    worst = max((min(1.0, max(p1.delta_upper, p2.delta_upper)) for p1, p2 in out.values()), default=-1.0)
    for c, (a, b) in sorted(quick, key=lambda t: -t[0]):
        if c < worst:
            continue  # certified below the row's worst
        out[(a, b)] = p1, p2 = _profiles(g, a, b, law, eps)
        worst = max(worst, min(1.0, max(p1.delta_upper, p2.delta_upper)))
    best = max(out.values(), key=lambda ps: max(ps[0].delta_upper, ps[1].delta_upper))
    prof = best[0] if best[0].delta_upper >= best[1].delta_upper else best[1]
    split = prof.details.get("epsilon_split") if isinstance(prof.details, dict) else None
    return out, (float(split) / eps if split is not None and eps > 0 else ratio)
