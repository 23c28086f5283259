"""Differential-privacy and group-differential-privacy baselines (Chen & Ohrimenko Sec. 6.2).

Per-component sensitivities s_i (the most component i changes when one record
changes: range/n for a mean of n records, 1 for a count) are supplied by the
caller. With group size k:

* Laplace: Z_i ~ Lap(k ||s||_1 / ε) — (ε, 0)-DP for groups of k records.
* Gaussian: Z_i ~ N(0, σ²), σ = k ||s||_2 / D_max — (ε, δ)-DP for groups of k.

When k >= n (the dataset size) any two datasets of n records are neighbours, so
the guarantee holds for every pair of data distributions: (ε, δ)-distribution
privacy for any Θ and Ψ (the GDP baseline of the paper, k = n = 100).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array, check_int
from ..errors import AssumptionError, InvalidParameterError, InvalidTypeError
from ..guarantees import Calibration, Guarantee
from ..noise import NoiseLaw
from ._common import Inputs, d_max
from .base import Mechanism
from .metadata import METADATA


def _sens(inp: Inputs, sensitivities: ArrayLike | None) -> NDArray[np.float64]:
    if sensitivities is None:
        raise InvalidParameterError("sensitivities: required for DP baselines (per-component sensitivity of one record)")
    s = check_array(sensitivities, "sensitivities", ndim=(0, 1))
    s = np.broadcast_to(s, (inp.model.dim,)).astype(float) if s.ndim == 0 else s
    if s.shape[0] != inp.model.dim:
        raise InvalidTypeError(f"sensitivities: expected {inp.model.dim} values, got {s.shape[0]}")
    if np.any(s < 0):
        raise InvalidParameterError("sensitivities: must be >= 0")
    return s


def check_sensitivities(inp: Inputs, s: NDArray[np.float64], k: int, n: int | None) -> None:
    """Refuse sensitivities the model contradicts when the claim covers every pair of datasets (k >= n).

    Two datasets of n records differ in at most n records, so F moves by at most n·s_i on component i
    and so do the means of f_θ: a pair of Ψ whose means differ by more than n·s_i on some coordinate
    shows that s does not bound the change of one record (Chen & Ohrimenko Sec. 6.2's premise).
    """
    if n is None or k < n or not inp.pairs:
        return
    for a, b in inp.pairs:
        gap = np.abs(np.asarray(inp.model.mean(a), dtype=float) - np.asarray(inp.model.mean(b), dtype=float))
        bound = n * s
        bad = gap > bound * (1 + 1e-9) + 1e-12 * np.maximum(np.abs(np.asarray(inp.model.mean(a), dtype=float)), 1.0)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise AssumptionError(
                f"sensitivities: the model contradicts them: the means of θ = {a!r} and {b!r} differ by "
                f"{gap[i]:.6g} on component {i}, more than n·s = {n} × {s[i]:.6g} = {bound[i]:.6g}, the most "
                "datasets of n records can differ there; give sensitivities that bound one record's change")


def _guarantee(inp: Inputs, name: str, k: int, n: int | None, delta: float, calibration: str, theorem: str) -> Guarantee:
    if n is not None and k >= n:
        framework = "distribution-privacy"
        assumptions = (f"every dataset has n = {n} records and k = {k} >= n, so any two datasets are group-neighbours",
                       "per-component sensitivities bound the change of one record")
    else:
        framework = "differential-privacy" if k == 1 else "group-differential-privacy"
        assumptions = (f"neighbouring datasets differ in at most {k} record(s)",
                       "per-component sensitivities bound the change of one record")
    return Guarantee(inp.epsilon, delta, name, framework=framework, calibration=calibration, pairs=inp.pairs,
                     assumptions=assumptions, theorem=theorem)


def dp_laplace(inp: Inputs, *, sensitivities: ArrayLike | None = None, group_size: int = 1, n: int | None = None) -> Mechanism:
    """Laplace mechanism with L1 sensitivity k·||s||_1 (Dwork & Roth Thm 3.6 + group privacy)."""
    return _laplace(inp, sensitivities, group_size, n, "dp-laplace")


def dp_gauss(inp: Inputs, *, sensitivities: ArrayLike | None = None, group_size: int = 1, n: int | None = None) -> Mechanism:
    """Gaussian mechanism with L2 sensitivity k·||s||_2, σ = k||s||_2/D_max (classic or exact)."""
    return _gauss(inp, sensitivities, group_size, n, "dp-gauss")


def _laplace(inp: Inputs, sensitivities: ArrayLike | None, group_size: int, n: int | None, name: str) -> Mechanism:
    """Z_i ~ Lap(k ||s||_1 / ε) under the registry name ``name`` (its label from the metadata)."""
    label = METADATA[name].label
    s = _sens(inp, sensitivities)
    k = check_int(group_size, "group_size", minimum=1)
    check_sensitivities(inp, s, k, n)
    sens = k * float(s.sum())
    b = sens / inp.epsilon
    m = inp.model.dim
    g = _guarantee(inp, name, k, n, 0.0, "laplace", "Dwork & Roth Thm 3.6 (group size k)")
    return Mechanism(name, label, m, NoiseLaw.laplace(np.eye(m), np.full(m, b)), g,
                     details={"l1_sensitivity": sens, "group_size": k, "laplace_scale": b})


def _gauss(inp: Inputs, sensitivities: ArrayLike | None, group_size: int, n: int | None, name: str) -> Mechanism:
    """Z_i ~ N(0, σ²), σ = k ||s||_2 / D_max under the registry name ``name`` (its label from the metadata)."""
    label = METADATA[name].label
    s = _sens(inp, sensitivities)
    k = check_int(group_size, "group_size", minimum=1)
    check_sensitivities(inp, s, k, n)
    sens = k * float(np.linalg.norm(s))
    dm = d_max(inp)
    sigma = sens / dm
    m = inp.model.dim
    theorem = "Dwork & Roth Thm A.1" if inp.calibration == Calibration.CLASSIC else "Balle & Wang (2018) Thm 8"
    g = _guarantee(inp, name, k, n, inp.delta, inp.calibration, theorem + " (group size k)")
    return Mechanism(name, label, m, NoiseLaw.gaussian(sigma**2 * np.eye(m)), g,
                     details={"l2_sensitivity": sens, "group_size": k, "d_max": dm, "sigma": sigma})


def groupdp_laplace(inp: Inputs, *, sensitivities: ArrayLike | None = None, group_size: int | None = None, n: int | None = None) -> Mechanism:
    """Group-DP Laplace baseline; ``group_size`` defaults to ``n`` (the paper's k = n)."""
    k = _group(group_size, n)
    return _laplace(inp, sensitivities, k, n, "groupdp-laplace")


def groupdp_gauss(inp: Inputs, *, sensitivities: ArrayLike | None = None, group_size: int | None = None, n: int | None = None) -> Mechanism:
    """Group-DP Gaussian baseline; ``group_size`` defaults to ``n`` (the paper's k = n)."""
    k = _group(group_size, n)
    return _gauss(inp, sensitivities, k, n, "groupdp-gauss")


def _group(group_size: int | None, n: int | None) -> int:
    if group_size is None and n is None:
        raise InvalidParameterError("group_size: required for group-DP baselines (or pass n, the dataset size, to use k = n)")
    return check_int(group_size if group_size is not None else n, "group_size", minimum=1)
