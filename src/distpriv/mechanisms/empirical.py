"""Accounting of calibrated mechanisms on an :class:`~distpriv.EmpiricalModel`: the samples' own law.

The papers' mechanisms assume translation (ExpM, DirM) or Gaussian f_θ (EigM, DauM); samples
rarely satisfy either (Poisson counts, lognormal values). With ``claim_scope="samples"`` (the
default of :class:`~distpriv.EmpiricalModel` in the research API) :func:`distpriv.calibrate`
takes f_θ to be the empirical law of the samples and computes what the mechanism's output
provably gives under it (:mod:`distpriv.accounting.empirical`: exact for 1-D Laplace noise,
certified quadrature for 1-D Gaussian noise, the coupling bound in several dimensions):

* Laplace noise, pure claim (δ = 0): the proven pure ε; when it exceeds ε the scale is topped up
  (scaling a Laplace scale by k >= 1 is post-processing) until it meets ε; when no pure ε exists
  (samples differ on directions without noise) the call is refused with
  :class:`~distpriv.AssumptionError`;
* any noise with a target δ > 0: the proven δ(ε); above the target the noise is scaled up, or for
  Gaussian noise that cannot reach it by scaling (rank-deficient noise while the samples differ on
  its null space: δ = 1 there) isotropic Gaussian noise is added; Laplace noise that cannot reach
  it is refused.

The guarantee then states that the claim covers the samples' law (and that this law is taken
as the truth), and its notes give the method, the proven value and the top-up.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from ..accounting.empirical import Accountant
from ..accounting.profile import Profile
from ..accounting.topup import SLACK, search
from ..errors import AssumptionError
from ..guarantees import Assumption, AssumptionCode, Calibration
from ..models import EmpiricalModel
from ..noise import NoiseLaw
from ._common import Inputs, as_gaussian, covariance_gap
from .base import Accounting, Mechanism

SAMPLES_LAW: str = Assumption("f_θ is the empirical law of the supplied samples (each sample equally likely): the claim "
                         "covers that finite law, not a population the samples were drawn from", AssumptionCode.SAMPLES_LAW)
SAMPLES_TRUTH: str = Assumption("the samples' law equals the true query distributions", AssumptionCode.MODEL_IS_TRUTH)
MIXTURE_PROFILE: str = Assumption("δ(ε) (or the pure ε) of the output mixtures Σ_i p_i Z(· − x_i) computed exactly or "
                             "bounded (distpriv.accounting.empirical); no translation or Gaussian assumption",
                             AssumptionCode.PROFILE_METHOD)


def _pure_profile(acct: Accountant, noise: NoiseLaw, epsilon: float) -> Profile:
    pe = acct.pure(noise)
    return Profile(epsilon, 0.0 if pe.epsilon_upper <= epsilon * (1 + SLACK) else 1.0, 0.0, pe.method, pe.pair,
                   {"pure_epsilon": pe.epsilon_upper}, pure_epsilon=pe.epsilon_upper)


def _pure_value(p: Profile) -> float:
    assert p.pure_epsilon is not None
    return p.pure_epsilon


def _delta_value(p: Profile) -> float:
    return p.delta_upper


def account_empirical(name: str, mech: Mechanism, inp: Inputs) -> Mechanism:
    """Verify ``mech`` on the samples' law, top its noise up (or refuse), and restate its guarantee."""
    model = inp.model
    assert isinstance(model, EmpiricalModel)
    acct = Accountant(model, inp.pairs)
    eps, target = inp.epsilon, inp.delta
    noise = mech.noise.accountable()
    notes = list(mech.guarantee.notes)
    gap = covariance_gap(as_gaussian(model), inp.pairs)
    if noise.pure and target == 0.0:
        before = _pure_profile(acct, noise, eps)
        pe0 = float(before.pure_epsilon or 0.0)
        if pe0 <= eps * (1 + SLACK):
            notes.append(f"accounting on the samples' law: pure ε <= {pe0:.6g} <= {eps:g} ({before.method})")
            acc = Accounting(gap, pure_epsilon=pe0)
        elif not math.isfinite(pe0):
            raise AssumptionError(
                f"model: {name} proves no pure ε on these samples (they differ on directions the Laplace noise does "
                "not reach); pass delta= for an (ε, δ) claim, or use the wasserstein mechanism")
        else:
            def ok(k: float) -> tuple[bool, Profile]:
                p = _pure_profile(acct, noise.scaled(k), eps)
                return float(p.pure_epsilon or 0.0) <= eps, p

            k, after, steps = search(ok, max(1.0 + 1e-6, pe0 / eps), 1.0, value=_pure_value, goal=eps,
                                     bad_value=pe0, rel=1e-4, tight=2e-4)
            noise = noise.scaled(k)
            _set_noise(mech, noise)
            pe1 = float(after.pure_epsilon or 0.0)
            notes.append(f"top-up: on the samples' law the papers' Laplace scale gives pure ε = {pe0:.6g} > {eps:g} "
                         f"(the samples are no translation of one another); scale multiplied by {k:.6g} "
                         f"(post-processing), now pure ε <= {pe1:.6g} ({after.method})")
            acc = Accounting(gap, topup_factor=k, pure_epsilon=pe1, topup_steps=steps)
        claimed = 0.0
    else:
        classic_kept = inp.calibration == Calibration.CLASSIC and eps >= 1.0 and noise.adds_gaussian
        before = acct.delta(noise, eps, target=None if classic_kept else target * (1 + SLACK))
        claimed = target
        if classic_kept:
            claimed = max(target, min(1.0, before.delta_upper))
            notes.append(f"classic rule at ε = {eps:g} on the samples' law: {before.describe()}; the papers' noise is "
                         f"kept and δ = {claimed:.3g} claimed")
            acc = Accounting(gap, delta_before_topup=before.delta_upper, profile=before)
        elif before.delta_upper <= target * (1 + SLACK):
            notes.append(f"accounting on the samples' law confirms the noise: {before.describe()} <= δ = {target:g}")
            acc = Accounting(gap, delta_before_topup=before.delta_upper, profile=before)
        else:
            noise, acc, note = _topup(name, acct, noise, eps, target, before, gap)
            _set_noise(mech, noise)
            notes.append(note)
    mech.guarantee = replace(mech.guarantee, delta=claimed, assumptions=(SAMPLES_LAW, SAMPLES_TRUTH, MIXTURE_PROFILE),
                             notes=tuple(notes))
    mech.set_accounting(acc)
    mech.details["accounted_on"] = "samples"
    return mech


def _topup(name: str, acct: Accountant, noise: NoiseLaw, eps: float, target: float, before: Profile,
           gap: float) -> tuple[NoiseLaw, Accounting, str]:
    """Least scaling (else isotropic Gaussian) of ``noise`` with proven δ(ε) <= target on the samples' law."""

    def ok_scale(k: float) -> tuple[bool, Profile]:
        p = acct.delta(noise.scaled(k), eps, target=target)
        return p.delta_upper <= target, p

    scalable = not noise.noiseless and ok_scale(1e6)[0]
    if scalable:
        k, after, steps = search(ok_scale, 1.25, 1.0, value=_delta_value, goal=target, bad_value=before.delta_upper)
        new = noise.scaled(k)
        what = f"noise scaled by {k:.6g}"
        acc = Accounting(gap, topup_factor=k, delta_before_topup=before.delta_upper, topup_steps=steps, profile=after)
    elif not noise.gaussian_family:
        raise AssumptionError(
            f"model: {name} cannot reach δ = {target:g} on these samples by scaling its Laplace noise (the samples "
            "differ on directions the noise does not reach); use a Gaussian mechanism or the wasserstein mechanism")
    else:
        cov = noise.gaussian_covariance
        var = max(float(np.trace(cov)) / noise.dim, 1e-300)
        spread = max(float(np.mean([np.var(acct.model.samples(x), axis=0).mean() for p in acct.pairs for x in p])),
                     1e-300)
        guess = max(var, spread)

        def ok_iso(t: float) -> tuple[bool, Profile]:
            p = acct.delta(noise.plus_isotropic(t), eps, target=target)
            return p.delta_upper <= target, p

        t, after, steps = search(ok_iso, guess, 0.0, value=_delta_value, goal=target)
        new = noise.plus_isotropic(t)
        what = f"isotropic Gaussian noise of variance {t:.6g} added (the noise left directions on which the samples differ)"
        acc = Accounting(gap, topup_isotropic=t, delta_before_topup=before.delta_upper, topup_steps=steps, profile=after)
    note = (f"top-up: on the samples' law the mechanism's noise gives δ({eps:g}) <= {before.delta_upper:.4g} > {target:g} "
            f"({before.method}); {what} (post-processing, so δ only decreases); now {after.describe()}")
    return new, acc, note


def _set_noise(mech: Mechanism, noise: NoiseLaw) -> None:
    def laplace(basis: NDArray[np.float64], scales: NDArray[np.float64]) -> None:
        mech.noise = noise
        mech.details["laplace_scale"] = float(scales[0]) if np.allclose(scales, scales[0]) else scales

    def gaussian(cov: NDArray[np.float64]) -> None:
        mech.noise = NoiseLaw.gaussian(noise.gaussian_covariance)
        for key in ("sigma", "sigma2"):
            if key in mech.details:
                mech.details[f"{key}_papers"] = mech.details[key]
                mech.details[key] = None  # see noise_covariance

    noise.match(gaussian=gaussian, laplace=laplace, none=lambda: None)


