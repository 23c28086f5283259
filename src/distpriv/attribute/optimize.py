"""Suprema and infima of model quantities over a parameter box Θ.

Algorithm 1 needs Δ_iF = sup_θ sup_{(a,b)} |E[F|a,θ] − E[F|b,θ]| and
min_θ Var(F | g_i(X_i), θ) (Zhang et al. Eq. (1), Alg. 1). When Θ is a box of
parameters with open or closed ends, a supremum is taken over the closure (the
functions are continuous) and flagged as *not attained* when the maximiser sits
on an open end — the value is approached, never reached, which is what the
paper's ranges such as k1 ∈ (3, 3.5) mean.

:func:`box_extremum` evaluates every vertex of the box (every combination of
interval ends and of the points of finite coordinates) and then polishes the
best candidates with L-BFGS-B over the continuous coordinates. Vertex
enumeration is exact for functions monotone in each coordinate (e.g. the
multilinear means and variances of the paper's models); the polish covers
interior optima of smooth functions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

from ..errors import InvalidParameterError
from .pufferfish import Interval

Coord = Interval | NDArray[np.float64]


@dataclass(frozen=True)
class Extremum:
    """A supremum / infimum over a box: its value, a maximiser and whether it is attained."""

    value: float
    argument: dict[str, float]
    attained: bool

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "argument": dict(self.argument), "attained": self.attained}


def box_extremum(
    fun: Callable[[dict[str, float]], float],
    coords: Mapping[str, Coord],
    *,
    maximize: bool = True,
    max_candidates: int = 250_000,
    polish: int = 3,
) -> Extremum:
    """sup (or inf) of ``fun`` over a product of intervals and finite point sets.

    ``fun`` returns ``nan`` where the parameters are infeasible (e.g. a covariance
    that is not PSD); such points are skipped. Raises :class:`InvalidParameterError`
    when no candidate is feasible or the vertex count exceeds ``max_candidates``.
    """
    names = list(coords)
    choices: list[list[float]] = []
    continuous: list[int] = []
    for k, name in enumerate(names):
        c = coords[name]
        if isinstance(c, Interval):
            if not c.bounded:
                raise InvalidParameterError(f"range {c} must be bounded to take a supremum over it", argument=name)
            choices.append([c.low] if c.is_point else [c.low, c.high])
            if not c.is_point:
                continuous.append(k)
        else:
            pts = np.atleast_1d(np.asarray(c, dtype=float))
            if pts.size == 0:
                raise InvalidParameterError("empty set of values", argument=name)
            choices.append(sorted({float(p) for p in pts}))
    total = math.prod(len(c) for c in choices)
    if total > max_candidates:
        raise InvalidParameterError(
            f"Θ: {total} vertices to enumerate exceed the limit {max_candidates}; coarsen the secret value sets or fix parameters"
        )
    sign = 1.0 if maximize else -1.0
    scored: list[tuple[float, tuple[float, ...]]] = []
    for combo in itertools.product(*choices):
        v = fun(dict(zip(names, combo, strict=True)))
        if v is not None and np.isfinite(v):
            scored.append((sign * float(v), combo))
    if not scored:
        raise InvalidParameterError("Θ: no feasible parameter combination in the box (e.g. no PSD covariance)")
    scored.sort(key=lambda t: t[0], reverse=True)
    best_val, best_x = scored[0][0], list(scored[0][1])
    if continuous and polish > 0:
        bounds = [(coords[names[k]].low, coords[names[k]].high) for k in continuous]  # type: ignore[union-attr]
        for _, combo in scored[:polish]:
            base = list(combo)

            def neg(z: NDArray[np.float64], base: list[float] = base) -> float:
                x = list(base)
                for k, zk in zip(continuous, z, strict=True):
                    x[k] = float(zk)
                v = fun(dict(zip(names, x, strict=True)))
                return 1e300 if v is None or not np.isfinite(v) else -sign * float(v)

            z0 = np.array([base[k] for k in continuous])
            res = optimize.minimize(neg, z0, method="L-BFGS-B", bounds=bounds)
            if res.success or np.isfinite(res.fun):
                val = -float(res.fun)
                if val > best_val + 1e-12 * max(1.0, abs(best_val)):
                    best_val = val
                    best_x = list(base)
                    for k, zk in zip(continuous, res.x, strict=True):
                        best_x[k] = float(zk)
    arg = dict(zip(names, best_x, strict=True))
    attained = all(
        coords[n].attained(arg[n]) for n in names if isinstance(coords[n], Interval) and not coords[n].is_point  # type: ignore[union-attr]
    )
    return Extremum(value=sign * best_val, argument=arg, attained=attained)


