"""The :func:`calibrate` factory: one entry point for every central mechanism."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from .._validation import check_choice
from ..calibration import gaussian_delta, max_distance
from ..errors import InvalidParameterError
from ..guarantees import Calibration, Guarantee
from ..models import EmpiricalModel, QueryModel
from ..noise import NoiseLaw
from . import baselines, ding, exact, expected_value, gaussian_uncertainty, optm, ssp, wasserstein
from ._common import validate_inputs
from .base import Mechanism
from .metadata import METADATA

#: name -> builder; everything else about a mechanism is in :data:`~distpriv.mechanisms.metadata.METADATA`.
_BUILDERS: dict[str, Callable[..., Mechanism]] = {
    "wasserstein": wasserstein.wasserstein_mechanism,
    "approx-wasserstein": wasserstein.approx_wasserstein_mechanism,
    "expm-laplace": expected_value.expm_laplace,
    "expm-gauss": expected_value.expm_gauss,
    "dirm-laplace": expected_value.dirm_laplace,
    "dirm-gauss": expected_value.dirm_gauss,
    "eigm": gaussian_uncertainty.eigm,
    "daum": gaussian_uncertainty.daum,
    "optm": optm.optm,
    "groupdp-laplace": baselines.groupdp_laplace,
    "groupdp-gauss": baselines.groupdp_gauss,
    "dp-laplace": baselines.dp_laplace,
    "dp-gauss": baselines.dp_gauss,
}

MECHANISMS: tuple[str, ...] = tuple(METADATA)

#: Peer mechanisms (issue 25; :mod:`~distpriv.mechanisms.ssp`, :mod:`~distpriv.mechanisms.ding`): name ->
#: (label, builder, needs δ). :func:`calibrate` builds them by name; release selection never sees them.
PEERS: dict[str, tuple[str, Callable[..., Any], bool]] = {
    "ssp-quantizer": ("SSP quantizer", ssp.ssp_quantizer, True),
    "ding-laplace": ("Ding (L)", ding.ding_laplace, False),
    "kantorovich": ("Kantorovich", ding.kantorovich, False),
}

#: The papers' table labels (from the metadata).
LABELS: dict[str, str] = {name: m.label for name, m in METADATA.items()}


def options_of(name: str) -> tuple[str, ...]:
    """Keyword options accepted by mechanism ``name`` beyond (model, Ψ, ε, δ, calibration)."""
    builder = PEERS[name][1] if name in PEERS else _BUILDERS[check_choice(name, "name", MECHANISMS)]
    params = list(inspect.signature(builder).parameters.values())[1:]
    return tuple(p.name for p in params if p.kind == inspect.Parameter.KEYWORD_ONLY)


def calibrate(
    name: str,
    model: QueryModel,
    pairs: Iterable[Sequence[Hashable]] | None = None,
    *,
    epsilon: float,
    delta: float | None = None,
    calibration: str = "exact",
    **options: Any,
) -> Mechanism:
    """Create a calibrated mechanism.

    Parameters
    ----------
    name : str
        One of :data:`MECHANISMS` (``"wasserstein"``, ``"approx-wasserstein"``,
        ``"expm-laplace"``, ``"expm-gauss"``, ``"dirm-laplace"``, ``"dirm-gauss"``,
        ``"eigm"``, ``"daum"``, ``"optm"`` (least-trace Gaussian noise, :mod:`~distpriv.mechanisms.optm`),
        ``"groupdp-laplace"``, ``"groupdp-gauss"``,
        ``"dp-laplace"``, ``"dp-gauss"``), or a peer of :data:`PEERS` (``"ssp-quantizer"``,
        ``"ding-laplace"``, ``"kantorovich"``: issue 25's comparison; never chosen by release selection).
    model : GaussianModel or EmpiricalModel
        f_θ as a :class:`~distpriv.GaussianModel` or :class:`~distpriv.EmpiricalModel`
        (Gaussian mechanisms fit N(μ̂, Σ̂) to an empirical model).
    pairs : iterable of pairs, optional
        Ψ, unordered pairs of θ labels (optional for the DP baselines).
    epsilon, delta : float
        Privacy parameters; δ in (0, 1) is required by Gaussian mechanisms and
        Approximate Wasserstein. Laplace mechanisms accept None/0 (a pure claim) or a δ in
        (0, 1): on a GaussianModel whose covariances differ across θ they then top their scale
        up only until the proven δ(ε) meets it.
    calibration : {"exact", "classic"}
        ``"exact"`` (default; analytic Gaussian) or ``"classic"`` (the papers' c = sqrt(2 ln(1.25/δ))).
    **options
        Mechanism-specific keywords, see :func:`options_of` (e.g. ``direction=`` for
        DirM/DauM, ``weights=`` for OptM's weighted trace, ``sensitivities=``, ``group_size=``, ``n=`` for the baselines).

    Returns
    -------
    Mechanism
        with ``release``, ``release_batch``, ``noise_covariance``, ``laplace_scale``,
        ``expected_l2_error`` and ``guarantee``.

    Notes
    -----
    Exact accounting (:mod:`distpriv.mechanisms.exact`): on a GaussianModel (and for EigM/DauM
    on the Gaussian fit of an EmpiricalModel) the claim is checked against the exact privacy
    profile of the output laws, equal covariances or not, and the noise is topped up where the
    papers' noise falls short; the guarantee's notes state the method, bracket and top-up.

    Examples
    --------
    >>> import numpy as np, distpriv as dp
    >>> model = dp.GaussianModel(means={1: [100, 101], 2: [99, 102]},
    ...                          covariances={1: [[22, -6], [-6, 13]], 2: [[22, -6], [-6, 13]]})
    >>> mech = dp.calibrate("eigm", model, [(1, 2)], epsilon=1.0, delta=1e-3, calibration="classic")
    >>> np.round(np.linalg.eigvalsh(mech.noise_covariance), 2)
    array([ 3.52, 18.52])
    """
    if isinstance(name, str) and name in PEERS:
        return _calibrate_peer(name, model, pairs, epsilon, delta, calibration, options)
    key, mech, inp = _build(name, model, pairs, epsilon, delta, calibration, options)
    m = inp.model
    if (isinstance(m, EmpiricalModel) and m.claim_scope == "samples" and METADATA[key].samples_law
            and mech.details.get("accounted_on") != "samples"):  # OptM accounts its candidates itself
        from .empirical import account_empirical  # the samples' law of an EmpiricalModel (issue 27)

        return account_empirical(key, mech, inp)
    account = exact.accountant(key, mech, inp)
    accounted = mech if account is None else account(mech, inp)
    if not accounted.accounted:
        if inp.calibration == Calibration.CLASSIC and mech.noise.adds_gaussian and inp.epsilon >= 1.0:
            accounted.guarantee = _audit_classic(accounted.guarantee, inp.epsilon, inp.delta)
    return accounted


def papers_noise(
    name: str,
    model: QueryModel,
    pairs: Iterable[Sequence[Hashable]] | None = None,
    *,
    epsilon: float,
    delta: float | None = None,
    calibration: str = "exact",
    **options: Any,
) -> NoiseLaw:
    """The noise of mechanism ``name`` as its builder calibrates it (the papers' formula), without accounting.

    :func:`calibrate` then accounts this noise exactly and only ever adds to it (:mod:`.exact`,
    :mod:`.empirical`: the noise is scaled by k >= 1 or independent noise is added), so any lower bound
    on E||Z||₂ of this law bounds the calibrated mechanism's too (release selection's ranking, issue 26).
    Costs the closed-form calibration only (no privacy profile).
    """
    return _build(name, model, pairs, epsilon, delta, calibration, options)[1].noise


def _build(name: str, model: QueryModel, pairs: Iterable[Sequence[Hashable]] | None, epsilon: float,
           delta: float | None, calibration: str, options: dict[str, Any]) -> tuple[str, Mechanism, Any]:
    """(key, the builder's mechanism, the validated inputs): name and options checked, the papers' formula applied."""
    key = check_choice(name, "name", MECHANISMS)
    builder, meta = _BUILDERS[key], METADATA[key]
    allowed = options_of(key)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InvalidParameterError(
            f"{unknown[0]}: not an option of mechanism {key!r}; allowed options are {list(allowed) or 'none'}"
        )
    inp = validate_inputs(model, pairs, epsilon, delta, calibration, need_delta=meta.needs_delta, need_pairs=meta.needs_pairs)
    return key, builder(inp, **options), inp


def _calibrate_peer(name: str, model: QueryModel, pairs: Iterable[Sequence[Hashable]] | None, epsilon: float,
                    delta: float | None, calibration: str, options: dict[str, Any]) -> Any:
    """Build a peer mechanism of :data:`PEERS` (its builder accounts its own claim exactly)."""
    _, builder, needs_delta = PEERS[name]
    allowed = options_of(name)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InvalidParameterError(
            f"{unknown[0]}: not an option of mechanism {name!r}; allowed options are {list(allowed) or 'none'}"
        )
    inp = validate_inputs(model, pairs, epsilon, delta, calibration, need_delta=needs_delta, need_pairs=True)
    return builder(inp, **options)


def _audit_classic(guarantee: Guarantee, epsilon: float, delta: float) -> Guarantee:
    """State what the classic rule really proves when ε >= 1 (where its theorem does not apply).

    Every pair's Mahalanobis distance after calibration is at most D_max = ε/c, and the exact
    Gaussian profile δ_D(ε) increases with D, so δ_{ε/c}(ε) is a proven δ. When it exceeds the
    requested δ (e.g. ε = 10, δ = 0.01 gives 0.041) the claim is weakened to the proven value.
    """
    proven = float(gaussian_delta(max_distance(epsilon, delta, Calibration.CLASSIC, warn=False), epsilon))
    if proven > delta:
        note = (f"classic rule c = sqrt(2 ln(1.25/δ)) fails at ε = {epsilon:g}: the exact Gaussian profile gives "
                f"δ = {proven:.3g} > requested {delta:g}; the claim is weakened to the proven δ")
        return replace(guarantee, delta=proven, notes=(*guarantee.notes, note))
    note = (f"classic rule is unproven for ε >= 1; the exact Gaussian profile confirms δ = {proven:.3g} <= {delta:g}")
    return guarantee.with_notes(note)


def check_noiseless(
    model: QueryModel,
    pairs: Iterable[Sequence[Hashable]],
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
) -> gaussian_uncertainty.NoiselessCheck:
    """Theorem 5.4: may F(Data) be released with no noise at all?

    The exact profile of the two Gaussians N(μ_θi, Σ_θi), N(μ_θj, Σ_θj) of every pair (both orders,
    equal covariances or not; an EmpiricalModel enters through its Gaussian fit) decides:
    ``ok`` iff the proven δ(ε) <= δ. Under ``calibration="classic"`` the papers' test
    (Mahalanobis distance <= ε/c) must pass as well; where it passes but the exact profile
    proves more than δ (ε >= 1, or unequal covariances) the returned guarantee states the
    proven δ and ``ok`` is False.
    """
    inp = validate_inputs(model, pairs, epsilon, delta, calibration, need_delta=True)
    return gaussian_uncertainty.noiseless_release(inp)
