"""Moment models of Gaussian records for the APGM (Zhang, Ohrimenko & Cummings Section 4.2).

* :class:`ClassConditionalColumn` — the average of a column when a binary sensitive
  attribute splits the records (a scalar moment model for :func:`~distpriv.attribute.apgm_box.apgm_box`);
* :class:`GaussianRecordModel` — n i.i.d. records N(μ, V) with (μ, V) in a box, closed forms
  μ̄_a = μ_j + (V_ij/V_ii)(a − μ_i), V̄ = (V_jj − V_ij²/V_ii)/n, and its own Algorithm 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import (
    RngLike,
    as_rng,
    check_delta,
    check_epsilon,
    check_int,
    check_real,
)
from ..calibration import check_calibration, classic_c, max_distance
from ..errors import InvalidParameterError, UnknownLabelError
from ..guarantees import Calibration
from .apgm import AttributeGaussianMechanism, _classic_note, _classic_proven, _guarantee, _make
from .optimize import Extremum, box_extremum
from .pufferfish import Interval, PufferfishFramework, SecretPair


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
            raise UnknownLabelError(f"attribute {a!r} does not exist; attributes are {list(self.attributes)}", argument=name)

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


