"""Exact accounting of calibrated mechanisms under a Gaussian f_θ model: verify, top up, state it.

After a mechanism has built the paper's noise, the accounting :func:`accountant` picks computes what its
output provably gives under the model (:mod:`distpriv.accounting`) and:

* Gaussian noise (ExpM (G), DirM (G) on a :class:`~distpriv.GaussianModel`;
  EigM, DauM also on the Gaussian fit of an :class:`~distpriv.EmpiricalModel`):
  when the exact δ(ε) of some pair (either order) exceeds the target, the noise
  is topped up — its own shape scaled first, isotropic noise when that shape
  cannot reach the target — until the certified upper end is <= δ. Under the
  classic rule at ε >= 1 (where the papers' theorem proves nothing) the noise is
  kept, as in the papers' tables, and the claim is weakened to the proven δ.
* Laplace noise (ExpM (L), DirM (L) on a GaussianModel): the pure ε is exact for
  translations and products and the scale is topped up to meet ε; with a target
  δ > 0 the scale is topped up until the proven δ <= target; otherwise (no pure
  ε exists off products) the proven (ε, δ′) of the paper's scale is claimed, with
  an :class:`~distpriv.AssumptionWarning`.

Every guarantee then lists the assumptions the claim really uses (Gaussian f_θ,
model = truth) and notes the accounting method, its bracket and the top-up.

Inside :func:`noise_only` (a caller that uses the calibrated noise and never the
claim, e.g. the error columns of a paper reproduction) the one profile that decides
nothing about the noise — the classic rule's proven δ at ε >= 1 — is not computed:
the guarantee then claims only the trivially valid δ = 1 and says why.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import numpy as np

from ..accounting import laplace_common as lc
from ..accounting.laplace import complete_basis
from ..accounting.laplace_partial import partial_applies
from ..accounting.profile import Profile
from ..accounting.release import coupling_accounted, grid_applies, proven_delta, pure_epsilon
from ..accounting.topup import SLACK, proven_claim, topup_gaussian, topup_laplace, topup_pure
from ..calibration import _external_stacklevel as external_stacklevel
from ..errors import AssumptionError, AssumptionWarning
from ..guarantees import Calibration
from ..models import EmpiricalModel, GaussianModel
from ..noise import NoiseLaw
from ._common import GAUSSIAN, MODEL_IS_TRUTH, Inputs, as_gaussian, covariance_gap
from .base import Accounting, Mechanism
from .expected_value import tight_by_default
from .metadata import METADATA, names_where

GAUSSIAN_FIT = ("f_θ = N(μ̂_θ, Σ̂_θ), the Gaussian fit (sample mean and covariance) of the samples of each θ: "
                "Gaussianity and the fitted moments are assumed")
EXACT_PROFILE = ("δ(ε) computed exactly from the output laws N(μ_θ, Σ_θ + Σ_Z) of every pair in both orders "
                 "(distpriv.accounting; no equal-covariance assumption)")
#: Gaussian-noise mechanisms accounted exactly on a GaussianModel (ExpM (G), DirM (G), EigM, DauM).
GAUSSIAN_MODEL_NAMES = names_where(noise="gaussian", exact_gaussian_model=True)
#: Those also accounted exactly on the Gaussian fit of an EmpiricalModel.
FIT_NAMES = tuple(n for n in GAUSSIAN_MODEL_NAMES if METADATA[n].exact_gaussian_fit)
#: Laplace-noise mechanisms whose pure ε / δ is accounted exactly on a GaussianModel (ExpM (L), DirM (L)).
LAPLACE_MODEL_NAMES = names_where(noise="laplace", exact_gaussian_model=True)
#: Set by :func:`noise_only`: skip profiles whose only use is the value of a claim.
_NOISE_ONLY: ContextVar[bool] = ContextVar("distpriv_noise_only", default=False)
NOT_EVALUATED = ("classic rule at ε >= 1: the exact profile of the papers' noise was not evaluated (calibrated inside "
                 "distpriv.mechanisms.exact.noise_only(), for the noise alone); the claim is the trivially valid δ = 1")


@contextlib.contextmanager
def noise_only() -> Iterator[None]:
    """Within this block, the exact accounting computes only what decides the noise.

    The classic rule at ε >= 1 keeps the papers' noise whatever its δ, so its exact profile
    only sets the value claimed: it is skipped and the guarantee claims δ = 1 (trivially valid,
    with :data:`NOT_EVALUATED` in its notes). Every top-up decision is still made exactly, so the
    noise is the one the accounting gives outside the block.
    """
    token = _NOISE_ONLY.set(True)
    try:
        yield
    finally:
        _NOISE_ONLY.reset(token)


def accountant(name: str, mech: Mechanism, inp: Inputs) -> Callable[[Mechanism, Inputs], Mechanism] | None:
    """The exact accounting that verifies ``mech`` under the model (tops it up where needed and rewrites its
    guarantee): :func:`account_gaussian`, :func:`account_laplace`, or None when neither applies.

    Returns the function rather than calling it, so that :func:`distpriv.mechanisms.calibrate` calls the
    accounting itself (no dispatch frame between the registry and the accounting).
    """
    if name in GAUSSIAN_MODEL_NAMES and mech.noise.gaussian_family:
        if isinstance(inp.model, GaussianModel) or (name in FIT_NAMES and isinstance(inp.model, EmpiricalModel)):
            return account_gaussian
    if name in LAPLACE_MODEL_NAMES and mech.noise.pure and isinstance(inp.model, GaussianModel):
        return account_laplace
    return None


def _gap_note(gap: float, theorem: str) -> str:
    if gap <= 1e-12:
        return f"covariances are equal within every pair: {theorem} applies as stated, and the exact profile agrees"
    return (f"covariances differ across θ (max relative gap {gap:.3g}): {theorem} (which assumes translation / equal "
            "covariances) does not apply as stated; the claim rests on the exact profile of the output laws")


def account_gaussian(mech: Mechanism, inp: Inputs) -> Mechanism:
    """Exact verification / top-up of a Gaussian-noise mechanism (see module docstring)."""
    g = as_gaussian(inp.model)
    fitted = isinstance(inp.model, EmpiricalModel)
    noise = NoiseLaw.gaussian(mech.noise_covariance)
    gap = covariance_gap(g, inp.pairs)
    eps, target = inp.epsilon, inp.delta
    notes = list(mech.guarantee.notes)
    claimed = target
    prof: Profile | None
    if inp.calibration == Calibration.CLASSIC and eps >= 1.0 and _NOISE_ONLY.get():
        claimed = 1.0
        notes.append(NOT_EVALUATED)
        acc = Accounting(gap, topup_isotropic=0.0)
        prof = None
    elif inp.calibration == Calibration.CLASSIC and eps >= 1.0:
        # the value (not only the decision) is claimed: no decision mode, every ordered pair evaluated
        prof = proven_delta(g, inp.pairs, noise, eps, rtol=1e-2)
        if prof.delta_upper > target * (1 + SLACK):
            claimed = min(1.0, prof.delta_upper)
            notes.append(f"classic rule c = sqrt(2 ln(1.25/δ)) fails at ε = {eps:g}: the exact profile gives "
                         f"δ = {prof.delta_upper:.3g} > requested {target:g}; the papers' noise is kept and the claim "
                         "is weakened to the proven δ")
        else:
            notes.append(f"classic rule is unproven for ε >= 1; the exact profile confirms δ = {prof.delta_upper:.3g} "
                         f"<= {target:g}")
        acc = Accounting(gap, topup_isotropic=0.0, delta_before_topup=prof.delta_upper, profile=prof)
    else:
        tu = topup_gaussian(g, inp.pairs, noise, eps, target)
        prof = tu.after
        acc = Accounting(gap, topup_factor=tu.factor, topup_isotropic=tu.isotropic,
                         delta_before_topup=tu.before.reported_delta, topup_steps=tu.steps, profile=prof,
                         papers_noise_covariance=mech.noise_covariance.copy() if tu.applied else None)
        if tu.applied:
            mech.noise = NoiseLaw.gaussian(tu.noise.gaussian_covariance)
            notes.append(tu.describe(target))
            _rescale_details(mech.details, tu.factor, tu.isotropic)
    if prof is not None:
        notes.append(f"accounting: {prof.describe()}")
    notes.append(_gap_note(gap, mech.guarantee.theorem or "the papers' theorem"))
    assumptions = [GAUSSIAN_FIT if fitted else GAUSSIAN, MODEL_IS_TRUTH, EXACT_PROFILE]
    mech.guarantee = replace(mech.guarantee, delta=claimed, assumptions=tuple(assumptions), notes=tuple(notes))
    if "max_mahalanobis" in mech.details:
        from ._common import max_pair_distance

        mech.details["max_mahalanobis"] = max_pair_distance(g, inp.pairs, mech.noise_covariance)
        if gap > 1e-12:
            mech.details["exact_epsilon_at_delta"] = None  # the Mahalanobis formula needs equal covariances
    mech.set_accounting(acc)
    return mech


def _rescale_details(details: dict[str, Any], factor: float, isotropic: float) -> None:
    """Keep the papers' noise parameters in ``details`` consistent with a top-up (scaled, or marked stale)."""
    for key in ("sigma", "sigma2"):
        if key not in details:
            continue
        details[f"{key}_papers"] = details[key]
        if isotropic > 0:
            details[key] = None  # no longer a single scale: see noise_covariance
        else:
            details[key] = details[key] * (factor if key == "sigma" else factor * factor)


def account_laplace(mech: Mechanism, inp: Inputs) -> Mechanism:
    """Exact pure ε / proven δ of a Laplace mechanism on a GaussianModel, with scale top-up."""
    g = inp.model
    assert isinstance(g, GaussianModel) and mech.basis is not None and mech.scales is not None
    noise = mech.noise.accountable()
    eps, target = inp.epsilon, inp.delta
    gap = covariance_gap(g, inp.pairs)
    notes = list(mech.guarantee.notes)
    acc = Accounting(gap)
    pe = pure_epsilon(g, inp.pairs, noise, target=eps * (1 + SLACK))
    claimed_delta = 0.0
    theorem = mech.guarantee.theorem
    assumptions = [GAUSSIAN, MODEL_IS_TRUTH]
    tight = bool(mech.details.get("tight", False))  # the Laplace builders' ``tight`` option, resolved (issue 25)
    if gap <= 1e-12:
        assumptions.insert(1, "Σ_θi = Σ_θj for every pair, so f_θi is a translation of f_θj (Chen & Ohrimenko Sec. 5.1)")
    if pe.epsilon_upper <= eps * (1 + SLACK):
        notes.append(f"accounting: pure {pe.describe()} <= ε = {eps:g}")
        acc = Accounting(gap, pure_epsilon=pe.epsilon_upper)
    elif target > 0:
        used = noise
        try:
            tu = topup_laplace(g, inp.pairs, noise, eps, target, tight=tight)
        except AssumptionError as exc:
            if mech.basis.shape[1] >= g.dim:
                raise
            extra = complete_basis(mech.basis)
            wide = NoiseLaw.laplace(np.hstack([mech.basis, extra]),
                                    np.concatenate([mech.scales, np.full(extra.shape[1], float(mech.scales.max()))]))
            notes.append(f"{exc}; Laplace noise of scale {float(mech.scales.max()):.6g} added on the "
                         f"{extra.shape[1]} un-noised direction(s)")
            used = wide
            tu = topup_laplace(g, inp.pairs, wide, eps, target, tight=tight)
        notes.extend(_tight_note(g, inp, used, tight))
        if tu.note:  # the 3-D grid's work budget or early exit (issue 25)
            notes.append(tu.note)
        _set_laplace(mech, tu.noise)
        claimed_delta = target
        acc = Accounting(gap, topup_factor=tu.factor, delta_before_topup=tu.before.reported_delta, profile=tu.after)
        if tu.applied or tu.reduced:
            notes.append(tu.describe(target))
        if tu.reduced:  # below the papers' scale: the theorem no longer covers the noise, the certified grid does
            paper = theorem or "the papers' theorem"
            theorem = f"certified {g.dim}-D Gauss ⊛ Laplace profile, at a scale below {paper}'s"
        notes.append(f"accounting: {tu.after.describe()}")
    else:
        tp = topup_pure(g, inp.pairs, noise, eps)
        if tp is not None:
            _set_laplace(mech, tp.noise)
            before = pe.epsilon_upper if tp.before.pure_epsilon is None else tp.before.pure_epsilon
            after = eps if tp.after.pure_epsilon is None else tp.after.pure_epsilon
            acc = Accounting(gap, topup_factor=tp.factor, pure_epsilon=tp.after.pure_epsilon)
            notes.append(f"top-up: the paper's scale gives pure ε = {before:.6g} > {eps:g} under the model "
                         f"(unequal covariances); Laplace scale multiplied by {tp.factor:.6g} (post-processing), "
                         f"now pure ε <= {after:.6g}")
            notes.append(f"accounting: {pure_epsilon(g, inp.pairs, tp.noise).describe()}")
        else:
            notes.extend(_tight_note(g, inp, noise, tight))
            prof, claimed, grid_note = proven_claim(g, inp.pairs, noise, eps, tight=tight)  # issue 25: = the engine's
            if grid_note:
                notes.append(grid_note)
            if claimed >= 1.0:
                raise AssumptionError(
                    f"model: {mech.name} proves no (ε, δ) with δ < 1 here (the output laws differ where the noise "
                    f"does not reach: {prof.method}); pass delta= to top the noise up, or use another mechanism")
            claimed_delta = claimed
            msg = (f"{mech.name}: the covariances differ across θ (max relative gap {gap:.3g}) and are not diagonal in "
                   f"the noise basis, so no pure ε is proven; claiming the proven (ε, δ′) = ({eps:g}, "
                   f"{claimed_delta:.3g}) instead of (ε, 0) — pass delta= to top the noise up to a target δ")
            warnings.warn(msg, AssumptionWarning, stacklevel=external_stacklevel())
            notes.append(msg)
            notes.append(f"accounting: {prof.describe()}")
            acc = Accounting(gap, profile=prof)
    mech.guarantee = replace(mech.guarantee, delta=claimed_delta, assumptions=tuple(assumptions), notes=tuple(notes),
                             theorem=theorem)
    mech.set_accounting(acc)
    return mech


def _tight_note(g: GaussianModel, inp: Inputs, noise: NoiseLaw, tight: bool) -> list[str]:
    """The note stating the resolved ``tight`` option where it changes the accounting: a pair of Ψ is accounted by
    the Gaussian-coupling bound and a certified grid covers it (2-D/3-D,
    :func:`~distpriv.accounting.release.grid_applies`), or, from 4-D on, the common-Gaussian-factor bound
    (:mod:`distpriv.accounting.laplace_common`: a full-rank noise basis) does."""
    if grid_applies(g, inp.pairs, noise):
        on, off, gain, cost = ("certified on a Gauss ⊛ Laplace grid", "the faster Gaussian-coupling bound,",
                               "certifies it on a Gauss ⊛ Laplace grid", "more CPU")
    else:
        law = noise.accountable()
        partial = partial_applies(law.basis, g.dim)  # issue 25: noise on fewer directions (laplace_partial)
        if ((not partial and (g.dim < lc.MIN_DIM or not lc.common_applies(law.basis)))
                or not coupling_accounted(g, inp.pairs, law)):
            return []
        on, off, gain, cost = ("also bounded by the common-Gaussian-factor bound",
                               "the Gaussian-coupling bound alone, faster,",
                               "also uses the common-Gaussian-factor bound", "a few times the CPU")
        if partial:
            on, gain, cost = (on + " of the noised directions' conditional laws",
                              gain + " of the noised directions' conditional laws", "~20–35× the CPU")
    if tight:
        auto = f" (the default for a {g.dim}-D model)" if tight_by_default(g) else ""
        return [f"tight=True{auto}: δ {on} (tight=False: {off} with a larger δ or more noise)"]
    return [f"tight=False: δ from the Gaussian-coupling bound (tight=True {gain}: a smaller δ or less noise, at {cost})"]


def _set_laplace(mech: Mechanism, noise: NoiseLaw) -> None:
    assert noise.basis is not None and noise.scales is not None
    mech.noise = noise
    mech.details["laplace_scale"] = float(noise.scales[0]) if np.allclose(noise.scales, noise.scales[0]) else noise.scales
    if "directions" in mech.details:
        mech.details["directions"] = noise.basis


def noiseless_profile(inp: Inputs) -> Profile:
    """Exact δ(ε) of releasing F without noise (Chen & Ohrimenko Thm 5.4's question) under the Gaussian (fit) model."""
    g = as_gaussian(inp.model)
    return proven_delta(g, inp.pairs, NoiseLaw.none(g.dim), inp.epsilon, rtol=1e-3)


