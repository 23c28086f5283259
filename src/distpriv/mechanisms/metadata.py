"""What each central mechanism is, in one table: the single source of mechanism metadata.

Every list that used to restate a property of the mechanisms (which ones need δ, which add Gaussian
noise, which assumptions release selection must test, the papers' table labels, which are accounted
exactly on the Gaussian fit of an empirical model) reads :data:`METADATA` (or :func:`info`).
The keyword options of a mechanism come from its builder's signature
(:func:`distpriv.mechanisms.registry.options_of`), so they cannot drift from the code either.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from .._validation import check_choice

NoiseFamily = Literal["laplace", "gaussian", "none"]
#: The differential-privacy baselines (Chen & Ohrimenko Sec. 6.2): record-level DP, group DP with k = n.
Baseline = Literal["dp", "groupdp"]


@dataclass(frozen=True)
class MechanismInfo:
    """Metadata of one central mechanism (or of the noiseless release of Chen & Ohrimenko Thm 5.4).

    Attributes
    ----------
    name:
        Registry name (``calibrate(name, ...)``).
    label:
        The papers' table label (Chen & Ohrimenko Tables 2-4; Zhang et al. for the baselines).
    noise:
        Noise family added to F(Data): ``"laplace"``, ``"gaussian"`` or ``"none"`` (Thm 5.4).
    needs_delta:
        True iff δ in (0, 1) is required (Gaussian noise, and Approximate Wasserstein's (W, δ)-closeness).
    needs_pairs:
        True iff Ψ is required (False for the DP / group-DP baselines).
    assumptions:
        Keys of the model assumptions release selection tests before using it
        (``"gaussian"``, ``"translation"``, ``"bounded"``; see :mod:`distpriv.release.selection`).
    exact_gaussian_fit:
        True iff its δ is computed exactly from the output laws of the Gaussian fit of an empirical
        model (:mod:`distpriv.mechanisms.exact`), a cost that grows quickly with the dimension.
    exact_gaussian_model:
        True iff its claim is checked (and its noise topped up) against the exact profile of the output
        laws on a :class:`~distpriv.GaussianModel` (:mod:`distpriv.mechanisms.exact`): ExpM, DirM, EigM, DauM.
    baseline:
        ``"dp"`` (record-level DP: no guarantee for a property of the data) or ``"groupdp"`` (group DP,
        distribution privacy for k >= n) for the DP baselines; ``None`` for the distribution-privacy mechanisms.
    automatic:
        True iff release selection evaluates it in its automatic choice (``--mechanism auto``); OptM is
        evaluated only on request (``--mechanism optm``: its solver costs ~1 s to import).
    samples_law:
        True iff on an :class:`~distpriv.EmpiricalModel` with ``claim_scope="samples"`` its claim is accounted on
        the samples' own law (:mod:`distpriv.mechanisms.empirical`): ExpM, DirM, EigM, DauM, OptM (the Wasserstein
        mechanisms already hold on that law; the DP baselines make record-level claims).
    """

    name: str
    label: str
    noise: NoiseFamily
    needs_delta: bool
    needs_pairs: bool
    assumptions: tuple[str, ...]
    exact_gaussian_fit: bool = False
    exact_gaussian_model: bool = False
    baseline: Baseline | None = None
    automatic: bool = True
    samples_law: bool = False


def _m(name: str, label: str, noise: NoiseFamily, needs_delta: bool, needs_pairs: bool,
       assumptions: tuple[str, ...] = (), exact_gaussian_fit: bool = False, *, exact_gaussian_model: bool = False,
       baseline: Baseline | None = None, samples_law: bool = False) -> MechanismInfo:
    return MechanismInfo(name, label, noise, needs_delta, needs_pairs, assumptions, exact_gaussian_fit,
                         exact_gaussian_model or exact_gaussian_fit, baseline, samples_law=samples_law)


#: The calibratable central mechanisms, in registry order.
METADATA: dict[str, MechanismInfo] = {m.name: m for m in (
    _m("wasserstein", "Wasserstein", "laplace", False, True),
    _m("approx-wasserstein", "Approx. Wasserstein", "laplace", True, True),
    _m("expm-laplace", "ExpM (L)", "laplace", False, True, ("translation",), exact_gaussian_model=True, samples_law=True),
    _m("expm-gauss", "ExpM (G)", "gaussian", True, True, ("translation",), exact_gaussian_model=True, samples_law=True),
    _m("dirm-laplace", "DirM (L)", "laplace", False, True, ("translation",), exact_gaussian_model=True, samples_law=True),
    _m("dirm-gauss", "DirM (G)", "gaussian", True, True, ("translation",), exact_gaussian_model=True, samples_law=True),
    _m("eigm", "EigM (G)", "gaussian", True, True, ("gaussian",), exact_gaussian_fit=True, samples_law=True),
    _m("daum", "DauM (G)", "gaussian", True, True, ("gaussian",), exact_gaussian_fit=True, samples_law=True),
    # OptM accounts itself exactly on the Gaussian (fit) model inside its builder (mechanisms/optm.py)
    replace(_m("optm", "OptM (G)", "gaussian", True, True, ("gaussian",), samples_law=True), automatic=False),
    _m("groupdp-laplace", "GDP (L)", "laplace", False, False, ("bounded",), baseline="groupdp"),
    _m("groupdp-gauss", "GDP (G)", "gaussian", True, False, ("bounded",), baseline="groupdp"),
    _m("dp-laplace", "DP (L)", "laplace", False, False, baseline="dp"),
    _m("dp-gauss", "DP (G)", "gaussian", True, False, baseline="dp"),
)}

#: Releasing F(Data) without noise (Chen & Ohrimenko Thm 5.4): a release candidate, not a calibrate() name.
NOISELESS = _m("none", "None (Thm 5.4)", "none", True, True, ("gaussian",), exact_gaussian_fit=True)

#: Release candidates: the noiseless release first, then every mechanism.
CANDIDATES: dict[str, MechanismInfo] = {NOISELESS.name: NOISELESS, **METADATA}

#: The candidates of release selection's automatic choice (``--mechanism auto``), in order.
AUTOMATIC: tuple[str, ...] = tuple(name for name, m in CANDIDATES.items() if m.automatic)


def info(name: str) -> MechanismInfo:
    """Metadata of a mechanism or release candidate (``"none"`` is Thm 5.4's noiseless release)."""
    return CANDIDATES[check_choice(name, "name", tuple(CANDIDATES))]


def names_where(*, noise: NoiseFamily | None = None, needs_delta: bool | None = None,
                needs_pairs: bool | None = None, exact_gaussian_model: bool | None = None,
                baseline: Baseline | None = None) -> tuple[str, ...]:
    """Names of the calibratable mechanisms (registry order) whose metadata match every given field."""
    return tuple(m.name for m in METADATA.values()
                 if (noise is None or m.noise == noise)
                 and (needs_delta is None or m.needs_delta == needs_delta)
                 and (needs_pairs is None or m.needs_pairs == needs_pairs)
                 and (exact_gaussian_model is None or m.exact_gaussian_model == exact_gaussian_model)
                 and (baseline is None or m.baseline == baseline))
