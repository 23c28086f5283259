"""What a Gaussian-model release proves: δ(ε) (and ε at δ) over Ψ, for a noise law.

Model: f_θ = N(μ_θ, Σ_θ) (a :class:`~distpriv.GaussianModel`; an empirical model
enters through its Gaussian fit). The released value is F + Z with Z independent
of F:

* Gaussian noise N(0, Σ_Z): the output laws are N(μ_θ, Σ_θ + Σ_Z) — exact
  profiles by :mod:`.gaussian` (closed form or certified PLD bracket);
* Laplace noise Z = B L, L_k ~ Lap(b_k) on orthonormal columns of B: translation
  (equal covariances: the exact Laplace loss), products (covariances diagonal in
  the noise basis: exact 1-D Gaussian ⊛ Laplace losses composed), otherwise the
  coupling bound of :mod:`.laplace`, with a lower end from the 1-D marginals
  along the basis vectors (post-processing);
* no noise: the model laws themselves (Chen & Ohrimenko Thm 5.4's question).

:func:`proven_delta` returns the worst ordered pair over Ψ (both orders of each
pair, Definition 3.2), :func:`proven_epsilon` the least ε at a δ, and
:func:`pure_epsilon` the pure ε of a Laplace release where it exists.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError, InvalidTypeError
from ..models import EmpiricalModel, GaussianModel, QueryModel
from ..noise import NoiseLaw
from . import gaussian as gauss
from . import laplace as lap
from . import laplace_3d as l3d
from . import laplace_common as lc
from . import laplace_nd as nd
from . import laplace_partial as lp
from . import pld
from .profile import (
    CELLS,
    COUPLING,
    DISJOINT,
    IDENTICAL,
    PLD,
    TRANSLATION,
    EpsilonBound,
    Profile,
    worst,
)

#: Relative size below which covariance differences count as zero (equal covariances / diagonal).
COV_TOL = 1e-12


def gaussian_view(model: QueryModel) -> GaussianModel:
    """The model itself, or the Gaussian fit N(μ̂_θ, Σ̂_θ) of an :class:`~distpriv.EmpiricalModel`."""
    if isinstance(model, GaussianModel):
        return model
    if isinstance(model, EmpiricalModel):
        return model.to_gaussian()
    raise InvalidTypeError(f"model: expected a GaussianModel or EmpiricalModel, got {type(model).__name__}")


def _pairs(pairs: Iterable[Sequence[Hashable]]) -> list[tuple[Hashable, Hashable]]:
    out = []
    for p in pairs:
        a, b = p
        out.append((a, b))
    if not out:
        raise InvalidParameterError("pairs: Ψ must contain at least one pair")
    return out


def _rel_gap(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    scale = max(float(np.linalg.norm(x, 2)), float(np.linalg.norm(y, 2)), 1e-300)
    return float(np.linalg.norm(x - y, 2)) / scale


# --------------------------------------------------------------------------- Laplace structure
@dataclass(frozen=True)
class _LaplacePair:
    """How a Laplace release of one pair is accounted for."""

    kind: str  # "translation" | "product" | "coupling" | "disjoint" | "identical"
    shift_loss: float = 0.0  # translation: Σ |(BᵀΔμ)_k|/b_k
    gl: tuple[lap.GaussLaplaceCoord, ...] = ()
    gauss: gauss.Reduction | None = None
    shift: lap.CouplingShift | None = None


def _laplace_structure(model: GaussianModel, a: Hashable, b: Hashable, noise: NoiseLaw, *,
                       translation: bool = True) -> _LaplacePair:
    """Classify one pair: translation (equal covariances, mean difference inside span B), product
    (both covariances block-diagonal [span B | complement] and diagonal on span B), or coupling."""
    assert noise.basis is not None and noise.scales is not None
    basis, scales = noise.basis, noise.scales
    ma, mb = model.mean(a), model.mean(b)
    sa, sb = model.covariance(a), model.covariance(b)
    comp = lap.complete_basis(basis)
    diff = ma - mb
    if translation and _rel_gap(sa, sb) <= COV_TOL:
        scale_mu = (math.sqrt(max(float(np.linalg.norm(sa, 2)), 0.0)) + float(np.linalg.norm(ma))
                    + float(np.linalg.norm(mb)))
        outside = float(np.linalg.norm(comp.T @ diff)) if comp.shape[1] else 0.0
        if outside <= 1e-10 * max(scale_mu, 1e-300):
            loss = float(np.sum(np.abs(basis.T @ diff) / scales))
            return _LaplacePair("identical") if loss == 0.0 else _LaplacePair("translation", shift_loss=loss)
    q = np.hstack([basis, comp])
    ra, rb = q.T @ sa @ q, q.T @ sb @ q
    d = basis.shape[1]
    mask = np.ones_like(ra, dtype=bool)
    mask[:d, :d] = ~np.eye(d, dtype=bool)
    mask[d:, d:] = False
    off = max(float(np.abs(ra[mask]).max(initial=0.0)), float(np.abs(rb[mask]).max(initial=0.0)))
    ref = max(float(np.abs(ra).max(initial=0.0)), float(np.abs(rb).max(initial=0.0)), 1e-300)
    if off <= 1e-10 * ref:
        mua, mub = q.T @ ma, q.T @ mb
        coords = tuple(
            lap.GaussLaplaceCoord(float(mua[k]), math.sqrt(max(float(ra[k, k]), 0.0)), float(mub[k]),
                                  math.sqrt(max(float(rb[k, k]), 0.0)), float(scales[k]))
            for k in range(d)
        )
        red = gauss.reduce_pair(mua[d:], ra[d:, d:], mub[d:], rb[d:, d:]) if comp.shape[1] else None
        return _LaplacePair("product", gl=coords, gauss=red)
    return _LaplacePair("coupling", shift=lap.coupling_shift(ma, sa, mb, sb, basis))


def _gauss_coords(red: gauss.Reduction | None, reverse: bool) -> tuple[list[gauss.GaussCoord], str]:
    if red is None or red.status == "identical":
        return [], "identical"
    if red.status in ("disjoint", "singular"):
        return [], "disjoint"
    cs = [gauss.GaussCoord(float(m), float(x), float(y)) for m, x, y in zip(red.m, red.alpha, red.beta, strict=True)]
    return ([c.reverse() for c in cs] if reverse else cs), "ok"


def _laplace_pair_profile(st: _LaplacePair, model: GaussianModel, a: Hashable, b: Hashable, noise: NoiseLaw,
                          epsilon: float, reverse: bool, rtol: float, target: float | None, tight: bool = False) -> Profile:
    pair = (b, a) if reverse else (a, b)
    if st.kind == "identical":
        return Profile(epsilon, 0.0, 0.0, IDENTICAL, pair)
    if st.kind == "translation":
        if st.shift_loss <= epsilon * (1 + 1e-12):
            return Profile(epsilon, 0.0, 0.0, TRANSLATION, pair, {"pure_epsilon": st.shift_loss},
                           pure_epsilon=st.shift_loss)
        # ε below the translation loss: fall through to the exact product / coupling accounting
        st = _laplace_structure(model, a, b, noise, translation=False)
    if st.kind == "product":
        gl = [c.reverse() if reverse else c for c in st.gl]
        gcs, status = _gauss_coords(st.gauss, reverse)
        if status == "disjoint":
            return Profile(epsilon, 1.0, 1.0, DISJOINT, pair)
        if len(gl) == 1 and not gcs:
            lo, up, kappa, ncells = lap.gl_delta_adaptive(gl[0].mu_p, gl[0].s_p, gl[0].mu_q, gl[0].s_q, gl[0].b, epsilon,
                                                          rtol=rtol, target=target)
            return Profile(epsilon, up, min(lo, up), CELLS, pair, {"kappa": kappa, "cells": ncells})
        br = pld.pld_bracket([*gl, *gcs], epsilon, rtol=rtol, target=target)
        return Profile(epsilon, br.upper, br.lower, PLD + " over Gaussian ⊛ Laplace coordinates", pair,
                       {"grid_width": br.h, "cells": br.cells})
    assert st.shift is not None and noise.scales is not None and noise.basis is not None
    upper, split, method = _composition_bound(model, pair[0], pair[1], noise, epsilon, target=target, tight=tight)
    # a lower end from 1-D marginals (post-processing); skipped in decision mode unless it can decide
    lower = 0.0 if (target is not None and upper <= target) else _marginal_lower(model, a, b, noise, epsilon, reverse)
    if tight:  # issue 25: certified 2-D grid (a per-call choice, see grid_applies)
        grid = _tight_grid(nd, model, pair, noise, epsilon, target, upper, lower)
        if grid is not None and grid[1] < upper:
            return Profile(epsilon, grid[1], min(max(lower, grid[0]), grid[1]), nd.METHOD, pair,
                           {"kappa": grid[2]})
        grid3 = _tight_grid(l3d, model, pair, noise, epsilon, target, upper, lower)  # issue 25: the same in 3-D
        if grid3 is not None and grid3[1] < upper:
            return Profile(epsilon, grid3[1], min(max(lower, grid3[0]), grid3[1]), l3d.METHOD, pair,
                           {"kappa": grid3[2]})
    return Profile(epsilon, upper, min(lower, upper), method, pair, {"epsilon_split": split})


# The certified 2-D and 3-D Gauss ⊛ Laplace grids (:mod:`.laplace_nd`, :mod:`.laplace_3d`) and, from 4-D on, the
# common-Gaussian-factor bound (:mod:`.laplace_common`) are a per-call choice (``tight=True`` of proven_delta,
# pair_profiles, proven_epsilon, distpriv.accounting.topup.topup_laplace, off unless asked here; distpriv.calibrate's
# Laplace mechanisms turn it on by default for a GaussianModel of 2 dimensions or more,
# distpriv.mechanisms.expected_value.tight_by_default): docs/assumptions.md gives the measured gains and costs.


def grid_applies(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw) -> bool:
    """True iff ``tight=True`` can change a Laplace release's profile: some pair of Ψ is accounted by the coupling
    bound (its covariances differ and are not diagonal in the noise basis) and the certified 2-D grid of
    :mod:`.laplace_nd` covers it (2-D, a full orthonormal noise basis) or the 3-D grid of :mod:`.laplace_3d` does
    (3-D, a full orthonormal noise basis, positive definite covariances)."""
    law = noise.accountable()
    if law.gaussian_family or law.basis is None or law.scales is None:
        return False
    g = gaussian_view(model)
    for a, b in _pairs(pairs):
        # translation=False: a translation is accounted exactly only while its loss is within ε (below that scale
        # it is a product or a coupling pair, whatever the scale: the classification does not depend on it)
        if ((nd.applies(g.dim, law.basis, g.covariance(a), g.covariance(b))
             or l3d.grid_3d_applies(g.dim, law.basis, g.covariance(a), g.covariance(b)))
                and _laplace_structure(g, a, b, law, translation=False).kind == "coupling"):
            return True
    return False


def coupling_accounted(model: GaussianModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw) -> bool:
    """True iff some pair of Ψ is accounted by the Gaussian-coupling bound (its covariances differ and are not
    diagonal in the noise basis), whatever the scale: where ``tight`` can switch a bound on (:func:`grid_applies`
    in 2-D and 3-D, the common-Gaussian-factor bound of :mod:`.laplace_common` from 4-D on)."""
    law = noise.accountable()
    if law.gaussian_family or law.basis is None or law.scales is None:
        return False
    return any(_laplace_structure(model, a, b, law, translation=False).kind == "coupling" for a, b in _pairs(pairs))


def _tight_grid(grid: ModuleType, model: GaussianModel, pair: tuple[Hashable, Hashable], noise: NoiseLaw, epsilon: float,
                target: float | None, upper: float, lower: float) -> tuple[float, float, float] | None:
    """Certified Gauss ⊛ Laplace bracket of ``grid`` (:mod:`.laplace_nd` in 2-D, :mod:`.laplace_3d` in 3-D) where
    it applies and can improve the bound."""
    if (target is not None and (upper <= target or lower > target)) or upper <= 0.0:
        return None
    p, q = pair
    applies, bracket = (nd.applies, nd.pair_bracket) if grid is nd else (l3d.grid_3d_applies, l3d.pair_bracket_3d)
    if not applies(model.dim, noise.basis, model.covariance(p), model.covariance(q)):
        return None
    assert noise.basis is not None and noise.scales is not None
    try:
        return bracket(model.mean(p), model.covariance(p), model.mean(q), model.covariance(q), noise.basis,
                       noise.scales, epsilon, target=target, beat=upper)
    except OverflowError:  # a Laplace scale far below the Gaussian spread (review29a): the grid's error
        return None  # factors overflow where its bracket could not beat the coupling bound, which stands


#: Decision mode of :func:`_composition_bound`: stop the split search at the first split whose bound is at most
#: this fraction of the target (far enough below it that the top-up search does not take it for the least noise).
EARLY_STOP = 0.5


def _composition_bound(model: GaussianModel, p: Hashable, q: Hashable, noise: NoiseLaw, epsilon: float, *,
                       target: float | None = None, tight: bool = False) -> tuple[float, float, str]:
    """δ_{P‖Q}(ε) <= min over ε₁ of δ_⊥(ε₁) + E[g_{ε − ε₁}(BᵀD)] (loss-splitting chain rule + coupling).

    L = L_⊥ + L_{B|⊥} and (1 − e^{ε₁+ε₂−L})_+ <= (1 − e^{ε₁−L_⊥})_+ + (1 − e^{ε₂−L_{B|⊥}})_+ (for
    u, v >= 0, (1 − uv)_+ <= (1 − u)_+ + (1 − v)_+), so δ(ε₁ + ε₂) <= δ_⊥(ε₁) + E_{c~P_⊥}[δ_{B|c}(ε₂)];
    the first term is the exact Gaussian profile of the un-noised marginals, the second the coupling
    bound of :func:`distpriv.accounting.laplace.coupling_delta_bound` for the conditional laws
    (:func:`distpriv.accounting.laplace.conditional_shift`). Returns (bound, ε₁ used, method).

    Every split ε₁ gives a valid bound, so with ``target`` (decision mode) the search stops at the first
    split whose bound is <= EARLY_STOP · target (the decision is the same; the value returned is then not
    the least). Not at the target itself: a calibration's search reads the value as its guide and stops
    once it is within 5 % of the target, so a loose value near the target would stop it at more noise.

    ``tight`` (issue 25): with a full-rank noise basis the common-Gaussian-factor bound of :mod:`.laplace_common`
    (from 4-D on) is taken where smaller; it costs 1.3–4.5× the coupling bound's CPU in a calibration for a 2–13 %
    smaller scale, so it is a per-call choice like the 2-D/3-D grids (``distpriv.calibrate`` turns it on by default,
    ``release`` does not). With noise on fewer directions than the dimension, ``tight`` also bounds the conditional
    term by a common Gaussian factor (:func:`distpriv.accounting.laplace_partial.chain_bound`, method
    ``laplace_partial.METHOD``) and, with one noised direction, computes the joint law of the un-noised loss and
    the conditional shift without splitting ε (:func:`~distpriv.accounting.laplace_partial.joint_bound`, method
    ``laplace_partial.JOINT_METHOD``); the least is kept.
    """
    assert noise.basis is not None and noise.scales is not None
    scales = noise.scales
    mean, cov = lap.conditional_shift(model.mean(p), model.covariance(p), model.mean(q), model.covariance(q), noise.basis)
    comp = lap.complete_basis(noise.basis)
    red = None
    if comp.shape[1]:
        red = gauss.reduce_pair(comp.T @ model.mean(p), comp.T @ model.covariance(p) @ comp,
                                comp.T @ model.mean(q), comp.T @ model.covariance(q) @ comp)
    if red is None or red.status == "identical":
        upper = lap.coupling_delta_bound(mean, cov, noise.scales, epsilon)
        if red is None and tight:  # full-rank noise basis: the common-Gaussian-factor bound where smaller (issue 25)
            upper, common = lc.improve(upper, model.mean(p), model.covariance(p), model.mean(q), model.covariance(q),
                                       noise.basis, noise.scales, epsilon, target=target, early_stop=EARLY_STOP)
            return upper, 0.0, lc.METHOD if common else COUPLING
        return upper, 0.0, COUPLING
    if red.status == "disjoint":
        return 1.0, epsilon, COUPLING + " (the un-noised directions have disjoint supports)"
    # the bound at split ε₁, δ_⊥(ε₁) + coupling bound at ε − ε₁, per split evaluated (each computed once, in the
    # order asked: the grid, then the golden-section points; written inline, no closure frame between the split
    # search and the two profiles)
    cache: dict[float, float] = {}
    method = COUPLING + " + exact profile of the un-noised directions (loss-splitting chain rule)"
    grid = [epsilon * f for f in (0.0, 0.2, 0.4, 0.6, 0.8, 0.95)]
    for e1 in grid:
        if e1 not in cache:
            d1 = gauss.profile_from_reduction(red, e1, rtol=5e-2, atol=1e-6).delta_upper
            cache[e1] = min(1.0, d1 + lap.coupling_delta_bound(mean, cov, scales, epsilon - e1)) if d1 < 1 else 1.0
        if target is not None and cache[e1] <= EARLY_STOP * target:  # decided, with room to spare
            return cache[e1], e1, method
    best = min(grid, key=cache.__getitem__)
    lo, hi = max(0.0, best - 0.2 * epsilon), min(epsilon, best + 0.2 * epsilon)
    for _ in range(4):  # golden-section refinement around the best grid point (any split is valid)
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        for e1 in (m1, m2):
            if e1 not in cache:
                d1 = gauss.profile_from_reduction(red, e1, rtol=5e-2, atol=1e-6).delta_upper
                cache[e1] = min(1.0, d1 + lap.coupling_delta_bound(mean, cov, scales, epsilon - e1)) if d1 < 1 else 1.0
        if cache[m1] <= cache[m2]:
            hi = m2
        else:
            lo = m1
    best = min(cache, key=cache.__getitem__)
    # issue 25: with tight, the conditional laws of the noised directions keep a common Gaussian factor
    # (laplace_partial); in decision mode only where the coupling bound does not decide the target already
    if tight and (target is None or cache[best] > target):
        joint = 1.0
        if noise.basis.shape[1] == 1:
            # one noised direction: the joint law of the un-noised loss and the conditional shift, no split of ε (it
            # was the least on Adult at every ε; the chain bound runs only where the joint grid is not computed)
            joint = lp.joint_bound(model.mean(p), model.covariance(p), model.mean(q), model.covariance(q),
                                   noise.basis, scales, epsilon, target=target)
        val, split = 1.0, epsilon
        if joint >= 1.0:
            val, split = lp.chain_bound(red, model.mean(p), model.covariance(p), model.mean(q), model.covariance(q),
                                        noise.basis, scales, epsilon, target=target)
        if joint < min(val, cache[best]):
            return joint, 0.0, lp.JOINT_METHOD
        if val < cache[best]:
            return val, split, lp.METHOD
    return cache[best], best, method


def _marginal_lower(model: GaussianModel, a: Hashable, b: Hashable, noise: NoiseLaw, epsilon: float, reverse: bool) -> float:
    """Largest δ of a 1-D marginal of the output (a post-processing, hence a lower bound)."""
    assert noise.basis is not None and noise.scales is not None
    p, q = (b, a) if reverse else (a, b)
    best = 0.0
    for k in range(noise.basis.shape[1]):
        v = noise.basis[:, k]
        sp = math.sqrt(max(float(v @ model.covariance(p) @ v), 0.0))
        sq = math.sqrt(max(float(v @ model.covariance(q) @ v), 0.0))
        coord = lap.GaussLaplaceCoord(float(v @ model.mean(p)), sp, float(v @ model.mean(q)), sq, float(noise.scales[k]),
                                      kappa=1e-2)
        best = max(best, coord.delta_bracket(epsilon)[0])
    comp = lap.complete_basis(noise.basis)
    if comp.shape[1]:
        red = gauss.reduce_pair(comp.T @ model.mean(p), comp.T @ model.covariance(p) @ comp,
                                comp.T @ model.mean(q), comp.T @ model.covariance(q) @ comp)
        prof = gauss.profile_from_reduction(red, epsilon, rtol=5e-2, atol=1e-6)
        best = max(best, prof.delta_lower)
    return best


# --------------------------------------------------------------------------- public API
def pair_profiles(model: QueryModel, a: Hashable, b: Hashable, noise: NoiseLaw, epsilon: float, *,
                  rtol: float = 1e-3, target: float | None = None, tight: bool = False) -> tuple[Profile, Profile]:
    """(δ of P_a against P_b, δ of P_b against P_a) at ε for the release F + Z.

    ``tight``: where a 2-D Laplace pair is accounted by the coupling bound, also run the certified 2-D grid of
    :mod:`.laplace_nd` and claim the smaller upper end (issue 25; slower, docs/assumptions.md).
    """
    g = gaussian_view(model)
    eps = float(epsilon)
    noise = noise.accountable()
    if noise.gaussian_family:
        cov = noise.gaussian_covariance
        red = gauss.reduce_pair(g.mean(a), g.covariance(a) + cov, g.mean(b), g.covariance(b) + cov)
        p1 = gauss.profile_from_reduction(red, eps, rtol=rtol, target=target)
        if target is not None and p1.delta_lower > target:
            return _tag(p1, (a, b)), _tag(p1, (a, b))
        p2 = gauss.profile_from_reduction(red, eps, reverse=True, rtol=rtol, target=target)
        return _tag(p1, (a, b)), _tag(p2, (b, a))
    st = _laplace_structure(g, a, b, noise)
    p1 = _laplace_pair_profile(st, g, a, b, noise, eps, False, rtol, target, tight)
    if target is not None and p1.delta_lower > target:
        return p1, p1
    p2 = _laplace_pair_profile(st, g, a, b, noise, eps, True, rtol, target, tight)
    return p1, p2


def _tag(p: Profile, pair: tuple[Hashable, Hashable]) -> Profile:
    return replace(p, pair=pair)


def proven_delta(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, epsilon: float, *,
                 rtol: float = 1e-3, target: float | None = None, tight: bool = False) -> Profile:
    """What δ the release F + Z proves at ε: the worst ordered pair of Ψ (certified bracket).

    ``model`` is a GaussianModel (an EmpiricalModel is replaced by its Gaussian fit);
    ``noise`` a :class:`NoiseLaw`. With ``target`` (decision mode), computation stops as soon
    as some ordered pair is proven to exceed it, and brackets are refined only until they decide
    it. The answer to "is δ(ε) <= target?" is then exact, but after an early stop the pairs (or
    the reverse order) not evaluated may be worse than the one found, so the returned upper end is
    the trivially valid 1 (``decided_above_target`` is set, :attr:`Profile.decided_only`): a caller that needs the value of
    δ must call without ``target``. ``tight``: see :func:`pair_profiles`.
    """
    profiles: list[Profile] = []
    for a, b in _pairs(pairs):
        p1, p2 = pair_profiles(model, a, b, noise, epsilon, rtol=rtol, target=target, tight=tight)
        profiles += [p1, p2]
        if target is not None and max(p1.delta_lower, p2.delta_lower) > target:
            found = max(profiles, key=lambda p: p.delta_lower)
            return replace(found, delta_upper=1.0, details={**found.details, "decided_above_target": target},
                           decided_above_target=target)
    return worst(profiles)


def proven_epsilon(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, delta: float, *,
                   rtol: float = 1e-3, eps_max: float = 1e3, tight: bool = False) -> EpsilonBound:
    """Least ε (certified bracket, relative width ~``rtol``) with proven δ(ε) <= ``delta``.

    δ(ε) is non-increasing in ε, so bisection applies: ``epsilon_upper`` is a point where the
    certified upper end of δ is <= ``delta``; ``epsilon_lower`` the largest point where the
    certified lower end exceeds it (0 if none was found), so the least ε lies between them.
    ``tight``: see :func:`pair_profiles`.
    """
    ps = _pairs(pairs)

    def prof(e: float) -> Profile:
        return proven_delta(model, ps, noise, e, rtol=min(rtol, 1e-2), target=delta, tight=tight)

    p0 = prof(1e-12)
    if p0.delta_upper <= delta:
        return EpsilonBound(0.0, 0.0, delta, p0.method, p0.pair)
    lo, hi, proven_lo = 0.0, 1.0, 0.0
    while True:
        p = prof(hi)
        if p.delta_upper <= delta:
            break
        if p.delta_lower > delta:
            proven_lo = hi
        lo = hi
        hi *= 2.0
        if hi > eps_max:
            return EpsilonBound(math.inf, proven_lo, delta, p.method, p.pair)
    best = p
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        p = prof(mid)
        if p.delta_upper <= delta:
            hi, best = mid, p
        else:
            lo = mid
            if p.delta_lower > delta:
                proven_lo = mid
    return EpsilonBound(hi, proven_lo, delta, best.method, best.pair)


def pure_epsilon(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, *,
                 rtol: float = 1e-4, target: float | None = None) -> EpsilonBound:
    """Pure ε = sup |L| of a Laplace release over Ψ (certified), ``inf`` where no pure ε exists or is computable.

    Exact for translations and for products (covariances diagonal in the noise basis with
    identical laws on the un-noised directions); otherwise ``inf`` with method ``COUPLING``
    (only (ε, δ) claims are proven there). With ``target`` (decision mode) brackets are refined
    only until they decide pure ε <= target: the decision is exact, the bracket less tight.
    """
    if not noise.accountable().pure:
        return EpsilonBound(math.inf, math.inf, 0.0, "Gaussian noise has no pure ε")
    g = gaussian_view(model)
    up = lo = 0.0
    method = TRANSLATION
    pair = None
    for a, b in _pairs(pairs):
        st = _laplace_structure(g, a, b, noise)
        if st.kind == "identical":
            continue
        if st.kind == "translation":
            e_up = e_lo = st.shift_loss
        elif st.kind == "product":
            _, status = _gauss_coords(st.gauss, False)
            if status != "identical":
                return EpsilonBound(math.inf, math.inf, 0.0, "un-noised directions differ: no pure ε", (a, b))
            e_lo, e_up = lap.gl_pure_epsilon(list(st.gl), rtol=rtol, target=target)
            method = CELLS
        else:
            return EpsilonBound(math.inf, 0.0, 0.0, COUPLING + " (no pure ε is proven off products)", (a, b))
        if e_up > up:
            up, pair = e_up, (a, b)
        lo = max(lo, e_lo)
    return EpsilonBound(up, lo, 0.0, method, pair)





def composition_bounds_at(model: QueryModel, a: Hashable, b: Hashable, noise: NoiseLaw, epsilon: float,
                          split: float) -> tuple[float, float] | None:
    """One term of the minimum of :func:`_composition_bound` for each order of the pair: the loss-splitting bound
    δ_{P‖Q}(ε) <= δ_⊥(ε₁) + E[g_{ε − ε₁}(BᵀD)] at the single split ε₁ = ``split`` (clipped to [0, ε]), for
    (P, Q) = (P_a, P_b) and (P_b, P_a) of the release F + Z.

    Every split gives a valid upper bound on δ(ε) (the chain rule in :func:`_composition_bound`), so these are
    certified upper ends computed with one evaluation instead of a search. ``None`` where :func:`pair_profiles`
    does not account the pair by that bound (Gaussian noise, or a Laplace pair that is identical, a translation
    within its pure ε, or a product: exact or closed-form methods apply there). Used by
    :func:`distpriv.release.grid.gap_profiles` to skip pairs that cannot be the worst of a row.
    """
    g = gaussian_view(model)
    eps = float(epsilon)
    noise = noise.accountable()
    if noise.gaussian_family or noise.basis is None or noise.scales is None:
        return None
    st = _laplace_structure(g, a, b, noise)  # the same classification as pair_profiles
    if st.kind == "translation" and st.shift_loss > eps * (1 + 1e-12):
        st = _laplace_structure(g, a, b, noise, translation=False)
    if st.kind != "coupling":
        return None
    e1 = min(max(float(split), 0.0), eps)
    comp = lap.complete_basis(noise.basis)
    out = []
    for p, q in ((a, b), (b, a)):
        mean, cov = lap.conditional_shift(g.mean(p), g.covariance(p), g.mean(q), g.covariance(q), noise.basis)
        red = None
        if comp.shape[1]:
            red = gauss.reduce_pair(comp.T @ g.mean(p), comp.T @ g.covariance(p) @ comp,
                                    comp.T @ g.mean(q), comp.T @ g.covariance(q) @ comp)
        if red is None or red.status == "identical":
            out.append(lap.coupling_delta_bound(mean, cov, noise.scales, eps))
        elif red.status == "disjoint":
            out.append(1.0)
        else:
            d1 = gauss.profile_from_reduction(red, e1, rtol=5e-2, atol=1e-6).delta_upper
            out.append(min(1.0, d1 + lap.coupling_delta_bound(mean, cov, noise.scales, eps - e1)) if d1 < 1 else 1.0)
    return out[0], out[1]
