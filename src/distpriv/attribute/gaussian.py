"""Attribute-Private Gaussian Mechanism (Zhang, Ohrimenko & Cummings, Section 4).

Algorithm 1 (APGM) for (ε, δ)-dataset attribute privacy, Theorem 1: if
F(X) | g_i(X_i) = a, θ ~ N(μ̄_a(θ), V(θ)) for every θ ∈ Θ and secret, then

    Δ_iF = max_θ max_{(s_a, s_b) ∈ Q} |E[F | s_a, θ] − E[F | s_b, θ]|              (Eq. 1)
    σ²   = max_{i ∈ C} max(0, (Δ_iF / D_max)² − min_θ Var(F | g_i(X_i), θ))

and F(X) + N(0, σ²) is (ε, δ)-dataset attribute private. The paper writes
(cΔ_iF/ε)² with c = sqrt(2 ln(1.25/δ)), i.e. D_max = ε/c (``calibration="classic"``);
the default ``"exact"`` uses D_max = D*(ε, δ) of the analytic Gaussian mechanism:
the output given s_a and s_b is a pair of Gaussians with a common variance
V + σ² whose means differ by at most Δ_iF, a 1-D shift of length
Δ_iF/sqrt(V + σ²) <= D_max (see :mod:`distpriv.calibration`).

Theorem 2 (accuracy): P(|Z| > α) <= β for α = σ Φ⁻¹(1 − β/2).

Vector-valued F (Section 4.1, last paragraph): Δ_iF is the largest ℓ2 distance
between conditional means and the noise is shaped by the conditional covariance:
Σ_Z makes Σ(θ, a) + Σ_Z ⪰ (Δ_iF/D_max)² I for every θ and secret, computed by
the Eigenvector Gaussian Mechanism's rule (Chen & Ohrimenko Alg. 2,
:func:`distpriv.mechanisms.gaussian_uncertainty.eigm`), which this module calls
on the distribution-privacy form of the instantiation (Chen & Ohrimenko Thm 3.1).

Three ways to describe Θ:

* :func:`apgm` — finite Θ with conditional moments per (θ, secret value)
  (analytic or :func:`moments_from_samples`);
* :func:`apgm_box` — Θ a box of model parameters, with a scalar moment model
  (e.g. :class:`ClassConditionalColumn` for a binary sensitive attribute);
* :class:`GaussianRecordModel` — Section 4.2: records ~ N(μ, V) with (μ, V) in a box,
  closed forms μ̄_a = μ_j + (V_ij/V_ii)(a − μ_i), V̄ = (V_jj − V_ij²/V_ii)/n.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from .._validation import (
    RngLike,
    as_rng,
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_real,
)
from ..accounting import gaussian_1d_delta
from ..accounting.release import NoiseLaw, proven_delta
from ..accounting.topup import SLACK, topup_gaussian
from ..calibration import check_calibration, classic_c, gaussian_delta, max_distance
from ..errors import InvalidParameterError, InvalidTypeError, UnknownLabelError
from ..guarantees import Calibration, Guarantee
from ..mechanisms._common import Inputs
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian_uncertainty import eigm, mahalanobis
from .optimize import Extremum, box_extremum
from .pufferfish import Interval, Lattice, PufferfishFramework, SecretPair, to_distribution_privacy

THEOREM = "Zhang, Ohrimenko & Cummings Alg 1, Thm 1 (accuracy Thm 2)"
GAUSSIAN_COND = "F(X) | g_i(X_i) = a, θ is Gaussian for every θ ∈ Θ, i ∈ C and secret value a (Zhang et al. Thm 1)"
EQUAL_VAR = "Var(F(X) | g_i(X_i) = a, θ) is the same for the two secrets of every pair, for each θ (Zhang et al. Thm 1)"
MOMENTS_TRUE = "the conditional means and variances used are the true ones for every θ ∈ Θ"
SAMPLED = "conditional moments estimated from samples of F(X) | secret, θ (sampling error not accounted for)"


# --------------------------------------------------------------------------- core arithmetic
def apgm_noise_variance(
    sensitivity: float, min_variance: float, epsilon: float, delta: float, calibration: str = "exact"
) -> float:
    """σ² = max(0, (Δ/D_max)² − V_min) (Algorithm 1; classic D_max = ε/c gives (cΔ/ε)² − V_min)."""
    d = check_positive(sensitivity, "sensitivity", allow_zero=True)
    v = check_positive(min_variance, "min_variance", allow_zero=True)
    dm = max_distance(epsilon, delta, calibration)
    return max(0.0, (d / dm) ** 2 - v)


def apgm_accuracy(noise_variance: float, beta: float) -> float:
    """Theorem 2: α = σ Φ⁻¹(1 − β/2), so P(|Z| > α) = β for Z ~ N(0, σ²)."""
    s2 = check_positive(noise_variance, "noise_variance", allow_zero=True)
    b = check_delta(beta, "beta")
    return math.sqrt(s2) * float(special.ndtri(1.0 - b / 2.0))


def gaussian_pair_delta(m1: float, v1: float, m2: float, v2: float, epsilon: float) -> float:
    """Exact δ(ε) = sup_S P1(S) − e^ε P2(S) for P1 = N(m1, v1), P2 = N(m2, v2) (1-D).

    The optimal S is {x : ln p1(x) − ln p2(x) > ε}, a quadratic inequality whose
    solution set is a union of at most two intervals with closed-form Gaussian
    probabilities. Delegates to :func:`distpriv.accounting.gaussian_1d_delta`
    (log space: accurate for large ε and tiny δ). Equal variances reduce to the
    analytic Gaussian profile (Balle & Wang 2018).
    """
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    return gaussian_1d_delta(check_real(m1, "m1"), check_positive(v1, "v1"), check_real(m2, "m2"),
                             check_positive(v2, "v2"), eps)


# --------------------------------------------------------------------------- mechanism type
@dataclass
class AttributeGaussianMechanism(Mechanism):
    """An APGM: a :class:`~distpriv.mechanisms.base.Mechanism` with attribute-privacy extras.

    ``details["attributes"]`` holds, per sensitive attribute i, Δ_iF, the minimum
    conditional variance, the noise variance it requires and where the extrema are.
    """

    def accuracy(self, beta: float) -> float:
        """(α, β)-accuracy (Theorem 2). Vector F: P(||Z||_2 > α) <= β with α² = λ_max(Σ_Z) χ²_m(1 − β)."""
        b = check_delta(beta, "beta")
        if self.kind == "none":
            return 0.0
        if self.dim == 1:
            return apgm_accuracy(float(self.noise_covariance[0, 0]), b)
        lam = float(np.linalg.eigvalsh(self.noise_covariance)[-1])
        return math.sqrt(max(lam, 0.0) * float(stats.chi2.ppf(1.0 - b, self.dim)))

    @property
    def noise_variance(self) -> float:
        """σ² of a scalar APGM (largest eigenvalue of Σ_Z for vector F)."""
        return float(np.linalg.eigvalsh(self.noise_covariance)[-1]) if self.dim else 0.0


def _make(dim: int, cov: NDArray[np.float64], guarantee: Guarantee, details: dict[str, Any]) -> AttributeGaussianMechanism:
    noisy = bool(np.any(np.linalg.eigvalsh(cov) > 0)) if dim else False
    kind: Literal["gaussian", "none"] = "gaussian" if noisy else "none"
    return AttributeGaussianMechanism(
        "apgm", "APGM", dim, kind, guarantee, covariance=cov if noisy else None, details=details
    )


def _guarantee(epsilon: float, delta: float, calibration: str, pairs: Sequence[SecretPair], assumptions: Sequence[str],
               notes: Sequence[str]) -> Guarantee:
    th = THEOREM if calibration == Calibration.CLASSIC else THEOREM + " with Balle & Wang (2018) Thm 8 (exact calibration)"
    return Guarantee(
        epsilon=epsilon,
        delta=delta,
        mechanism="apgm",
        framework="attribute-privacy",
        calibration=calibration,
        pairs=tuple((p.first.label, p.second.label) for p in pairs),
        assumptions=tuple(assumptions),
        theorem=th,
        notes=tuple(notes),
    )


def _classic_note(epsilon: float, calibration: str) -> list[str]:
    if calibration == Calibration.CLASSIC and epsilon >= 1:
        return [f"classic rule c = sqrt(2 ln(1.25/δ)) is only proved for ε < 1; ε = {epsilon:g} (paper's setting) is not covered"]
    return []


# --------------------------------------------------------------------------- finite Θ
def moments_from_samples(
    samples: Mapping[tuple[Hashable, str, float], ArrayLike],
) -> dict[tuple[Hashable, str, float], tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Sample mean and (unbiased) covariance of F(X) per (θ, attribute, secret value).

    ``samples[(θ, i, a)]`` is an (N,) or (N, m) array of F(X) drawn from θ conditioned on g_i(X_i) = a.
    """
    out: dict[tuple[Hashable, str, float], tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    for key, arr in samples.items():
        x = check_array(arr, f"samples[{key!r}]", ndim=(1, 2))
        if x.ndim == 1:
            x = x[:, None]
        if x.shape[0] < 2:
            raise InvalidParameterError(f"samples[{key!r}]: need at least 2 samples, got {x.shape[0]}")
        out[key] = (x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False)))
    return out


def apgm(
    framework: PufferfishFramework,
    moments: Callable[[Hashable, str, float], tuple[ArrayLike, ArrayLike] | None]
    | Mapping[tuple[Hashable, str, float], tuple[ArrayLike, ArrayLike]],
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
    from_samples: bool = False,
) -> AttributeGaussianMechanism:
    """Algorithm 1 for a finite Θ (``framework.thetas``) given the conditional moments of F.

    ``moments(θ, i, a) -> (mean, cov)`` of F(X) | g_i(X_i) = a, θ (``None`` when
    P(g_i = a | θ) = 0); interval secrets are expanded to the points of their
    codomain lattice (see :mod:`distpriv.attribute.pufferfish`). The instantiation
    is converted to distribution-privacy pairs (Chen & Ohrimenko Thm 3.1) and the
    noise for each sensitive attribute is computed by the EigM rule, which for a
    scalar F is exactly σ² = max(0, (Δ_iF/D_max)² − min V); Σ_Z is the elementwise
    maximum over i ∈ C in a common eigenbasis.
    """
    if not isinstance(framework, PufferfishFramework):
        raise InvalidTypeError("framework: expected a PufferfishFramework")
    if framework.kind != "dataset":
        raise InvalidParameterError("framework: APGM protects dataset attribute secrets g_i(X_i) (Definition 4)")
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    cal = check_calibration(calibration)
    model, pairs = to_distribution_privacy(framework, moments)
    m = model.dim
    labels = model.labels
    avg = sum(model.covariance(lab) for lab in labels) / len(labels)
    _, basis = np.linalg.eigh(avg)
    sig2 = np.zeros(m)
    per_attr: dict[str, dict[str, Any]] = {}
    notes = _classic_note(eps, cal)
    for attr in framework.sensitive:
        ps = tuple(p for p in pairs if p[0][1] == attr)
        if not ps:
            notes.append(f"attribute {attr!r}: no secret pair has positive probability under Θ; nothing to protect")
            continue
        mech = eigm(Inputs(model, ps, eps, dl, cal), eigenvectors=basis)
        s2 = np.asarray(mech.details["sigma2"], dtype=float)
        sig2 = np.maximum(sig2, s2)
        labs = sorted({x for p in ps for x in p}, key=str)
        vmin = min(float(np.linalg.eigvalsh(model.covariance(lab))[0]) for lab in labs)
        worst = max(ps, key=lambda p: float(np.linalg.norm(model.mean(p[0]) - model.mean(p[1]))))
        per_attr[attr] = {
            "sensitivity": float(mech.details["delta_e2"]),
            "min_conditional_variance": vmin,
            "target_variance": float(mech.details["target_eigenvalue"]),
            "noise_variance": float(s2.max()),
            "worst_pair": [list(map(str, worst[0])), list(map(str, worst[1]))],
        }
        notes.extend(n for n in mech.guarantee.notes if n not in notes)
    cov = (basis * sig2) @ basis.T
    gap = 0.0
    for a, b in pairs:
        va, vb = model.covariance(a), model.covariance(b)
        gap = max(gap, float(np.linalg.norm(va - vb, 2) / max(np.linalg.norm(va, 2), np.linalg.norm(vb, 2), 1e-300)))
    assumptions = [GAUSSIAN_COND, SAMPLED if from_samples else MOMENTS_TRUE,
                   "δ(ε) computed exactly from the output laws N(μ̄(θ, a), V(θ, a) + Σ_Z) of every θ and point pair, "
                   "both orders (distpriv.accounting; no equal-variance assumption)"]
    if gap > 1e-9:
        notes.append(f"conditional (co)variances differ across secrets (relative gap {gap:.3g}): Theorem 1's "
                     "equal-variance argument does not apply; the claim rests on the exact unequal-covariance profile")
    claimed = dl
    noise = NoiseLaw.gaussian(cov)
    if cal == Calibration.CLASSIC and eps >= 1:
        prof = proven_delta(model, pairs, noise, eps, rtol=1e-3)
        if prof.delta_upper > dl * (1 + SLACK):
            claimed = min(1.0, prof.delta_upper)
            notes.append(f"classic rule fails at ε = {eps:g}: the exact profile gives δ = {prof.delta_upper:.3g} > "
                         f"requested {dl:g}; Algorithm 1's noise is kept and the claim is weakened to the proven δ")
        else:
            notes.append(f"the exact profile confirms δ = {prof.delta_upper:.3g} <= {dl:g} for the classic noise")
    else:
        tu = topup_gaussian(model, pairs, noise, eps, dl)
        prof = tu.after
        if tu.applied:
            s0 = float(sig2.max(initial=0.0))
            cov = tu.noise.gaussian_covariance
            w_, v_ = np.linalg.eigh(cov)
            basis, sig2 = v_, np.clip(w_, 0.0, None)
            notes.append(tu.describe(dl) + f" (largest noise variance {s0:.6g} -> {float(sig2.max()):.6g})")
    notes.append(f"accounting: {prof.describe()}")
    dm = max_distance(eps, dl, cal, warn=False)
    worst_d = max(max(mahalanobis(model.mean(a) - model.mean(b), model.covariance(x) + cov) for x in (a, b))
                  for a, b in pairs)
    details = {
        "attributes": per_attr,
        "d_max": dm,
        "sigma2": sig2,
        "eigenvectors": basis,
        "max_mahalanobis": worst_d,
        "n_point_pairs": len(pairs),
    }
    details["accounting"] = prof.to_dict()
    if cal == Calibration.CLASSIC:
        details["c"] = classic_c(dl)
    return _make(m, cov, _guarantee(eps, claimed, cal, framework.pairs, assumptions, notes), details)


# --------------------------------------------------------------------------- Θ as a box
class ScalarMoments(Protocol):
    """Conditional mean and variance of a scalar F(X) given g_i(X_i) = a under parameters θ."""

    def mean(self, theta: Mapping[str, float], a: float) -> float: ...

    def variance(self, theta: Mapping[str, float], a: float) -> float: ...


def _secret_coord(pair_side: Any, codomain: Interval | Lattice | None) -> Interval | NDArray[np.float64]:
    pts = pair_side.points(codomain)
    if pts is not None:
        return pts
    iv = pair_side.values
    assert isinstance(iv, Interval)
    return iv


def _theta_coords(box: Mapping[str, Interval | float]) -> dict[str, Interval]:
    out: dict[str, Interval] = {}
    for k, v in box.items():
        if k in ("__a", "__b"):
            raise InvalidParameterError(f"box: parameter name {k!r} is reserved")
        out[k] = v if isinstance(v, Interval) else Interval.point(check_real(v, f"box[{k!r}]"))
    return out


def box_sensitivity(model: ScalarMoments, box: Mapping[str, Interval | float], pair: SecretPair,
                    codomain: Interval | Lattice | None = None) -> Extremum:
    """sup_{θ ∈ box} sup_{a ∈ U_a, b ∈ U_b} |E[F | a, θ] − E[F | b, θ]| (Eq. 1 for one pair)."""
    coords: dict[str, Any] = dict(_theta_coords(box))
    coords["__a"] = _secret_coord(pair.first, codomain)
    coords["__b"] = _secret_coord(pair.second, codomain)

    def f(x: dict[str, float]) -> float:
        return abs(model.mean(x, x["__a"]) - model.mean(x, x["__b"]))

    return box_extremum(f, coords, maximize=True)


def box_min_variance(model: ScalarMoments, box: Mapping[str, Interval | float], pair: SecretPair,
                     codomain: Interval | Lattice | None = None) -> Extremum:
    """inf_{θ ∈ box} inf over both secrets' values of Var(F | g_i(X_i) = a, θ)."""
    best: Extremum | None = None
    for side in (pair.first, pair.second):
        coords: dict[str, Any] = dict(_theta_coords(box))
        coords["__a"] = _secret_coord(side, codomain)
        e = box_extremum(lambda x: model.variance(x, x["__a"]), coords, maximize=False)
        if best is None or e.value < best.value:
            best = e
    assert best is not None
    return best


def box_variance_gap(model: ScalarMoments, box: Mapping[str, Interval | float], pair: SecretPair,
                     codomain: Interval | Lattice | None = None) -> Extremum:
    """sup |Var(F | a, θ) − Var(F | b, θ)|: 0 when Theorem 1's equal-variance assumption holds."""
    coords: dict[str, Any] = dict(_theta_coords(box))
    coords["__a"] = _secret_coord(pair.first, codomain)
    coords["__b"] = _secret_coord(pair.second, codomain)
    return box_extremum(lambda x: abs(model.variance(x, x["__a"]) - model.variance(x, x["__b"])), coords)


def apgm_box(
    framework: PufferfishFramework,
    models: Mapping[str, ScalarMoments],
    box: Mapping[str, Interval | float],
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
    extra_assumptions: Sequence[str] = (),
) -> AttributeGaussianMechanism:
    """Algorithm 1 with Θ a parameter box: Δ_iF and min Var computed by :func:`box_extremum`.

    ``models[i]`` gives E[F | g_i = a, θ] and Var(F | g_i = a, θ) for sensitive
    attribute i. Suprema over open ranges are taken on the closure and recorded as
    not attained (``details["attributes"][i]["sensitivity_attained"]``).
    """
    if not isinstance(framework, PufferfishFramework) or framework.kind != "dataset":
        raise InvalidTypeError("framework: expected a dataset-attribute-privacy PufferfishFramework (Definition 4)")
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    cal = check_calibration(calibration)
    dm = max_distance(eps, dl, cal, warn=False)
    notes = _classic_note(eps, cal)
    assumptions = [GAUSSIAN_COND, MOMENTS_TRUE, *extra_assumptions]
    sigma2 = 0.0
    per_attr: dict[str, dict[str, Any]] = {}
    gap_total = 0.0
    for attr in framework.sensitive:
        if attr not in models:
            raise UnknownLabelError(f"models: no moment model for sensitive attribute {attr!r}")
        cod = framework.codomain(attr)
        sens = [box_sensitivity(models[attr], box, p, cod) for p in framework.pairs_for(attr)]
        vars_ = [box_min_variance(models[attr], box, p, cod) for p in framework.pairs_for(attr)]
        gaps = [box_variance_gap(models[attr], box, p, cod) for p in framework.pairs_for(attr)]
        s = max(sens, key=lambda e: e.value)
        v = min(vars_, key=lambda e: e.value)
        gap = max(g.value for g in gaps)
        gap_total = max(gap_total, gap / max(v.value, 1e-300))
        s2 = max(0.0, (s.value / dm) ** 2 - v.value)
        sigma2 = max(sigma2, s2)
        per_attr[attr] = {
            "sensitivity": s.value,
            "sensitivity_attained": s.attained,
            "sensitivity_argmax": s.argument,
            "min_conditional_variance": v.value,
            "variance_attained": v.attained,
            "variance_argmin": v.argument,
            "variance_gap": gap,
            "target_variance": (s.value / dm) ** 2,
            "noise_variance": s2,
        }
        if not s.attained:
            notes.append(f"{attr}: Δ = {s.value:.6g} is a supremum over open ranges (approached, not attained)")
    details: dict[str, Any] = {"attributes": per_attr, "d_max": dm, "sigma2_algorithm1": sigma2}
    if gap_total > 1e-9:
        # Theorem 1's equal-variance shift argument does not apply, under either calibration: the
        # (ε, δ) claimed is only met if the exact δ of the unequal-variance pair is <= δ. The paper's
        # σ² is kept whenever it already meets that (e.g. the hospital rows), and raised otherwise.
        top = _heteroscedastic_sigma2(framework, models, box, eps, dl, sigma2)
        details["heteroscedastic_sigma2"] = top
        if top > sigma2:
            notes.append(
                f"Var(F | g = a, θ) depends on a (relative gap {gap_total:.3g}): Theorem 1's equal-variance assumption "
                f"fails; σ² raised from {sigma2:.6g} (Algorithm 1) to {top:.6g} so that the exact δ of the "
                "unequal-variance Gaussian pair is <= δ at the numerical supremum over Θ and Q"
            )
            sigma2 = top
        else:
            notes.append(
                f"Var(F | g = a, θ) depends on a (relative gap {gap_total:.3g}): Theorem 1's equal-variance assumption "
                "fails; Algorithm 1's σ² kept since the exact unequal-variance δ already meets δ"
            )
        assumptions.append("unequal conditional variances handled by the exact two-Gaussian δ, maximised "
                           "numerically over Θ (vertices + local search)")
    else:
        assumptions.insert(1, EQUAL_VAR)
    details["sigma2"] = sigma2
    claimed = dl
    if cal == Calibration.CLASSIC:
        details["c"] = classic_c(dl)
        if eps >= 1 and gap_total <= 1e-9:
            claimed = _classic_proven(per_attr, sigma2, eps, dl, notes, details)
    cov = np.array([[sigma2]])
    return _make(1, cov, _guarantee(eps, claimed, cal, framework.pairs, assumptions, notes), details)


def _classic_proven(per_attr: Mapping[str, Mapping[str, Any]], sigma2: float, eps: float, delta: float,
                    notes: list[str], details: dict[str, Any]) -> float:
    """The δ the exact profile proves for Algorithm 1's classic noise (equal variances), stated in ``notes``.

    Every pair's outputs are N(μ_a, V + σ²), N(μ_b, V + σ²) with |μ_a − μ_b| <= Δ and V >= V_min, a
    Gaussian shift of length <= D = Δ/sqrt(V_min + σ²); δ_D(ε) increases with D (Balle & Wang Lemma 9),
    so δ_D(ε) is proven. The classic rule claims δ without proof at ε >= 1.
    """
    dist = max((float(a["sensitivity"]) / math.sqrt(float(a["min_conditional_variance"]) + sigma2)
                if float(a["min_conditional_variance"]) + sigma2 > 0 else math.inf) for a in per_attr.values())
    proven = 1.0 if math.isinf(dist) else float(gaussian_delta(dist, eps))
    details["exact_delta_at_epsilon"] = proven
    if proven > delta * (1 + SLACK):
        notes.append(f"classic rule fails at ε = {eps:g}: the exact Gaussian profile of the released outputs gives "
                     f"δ = {proven:.3g} > requested {delta:g} (shift Δ/sqrt(V_min + σ²) = {dist:.4g}); "
                     "the claim is weakened to the proven δ")
        return min(1.0, proven)
    notes.append(f"the exact Gaussian profile confirms δ = {proven:.3g} <= {delta:g} for the classic noise")
    return delta


def _pair_delta_sym(ma: float, va: float, mb: float, vb: float, eps: float) -> float:
    if va <= 0 or vb <= 0:
        return 0.0 if (ma == mb and va == vb) else 1.0
    return max(gaussian_1d_delta(ma, va, mb, vb, eps), gaussian_1d_delta(mb, vb, ma, va, eps))


def worst_delta_box(models: Mapping[str, ScalarMoments], framework: PufferfishFramework,
                    box: Mapping[str, Interval | float], noise_variance: float, epsilon: float) -> Extremum:
    """sup over θ ∈ box and (a, b) ∈ Q of the exact δ(ε) of N(μ_a, V_a + σ²) vs N(μ_b, V_b + σ²) (both orders)."""
    best: Extremum | None = None
    for attr in framework.sensitive:
        cod = framework.codomain(attr)
        mdl = models[attr]
        for p in framework.pairs_for(attr):
            coords: dict[str, Any] = dict(_theta_coords(box))
            coords["__a"] = _secret_coord(p.first, cod)
            coords["__b"] = _secret_coord(p.second, cod)

            def f(x: dict[str, float], mdl: ScalarMoments = mdl) -> float:
                a, b = x["__a"], x["__b"]
                return _pair_delta_sym(mdl.mean(x, a), mdl.variance(x, a) + noise_variance,
                                       mdl.mean(x, b), mdl.variance(x, b) + noise_variance, epsilon)

            e = box_extremum(f, coords, maximize=True, polish=2)
            if best is None or e.value > best.value:
                best = e
    assert best is not None
    return best


def _heteroscedastic_sigma2(framework: PufferfishFramework, models: Mapping[str, ScalarMoments],
                            box: Mapping[str, Interval | float], eps: float, delta: float, start: float) -> float:
    """Least σ² >= ``start`` (bisection, relative 1e-6) with sup δ <= δ for unequal conditional variances."""
    def ok(s2: float) -> bool:
        return worst_delta_box(models, framework, box, s2, eps).value <= delta * (1 + 1e-9)

    if ok(start):
        return start
    lo, hi = start, max(start, 1e-12) * 2.0
    while not ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e300:  # pragma: no cover
            raise InvalidParameterError("Θ: no finite noise meets δ for unequal conditional variances")
    while hi - lo > 1e-6 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def exact_delta_box(
    mech: Mechanism,
    framework: PufferfishFramework,
    models: Mapping[str, ScalarMoments],
    box: Mapping[str, Interval | float],
) -> dict[str, Any]:
    """Largest exact δ at ε over the vertices of Θ and all secret point pairs (both orders).

    For each θ vertex and (a, b) the outputs are N(μ_a, V_a + σ²) and N(μ_b, V_b + σ²);
    δ is computed exactly by :func:`distpriv.accounting.gaussian_1d_delta` (also when V_a ≠ V_b, where
    Theorem 1 does not apply). A diagnostic at the vertices, not a supremum proof.
    """
    import itertools

    eps = mech.guarantee.epsilon
    s2 = float(mech.noise_covariance[0, 0])
    th = _theta_coords(box)
    names = list(th)
    ends = [[iv.low] if iv.is_point else [iv.low, iv.high] for iv in th.values()]
    worst: dict[str, Any] = {"delta": 0.0}
    for attr in framework.sensitive:
        cod = framework.codomain(attr)
        for p in framework.pairs_for(attr):
            pa = _secret_coord(p.first, cod)
            pb = _secret_coord(p.second, cod)
            av = pa if not isinstance(pa, Interval) else np.array([pa.low, pa.high])
            bv = pb if not isinstance(pb, Interval) else np.array([pb.low, pb.high])
            for combo in itertools.product(*ends):
                x = dict(zip(names, combo, strict=True))
                for a in av:
                    ma, va = models[attr].mean(x, a), models[attr].variance(x, a) + s2
                    for b in bv:
                        mb, vb = models[attr].mean(x, b), models[attr].variance(x, b) + s2
                        d = _pair_delta_sym(ma, va, mb, vb, eps)
                        if d > worst["delta"]:
                            worst = {"delta": d, "attribute": attr, "theta": x, "a": float(a), "b": float(b)}
    return worst


@dataclass(frozen=True)
class ClassConditionalColumn:
    """Average of one column when a binary sensitive attribute splits the records.

    Records have a binary attribute G (1 = the protected class, g = fraction of
    records with G = 1) and, given G = c, a column Y ~ N(m_c(θ), v_c(θ)) independently
    across records. Given g(X_G) = a exactly (an = count of class 1),

        F = (1/n) Σ_j Y_j ~ N(a m_1 + (1 − a) m_0, (a v_1 + (1 − a) v_0)/n),

    exactly Gaussian, with a mean linear in a. The slope m_1 − m_0 is the regression
    coefficient V_GY/V_GG of Section 4.2's formula μ̄_a = μ_Y + (V_GY/V_GG)(a − μ_G).
    ``class_means(θ) -> (m_1, m_0)`` and ``class_variances(θ) -> (v_1, v_0)``.
    """

    class_means: Callable[[Mapping[str, float]], tuple[float, float]]
    class_variances: Callable[[Mapping[str, float]], tuple[float, float]]
    n: int

    def mean(self, theta: Mapping[str, float], a: float) -> float:
        m1, m0 = self.class_means(theta)
        return a * m1 + (1.0 - a) * m0

    def variance(self, theta: Mapping[str, float], a: float) -> float:
        v1, v0 = self.class_variances(theta)
        return (a * v1 + (1.0 - a) * v0) / self.n


# --------------------------------------------------------------------------- Section 4.2
def _pkey(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


class GaussianRecordModel:
    """Section 4.2: n i.i.d. records X^j ~ N(μ, V) with (μ, V) ranging over a box Θ.

    With g_i(X_i) = mean of column i and F(X) = mean of columns J:

        F | g_i = a  ~  N(μ_J + (V_Ji / V_ii)(a − μ_i),  (V_JJ − V_Ji V_iJ / V_ii) / n),

    Gaussian with a variance that does not depend on a (Theorem 1 holds exactly).
    Sensitivity Δ_iF = sup_Θ ||V_Ji||/V_ii · sup_{(a,b) ∈ Q}|a − b| and the minimum
    conditional variance are computed over the box subject to the (i, J) block of V
    being PSD; other entries of V do not enter (Θ is assumed to hold a PSD completion).

    Parameters
    ----------
    attributes: column names.
    means: name -> μ_k (a number or an :class:`Interval`).
    covariances: (name, name) -> V_kl; the diagonal is required, missing
        off-diagonal entries are 0. Keys are unordered.
    n: number of records.
    """

    def __init__(self, attributes: Sequence[str], means: Mapping[str, Interval | float],
                 covariances: Mapping[tuple[str, str], Interval | float], n: int) -> None:
        attrs = tuple(attributes)
        if not attrs or len(set(attrs)) != len(attrs):
            raise InvalidParameterError("attributes: need distinct attribute names")
        self.attributes = attrs
        self.n = check_int(n, "n", minimum=1)
        self.mean_box: dict[str, Interval] = {}
        for a in attrs:
            if a not in means:
                raise InvalidParameterError(f"means: missing mean of attribute {a!r}")
            v = means[a]
            self.mean_box[a] = v if isinstance(v, Interval) else Interval.point(check_real(v, f"means[{a!r}]"))
        for a in means:
            self._check_attr(a, "means")
        self.cov_box: dict[tuple[str, str], Interval] = {}
        for (a, b), v in covariances.items():
            self._check_attr(a, "covariances")
            self._check_attr(b, "covariances")
            iv = v if isinstance(v, Interval) else Interval.point(check_real(v, f"covariances[{(a, b)!r}]"))
            if a == b and iv.high <= 0:
                raise InvalidParameterError(f"covariances: variance of {a!r} must be > 0, got range {iv}")
            self.cov_box[_pkey(a, b)] = iv
        for a in attrs:
            if (a, a) not in self.cov_box:
                raise InvalidParameterError(f"covariances: missing variance V[{a!r}, {a!r}]")
            if self.cov_box[(a, a)].low < 0:
                raise InvalidParameterError(f"covariances: variance V[{a!r}, {a!r}] range {self.cov_box[(a, a)]} must be >= 0")

    def _check_attr(self, a: str, name: str) -> None:
        if a not in self.attributes:
            raise UnknownLabelError(f"{name}: attribute {a!r} does not exist; attributes are {list(self.attributes)}")

    def cov_range(self, a: str, b: str) -> Interval:
        return self.cov_box.get(_pkey(a, b), Interval.point(0.0))

    # ----------------------------------------------------------------- closed forms
    def conditional_moments(self, mu: Mapping[str, float], cov: Mapping[tuple[str, str], float], secret: str,
                            query: Sequence[str], a: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(μ̄_a, V̄) of F = column means of ``query`` given g_i = mean of column ``secret`` = a."""
        def c(x: str, y: str) -> float:
            return float(cov.get(_pkey(x, y), 0.0))
        vii = c(secret, secret)
        if vii <= 0:
            raise InvalidParameterError(f"covariances: V[{secret!r}, {secret!r}] must be > 0 to condition on it")
        vji = np.array([c(j, secret) for j in query])
        vjj = np.array([[c(j, k) for k in query] for j in query])
        mean = np.array([mu[j] for j in query]) + vji / vii * (a - mu[secret])
        var = (vjj - np.outer(vji, vji) / vii) / self.n
        return mean, var

    def sample(self, mu: Mapping[str, float], cov: Mapping[tuple[str, str], float], size: int | None = None,
               rng: RngLike = None) -> NDArray[np.float64]:
        """Draw a dataset (n, m), or ``size`` datasets (size, n, m), with records ~ N(μ, V)."""
        m = len(self.attributes)
        mvec = np.array([mu[a] for a in self.attributes])
        vmat = np.array([[float(cov.get(_pkey(a, b), 0.0)) for b in self.attributes] for a in self.attributes])
        shape = (self.n,) if size is None else (check_int(size, "size", minimum=1), self.n)
        z = as_rng(rng).multivariate_normal(mvec, vmat, size=shape, method="eigh")
        return z.reshape(*shape, m)

    # ----------------------------------------------------------------- extrema over Θ
    def sensitivity(self, secret: str, query: Sequence[str], pair: SecretPair) -> Extremum:
        """Δ_iF for one pair: sup_Θ ||V_Ji||/V_ii × sup|a − b| (closed form for a scalar F)."""
        self._check_attr(secret, "secret")
        sep, sep_att = pair.separation(None)
        ratio = self._ratio(secret, list(query))
        return Extremum(ratio.value * sep, ratio.argument, ratio.attained and sep_att)

    def _ratio(self, i: str, query: list[str]) -> Extremum:
        for j in query:
            self._check_attr(j, "query")
        if len(query) == 1:
            j = query[0]
            if j == i:
                return Extremum(1.0, {}, True)
            vi, vj, cij = self.cov_range(i, i), self.cov_range(j, j), self.cov_range(i, j)
            cstar = max(abs(cij.low), abs(cij.high))
            cmin = 0.0 if cij.low <= 0 <= cij.high else min(abs(cij.low), abs(cij.high))
            if vj.high <= 0:
                raise InvalidParameterError(f"covariances: V[{j!r}, {j!r}] must allow a positive value")
            vstar = max(vi.low, cmin * cmin / vj.high)
            if vstar > vi.high or vstar <= 0:
                raise InvalidParameterError(f"Θ: no PSD (V_ii, V_jj, V_ij) block in the box for ({i!r}, {j!r})")
            cbound = math.sqrt(vstar * vj.high)
            cval = min(cstar, cbound)
            attained = (vstar > vi.low or vi.closed_low) and (
                (cval == cstar and (cij.closed_high if abs(cij.high) >= abs(cij.low) else cij.closed_low))
                or (cval < cstar and vj.closed_high)
            )
            return Extremum(cval / vstar, {f"V[{i},{i}]": vstar, f"V[{i},{j}]": cval, f"V[{j},{j}]": vj.high},
                            bool(attained))
        # Vector F: the sup over the PSD part of the box usually sits on the PSD boundary, which the
        # vertex + local search below misses (it under-estimates Δ). Use a closed-form upper bound from
        # the 2x2 constraints V_ij² <= V_ii V_jj: ||V_Ji||²/V_ii² <= Σ_j min(c_j²/V_ii², V_jj,max/V_ii),
        # decreasing in V_ii, hence largest at the least feasible V_ii.
        vi, vstar, terms = self._relaxation(i, query)
        val = math.sqrt(sum(min(c * c / (vstar * vstar), w / vstar) for c, w in terms) + (1.0 if i in query else 0.0))
        coords, build = self._block_coords(i, query)

        def f(x: dict[str, float]) -> float:
            blk = build(x)
            if blk is None:
                return float("nan")
            vii, vji, _ = blk
            return float(np.linalg.norm(vji) / vii)

        try:
            num = box_extremum(f, coords, maximize=True)
        except InvalidParameterError:
            return Extremum(val, {f"V[{i},{i}]": vstar}, False)
        return Extremum(max(val, num.value), num.argument, num.attained and num.value >= val * (1 - 1e-9))

    def _relaxation(self, i: str, query: list[str]) -> tuple[Interval, float, list[tuple[float, float]]]:
        """(range of V_ii, least V_ii with every 2x2 (i, j) block PSD, [(sup|V_ij|, sup V_jj)] for j ∈ J∖{i})."""
        vi = self.cov_range(i, i)
        vstar = vi.low
        terms: list[tuple[float, float]] = []
        for j in query:
            if j == i:
                continue
            vj, cij = self.cov_range(j, j), self.cov_range(i, j)
            if vj.high <= 0:
                raise InvalidParameterError(f"covariances: V[{j!r}, {j!r}] must allow a positive value")
            cmin = 0.0 if cij.low <= 0 <= cij.high else min(abs(cij.low), abs(cij.high))
            vstar = max(vstar, cmin * cmin / vj.high)
            terms.append((max(abs(cij.low), abs(cij.high)), vj.high))
        if vstar > vi.high or vstar <= 0:
            raise InvalidParameterError(f"Θ: no PSD covariance block with V[{i!r}, {i!r}] > 0 in the box for {i!r} and {query}")
        return vi, vstar, terms

    def _block_coords(self, i: str, query: list[str]) -> tuple[dict[str, Interval], Callable[[dict[str, float]], Any]]:
        cols = [i] + [j for j in query if j != i]
        coords: dict[str, Interval] = {}
        for x in range(len(cols)):
            for y in range(x, len(cols)):
                coords[f"V[{cols[x]},{cols[y]}]"] = self.cov_range(cols[x], cols[y])

        def build(p: dict[str, float]) -> tuple[float, NDArray[np.float64], NDArray[np.float64]] | None:
            k = len(cols)
            m = np.empty((k, k))
            for x in range(k):
                for y in range(x, k):
                    m[x, y] = m[y, x] = p[f"V[{cols[x]},{cols[y]}]"]
            if m[0, 0] <= 0 or np.linalg.eigvalsh(m)[0] < -1e-12 * max(1.0, float(np.abs(m).max())):
                return None
            idx = {c: t for t, c in enumerate(cols)}
            q = [idx[j] for j in query]
            return float(m[0, 0]), m[q, 0], m[np.ix_(q, q)]

        return coords, build

    def min_conditional_variance(self, secret: str, query: Sequence[str]) -> Extremum:
        """inf_Θ λ_min(V̄) with V̄ = (V_JJ − V_Ji V_iJ/V_ii)/n (closed form for a scalar F)."""
        q = list(query)
        self._check_attr(secret, "secret")
        if len(q) == 1 and q[0] == secret:
            return Extremum(0.0, {}, True)
        if len(q) == 1:
            j = q[0]
            vi, vj, cij = self.cov_range(secret, secret), self.cov_range(j, j), self.cov_range(secret, j)
            cstar = max(abs(cij.low), abs(cij.high))
            cmin = 0.0 if cij.low <= 0 <= cij.high else min(abs(cij.low), abs(cij.high))
            if vi.low * vj.low >= cmin * cmin and vi.low > 0:
                val = max(0.0, vj.low - min(cstar * cstar, vi.low * vj.low) / vi.low) / self.n
                arg = {f"V[{secret},{secret}]": vi.low, f"V[{j},{j}]": vj.low,
                       f"V[{secret},{j}]": math.copysign(min(cstar, math.sqrt(vi.low * vj.low)), 1.0)}
                return Extremum(val, arg, bool(vi.closed_low and vj.closed_low))
            if vi.high * vj.high < cmin * cmin:
                raise InvalidParameterError(f"Θ: no PSD (V_ii, V_jj, V_ij) block in the box for ({secret!r}, {j!r})")
            return Extremum(0.0, {}, True)  # a singular block (F determined by g) lies in the box
        # Vector F: a numerical search over the PSD part of the box over-estimates the infimum (the
        # minimiser sits on the PSD boundary). Use two sound lower bounds on λ_min(S), S = V_JJ − V_Ji V_iJ/V_ii:
        # (1) Gershgorin on S: S_jj >= the closed-form 1-D infimum, |S_jk| <= sup|V_jk| + sup|V_ij V_ik|/V_ii;
        # (2) λ_min(V_JJ) − ||V_Ji||²/V_ii, Gershgorin for λ_min(V_JJ), 2x2 PSD constraints for the rest.
        if secret in q:
            return Extremum(0.0, {}, True)  # the Schur complement has a zero row: F determines g
        _, vstar, terms = self._relaxation(secret, q)

        def csup(x: str, y: str) -> float:
            r = self.cov_range(x, y)
            return max(abs(r.low), abs(r.high))

        diag = [self.min_conditional_variance(secret, [j]).value * self.n for j in q]
        wh = [self.cov_range(j, j).high for j in q]
        b1 = min(diag[t] - sum(csup(j, k) + min(csup(secret, j) * csup(secret, k) / vstar, math.sqrt(wh[t] * wh[u]))
                               for u, k in enumerate(q) if u != t)
                 for t, j in enumerate(q))
        gersh = min(self.cov_range(j, j).low - sum(csup(j, k) for u, k in enumerate(q) if u != t) for t, j in enumerate(q))
        b2 = gersh - sum(min(c * c / vstar, w) for c, w in terms)
        bound = max(0.0, b1, b2) / self.n
        coords, build = self._block_coords(secret, q)

        def f(x: dict[str, float]) -> float:
            blk = build(x)
            if blk is None:
                return float("nan")
            vii, vji, vjj = blk
            return float(np.linalg.eigvalsh((vjj - np.outer(vji, vji) / vii) / self.n)[0])

        try:
            num = box_extremum(f, coords, maximize=False)
        except InvalidParameterError:
            return Extremum(bound, {}, False)
        return Extremum(min(bound, num.value), num.argument, num.attained and num.value <= bound * (1 + 1e-9) + 1e-300)

    def apgm(self, framework: PufferfishFramework, query: str | Sequence[str], *, epsilon: float, delta: float,
             calibration: str = "exact") -> AttributeGaussianMechanism:
        """Algorithm 1 for this model: σ² = max_i max(0, (Δ_iF/D_max)² − min_Θ λ_min(V̄)).

        Vector F gets isotropic noise σ² I, valid because V̄(θ) + σ² I ⪰ (Δ_iF/D_max)² I for every θ.
        """
        q = [query] if isinstance(query, str) else list(query)
        if not q:
            raise InvalidParameterError("query: need at least one column")
        eps = check_epsilon(epsilon)
        dl = check_delta(delta)
        cal = check_calibration(calibration)
        if framework.kind != "dataset":
            raise InvalidParameterError("framework: APGM protects dataset attribute secrets (Definition 4)")
        for a in framework.attributes:
            self._check_attr(a, "framework.attributes")
        dm = max_distance(eps, dl, cal, warn=False)
        notes = _classic_note(eps, cal)
        per: dict[str, dict[str, Any]] = {}
        sigma2 = 0.0
        for attr in framework.sensitive:
            sens = [self.sensitivity(attr, q, p) for p in framework.pairs_for(attr)]
            s = max(sens, key=lambda e: e.value)
            v = self.min_conditional_variance(attr, q)
            s2 = max(0.0, (s.value / dm) ** 2 - v.value)
            sigma2 = max(sigma2, s2)
            per[attr] = {"sensitivity": s.value, "sensitivity_attained": s.attained, "sensitivity_argmax": s.argument,
                         "min_conditional_variance": v.value, "variance_argmin": v.argument,
                         "target_variance": (s.value / dm) ** 2, "noise_variance": s2}
            if not s.attained:
                notes.append(f"{attr}: Δ = {s.value:.6g} is a supremum over open ranges (approached, not attained)")
        assumptions = ["records are i.i.d. N(μ, V) with (μ, V) in the stated box (Zhang et al. Sec. 4.2)",
                       "g_i and F are column means (linear), so F | g_i = a is Gaussian with a-independent variance"]
        k = len(q)
        details: dict[str, Any] = {"attributes": per, "d_max": dm, "sigma2": sigma2, "query": q}
        claimed = dl
        if cal == Calibration.CLASSIC:
            details["c"] = classic_c(dl)
            if eps >= 1:
                claimed = _classic_proven(per, sigma2, eps, dl, notes, details)
        return _make(k, sigma2 * np.eye(k), _guarantee(eps, claimed, cal, framework.pairs, assumptions, notes), details)


__all__ = [
    "AttributeGaussianMechanism",
    "ClassConditionalColumn",
    "GaussianRecordModel",
    "ScalarMoments",
    "apgm",
    "apgm_accuracy",
    "apgm_box",
    "apgm_noise_variance",
    "box_min_variance",
    "box_sensitivity",
    "box_variance_gap",
    "exact_delta_box",
    "worst_delta_box",
    "gaussian_pair_delta",
    "moments_from_samples",
]
