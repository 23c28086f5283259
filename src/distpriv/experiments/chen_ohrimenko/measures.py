"""Calibrating one row's mechanism (Chen & Ohrimenko Table 2, baselines) and the Section 6.2 L2-error protocol."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import ClassicCalibrationWarning
from ...models import pair_stats
from .context import Context
from .settings import _LAPLACE, GROUP_DP, PLAIN_DP, _rng

#: The one line every classic-rule warning of a calibration becomes (compared by value, never by prefix).
CLASSIC_NOTE = (
    "ClassicCalibrationWarning: the classic rule c = sqrt(2 ln(1.25/δ)) is only proved for ε < 1; "
    "Gaussian rows with ε >= 1 under classic calibration carry no proven guarantee (see the exact columns)"
)


def calibrate_row(
    ctx: Context, name: str, gaussian: Any, pair: tuple[float, float], epsilon: float, delta: float,
    calibration: str, sink: set[str], paper_settings: bool = False, tight: bool | None = None,
) -> Any:
    """Calibrate one mechanism of Table 2 (or a baseline); warnings are collected into ``sink``.

    With ``paper_settings`` DirM (L) gets the paper's Laplace scale Δ_E,1/ε
    (:func:`paper_dirm_laplace`); every other mechanism is the same in both modes.

    Each distinct calibration is computed once per context (the tables, figures and both
    calibration modes share many rows): the mechanism is kept with the warning lines it raised,
    which are replayed into ``sink`` on a hit, and every caller gets its own copy.

    ``tight`` (the Laplace mechanisms' option; ``None``: the library's default): the figures pass ``False``
    (:data:`FIGURE_CLAIMS_NOTE`), so the δ′ of their notes is the coupling bound's.
    """
    tight = tight if name in _LAPLACE else None
    key = (name, id(gaussian), tuple(pair), float(epsilon), float(delta), calibration, tight)
    hit = ctx._mechanisms.get(key)
    if hit is None or hit[0] is not gaussian:  # the entry holds the model, so its id is not reused meanwhile
        lines: set[str] = set()
        hit = (gaussian, _calibrate(ctx, name, gaussian, pair, epsilon, delta, calibration, lines, tight),
               tuple(sorted(lines)))
        ctx._mechanisms[key] = hit
    sink.update(hit[2])
    if tight is False:
        sink.add(FIGURE_CLAIMS_NOTE)
    mech = copy.deepcopy(hit[1])
    if paper_settings and name == "dirm-laplace":
        return paper_dirm_laplace(gaussian, pair, epsilon, mech, tight=tight)
    return mech


def _calibrate(
    ctx: Context, name: str, gaussian: Any, pair: tuple[float, float], epsilon: float, delta: float,
    calibration: str, sink: set[str], tight: bool | None = None,
) -> Any:
    """One row's :func:`distpriv.calibrate` call, its warnings collected into ``sink`` as lines."""
    from ...mechanisms import calibrate
    from ...mechanisms.exact import noise_only

    opts: dict[str, Any] = {}
    if name in GROUP_DP:
        opts = {"sensitivities": ctx.sensitivities, "group_size": ctx.n, "n": ctx.n}
    elif name in PLAIN_DP:
        opts = {"sensitivities": ctx.sensitivities, "group_size": 1}
    elif name in _LAPLACE and tight is not None:
        opts = {"tight": tight}
    # the tables and figures use the noise, never the claim: no profile for a δ that is not published
    with warnings.catch_warnings(record=True) as caught, noise_only():
        warnings.simplefilter("always")
        mech = calibrate(
            name, gaussian, [pair], epsilon=epsilon, delta=None if name in _LAPLACE else delta,
            calibration=calibration, **opts,
        )
    for w in caught:
        if issubclass(w.category, ClassicCalibrationWarning):
            sink.add(CLASSIC_NOTE)
        else:
            sink.add(f"{w.category.__name__}: {w.message}")
    return mech


PAPER_DIRM_NOTE = (
    "paper settings: Laplace scale Δ_E,1/ε along v, as the printed Table 3 values imply; Alg 1 / Thm 5.3 need "
    "only Δ_E,2/ε, so this is DirM (L) calibrated at ε' = ε·Δ_E,2/Δ_E,1 <= ε and the claim is (ε', 0)"
)


#: The note of every figure (:mod:`.figures`): their Laplace rows claim δ′ by the coupling bound.
FIGURE_CLAIMS_NOTE = (
    "the δ′ claimed by ExpM (L) and DirM (L) in the figures' notes is the coupling bound's (tight=False): the "
    "figures plot L2 errors, which do not depend on it, and the tight bounds that distpriv.calibrate uses by default "
    "(Table 3's notes) would cost ~30 s of CPU over their many ε; both are proven upper bounds"
)


def paper_dirm_laplace(model: Any, pair: tuple[float, float], epsilon: float, corrected: Any, *,
                       tight: bool | None = None) -> Any:
    """DirM (L) with the scale the paper's Table 3 uses: b₁ = Δ_E,1/ε along v instead of Thm 5.3's b = Δ_E,2/ε.

    Built through :func:`distpriv.calibrate` at ε' = ε·b/b₁, whose Thm 5.3 scale
    is exactly b₁; since Δ_E,1 >= Δ_E,2, ε' <= ε and the mechanism's guarantee
    (ε', 0) implies the row's (ε, 0). ``corrected`` is the Thm 5.3 mechanism at ε.
    """
    from ...mechanisms import calibrate

    b = float(np.max(np.atleast_1d(corrected.laplace_scale))) if corrected.laplace_scale is not None else 0.0
    b1 = pair_stats(model, [pair]).l1 / epsilon
    if b <= 0.0 or b1 <= b:
        return corrected
    opts: dict[str, Any] = {} if tight is None else {"tight": tight}
    mech = calibrate("dirm-laplace", model, [pair], epsilon=epsilon * b / b1, delta=None, **opts)
    mech.guarantee = mech.guarantee.with_notes(PAPER_DIRM_NOTE)
    return mech


def _l2_samples(
    ctx: Context, prop: str, pair: tuple[float, float], mechs: Sequence[Any], reps: int, key: Any
) -> list[NDArray[np.float64]]:
    """Section 6.2 protocol: mean over ``reps`` sampled datasets of ||M(F(D)) − F(D)||_2.

    Every mechanism in ``mechs`` gets the same datasets and the same noise
    stream (common random numbers), so differences between them are not
    sampling noise.
    """
    pm = ctx.property_model(prop)
    g = _rng(ctx.seed, "l2-data", prop, pair, reps)
    half = (reps + 1) // 2
    x = np.concatenate([pm.sample_query(pair[0], half, g), pm.sample_query(pair[1], reps - half, g)])
    out = []
    for mech in mechs:
        y = mech.release_batch(x, _rng(ctx.seed, "l2-noise", key))
        out.append(np.linalg.norm(y - x, axis=1))
    return out


def _l2_errors(
    ctx: Context, prop: str, pair: tuple[float, float], mechs: Sequence[Any], reps: int, key: Any
) -> list[float]:
    """Mean L2 error of each mechanism (see :func:`_l2_samples`)."""
    return [float(e.mean()) for e in _l2_samples(ctx, prop, pair, mechs, reps, key)]


def _ci(values: NDArray[np.float64]) -> tuple[float, float]:
    # special.stdtrit is what stats.t.ppf evaluates, without importing scipy.stats (~0.4 s)
    from scipy import special

    m = float(values.mean())
    half = float(special.stdtrit(values.size - 1, 0.975)) * float(values.std(ddof=1)) / math.sqrt(values.size)
    return m - half, m + half
