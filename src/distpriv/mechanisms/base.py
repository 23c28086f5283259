"""Common interface of calibrated additive-noise mechanisms M(Data) = F(Data) + Z.

Every mechanism is created already calibrated (see :func:`distpriv.calibrate`)
and exposes the noise law it adds, its expected error and its
:class:`~distpriv.guarantees.Guarantee`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import RngLike, check_array
from ..accounting.profile import Profile
from ..accounting.release import proven_epsilon
from ..errors import InvalidTypeError
from ..guarantees import Assumption, AssumptionCode, Calibration, Guarantee
from ..models import QueryModel
from ..noise import NoiseKind, NoiseLaw
from ..privacy_profile import Claim, PrivacyProfile

#: The assumption of a profile computed from a model: the model is the truth.
MODEL_TRUTH: str = Assumption("the supplied f_θ model (its Gaussian fit for samples) equals the true query "
                              "distributions", AssumptionCode.MODEL_IS_TRUTH)


@dataclass(frozen=True)
class Accounting:
    """What the exact accounting of :mod:`distpriv.mechanisms.exact` established for a mechanism.

    The δ(ε) of the output laws N(μ_θ, Σ_θ + Σ_Z) (or the Laplace convolution) of every pair of Ψ,
    both orders (Balle & Wang 2018 Thm 5; :mod:`distpriv.accounting`), with the noise topped up
    where the papers' noise falls short (post-processing: :mod:`distpriv.accounting.topup`).

    Attributes
    ----------
    covariance_gap:
        max over Ψ of the relative gap between Σ_θi and Σ_θj (0: translations, the papers' setting).
    topup_factor:
        Multiplier applied to the papers' standard deviations / Laplace scales (1: none; below 1 only for a 2-D
        Laplace mechanism calibrated with ``tight=True``, where the certified grid proves less noise suffices:
        ``topped_up`` stays False then).
    topup_isotropic:
        Variance t of the isotropic N(0, t·I) added when scaling could not reach δ (Gaussian only).
    delta_before_topup:
        Proven δ(ε) of the papers' noise (``None`` when not computed: a pure-ε Laplace claim).
    pure_epsilon:
        Proven pure ε = sup |L| of a Laplace mechanism (``None`` unless a pure claim is made).
    topup_steps:
        Profile evaluations of the top-up search (``None`` when no search ran).
    profile:
        The profile behind the claim (``None`` for a pure-ε claim).
    papers_noise_covariance:
        Σ_Z of the papers' noise before a Gaussian top-up (``None`` without one).
    """

    covariance_gap: float
    topup_factor: float = 1.0
    topup_isotropic: float | None = None
    delta_before_topup: float | None = None
    pure_epsilon: float | None = None
    topup_steps: int | None = None
    profile: Profile | None = None
    papers_noise_covariance: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    @property
    def topped_up(self) -> bool:
        """True iff noise was added to the papers' noise."""
        return self.topup_factor > 1.0 or (self.topup_isotropic or 0.0) > 0.0

    def to_details(self) -> dict[str, Any]:
        """The ``details`` entries of an accounted mechanism (the pre-typed view, kept for JSON and research code)."""
        out: dict[str, Any] = {"accounted": True, "covariance_gap": self.covariance_gap, "topup_factor": self.topup_factor}
        if self.topup_isotropic is not None:
            out["topup_isotropic"] = self.topup_isotropic
        if self.delta_before_topup is not None:
            out["delta_before_topup"] = self.delta_before_topup
        if self.topup_steps is not None:
            out["topup_steps"] = self.topup_steps
        if self.pure_epsilon is not None:
            out["pure_epsilon"] = self.pure_epsilon
        if self.papers_noise_covariance is not None:
            out["noise_covariance_papers"] = self.papers_noise_covariance
        if self.profile is not None:
            out["accounting"] = self.profile.to_dict()
            out["accounting_pair"] = None if self.profile.pair is None else list(map(str, self.profile.pair))
        return out


@dataclass(frozen=True)
class L2Estimate:
    """E||Z||₂ of a mechanism's noise when no closed form applies, and how it was estimated (Monte Carlo)."""

    value: float
    method: str


@dataclass(frozen=True)
class _CalibratedMap:
    """The map of a calibrated (ε, δ₀) claim: ε for δ >= δ₀, ∞ below (a divergence claim: ε for that divergence
    only). A class, not a closure, so that mechanisms pickle."""

    epsilon: float
    delta: float
    divergence: str | None = None

    def __call__(self, asked: float | str) -> Claim:
        if self.divergence is not None:
            return Claim(self.epsilon if asked == self.divergence else math.inf)
        d = float(asked)
        return Claim(self.epsilon if d >= self.delta else math.inf, d)


def calibrated_profile(g: Guarantee) -> PrivacyProfile:
    """The privacy map of a calibrated claim ``g``: (ε, δ₀) also proves (ε, δ) for every δ >= δ₀ and nothing
    below δ₀ (ε = ∞); a divergence claim bounds that divergence only. ``calibrated_profile(g).guarantee(g.delta)``
    (or ``.guarantee(divergence=g.divergence)``) is ``g`` itself, field for field."""
    claim = _CalibratedMap(g.epsilon, g.delta, g.divergence)
    return PrivacyProfile(g.mechanism, g.framework, g.pairs, at_delta=None if g.divergence else claim,
                          at_divergence=claim if g.divergence else None, calibration=g.calibration,
                          assumptions=g.assumptions, theorem=g.theorem, notes=g.notes)


class _ProfileGuarantee:
    """``mech.guarantee``, derived from the mechanism's privacy profile (issue 24 item 4).

    Setting a :class:`~distpriv.guarantees.Guarantee` (at calibration, or when an accounting tightens the claim)
    stores its :func:`calibrated_profile` and the question it answers (δ₀, or the divergence); reading it asks
    the profile that question. The profile reproduces the claim exactly (checked on every set).
    """

    def __get__(self, obj: Any, owner: Any = None) -> Guarantee:
        if obj is None:  # class access: the dataclass field has no default
            raise AttributeError("guarantee")
        cached: Guarantee | None = obj.__dict__.get("_guarantee")
        if cached is None:
            profile: PrivacyProfile = obj.__dict__["_profile"]
            asked: float | str = obj.__dict__["_asked"]
            cached = profile.guarantee(divergence=asked) if isinstance(asked, str) else profile.guarantee(asked)
            obj.__dict__["_guarantee"] = cached
        return cached

    def __set__(self, obj: Any, value: Guarantee) -> None:
        if not isinstance(value, Guarantee):
            raise InvalidTypeError(f"guarantee: expected a distpriv.guarantees.Guarantee, got {type(value).__name__}")
        profile = calibrated_profile(value)
        asked: float | str = value.divergence if value.divergence is not None else value.delta
        derived = profile.guarantee(divergence=asked) if isinstance(asked, str) else profile.guarantee(asked)
        if derived != value:  # pragma: no cover - an invariant of calibrated_profile
            raise AssertionError(f"the calibrated profile does not reproduce {value!r}")
        obj.__dict__.update(_profile=profile, _asked=asked, _guarantee=derived)


@dataclass
class AdditiveNoiseMechanism:
    """A calibrated mechanism adding noise Z to a query value F(Data) in R^m.

    Also importable as ``distpriv.Mechanism`` / ``distpriv.mechanisms.Mechanism`` (its name before
    issue 13, kept as an alias). It satisfies :class:`distpriv.protocol.CalibratedMechanism`.

    The noise is owned by ``noise``, a :class:`~distpriv.noise.NoiseLaw` (Gaussian N(0, Σ_Z), Laplace
    B·L with L_k ~ Lap(b_k), or none): drawing, covariance, marginals and E||Z||₂ all come from it.
    ``noise_covariance``, ``laplace_scale``, ``kind``, ``basis`` and ``scales`` are read-only views of it.
    Build one as ``Mechanism(name, label, m, NoiseLaw.gaussian(cov), guarantee, details={...})``.

    Attributes
    ----------
    name: registry name (``"expm-gauss"``); label: the papers' table label (``"ExpM (G)"``).
    noise: the noise law Z (:class:`~distpriv.noise.NoiseLaw`).
    guarantee: the (ε, δ) claim with its assumptions, read from the mechanism's privacy profile
    (:meth:`privacy_profile`; setting it stores the claim's :func:`calibrated_profile`).
    details: calibration quantities (sensitivities, D_max, per-direction variances, ...) for reports and
    research code; library code reads the typed ``accounting`` and ``l2_estimate`` instead.
    accounting: the exact accounting under the model (:class:`Accounting`), ``None`` if not accounted.
    l2_estimate: the Monte Carlo E||Z||₂ once computed (:class:`L2Estimate`).
    """

    name: str
    label: str
    dim: int
    noise: NoiseLaw
    guarantee: _ProfileGuarantee = _ProfileGuarantee()
    details: dict[str, Any] = field(default_factory=dict)
    accounting: Accounting | None = None
    l2_estimate: L2Estimate | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.noise, NoiseLaw):
            raise InvalidTypeError(f"noise: expected a distpriv.noise.NoiseLaw, got {type(self.noise).__name__}")
        if self.noise.dim != self.dim:
            raise InvalidTypeError(f"noise: the noise law has dimension {self.noise.dim}, the mechanism {self.dim}")

    @property
    def accounted(self) -> bool:
        """True iff the claim was checked against the exact profile of the output laws (:mod:`~distpriv.mechanisms.exact`)."""
        return self.accounting is not None

    def set_accounting(self, acc: Accounting) -> None:
        """Record ``acc`` (typed) and its ``details`` view."""
        self.accounting = acc
        self.details.update(acc.to_details())

    def set_l2_estimate(self, value: float, method: str) -> None:
        """Record a Monte Carlo E||Z||₂ (typed) and its ``details`` view (``_mc_l2``, ``expected_l2_error_method``)."""
        self.l2_estimate = L2Estimate(value, method)
        self.details["_mc_l2"] = value
        self.details["expected_l2_error_method"] = method

    # ------------------------------------------------------------------ noise law (views of ``noise``)
    @property
    def kind(self) -> NoiseKind:
        """The noise family: ``gaussian``, ``laplace`` or ``none`` (``noise.kind``)."""
        return self.noise.kind

    @property
    def covariance(self) -> NDArray[np.float64] | None:
        """Σ_Z of Gaussian noise (``None`` otherwise)."""
        return self.noise.covariance

    @property
    def basis(self) -> NDArray[np.float64] | None:
        """The Laplace noise directions B (``None`` otherwise)."""
        return self.noise.basis

    @property
    def scales(self) -> NDArray[np.float64] | None:
        """The Laplace scales b, one per direction (``None`` otherwise)."""
        return self.noise.scales

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        """Covariance of Z: Σ_Z for Gaussian noise, B diag(2b²) Bᵀ for Laplace noise, 0 for none."""
        return self.noise.covariance_matrix

    @property
    def laplace_scale(self) -> float | NDArray[np.float64] | None:
        """Laplace scale b (a float when all directions share it); ``None`` for non-Laplace noise."""
        return self.noise.laplace_scale

    @property
    def noise_std(self) -> NDArray[np.float64]:
        """Per-component standard deviation of Z."""
        return self.noise.marginal_std()

    # ------------------------------------------------------------------ sampling
    def sample_noise(self, size: int, rng: RngLike = None) -> NDArray[np.float64]:
        """Draw ``size`` noise vectors, shape (size, m), in one vectorised step (:meth:`NoiseLaw.sample`)."""
        return self.noise.sample(rng, size)

    def release(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Return F(Data) + Z for one query value ``x`` of length m."""
        arr = check_array(x, "x", ndim=1)
        if arr.shape[0] != self.dim:
            raise InvalidTypeError(f"x: expected a query value of length {self.dim}, got {arr.shape[0]}")
        return arr + self.sample_noise(1, rng)[0]

    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Vectorised release for N query values, shape (N, m) -> (N, m)."""
        arr = check_array(xs, "xs", ndim=2)
        if arr.shape[1] != self.dim:
            raise InvalidTypeError(f"xs: expected rows of length {self.dim}, got {arr.shape[1]}")
        return arr + self.sample_noise(arr.shape[0], rng)

    # ------------------------------------------------------------------ utility
    @property
    def expected_squared_error(self) -> float:
        """E||Z||²_2 = tr(Cov Z) (closed form for every noise law)."""
        return self.noise.expected_squared_error

    @property
    def expected_l2_error(self) -> float:
        """E||Z||_2 (:meth:`distpriv.noise.NoiseLaw.expected_l2`, the library's one estimator).

        Closed forms where they exist (isotropic Gaussian, one Laplace direction); otherwise a Monte
        Carlo estimate on the normalised noise shape, recorded in :attr:`l2_estimate` (and
        ``details["expected_l2_error_method"]``).
        """
        value, method = self.noise.expected_l2()
        if method is not None and (self.l2_estimate is None or self.l2_estimate.value != value):
            self.set_l2_estimate(value, method)
        return value

    # ------------------------------------------------------------------ privacy map
    def privacy_profile(self, model: QueryModel | None = None) -> PrivacyProfile:
        """The mechanism's privacy map over its Ψ (:class:`~distpriv.privacy_profile.PrivacyProfile`).

        Without ``model``: the calibrated claim (ε, δ₀) of :attr:`guarantee`, which also proves (ε, δ) for
        every δ >= δ₀ (and nothing below δ₀: ε = ∞). With a Gaussian or empirical ``model`` of f_θ: the
        exact map δ ↦ least ε of the output laws F + Z (:func:`distpriv.accounting.release.proven_epsilon`,
        certified upper end; Chen & Ohrimenko Definition 3.2 evaluated by the exact accounting of
        :attr:`noise`), under the assumption that the model (its Gaussian fit for samples) is the truth.
        """
        if model is None:
            profile: PrivacyProfile = self.__dict__["_profile"]  # the one :attr:`guarantee` is read from
            return profile
        g = self.guarantee
        noise = self.noise

        def exact(delta: float) -> Claim:
            b = proven_epsilon(model, g.pairs, noise, float(delta))
            return Claim(b.epsilon_upper, float(delta), (f"certified bracket [{b.epsilon_lower:.6g}, "
                                                        f"{b.epsilon_upper:.6g}] ({b.method})",))

        return PrivacyProfile(g.mechanism, g.framework, g.pairs, at_delta=exact, calibration=Calibration.EXACT,
                              assumptions=(MODEL_TRUTH,),
                              theorem="exact privacy profile of the output laws F + Z (distpriv.accounting.release)")

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly description (noise law, error, guarantee)."""
        ls = self.laplace_scale
        return {
            "mechanism": self.name,
            "label": self.label,
            "noise": self.kind,
            "noise_std": [float(s) for s in self.noise_std],
            "laplace_scale": None if ls is None else (ls if isinstance(ls, float) else [float(s) for s in ls]),
            "expected_l2_error": self.expected_l2_error,
            "expected_squared_error": self.expected_squared_error,
            "guarantee": self.guarantee.to_dict(),
        }


#: The pre-issue-13 name of :class:`AdditiveNoiseMechanism`, kept as an alias.
Mechanism = AdditiveNoiseMechanism
