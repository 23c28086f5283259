"""One mechanism protocol across central, attribute and local mechanisms.

Every mechanism in distpriv is built calibrated (or, for finite channels, given by its matrix) and
releases randomised outputs through the same two methods; the central and attribute mechanisms
also state their guarantee as a typed :class:`~distpriv.guarantees.Guarantee`:

* :class:`PrivacyMechanism` — ``name``, ``release(x, rng)`` (one input → its randomised output) and
  ``release_batch(xs, rng)`` (vectorised over many inputs). Satisfied by
  :class:`~distpriv.mechanisms.AdditiveNoiseMechanism` (central, Chen & Ohrimenko §4-5, built by
  :func:`distpriv.calibrate`), the attribute-privacy mechanisms (Zhang et al.; subclasses of it) and
  the local mechanisms :class:`~distpriv.local.LocalMechanism` and :class:`~distpriv.local.Tupling`
  (Kawamoto & Murakami), whose outputs are indices into Y (Y^{k+1} for tupling).
* :class:`CalibratedMechanism` — a :class:`PrivacyMechanism` with a ``guarantee`` fixed at
  calibration time (central and attribute mechanisms). A local mechanism's distribution privacy
  depends on the pair of input distributions (λ0, λ1), so its guarantee is computed per pair by
  :func:`distpriv.local.distp_guarantee` (or :meth:`distpriv.local.Tupling.guarantee`) instead.

* :class:`ProfiledMechanism` — a :class:`PrivacyMechanism` with a ``privacy_profile(...)`` returning a
  :class:`~distpriv.privacy_profile.PrivacyProfile`, the privacy map every guarantee is derived from
  (as OpenDP derives ``d_out`` from a privacy map): ``mech.privacy_profile(model=None)`` for central
  mechanisms, ``Tupling.privacy_profile(λ0, λ1)``, ``CouplingMechanism.privacy_profile(accuracy_epsilon)``,
  and for a plain finite channel :func:`distpriv.local.privacy_profile` (mechanism, distributions, Ψ).
  The existing call forms (``mech.guarantee``, :func:`distpriv.local.distp_guarantee`,
  ``Tupling.guarantee(λ0, λ1, δ)``, ``CouplingMechanism.guarantee(accuracy_epsilon, divergence)``) are
  thin wrappers: ``profile.guarantee(delta)`` or ``profile.guarantee(divergence=...)``.

All protocols are ``runtime_checkable`` (``isinstance`` checks that the members exist) and are
checked statically by mypy. Registry metadata of the central mechanisms (needs δ, noise family,
assumption keys, paper label) is in :mod:`distpriv.mechanisms.metadata`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from numpy.typing import NDArray

from ._validation import RngLike
from .guarantees import Guarantee
from .privacy_profile import PrivacyProfile


@runtime_checkable
class PrivacyMechanism(Protocol):
    """A mechanism that releases randomised outputs of its inputs."""

    @property
    def name(self) -> str:
        """Registry name or label of the mechanism."""
        ...

    def release(self, x: Any, rng: RngLike = None) -> NDArray[Any]:
        """The randomised output for input ``x`` (a query value, or local input indices)."""
        ...

    def release_batch(self, xs: Any, rng: RngLike = None) -> NDArray[Any]:
        """Randomised outputs for many inputs at once (vectorised)."""
        ...


@runtime_checkable
class CalibratedMechanism(PrivacyMechanism, Protocol):
    """A :class:`PrivacyMechanism` whose guarantee was fixed when it was calibrated."""

    @property
    def guarantee(self) -> Guarantee:
        """The (ε, δ) (or divergence) claim, with its framework, pairs and assumptions."""
        ...


@runtime_checkable
class ProfiledMechanism(PrivacyMechanism, Protocol):
    """A :class:`PrivacyMechanism` with a privacy map: ``privacy_profile(...)`` -> :class:`PrivacyProfile`.

    The arguments are what the family's claim depends on (the model for a central mechanism, the pair of
    input laws for tupling, the accuracy of the estimated λ̂ for coupling).
    """

    @property
    def privacy_profile(self) -> Callable[..., PrivacyProfile]:
        """The bound method building the mechanism's :class:`~distpriv.privacy_profile.PrivacyProfile`."""
        ...
