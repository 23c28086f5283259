"""Accuracy you can quote: a (1 − α) interval for F(D) per released value, from the exact noise law.

A published value is o = x + N + R (issue 21, item 3): x = F(D) of the table as read, N the
ideal noise of the plan's marginal — a linear combination of independent components,
N_i = Σ_j V_ij Z_j + Z′_i (V the plan's orthonormal basis, Z_j ~ N(0, σ_j²) or Lap(b_j),
Z′_i ~ Lap(b′) the Theorem 5.7 stage) — and R the grid rounding, a deterministic
function bounded by |R_i| <= r_i (:func:`rounding_bounds`: g/2 per rounding, through V
for the stage-1 rounding of a rotated plan, then d_k·r + g_k/2 for a standardised plan,
plus a 2⁻⁴⁰ relative floating-point slack). The noise is independent of D, so

    [o − q − r, o + q + r],    q = the (1 − α/2) quantile of N_i (symmetric),

covers x with probability >= 1 − α for every D (exactly the inversion of the two
one-sided level-α/2 tests of the law P(o <= v | x) = F_N(v + r − x) in the worst case of
the rounding; the excess over 1 − α is at most the probability of a band of width 2r,
r <= std·(√m + 1)/2¹¹). It says nothing about θ or the population: it is about F of the
table as read (after drops or clamps).

The quantile q is computed from the exact CDF of N = G + Σ_j c_j L_j (G ~ N(0, s²),
L_j ~ Lap(1)), not by Monte Carlo: the characteristic function
e^{−s²t²/2} Π_j 1/(1 + c_j² t²) has the partial-fraction expansion
Σ_j w_j e^{−s²t²/2}/(1 + c_j² t²), w_j = Π_{k≠j} c_j²/(c_j² − c_k²), so for distinct c_j

    F_N(x) = Σ_j w_j F_{s,c_j}(x),
    F_{s,c}(x) = Φ(x/s) − ½ e^{s²/(2c²) − x/c} Φ(x/s − s/c) + ½ e^{s²/(2c²) + x/c} Φ(−x/s − s/c)

(the normal–Laplace CDF; s = 0 gives the Laplace CDF). Scales closer than a relative
10⁻³ are first moved apart *upwards*: by Anderson's theorem a larger scale of a
symmetric unimodal component can only lower P(|N| <= q), so the interval stays valid
(and at most 0.1% wider per merged component). F_N is evaluated with ``mpmath`` at a
working precision that covers the cancellation of the w_j (64 bits + log₂ Σ|w_j|), q
is bracketed by bisection and its upper end checked against the target with the
evaluation's error bound (``mpmath``'s erf/exp assumed accurate to a few units in the
last place at working precision, as for the sampler).

Where all the noise is Gaussian, :func:`joint_region` also gives the joint ellipsoid
{x : ||Σ^{+½}(o − x)|| <= √χ²_r(1 − α) + ρ} on the noisy subspace (rank r; ρ bounds the
rounding's Mahalanobis norm) and lists the combinations uᵀF that carry no noise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidParameterError
from .sampler import mp_context

#: Default (1 − α) of ``--interval-level``.
DEFAULT_LEVEL = 0.95
#: Laplace scales closer than this relative gap are moved apart (upwards) before the partial fractions.
SEPARATION = 1e-3
#: Relative floating-point slack added to every rounding bound.
FLOAT_SLACK = 2.0**-40
#: Null directions of the noise covariance: eigenvalues below this fraction of the largest (std ratio 1e-6;
#: eigh's rounding of a zero eigenvalue is ~1e-16 of the largest).
_NULL = 1e-12


def check_level(level: Any, name: str = "interval_level") -> float:
    """(1 − α) in (0, 1); a DistPrivError naming ``name`` otherwise."""
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise InvalidParameterError(f"must be a number in (0, 1), got {level!r}", argument=name)
    v = float(level)
    if not (0.0 < v < 1.0) or not math.isfinite(v):
        raise InvalidParameterError(f"must be in (0, 1), got {level!r}", argument=name)
    return v


# --------------------------------------------------------------------------- the exact CDF
@dataclass(frozen=True)
class MarginalLaw:
    """N = G + Σ_j c_j L_j: Gaussian std ``gaussian`` (s), Laplace scales ``laplace`` (c_j > 0), and the rounding bound."""

    gaussian: float
    laplace: tuple[float, ...]
    rounding: float

    @property
    def std(self) -> float:
        return math.sqrt(self.gaussian**2 + 2.0 * sum(c * c for c in self.laplace))

    @property
    def family(self) -> str:
        """``gaussian``, ``laplace``, ``gaussian+laplace`` or ``none``."""
        parts = [p for p, on in (("gaussian", self.gaussian > 0), ("laplace", bool(self.laplace))) if on]
        return "+".join(parts) or "none"


def _separate(scales: Sequence[float]) -> list[float]:
    """Sorted scales, each at least (1 + SEPARATION)× the previous (moved up only: Anderson's theorem)."""
    out: list[float] = []
    for c in sorted(float(c) for c in scales if c > 0):
        if out and c < out[-1] * (1.0 + SEPARATION):
            c = out[-1] * (1.0 + SEPARATION)
        out.append(c)
    return out


def _weights(ctx: Any, scales: Sequence[float]) -> list[Any]:
    ws = []
    for j, cj in enumerate(scales):
        w = ctx.mpf(1)
        for k, ck in enumerate(scales):
            if k != j:
                w *= ctx.mpf(cj) ** 2 / (ctx.mpf(cj) ** 2 - ctx.mpf(ck) ** 2)
        ws.append(w)
    return ws


def _normal_laplace_cdf(ctx: Any, x: Any, s: float, c: float) -> Any:
    if s == 0:
        return ctx.exp(x / c) / 2 if x < 0 else 1 - ctx.exp(-x / c) / 2
    sm, cm = ctx.mpf(s), ctx.mpf(c)
    a = sm**2 / (2 * cm**2)
    return (ctx.ncdf(x / sm) - ctx.exp(a - x / cm) * ctx.ncdf(x / sm - sm / cm) / 2
            + ctx.exp(a + x / cm) * ctx.ncdf(-x / sm - sm / cm) / 2)


def _precision(scales: Sequence[float]) -> int:
    if len(scales) <= 1:
        return 96
    ctx = mp_context()
    ctx.prec = 64
    total = sum(abs(w) for w in _weights(ctx, scales))
    return 96 + max(0, int(ctx.log(total, 2)) + 1)


def noise_cdf(x: float, gaussian: float, laplace: Sequence[float], *, prec: int | None = None) -> float:
    """P(G + Σ_j c_j L_j <= x), G ~ N(0, gaussian²), L_j ~ Lap(1) independent (module docstring's formula).

    The c_j are used as given when pairwise distinct (raise :class:`InvalidParameterError` otherwise; the
    interval code separates them first).
    """
    cs = [float(c) for c in laplace if c > 0]
    if len(set(cs)) != len(cs):
        raise InvalidParameterError("laplace: the scales must be distinct")
    return float(_cdf(x, float(gaussian), cs, prec or _precision(cs)))


def _cdf(x: float, s: float, cs: Sequence[float], prec: int) -> Any:
    ctx = mp_context()
    ctx.prec = prec
    xm = ctx.mpf(x)
    if not cs:
        return ctx.ncdf(xm / s) if s > 0 else (ctx.mpf(1) if x >= 0 else ctx.mpf(0))
    ws = _weights(ctx, cs)
    return sum(w * _normal_laplace_cdf(ctx, xm, s, c) for w, c in zip(ws, cs, strict=True))


def noise_quantile(p: float, gaussian: float, laplace: Sequence[float]) -> float:
    """Cached :func:`_noise_quantile` (a pure function of its arguments)."""
    return _noise_quantile(float(p), float(gaussian), tuple(float(c) for c in laplace))


@functools.lru_cache(maxsize=1024)
def _noise_quantile(p: float, gaussian: float, laplace: tuple[float, ...]) -> float:
    """A certified upper bound (within ~10⁻¹² relative) of the p-quantile, p in [½, 1), of G + Σ c_j L_j.

    Closed form without Laplace (s·Φ⁻¹(p)) and with one Laplace and no Gaussian (−c·ln(2(1 − p))); otherwise
    bisection on the exact CDF, the upper end accepted only when F(q) − p exceeds the evaluation's error
    bound. Laplace scales closer than :data:`SEPARATION` are moved apart upwards first (conservative).
    """
    if not 0.5 <= p < 1.0:
        raise InvalidParameterError(f"p: must be in [0.5, 1), got {p}")
    s = float(gaussian)
    cs = _separate(laplace)
    if not cs:
        if s <= 0:
            return 0.0
        ctx = mp_context()
        ctx.prec = 96
        q = s * float(ctx.sqrt(2) * ctx.erfinv(2 * ctx.mpf(p) - 1))
        return q * (1 + 2.0**-45)
    if s == 0 and len(cs) == 1:
        return -cs[0] * math.log(2.0 * (1.0 - p)) * (1 + 2.0**-45)
    prec = _precision(cs)
    ctx = mp_context()
    ctx.prec = 64
    err = float(sum(abs(w) for w in _weights(ctx, cs))) * 2.0 ** (24 - prec)
    std = math.sqrt(s * s + 2 * sum(c * c for c in cs))
    lo, hi = 0.0, std
    while float(_cdf(hi, s, cs, prec)) - err < p:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        mid = 0.5 * (lo + hi)
        if float(_cdf(mid, s, cs, prec)) - err >= p:
            hi = mid
        else:
            lo = mid
    return hi * (1 + 2.0**-45)


# --------------------------------------------------------------------------- the plan's marginals
def _plan_parts(plan: Any) -> tuple[Any, NDArray[np.float64] | None]:
    """(NoisePlan, per-statistic d_k or None) of a NoisePlan or StandardizedPlan."""
    inner = getattr(plan, "plan", None)
    if inner is not None and hasattr(plan, "scale"):
        return inner, np.asarray(plan.scale, dtype=float)
    return plan, None


def rounding_bounds(plan: Any) -> NDArray[np.float64]:
    """|R_k| bound per statistic (module docstring), before the floating-point slack."""
    p, d = _plan_parts(plan)
    m = int(p.dim)
    if p.grid is None:
        return np.zeros(m)
    g = float(p.grid)
    stage2 = float(p.extra_laplace_scale) > 0
    if p.has_stage1:
        if p.rotated:
            r = 0.5 * g * np.abs(np.asarray(p.basis, dtype=float)).sum(axis=1) + 0.5 * g
        else:
            r = np.full(m, 0.5 * g) + (0.5 * g if stage2 else 0.0)
    else:  # Theorem 5.7 stage only: one rounding
        r = np.full(m, 0.5 * g)
    if d is not None:
        r = d * r + 0.5 * np.asarray(plan.grids, dtype=float)
    return np.asarray(r, dtype=float)


def marginal_laws(plan: Any) -> list[MarginalLaw]:
    """The law of each statistic's noise N_k in the published units (and its rounding bound)."""
    p, d = _plan_parts(plan)
    m = int(p.dim)
    scale = np.ones(m) if d is None else d
    r = rounding_bounds(plan)
    if p.grid is None:
        return [MarginalLaw(0.0, (), 0.0) for _ in range(m)]
    v = np.asarray(p.basis, dtype=float)
    out = []
    for i in range(m):
        var = 0.0
        lap: list[float] = []
        for j, (law, sc) in enumerate(zip(p.laws, p.scales, strict=True)):
            coef = abs(float(v[i, j])) * float(scale[i])
            if law == "gaussian" and sc > 0:
                var += (coef * float(sc)) ** 2
            elif law == "laplace" and sc > 0 and coef * float(sc) > 0:
                lap.append(coef * float(sc))
        if float(p.extra_laplace_scale) > 0:
            lap.append(float(p.extra_laplace_scale) * float(scale[i]))
        out.append(MarginalLaw(math.sqrt(var), tuple(lap), float(r[i])))
    return out


@dataclass(frozen=True)
class StatisticInterval:
    """One statistic's (1 − α) interval: [lo, hi] = value ± half_width (half_width = q + rounding)."""

    lo: float
    hi: float
    half_width: float
    quantile: float
    rounding: float
    family: str
    level: float

    def to_list(self) -> list[float]:
        return [self.lo, self.hi]


def _outward(lo: float, hi: float) -> tuple[float, float]:
    return math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)


def statistic_intervals(values: ArrayLike, plan: Any, level: float = DEFAULT_LEVEL) -> list[StatisticInterval]:
    """Per-statistic (1 − α) intervals for F(D) around the published ``values`` (not simultaneous)."""
    lvl = check_level(level)
    vals = np.asarray(values, dtype=float).ravel()
    laws = marginal_laws(plan)
    if len(laws) != vals.size:
        raise InvalidParameterError(f"values: expected {len(laws)} published values, got {vals.size}")
    p = 1.0 - (1.0 - lvl) / 2.0
    out = []
    cache: dict[tuple[float, tuple[float, ...]], float] = {}
    for o, law in zip(vals, laws, strict=True):
        key = (law.gaussian, law.laplace)
        if key not in cache:
            cache[key] = noise_quantile(p, law.gaussian, law.laplace)
        q = cache[key]
        if law.family == "none" and law.rounding == 0.0:
            out.append(StatisticInterval(float(o), float(o), 0.0, 0.0, 0.0, "none", lvl))
            continue
        slack = FLOAT_SLACK * (abs(float(o)) + q + law.rounding) * max(1, len(laws))
        hw = q + law.rounding + slack
        lo, hi = _outward(float(o) - hw, float(o) + hw)
        out.append(StatisticInterval(lo, hi, hw, q, law.rounding, law.family, lvl))
    return out


# --------------------------------------------------------------------------- display
def display(value: float, half_width: float) -> str:
    """``value ± half-width`` shown to the digits the interval supports.

    The half-width is rounded *up* to two significant digits and the value rounded to the same decimal place
    (digits beyond it are noise: the interval cannot tell them apart). A zero half-width (noiseless release)
    shows the value with 15 significant digits.
    """
    v = float(value)
    h = float(half_width)
    if not h > 0 or not math.isfinite(h):
        return f"{v:.15g}"
    e = math.floor(math.log10(h)) - 1  # the decimal place of the second significant digit of h
    step = 10.0**e
    hr = math.ceil(h / step * (1 - 1e-12)) * step  # round the half-width up
    if hr >= 10.0 ** (e + 2):  # 99.x -> 100: one more digit place
        e += 1
        step = 10.0**e
        hr = math.ceil(h / step * (1 - 1e-12)) * step
    decimals = max(0, -e)
    vr = round(v / step) * step
    return f"{vr:.{decimals}f} ± {hr:.{decimals}f}"


# --------------------------------------------------------------------------- joint region
def joint_region(values: ArrayLike, plan: Any, level: float = DEFAULT_LEVEL) -> dict[str, Any] | None:
    """The joint (1 − α) ellipsoid when the noise is Gaussian only (else ``None``), and the exact combinations.

    {x : (o − x)ᵀ Σ⁺ (o − x) <= (√χ²_r(1 − α) + ρ)²} on the range of Σ (rank r), ρ = ||R||₂ / √λ_min⁺ the
    rounding's largest Mahalanobis norm; every unit vector u of Σ's null space (published combination without
    noise) satisfies |uᵀ(o − x)| <= Σ_k |u_k| r_k.
    """
    from scipy import special

    lvl = check_level(level)
    p, _ = _plan_parts(plan)
    if p.grid is None:
        return None
    laws = marginal_laws(plan)
    if any(law.laplace for law in laws):
        return None
    o = np.asarray(values, dtype=float).ravel()
    cov = np.asarray(plan.noise_covariance, dtype=float)
    w, vecs = np.linalg.eigh(cov)
    top = float(w.max(initial=0.0))
    keep = w > _NULL * top
    r = np.array([law.rounding for law in laws])
    rank = int(keep.sum())
    rho = float(np.linalg.norm(r)) / math.sqrt(float(w[keep].min())) if rank else 0.0
    radius = math.sqrt(float(special.chdtri(rank, 1.0 - lvl))) + rho if rank else 0.0  # χ²_r quantile at lvl
    exact = [{"coefficients": [float(c) for c in u], "tolerance": float(np.abs(u) @ r)}
             for u in exact_combinations(plan)]
    return {"level": lvl, "center": [float(v) for v in o], "covariance": cov.tolist(), "rank": rank,
            "radius": radius, "exact_combinations": exact,
            "definition": "{x : (o − x)ᵀ Σ⁺ (o − x) <= radius²} on the range of Σ; each exact combination u: "
                          "|uᵀ(o − x)| <= tolerance"}


def exact_combinations(plan: Any) -> list[NDArray[np.float64]]:
    """Unit vectors u (published units) along which the plan adds no noise (u·F published up to rounding).

    The plan's basis coordinates without noise (law ``none``, or a scale below 10⁻⁹ of the largest), when no
    Theorem 5.7 stage adds noise to every statistic; a coordinate v of the standardised plan is the combination
    vᵀD⁻¹F of the published statistics, normalised.
    """
    p, d = _plan_parts(plan)
    if p.grid is None or float(p.extra_laplace_scale) > 0:
        return []
    scales = np.asarray(p.scales, dtype=float)
    top = float(scales.max(initial=0.0))
    v = np.asarray(p.basis, dtype=float)
    out = []
    for j, (law, sc) in enumerate(zip(p.laws, scales, strict=True)):
        if law == "none" or not sc > 1e-9 * top:
            u = v[:, j] if d is None else v[:, j] / d
            out.append(u / np.linalg.norm(u))
    return out
