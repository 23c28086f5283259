"""Calibration by top-up: add noise until the exact profile meets the target.

Adding independent noise is post-processing, so the true δ(ε) never increases:

* Gaussian: N(0, k²Σ_Z) = N(0, Σ_Z) ⊛ N(0, (k² − 1)Σ_Z) for k >= 1, and
  N(0, Σ_Z + tI) = N(0, Σ_Z) ⊛ N(0, tI);
* Laplace: Lap(kb) = Lap(b) ⊛ [k⁻² δ_0 + (1 − k⁻²) Lap(kb)] (the ratio of the
  characteristic functions 1/(1 + k²b²t²) and 1/(1 + b²t²) is that mixture's),
  so scaling every Laplace coordinate by k >= 1 is post-processing too.

The search is a doubling + bisection on k (or t) whose every accepted point is
*verified*: the certified upper end of the profile is <= the target there. So
the returned noise is proven, and (up to the bisection tolerance) minimal.
Scaling the mechanism's own noise shape is tried first; when that shape is
rank-deficient and the laws already differ on its null space (δ of those
marginals exceeds the target — e.g. noise along one direction while the
covariances differ elsewhere), no k works and isotropic noise is added instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import AssumptionError
from ..models import QueryModel
from . import gaussian as gauss
from . import laplace_3d as l3d
from . import laplace_nd as nd
from .profile import Profile
from .release import NoiseLaw, gaussian_view, grid_applies, proven_delta, pure_epsilon

#: Relative slack accepted on the target (floating-point agreement of closed forms).
SLACK = 1e-9
#: Most profile evaluations one search may spend (bounded work on every input).
MAX_STEPS = 200


@dataclass(frozen=True)
class TopUp:
    """Outcome of a top-up search.

    ``noise``: the final noise law; ``factor``: multiplier applied to the mechanism's own noise
    (standard deviations / Laplace scales); ``isotropic``: variance of the added N(0, t·I)
    (Gaussian only); ``before`` / ``after``: the proven profiles at the original and final noise
    (``after.delta_upper <= target``); ``steps``: number of profile evaluations; ``note``: one sentence on how the
    3-D grid's work budget or early exit shaped the result (empty when they did not, :func:`_topup_laplace_3d`).
    """

    noise: NoiseLaw
    factor: float
    isotropic: float
    before: Profile
    after: Profile
    steps: int
    note: str = ""

    @property
    def applied(self) -> bool:
        """True iff noise was added (a scaling k > 1 or isotropic noise: post-processing of the mechanism's noise)."""
        return self.factor > 1.0 or self.isotropic > 0.0

    @property
    def reduced(self) -> bool:
        """True iff the mechanism's noise was scaled down (k < 1: :func:`topup_laplace` with ``tight=True``)."""
        return self.factor < 1.0

    def describe(self, target: float) -> str:
        if self.reduced:
            return (f"least noise: the mechanism's Laplace scales multiplied by {self.factor:.6g} < 1 (its own scale "
                    f"proved δ <= {self.before.delta_upper:.4g} <= {target:g}, more than needed); the claim is "
                    f"certified at the reduced scale, not inherited from the papers' theorem: {self.after.describe()}")
        if not self.applied:
            return f"exact profile confirms the noise: {self.after.describe()} <= δ = {target:g}"
        what = []
        if self.factor > 1.0:
            what.append(f"mechanism noise scaled by {self.factor:.6g}")
        if self.isotropic > 0.0:
            what.append(f"isotropic Gaussian noise of variance {self.isotropic:.6g} added")
        b = self.before  # a lower bound above the target refutes; else the upper bound only fails to prove
        gave = (f"gave δ >= {b.delta_lower:.4g} > {target:g}" if b.delta_lower > target else
                f"could not be proven to meet δ = {target:g} (proven δ <= {b.delta_upper:.4g})")
        return (f"top-up: the mechanism's noise {gave} "
                f"({self.before.method}); {' and '.join(what)} (post-processing, so δ only decreases); "
                f"now {self.after.describe()}")


def _search(ok: Callable[[float], tuple[bool, Profile]], guess: float, bad: float, *, value: Callable[[Profile], float],
            goal: float, bad_value: float = math.inf, rel: float = 2e-3, tight: float = 0.05,
            limit: float = 1e30, known: tuple[float, Profile] | None = None) -> tuple[float, Profile, int]:
    """Least x > ``bad`` with ok(x) verified, for a monotone ok; ``bad`` is known to fail.

    ``known``: a point x₀ > ``guess`` already verified (ok(x₀) held, with that profile): when ``guess`` fails the
    bracket is then [guess, x₀] at once (no galloping up), and x₀ is returned if no point below it is verified.
    Expands from ``guess`` (galloping up by squared factors, or quartering down while it still succeeds), then
    shrinks the bracket [bad, good] by regula falsi on ln(value) against ln x (``value`` of a
    profile, e.g. its δ upper end, aiming just below ``goal``), falling back to bisection. Stops
    when the bracket is within ``rel`` or the accepted point's value is within ``tight`` of
    ``goal`` (the noise is then minimal up to the accounting resolution). Only points where
    ok(x) held are returned.
    """
    if not (math.isfinite(guess) and guess > 0 and math.isfinite(bad)):
        raise AssumptionError(f"noise: the top-up search has no finite starting point (guess {guess!r}): the "
                              "model's covariances are too small or too large for double precision")
    steps = 1
    good, prof = ok(guess)
    lo_val = bad_value
    if good:
        hi, best = guess, prof
        lo = bad
        x = guess
        while True:
            x /= 4.0
            if x <= bad or x < 1e-12 * guess:
                break
            g, p = ok(x)
            steps += 1
            if not g:
                lo, lo_val = x, value(p)
                break
            hi, best = x, p
    elif known is not None and known[0] > guess:
        lo, lo_val = guess, value(prof)
        hi, best = known
    else:
        lo, lo_val = guess, value(prof)
        grow = 2.0
        hi = guess * grow
        while True:
            g, p = ok(hi)
            steps += 1
            if g:
                best = p
                break
            if hi > limit:
                raise AssumptionError("noise: no finite top-up meets the target δ (the profile does not decrease)")
            lo, lo_val = hi, value(p)
            # galloping: the step factor squares after every failure (2, 4, 16, 256, ... capped at 1e8), so a
            # guess hundreds of orders of magnitude off (a covariance of 1e-300) costs tens of evaluations
            grow = min(grow * grow, 1e8)
            hi = min(hi * grow, limit * 2.0)
    aim = goal * (1.0 - tight / 2.0)
    interp = True
    while hi - lo > rel * hi and value(best) < goal * (1.0 - tight):
        mid = math.sqrt(lo * hi) if lo > 0 else 0.5 * hi
        hv, lv = value(best), lo_val
        if interp and lo > 0 and 0 < hv < aim < lv < math.inf:
            t = (math.log(lv) - math.log(aim)) / (math.log(lv) - math.log(hv))
            cand = math.exp(math.log(lo) + t * (math.log(hi) - math.log(lo)))
            if lo < cand < hi:
                mid = min(max(cand, lo + 0.02 * (hi - lo)), hi - 0.02 * (hi - lo))
        g, p = ok(mid)
        steps += 1
        if steps > MAX_STEPS:  # the bracket halves in log scale at worst: a safety net, never reached in tests
            break
        if g:
            hi, best = mid, p
        else:
            lo, lo_val = mid, value(p)
        interp = not interp if not g else True  # alternate with bisection after a failed interpolation
    return hi, best, steps


def _final(model: QueryModel, pairs: list[tuple[Hashable, Hashable]], noise: NoiseLaw, epsilon: float,
           rtol: float, verified: Profile, target: float, tight: bool = False, decide: bool = False) -> Profile:
    """The full bracket at the accepted noise (the search only established its upper end).

    Falls back to the search's verified profile if the recomputed upper end (another grid) exceeds
    the target, so the reported profile always proves the claim. ``decide`` (the 3-D grid, issue 25): recomputed
    in decision mode (``target``), which reads the search's grids back from the memo instead of refining the 3-D
    ladder to its finest κ (4–5 s per call) for a lower end that stays ~0; every pair and order is still
    evaluated, and the upper end certified.
    """
    full = proven_delta(model, pairs, noise, epsilon, rtol=rtol, tight=tight, target=target if decide else None)
    return full if full.delta_upper <= target else verified


def _upper(p: Profile) -> float:
    """The search's guide value: the upper end, or the exceeding lower end of a decided-only profile."""
    return p.reported_delta


#: Floor of the tight search's guide value, relative to the target (:func:`_topup_laplace`).
GUIDE_FLOOR = 0.5


def _bisect_guide(p: Profile, delta: float, floor: float) -> float:
    """Guide value of the tight search (:func:`_topup_laplace`): inf above ``delta`` (no interpolation: bisection),
    at least ``floor`` · ``delta`` below it (never taken as close enough to stop before the bracket is narrow)."""
    return max(_upper(p), floor * delta) if _upper(p) <= delta else math.inf


def _pure(p: Profile) -> float:
    """The pure-ε search's guide value (every profile it builds records its pure ε)."""
    assert p.pure_epsilon is not None
    return p.pure_epsilon


def _null_space_limit(model: QueryModel, pairs: Sequence[tuple[Hashable, Hashable]], cov: np.ndarray,
                      epsilon: float) -> float:
    """Upper end of δ(ε) of the model's marginals on the null space of Σ_Z (the limit of scaling Σ_Z)."""
    w, v = np.linalg.eigh(cov)
    top = float(w.max(initial=0.0))
    null = v[:, w <= 1e-12 * top] if top > 0 else np.eye(cov.shape[0])
    if null.shape[1] == 0:
        return 0.0
    g = gaussian_view(model)
    worst = 0.0
    for a, b in pairs:
        red = gauss.reduce_pair(null.T @ g.mean(a), null.T @ g.covariance(a) @ null,
                                null.T @ g.mean(b), null.T @ g.covariance(b) @ null)
        for rev in (False, True):
            worst = max(worst, gauss.profile_from_reduction(red, epsilon, reverse=rev, rtol=1e-2).delta_upper)
    return worst


def topup_gaussian(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, epsilon: float,
                   delta: float, *, rtol: float = 1e-2) -> TopUp:
    """Least Gaussian top-up of ``noise`` (scaling, else isotropic) with proven δ(ε) <= ``delta``."""
    ps = [(a, b) for a, b in pairs]
    cap = delta * (1.0 + SLACK)
    before = proven_delta(model, ps, noise, epsilon, rtol=rtol, target=cap)
    if before.delta_upper <= cap:
        return TopUp(noise, 1.0, 0.0, before, before, 1)
    cov = noise.gaussian_covariance

    def ok_scale(k: float) -> tuple[bool, Profile]:
        p = proven_delta(model, ps, noise.scaled(k), epsilon, rtol=rtol, target=delta)
        return p.delta_upper <= delta, p

    if float(np.abs(cov).max(initial=0.0)) > 0 and _null_space_limit(model, ps, cov, epsilon) <= 0.5 * delta:
        k, after, steps = _search(ok_scale, 1.25, 1.0, value=_upper, goal=delta, bad_value=_upper(before))
        return TopUp(noise.scaled(k), k, 0.0, before, _final(model, ps, noise.scaled(k), epsilon, rtol, after, delta), steps + 1)
    g = gaussian_view(model)
    scale = max(float(np.trace(cov)) / cov.shape[0],
                0.05 * max(float(np.trace(g.covariance(x))) / g.dim for p in ps for x in p), 1e-300)

    def ok_iso(t: float) -> tuple[bool, Profile]:
        p = proven_delta(model, ps, noise.plus_isotropic(t), epsilon, rtol=rtol, target=delta)
        return p.delta_upper <= delta, p

    t, after, steps = _search(ok_iso, scale, 0.0, value=_upper, goal=delta)
    final = noise.plus_isotropic(t)
    return TopUp(final, 1.0, t, before, _final(model, ps, final, epsilon, rtol, after, delta), steps + 1)


#: First point of :func:`topup_laplace`'s downward search (``tight=True``): one 1.25 step below the mechanism's scale.
DOWN_GUESS = 0.8


def topup_laplace(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, epsilon: float,
                  delta: float, *, rtol: float = 1e-2, tight: bool = False) -> TopUp:
    """Least scaling k of the Laplace scales with proven δ(ε) <= ``delta`` (``delta`` > 0): k >= 1 by default.

    Raises :class:`~distpriv.AssumptionError` when no scaling can work (the laws differ on
    directions that carry no noise).

    ``tight``: profiles use the certified 2-D grid as well (:func:`distpriv.accounting.release.pair_profiles`), and
    where it applies (:func:`~distpriv.accounting.release.grid_applies`) and the mechanism's own scale already
    meets the target, the search continues *below* it (k < 1, issue 25): the same verified search (every accepted
    k has certified δ <= ``delta``; it is not a post-processing of the mechanism's noise, and needs not be: the
    claim is the profile at the returned scale, recomputed in full by :func:`_final`).
    """
    ps = [(a, b) for a, b in pairs]
    if not (tight and grid_applies(model, ps, noise)):
        return _topup_laplace(model, ps, noise, epsilon, delta, rtol=rtol, tight=tight)
    if gaussian_view(model).dim == 3:
        return _topup_laplace_3d(model, ps, noise, epsilon, delta, rtol=rtol)
    with nd.resolution(COARSE if epsilon >= SMALL_EPSILON else COARSE_SMALL):
        first = _topup_laplace(model, ps, noise, epsilon, delta, rtol=rtol, tight=True, rel=COARSE_REL,
                               floor=GUIDE_FLOOR)
    with nd.resolution(FINE):
        return _refine_laplace(model, ps, noise, epsilon, delta, first, rtol=rtol)


#: Grid resolutions of the two phases of a tight calibration (:func:`topup_laplace`): the whole search on the coarse
#: grid (each grid ~0.02 s), then a short refinement below its scale on the fine one (~0.12 s; one grid gives both
#: orders of a pair, so an intermediate κ = 0.1 would only add a grid per step near the least scale).
COARSE: tuple[float, ...] = (0.2,)
#: Below ε = SMALL_EPSILON the coarse phase uses COARSE_SMALL: the grid must resolve the loss to a fraction of ε, and
#: at ε = 0.1 κ = 0.2 certified only ~1.25× the fine grid's least (12 models: 1.16 s CPU median, 0.86 s with 0.1).
SMALL_EPSILON = 0.5
COARSE_SMALL: tuple[float, ...] = (0.1,)
FINE: tuple[float, ...] = (0.07,)
#: Relative width at which the coarse phase's search stops (the refinement then works below its scale).
COARSE_REL = 4e-2
#: Refinement steps: first point k_c/REFINE_FIRST, then down by REFINE_STEP, its square, ... while it still
#: certifies, then bisection.
REFINE_FIRST = 1.04
REFINE_STEP = 1.04
#: Relative width at which the refinement stops (2 % of the scale; the goal is 1.1×).
REFINE_REL = 2e-2


#: The 3-D grid's schedule (:mod:`.laplace_3d`, issue 25): the coarse phase's resolution, the refinement's, the coarse
#: phase's relative width, and the refinement's first point k_c/REFINE_FIRST_3D, galloping step and relative width.
#: Each 3-D grid costs ~κ⁻³ (0.15 s at κ = 0.5, 0.5–0.8 s at κ = 0.25 on a loaded machine), so the fine steps are
#: few: on the benchmark's models at (1, 1e-3) the fine grid's least certified scaling lay near k_c/1.1, and the
#: search of issue 25's first 3-D round (first point k_c/1.04, 2 %) spent 5 fine grids to return its second point.
#: (κ = 0.3 instead of 0.25: a median 1.62 s instead of 1.88 s, 1.09× a certified floor instead of 1.07×.)
COARSE_3D: tuple[float, ...] = (0.5,)
FINE_3D: tuple[float, ...] = (0.25,)
#: Below ε = SMALL_EPSILON the loss must be resolved to a fraction of ε (δ falls to 0 where the bounded loss reaches
#: ε): at ε = 0.1, δ = 1e-4 κ = 0.35 certified no scale below the coupling bound's; on the benchmark's four models
#: κ = 0.3 → 0.25 returned a median 1.26× a certified floor in a median 5.0 s CPU, κ = 0.3 → 0.2 1.16× in 8.8 s.
COARSE_3D_SMALL: tuple[float, ...] = (0.3,)
FINE_3D_SMALL: tuple[float, ...] = (0.25,)
COARSE_REL_3D = 4e-2
REFINE_FIRST_3D = 1.1
REFINE_STEP_3D = 1.03
REFINE_REL_3D = 3e-2
#: A certified point of the 3-D refinement whose upper end of δ is at least NEAR_3D · δ ends it: on the benchmark's
#: models at (1, 1e-3) the first fine point certified δ <= 6e-4–9e-4 and the next, 3 % lower, never certified (one
#: fine grid, ~0.7 s, saved per calibration, the same scales).
NEAR_3D = 0.5
#: The refinement's first point below SMALL_EPSILON (κ = 0.3 → 0.25 certified ~k_c/1.08 at ε = 0.1).
REFINE_FIRST_3D_SMALL = 1.06


#: Work budget of one 3-D tight calibration (and of one δ′ claim, :func:`proven_claim`), in grid elements
#: (:func:`distpriv.accounting.laplace_3d.grid_work`, a count: the outcome never depends on the machine's speed or
#: load). Measured (benchmarks/bench_laplace_3d.py, ~6–10 million elements per CPU second): the benchmark family's
#: calibrations spend 8–16 million at (1, 1e-3) and 5–62 million at (0.1, 1e-4) (one of four reaches the budget and
#: keeps its least certified scale, 23.4 against the coupling bound's 34.5); a reviewer's hard models (three pairs,
#: condition number 1e3: 27 million per coarse grid) stop at it in ≲ 7 s CPU where they took up to 191 s.
WORK_BUDGET_3D = 64_000_000
#: The coarse probe of :func:`_topup_laplace_3d` at the coupling bound's scaling / USEFUL_3D: unless the coarse grid
#: certifies the target there, the grid is not run further (it would gain less than this margin, or nothing).
USEFUL_3D = 1.05


def _budget_note(budget: l3d.WorkBudget, kept: str) -> str:
    return (f"3-D grid: work budget of {budget.limit:,} grid elements reached ({budget.grids} grids, "
            f"{budget.spent:,} elements); {kept}")


def _topup_laplace_3d(model: QueryModel, ps: list[tuple[Hashable, Hashable]], noise: NoiseLaw, epsilon: float,
                      delta: float, *, rtol: float) -> TopUp:
    """:func:`topup_laplace` with ``tight=True`` on a 3-D model, never above the coupling bound's scaling.

    1. the coupling bound's least scaling k₀ (``tight=False``, ~0.1–0.7 s);
    2. a probe at k₀/:data:`USEFUL_3D` on the coarse grid: unless it certifies the target there, the coupling bound's
       k₀ is kept (the grid would gain less than the margin, or cannot resolve the loss: the reviewer's ε = 0.1,
       δ = 1e-8 models spent 20–31 s CPU for no gain);
    3. the coarse search below the probe on :data:`COARSE_3D`, then the refinement on :data:`FINE_3D`
       (:data:`COARSE_3D_SMALL`, :data:`FINE_3D_SMALL` below ε = :data:`SMALL_EPSILON`;
       :func:`distpriv.accounting.laplace_3d.resolution_3d`), each final profile recomputed in decision mode
       (:func:`_final`'s ``decide``).

    Steps 2–3 share a :class:`~distpriv.accounting.laplace_3d.WorkBudget` of :data:`WORK_BUDGET_3D` grid elements
    (deterministic); once it is spent no further grid is computed, and the least scaling certified so far stands
    (k₀ if none). Every accepted scaling is certified by the profile at it; :attr:`TopUp.note` says when the budget
    or the probe decided the result.
    """
    plain = _topup_laplace(model, ps, noise, epsilon, delta, rtol=rtol, tight=False)
    small = epsilon < SMALL_EPSILON
    with l3d.work_budget(WORK_BUDGET_3D) as budget:
        with l3d.resolution_3d(COARSE_3D_SMALL if small else COARSE_3D):
            kp = plain.factor / USEFUL_3D
            probe = proven_delta(model, ps, noise.scaled(kp), epsilon, rtol=rtol, target=delta, tight=True)
            if not probe.delta_upper <= delta:
                if budget.hit:
                    note = _budget_note(budget, "the coupling bound is kept")
                else:
                    note = (f"3-D grid: the coarse grid does not certify δ <= {delta:g} at the coupling bound's scale "
                            f"/ {USEFUL_3D:g}, so the coupling bound is kept")
                return replace(plain, steps=plain.steps + 1, note=note)
            first = _topup_laplace(model, ps, noise, epsilon, delta, rtol=rtol, tight=True, rel=COARSE_REL_3D,
                                   floor=GUIDE_FLOOR, decide=True, known=(kp, probe))
        with l3d.resolution_3d(FINE_3D_SMALL if small else FINE_3D):
            out = _refine_laplace(model, ps, noise, epsilon, delta, first, rtol=rtol, decide=True,
                                  start=REFINE_FIRST_3D_SMALL if small else REFINE_FIRST_3D,
                                  step=REFINE_STEP_3D, rel=REFINE_REL_3D, near=NEAR_3D)
    steps = plain.steps + 1 + out.steps
    if out.factor >= plain.factor:
        return replace(plain, steps=steps, note=_budget_note(budget, "the coupling bound is kept") if budget.hit else "")
    return replace(out, steps=steps, note=_budget_note(budget, "the least scale certified within it is kept")
                   if budget.hit else "")


#: Relative margin of :func:`proven_claim`'s rechecks: the claim c is raised to at least (1 + CLAIM_MARGIN)× the upper
#: end it rechecks, at most CLAIM_ROUNDS times (the decision-mode grid's shorter window adds ~TAIL_SHARE = 1e-4).
CLAIM_MARGIN = 1e-3
CLAIM_ROUNDS = 4


def proven_claim(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, epsilon: float, *,
                 tight: bool, rtol: float = 1e-2) -> tuple[Profile, float, str]:
    """(profile, claimed δ′, note) of a Laplace release at its own scale without a δ target
    (:func:`distpriv.mechanisms.exact.account_laplace`).

    Off the 3-D grid the claim is the profile's upper end. With it (``tight``, 3-D, some pair on the coupling
    bound, :func:`~distpriv.accounting.release.grid_applies`), two certified upper ends differ: the no-target one
    (a window of :data:`~distpriv.accounting.laplace_3d.LAPLACE_REACH` Laplace scales) and the engine's decision at a
    target c (:func:`~distpriv.accounting.release.proven_delta` with ``target=c``, a window of
    :func:`~distpriv.accounting.laplace_3d.reach_for` (c) scales, whose left-out mass ~1e-4 c is added). The claim is
    the least c of c₀ = the no-target upper end, c_{i+1} = max(c_i, u_i)·(1 + :data:`CLAIM_MARGIN`) (u_i the decision's
    upper end at c_i) that the decision certifies (u_i <= c_i): so re-running the engine with the claim as target
    proves it. Both runs share a :data:`WORK_BUDGET_3D` budget; if no c is certified within
    :data:`CLAIM_ROUNDS` rounds, the coupling bound's δ′ (``tight=False``, which its own decision certifies) is
    claimed. Every value claimed is a certified upper end of δ(ε).
    """
    ps = [(a, b) for a, b in pairs]
    if not (tight and gaussian_view(model).dim == 3 and grid_applies(model, ps, noise)):
        prof = proven_delta(model, ps, noise, epsilon, rtol=rtol, tight=tight)
        return prof, prof.delta_upper, ""
    loose = proven_delta(model, ps, noise, epsilon, rtol=rtol, tight=False)
    with l3d.work_budget(WORK_BUDGET_3D) as budget:
        prof = proven_delta(model, ps, noise, epsilon, rtol=rtol, tight=True)
        c = prof.delta_upper
        for _ in range(CLAIM_ROUNDS):
            if c >= loose.delta_upper:
                break
            chk = proven_delta(model, ps, noise, epsilon, rtol=rtol, target=c, tight=True)
            if chk.delta_upper <= c:
                note = _budget_note(budget, "the brackets computed within it are claimed") if budget.hit else ""
                return prof, c, note
            c = max(c, chk.delta_upper) * (1.0 + CLAIM_MARGIN)
    why = (_budget_note(budget, "the coupling bound's δ′ is claimed") if budget.hit else
           "3-D grid: its δ′ is not below the coupling bound's once rechecked in decision mode; the coupling bound's "
           "δ′ is claimed")
    return loose, loose.delta_upper, why


def _refine_laplace(model: QueryModel, ps: list[tuple[Hashable, Hashable]], noise: NoiseLaw, epsilon: float,
                    delta: float, first: TopUp, *, rtol: float, decide: bool = False, start: float = REFINE_FIRST,
                    step: float = REFINE_STEP, rel: float = REFINE_REL, near: float = 0.0) -> TopUp:
    """Lower the coarse phase's certified scaling k_c where the finer grids certify less noise (issue 25).

    The coarse grid certifies k_c; a finer grid's least certified scaling lies between the true least and k_c
    (a finer grid's bracket is tighter), typically k_c/1.03 on the auditor's models at ε = 1 and k_c/1.2 at
    ε = 0.1. Tries k_c/``start``, then steps down by ``step``, its square, ... while it certifies, then bisects
    between the last failure and the last success to ``rel`` (defaults :data:`REFINE_FIRST`, :data:`REFINE_STEP`,
    :data:`REFINE_REL`; the 3-D schedule's own in :func:`_topup_laplace_3d`). ``near`` > 0: a certified point whose
    upper end of δ is already at least ``near`` · ``delta`` ends the search (δ rises steeply below it). Every
    accepted scaling is certified by the profile computed at it.
    """
    kc = first.factor

    def ok(k: float) -> tuple[bool, Profile]:
        p = proven_delta(model, ps, noise.scaled(k), epsilon, rtol=rtol, target=delta, tight=True)
        return p.delta_upper <= delta, p

    hi, best = kc, first.after
    x, steps = kc / start, 0
    for _ in range(8):
        good, prof = ok(x)
        steps += 1
        if not good:
            break
        hi, best = x, prof
        if near > 0 and prof.delta_upper >= near * delta:
            x = hi  # certified with δ already near the target: the least certified scaling is close below
            break
        x /= step
        step *= step  # galloping: a coarse scale far above the fine grid's least (small ε) costs few steps
    else:
        x = hi  # still certifying after 8 galloping steps: stop there
    if x < hi:
        k, after, more = _search(ok, x, 0.0, value=lambda p: _bisect_guide(p, delta, GUIDE_FLOOR), goal=delta,
                                 rel=rel, known=(hi, best))
        steps += more
    else:
        k, after = hi, best
    if k >= kc:
        return replace(first, steps=first.steps + steps)
    final = noise.scaled(k)
    return TopUp(final, k, 0.0, first.before, _final(model, ps, final, epsilon, rtol, after, delta, True, decide),
                 first.steps + steps)


def _topup_laplace(model: QueryModel, ps: list[tuple[Hashable, Hashable]], noise: NoiseLaw, epsilon: float,
                   delta: float, *, rtol: float, tight: bool, rel: float = 2e-3, floor: float = 0.0,
                   decide: bool = False, known: tuple[float, Profile] | None = None) -> TopUp:
    """:func:`topup_laplace` at the grid resolution in force (:func:`distpriv.accounting.laplace_nd.resolution`).
    ``known``: a scaling already certified (with its profile; the 3-D probe of :func:`_topup_laplace_3d`): the search
    starts below it and never returns more."""
    cap = delta * (1.0 + SLACK)
    before = proven_delta(model, ps, noise, epsilon, rtol=rtol, target=cap, tight=tight)

    def ok(k: float) -> tuple[bool, Profile]:
        p = proven_delta(model, ps, noise.scaled(k), epsilon, rtol=rtol, target=delta, tight=tight)
        return p.delta_upper <= delta, p

    # With the grid, δ falls from above the target to ~0 (the 1e-17 of the window's tails) within a few % of the
    # scale (a bounded privacy loss), so the search's log-linear interpolation only creeps from one end (δ = 1e-6:
    # 20 steps of 2 %): the tight search bisects instead (``floor`` > 0: its guide value is inf at failing points,
    # which turns interpolation off, and floor · δ at verified ones, so it runs until the bracket is narrow).
    guide = (lambda p: _bisect_guide(p, delta, floor)) if floor > 0 else _upper

    if before.delta_upper <= cap:
        if not (tight and grid_applies(model, ps, noise)):
            return TopUp(noise, 1.0, 0.0, before, before, 1)
        top = known if known is not None and known[0] < 1.0 else (1.0, before)
        k, after, steps = _search(ok, DOWN_GUESS * top[0], 0.0, value=guide, goal=delta, known=top, rel=rel)
        if k >= 1.0:
            return TopUp(noise, 1.0, 0.0, before, before, steps + 1)
        final = noise.scaled(k)
        return TopUp(final, k, 0.0, before, _final(model, ps, final, epsilon, rtol, after, delta, tight, decide),
                     steps + 1)
    # A pure claim (ε, 0) implies (ε, δ) for every δ, so the δ calibration never needs more noise than the
    # pure one (issue 25): where a pure ε exists (translations, products) its least scaling k_pure is a
    # verified upper end of the search, which then only shrinks below it.
    pure = topup_pure(model, ps, noise, epsilon)
    # The feasibility check at scale 1e6 is needed only when no verified pure scaling <= 1e6 already
    # proves that a finite top-up exists (issue 26: one profile fewer, the same claims).
    checks = 1  # profiles evaluated outside the search: before, and far when needed
    if pure is None or pure.factor > 1e6:
        checks = 2
        far = proven_delta(model, ps, noise.scaled(1e6), epsilon, rtol=rtol, target=delta, tight=tight)
        if far.delta_upper > delta:
            raise AssumptionError(f"noise: scaling the Laplace noise cannot reach δ = {delta:g} (the output laws "
                                  "differ on directions that carry no noise; "
                                  f"proven δ stays {far.delta_upper:.3g})")

    guess = 1.25 if pure is None else pure.factor
    if known is not None and known[0] < guess:
        guess = max(DOWN_GUESS * known[0], 0.5 * (1.0 + known[0]))
    k, after, steps = _search(ok, guess, 1.0, value=guide, goal=delta, bad_value=guide(before), rel=rel, known=known)
    if pure is not None:
        steps += pure.steps
        if pure.factor < k:  # the δ bracket could not be decided at k_pure (its widening): the pure claim stands
            return TopUp(pure.noise, pure.factor, 0.0, before,
                         _final(model, ps, pure.noise, epsilon, rtol, pure.after, delta, tight, decide),
                         steps + checks)
    return TopUp(noise.scaled(k), k, 0.0, before, _final(model, ps, noise.scaled(k), epsilon, rtol, after, delta, tight,
                                                       decide), steps + checks)


def topup_pure(model: QueryModel, pairs: Iterable[Sequence[Hashable]], noise: NoiseLaw, epsilon: float) -> TopUp | None:
    """Least scaling k >= 1 with proven pure ε <= ``epsilon`` (translations and products), else ``None``."""
    ps = [(a, b) for a, b in pairs]
    first = pure_epsilon(model, ps, noise)
    before = Profile(epsilon, 0.0 if first.epsilon_upper <= epsilon * (1 + SLACK) else 1.0, 0.0, first.method, first.pair,
                     {"pure_epsilon": first.epsilon_upper}, pure_epsilon=first.epsilon_upper)
    if first.epsilon_upper <= epsilon * (1 + SLACK):
        return TopUp(noise, 1.0, 0.0, before, before, 1)
    if not math.isfinite(first.epsilon_upper):
        return None

    def ok(k: float) -> tuple[bool, Profile]:
        e = pure_epsilon(model, ps, noise.scaled(k))
        return e.epsilon_upper <= epsilon, Profile(epsilon, 0.0, 0.0, e.method, e.pair, {"pure_epsilon": e.epsilon_upper},
                                                   pure_epsilon=e.epsilon_upper)

    k, after, steps = _search(ok, 1.25, 1.0, value=_pure, goal=epsilon,
                              rel=1e-4, tight=2e-4)
    return TopUp(noise.scaled(k), k, 0.0, before, after, steps + 1)


#: The verified monotone search (public name, used by :mod:`distpriv.mechanisms.empirical`).
search = _search

