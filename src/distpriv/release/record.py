"""Record-level differential privacy from the same noise draw as distribution privacy (issue 22 item 2).

A release F(D) + Z with Gaussian Z ~ N(0, Σ_Z) is (E, D)-differentially private for one record
replaced (replace-one neighbours D ~ D′: same n, one row changed) iff

    δ_μ(E) = Φ(μ/2 − E/μ) − e^E Φ(−μ/2 − E/μ) <= D,    μ² = sup_{v ∈ S} vᵀ Σ_Z⁻¹ v,

S the replace-one sensitivity set {F(D) − F(D′)} (Balle & Wang 2018, Thm 8: the privacy loss of
N(x, Σ) against N(x + v, Σ) is that of a 1-D shift of Mahalanobis length ‖v‖_{Σ⁻¹}, and δ_μ(E)
increases with μ). This module computes S for linear statistics from declared public bounds and
the μ of a noise covariance, and chooses the least-error noise meeting both guarantees.

**Sensitivity set.** A linear statistic is F_j(D) = s_j Σ_r v_j(r) (``distpriv.queries``), so
replacing one record changes F by c(r′) − c(r), c(r) = (s_j v_j(r))_j the record's contribution
vector. Statistics are grouped by what they read: every ``mean``/``sum`` of one column forms one
group whose contribution is t·a (t the record's value clamped to the declared [lo, hi], a_j = s_j),
every ``count``/``proportion`` of one predicate a group with t ∈ {0, 1}. Within a group the
differences form the segment [−w, w]·a (w = hi − lo, or 1); a vector statistic (a histogram: one-hot
contributions) forms a group whose differences have the vertices e_a − e_b. Groups read disjoint
coordinates, so S is the product of the groups' difference sets and, vᵀΣ_Z⁻¹v being convex, its
supremum is attained at a product of the groups' vertices: enumerated exactly (at most
:data:`MAX_VERTICES`). The domain assumed is the declared one (each column anywhere in its bounds,
each predicate 0 or 1 independently of the others): μ is exact for it, and an upper bound when
predicates are logically linked (``sex=Female`` and ``sex=Male``). Replace-one sensitivities: sum
hi − lo, mean (hi − lo)/n (n public), count 1, proportion 1/n. The L1 sensitivity (Laplace) is
Σ_groups max_vertex ‖·‖₁ (:meth:`SensitivitySet.l1`).

**Floating point.** The engine sums n clamped values in double precision, and the release divides
by the public diagonal d (:mod:`distpriv.release.standardize`): each computed coordinate is within
e_k = (n + 2)·2⁻⁵²·B_k of the exact one, B_k a public bound on |F_k|/d_k (recursive summation).
Then ‖v + e − e′‖_{Σ⁻¹} <= μ + 2 λ_max(Σ_Z⁻¹)^{1/2} ‖e‖₂, the μ used in the claim.

**Combining** (:func:`combine`). Three families of noise meet both guarantees:

* the chosen distribution-privacy noise Σ plus the least Δ ⪰ 0 (min tr Δ) with
  vᵀ(Σ + Δ)⁻¹v <= μ*² on every vertex: adding independent noise is post-processing, so the
  distribution-privacy claim (and the Theorem 5.7 stage, if any) stays as proved;
* the joint semidefinite program min tr Σ_Z subject to OptM's linear matrix inequalities for every
  pair of Ψ (``distpriv.mechanisms.optm``, the Gaussian fit of f_θ) and
  [[Σ_Z, v], [vᵀ, μ*²]] ⪰ 0 for every vertex v (Schur complement of vᵀΣ_Z⁻¹v <= μ*²), then the
  exact distribution-privacy accounting of :func:`distpriv.mechanisms.exact.account_gaussian`
  (topping up where the fit's covariances differ), used when Gaussianity of f_θ is not rejected.

* for a Laplace candidate (ExpM (L), DirM (L), Wasserstein), Gaussian record noise added in the Laplace
  noise's own basis and drawn after it (:mod:`distpriv.release.record_mixed`).

μ* = D*(E, D) (:func:`distpriv.calibration.gaussian_max_distance`). Every candidate is verified
after the fact (μ recomputed from the final noise, δ_μ(E) <= D) and the least expected error E‖Z‖₂
(standardised units, the selection's criterion) wins; the programs minimise E‖Z‖² = tr Σ_Z. The noise is full rank (every coordinate has a nonzero
sensitivity), so no exact linear combination of the statistics is published.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..calibration import gaussian_delta, gaussian_max_distance
from ..errors import DistPrivError, InvalidParameterError
from ..guarantees import Framework, Guarantee

#: Statistic kinds with a record-DP guarantee (linear in per-record contributions).
LINEAR_KINDS: tuple[str, ...] = ("mean", "sum", "count", "proportion")
#: Most products of group vertices enumerated for the exact worst case.
MAX_VERTICES = 1 << 16
#: Relative margin below μ* the semidefinite programs aim at (absorbs the solver's tolerance).
MARGIN = 1e-6
NEIGHBOURS = "replace-one"
THEOREM = ("Balle & Wang 2018 Thm 8 (analytic Gaussian mechanism) at the worst-case Mahalanobis sensitivity over the "
           "replace-one sensitivity set of the declared bounds")


def check_record_specs(stats: Sequence[str], bounds: Sequence[tuple[str, float, float]] | None = None) -> None:
    """Refuse, from the statistic specifications alone, what record-level DP does not cover.

    Covered: the linear kinds (mean, sum, count, proportion), histograms (``hist:c``, ``hist:x@edges``) and
    group-by sums and counts (``sum:y@by=c``, ``count:P@by=c``): one record's replace-one change is a bounded
    per-record contribution (:func:`layout_sensitivity_set`). Refused with the reason: variances, standard
    deviations, quantiles and ratios (not linear) and group-by means (their group sizes are private: a group
    may hold one record, so one record moves its mean by the column's whole range — publish ``sum:y@by=c`` and
    ``count:…@by=c`` and divide, which is post-processing of both guarantees). With ``bounds`` given, a
    group-by sum over a column without declared bounds is refused too (argument ``bounds``).
    """
    from ..statspec import parse_request

    have = None if bounds is None else {c for c, _, _ in bounds}
    for text in stats:
        req = parse_request(str(text))
        if req.plain or req.kind == "hist" or (req.kind in ("sum", "count") and req.by is not None):
            edges = req.bins
            if req.kind == "hist" and edges and not (math.isinf(edges[0]) and math.isinf(edges[-1])):
                # a value outside every bin refuses the release (statspec.check_data): one replaced record would
                # then decide between a release and a refusal, which record-level DP does not allow
                raise InvalidParameterError(
                    f"record-level DP needs the bins of {text!r} to cover every value: start them at -inf and end "
                    "them at inf (one record outside every bin would otherwise refuse the release)",
                    argument="stats")
            if have is not None and req.kind in ("mean", "sum") and req.target not in have:
                raise InvalidParameterError(
                    f"record-level DP needs declared public bounds for column {req.target!r} (statistic {text!r}), "
                    f"e.g. {req.target}=LO:HI; never take them from the private table", argument="bounds")
            continue
        if req.kind == "mean" and req.by is not None:
            why = ("a group-by mean: its group sizes are private (a group may hold one record), so one record moves "
                   "a group mean by the column's whole range; publish its sums and counts instead "
                   f"(sum:{req.target}@by={req.by} and count:…@by={req.by}) and divide them, which is "
                   "post-processing of both guarantees")
        else:
            why = "not linear: its change when one record is replaced is not a bounded per-record contribution"
        raise InvalidParameterError(
            f"record-level DP is offered for linear statistics ({', '.join(LINEAR_KINDS)}, histograms, group-by "
            f"sums and counts); {text!r} is {why} (drop it, or release it without record_epsilon)",
            argument="record_epsilon")


def categorical_group(coords: Sequence[int], dim: int, scale: float = 1.0) -> NDArray[np.float64]:
    """Difference vertices of a one-hot contribution over ``coords`` (a histogram): scale·(e_a − e_b), a ≠ b.

    Every record falls in exactly one category, so replacing it moves one count down and another up; the
    convex hull of these differences is the replace-one set of the vector statistic (L2 sensitivity √2,
    L1 sensitivity 2 for counts).
    """
    out = []
    for a in coords:
        for b in coords:
            if a != b:
                v = np.zeros(dim)
                v[a], v[b] = scale, -scale
                out.append(v)
    return np.asarray(out, dtype=float).reshape(-1, dim)


def check_record_query(query: Any, bounds: Sequence[tuple[str, float, float]]) -> None:
    """Refuse record DP for a statistic without a bounded replace-one sensitivity, or a column without bounds."""
    have = {c for c, _, _ in bounds}
    for stat in query.statistics:
        if stat.kind not in LINEAR_KINDS:
            raise InvalidParameterError(
                f"record-level DP is offered for linear statistics ({', '.join(LINEAR_KINDS)}); {stat.name!r} is "
                f"a {stat.kind}, whose change when one record is replaced is not a bounded per-record contribution "
                "(drop it, or release it without record_epsilon)", argument="record_epsilon")
        col = getattr(stat, "column", None)
        if stat.kind in ("mean", "sum") and col not in have:
            raise InvalidParameterError(
                f"record-level DP needs declared public bounds for column {col!r} (statistic {stat.name!r}), e.g. "
                f"{col}=LO:HI; never take them from the private table", argument="bounds")


# --------------------------------------------------------------------------- sensitivity set
@dataclass(frozen=True)
class SensitivitySet:
    """The replace-one sensitivity set S of a linear query, in the units the noise is added in.

    ``groups``: per group, its difference vertices (each an (m,) vector; closed under negation);
    ``slack``: the floating-point term e (module docstring); ``dim``: m.
    """

    groups: tuple[NDArray[np.float64], ...]
    slack: NDArray[np.float64]
    dim: int
    labels: tuple[str, ...] = ()
    #: domain assumptions beyond the base ones of :class:`RecordClaim` (histograms, group-by)
    assumptions: tuple[str, ...] = ()

    def scaled(self, scale: NDArray[np.float64]) -> SensitivitySet:
        """S for D⁻¹F (every vector divided by d componentwise)."""
        d = np.asarray(scale, dtype=float)
        return replace(self, groups=tuple(g / d for g in self.groups), slack=self.slack / d)

    @property
    def count(self) -> int:
        return math.prod(len(g) for g in self.groups)

    def vertices(self) -> NDArray[np.float64]:
        """Every product of group vertices (one per sign class: v and −v give the same vᵀAv), shape (K, m).

        Computed once per set (the set is immutable); the array returned is read-only.
        """
        cached = self.__dict__.get("_vertices")
        if cached is None:
            cached = self._enumerate()
            cached.setflags(write=False)
            self.__dict__["_vertices"] = cached
        return cached

    def supports(self) -> list[NDArray[np.intp]] | None:
        """The coordinates each group moves, when the groups' supports are disjoint and cover every coordinate."""
        out = [np.flatnonzero(np.any(g != 0, axis=0)) for g in self.groups]
        seen = np.zeros(self.dim, dtype=int)
        for sup in out:
            seen[sup] += 1
        return out if bool(np.all(seen == 1)) else None

    def _enumerate(self) -> NDArray[np.float64]:
        if self.count > MAX_VERTICES:
            raise InvalidParameterError(
                f"the replace-one sensitivity set has {self.count:,} vertices (more than {MAX_VERTICES:,}): too many "
                "independently bounded statistics for the exact worst case; release fewer at once",
                argument="record_epsilon")
        first, *rest = self.groups
        half = first[: max(1, len(first) // 2)] if _symmetric_halves(first) else first
        out = [np.sum(combo, axis=0) for combo in itertools.product(half, *rest)]
        return np.asarray(out, dtype=float).reshape(-1, self.dim)

    def per_statistic(self) -> NDArray[np.float64]:
        """sup_{v ∈ S} |v_j| per statistic: its replace-one sensitivity (sum hi − lo, mean (hi − lo)/n, count 1, ...)."""
        return np.max(np.stack([np.max(np.abs(g), axis=0) for g in self.groups]), axis=0)

    def l2(self) -> float:
        """sup_{v ∈ S} ‖v‖₂ (the Gaussian sensitivity of an isotropic noise)."""
        return float(np.sqrt(sum(float(np.max(np.sum(g * g, axis=1))) for g in self.groups)))

    def l1(self) -> float:
        """sup_{v ∈ S} ‖v‖₁ (the Laplace sensitivity), groups reading disjoint coordinates."""
        return float(sum(float(np.max(np.abs(g).sum(axis=1))) for g in self.groups))


def _symmetric_halves(g: NDArray[np.float64]) -> bool:
    """True when g lists v_1..v_k then −v_1..−v_k (the layout this module builds)."""
    k = len(g) // 2
    return len(g) % 2 == 0 and k > 0 and bool(np.array_equal(g[k:], -g[:k]))



def _per_record(stat: Any, lim: dict[str, tuple[float, float]] | None
                ) -> tuple[tuple[str, str], float, float, str]:
    """One record's contribution to a linear statistic: (group key, range width, max |value|, label).

    A mean/sum reads its column within the declared bounds [lo, hi] (``lim``; width hi − lo, |v| <= max(|lo|,
    |hi|)); a count/proportion reads its predicate, 0 or 1 (``lim`` is ``None``).
    """
    if lim is None:
        return ("predicate", str(stat.predicate)), 1.0, 1.0, f"predicate {stat.predicate} in {{0, 1}}"
    lo, hi = lim[stat.column]
    return (("column", str(stat.column)), hi - lo, max(abs(lo), abs(hi)),
            f"column {stat.column} in [{lo:g}, {hi:g}]")

def sensitivity_set(query: Any, bounds: Sequence[tuple[str, float, float]], n: int) -> SensitivitySet:
    """S of ``query`` for datasets of ``n`` records (module docstring), in the statistics' units."""
    check_record_query(query, bounds)
    lim = {c: (lo, hi) for c, lo, hi in bounds}
    m = query.dim
    keyed: dict[tuple[str, str], NDArray[np.float64]] = {}
    labels: dict[tuple[str, str], str] = {}
    bound = np.zeros(m)
    for j, stat in enumerate(query.statistics):
        s = 1.0 / n if stat.kind in ("mean", "proportion") else 1.0
        key, width, top, labels[key] = _per_record(stat, lim if stat.kind in ("mean", "sum") else None)
        a = keyed.setdefault(key, np.zeros(m))
        a[j] = s * width
        bound[j] = n * s * top  # |F_j| <= n·s_j·max|v|
    groups = tuple(np.vstack([a, -a]) for a in keyed.values())
    slack = (n + 2) * 2.0**-52 * bound
    return SensitivitySet(groups, slack, m, tuple(labels[k] for k in keyed))


def _one_hot_differences(coords: Sequence[int], dim: int, values: Sequence[float], width: float
                         ) -> NDArray[np.float64]:
    """Vertices of the replace-one differences of a one-hot contribution, as ``[V; −V]`` (one row per sign class).

    A record contributes t·e_g to one coordinate g of ``coords`` (t in an interval with end points ``values``,
    ``width`` its length; t = 1 for counts) or nothing (it lies in no bin/group). The differences are
    t·e_a − u·e_b (a ≠ b: a box, vertices t, u ∈ ``values``), (t − u)·e_a (a segment, ±width·e_a) and ±t·e_a
    (a record moved in or out): vᵀAv being convex, its supremum over their union is attained at these vertices.
    """
    rows: dict[tuple[float, ...], NDArray[np.float64]] = {}

    def add(v: NDArray[np.float64]) -> None:
        nz = np.flatnonzero(v)
        if nz.size and v[nz[0]] < 0:
            v = -v
        rows.setdefault(tuple(float(x) for x in v), v)

    for i, a in enumerate(coords):
        for b in coords[i + 1:]:
            for t in values:
                for u in values:
                    v = np.zeros(dim)
                    v[a], v[b] = t, -u
                    add(v)
        for t in ([width] if width > 0 else []) + [t for t in values if t != 0]:
            v = np.zeros(dim)
            v[a] = t
            add(v)
    half = np.asarray(list(rows.values()) or [np.zeros(dim)], dtype=float).reshape(-1, dim)
    return np.vstack([half, -half])


#: The domain assumption of histograms and group-by (:func:`layout_sensitivity_set`).
ONE_HOT = ("each record lies in at most one bin of a histogram and in at most one group of a group-by (a value "
           "absent from the population's levels or the declared groups lies in none), a group-by sum adding its "
           "value within the column's bounds to its group's coordinate; statistics are bounded independently of "
           "each other: μ is exact for that domain, an upper bound where two statistics read the same column")


def layout_sensitivity_set(layout: Any, bounds: Sequence[tuple[str, float, float]], n: int) -> SensitivitySet:
    """S of the published coordinates of a :class:`~distpriv.statspec.Layout` of linear outputs (issue 22 item 2).

    Plain outputs as in :func:`sensitivity_set` (one group per column or predicate). A histogram or group-by
    output with coordinates G (:meth:`~distpriv.statspec.Output.contributions`: counts ``1[P ∧ c = g]`` or
    sums ``y·1[c = g]``) is one group whose contribution is t·e_g or 0 (:func:`_one_hot_differences`):
    a histogram's replace-one sensitivity is L1 2 and L2 √2 (one count down, another up), a group-by sum's
    worst case is enumerated over t·e_a − u·e_b, ±(hi − lo)·e_a and ±t·e_a (t, u ∈ {lo, hi}). Coordinates are in the statistics' units (counts and
    sums are not divided by n); :meth:`SensitivitySet.scaled` applies the public diagonal.
    """
    lim = {c: (lo, hi) for c, lo, hi in bounds}
    m = layout.dim
    keyed: dict[tuple[str, str], NDArray[np.float64]] = {}
    labels: dict[tuple[str, str], str] = {}
    vector: list[tuple[NDArray[np.float64], str]] = []
    bound = np.zeros(m)
    extra: tuple[str, ...] = ()
    for out, sl in zip(layout.outputs, layout.slices, strict=True):
        if not out.linear:
            check_record_specs([out.spec])  # raises with the reason
        stats = out.contributions()
        if not out.vector:
            (stat,) = stats
            j = sl.start
            s = 1.0 / n if stat.kind in ("mean", "proportion") else 1.0
            if stat.kind in ("mean", "sum"):
                if stat.column not in lim:
                    check_record_query(SimpleQuery((stat,)), bounds)
                key, width, top, labels[key] = _per_record(stat, lim)
            else:
                key, width, top, labels[key] = _per_record(stat, None)
            a = keyed.setdefault(key, np.zeros(m))
            a[j] = s * width
            bound[j] = n * s * top
            continue
        coords = list(range(sl.start, sl.stop))
        extra = (ONE_HOT,)
        if stats[0].kind == "sumif":
            col = str(stats[0].column)
            if col not in lim:
                check_record_specs([out.spec], bounds)
            lo, hi = lim[col]
            values: tuple[float, ...] = (lo, hi)
            width, top = hi - lo, max(abs(lo), abs(hi))
            what = f"group-by sum {out.name}: {col} in [{lo:g}, {hi:g}] added to one of {len(coords)} groups or none"
        else:
            values, width, top = (1.0,), 0.0, 1.0
            what = f"{'histogram' if out.kind == 'hist' else 'group-by count'} {out.name}: one of {len(coords)} " \
                   "coordinates or none"
        vector.append((_one_hot_differences(coords, m, values, width), what))
        bound[sl] = n * top
    groups = [np.vstack([a, -a]) for a in keyed.values()] + [g for g, _ in vector]
    names = [labels[k] for k in keyed] + [w for _, w in vector]
    slack = (n + 2) * 2.0**-52 * bound
    return SensitivitySet(tuple(groups), slack, m, tuple(names), extra)


@dataclass(frozen=True)
class SimpleQuery:
    """A query-like holder of statistics (for :func:`check_record_query`'s messages)."""

    statistics: tuple[Any, ...]


# --------------------------------------------------------------------------- accounting
def max_mahalanobis(cov: NDArray[np.float64], sens: SensitivitySet) -> float:
    """μ = sqrt(max_v vᵀΣ⁻¹v) + 2 λ_max(Σ⁻¹)^{1/2}‖e‖₂ over the vertices of S; ``inf`` for a singular Σ on S."""
    c = 0.5 * (np.asarray(cov, dtype=float) + np.asarray(cov, dtype=float).T)
    w, u = np.linalg.eigh(c)
    if w.size == 0 or not float(w[0]) > 1e-300 or float(w[0]) <= 1e-14 * float(w[-1]):
        return math.inf
    verts = sens.vertices()
    proj = verts @ u
    q = float(np.max(np.sum(proj * proj / w, axis=1)))
    return math.sqrt(q) + 2.0 * float(np.linalg.norm(sens.slack)) / math.sqrt(float(w[0]))


def record_delta(mu: float, epsilon: float) -> float:
    """δ_μ(E) of the analytic Gaussian mechanism (1 for μ = inf)."""
    if not math.isfinite(mu):
        return 1.0
    return float(gaussian_delta(mu, epsilon))


@dataclass(frozen=True)
class RecordClaim:
    """The record-level claim of a release: (E, D)-DP, replace-one neighbours, and how it was established."""

    epsilon: float
    delta: float
    mu: float
    mu_max: float
    proven_delta: float
    bounds: tuple[tuple[str, float, float], ...]
    sensitivities: dict[str, float]
    assumptions: tuple[str, ...]
    combination: str
    candidates: dict[str, float] = field(default_factory=dict)

    def guarantee(self) -> Guarantee:
        return Guarantee(self.epsilon, self.delta, "record-dp-gaussian", framework=Framework.DIFFERENTIAL,
                         assumptions=self.assumptions, theorem=THEOREM)

    def to_dict(self) -> dict[str, Any]:
        """``record_guarantee`` of the public payload (public: bounds, the noise law and the claim only)."""
        return {"epsilon": self.epsilon, "delta": self.delta, "framework": Framework.DIFFERENTIAL.value,
                "neighbours": NEIGHBOURS, "mechanism": "gaussian", "theorem": THEOREM,
                "worst_case_mahalanobis": self.mu, "max_mahalanobis": self.mu_max,
                "proven_delta": self.proven_delta,
                "bounds": {c: [lo, hi] for c, lo, hi in self.bounds},
                "sensitivities": dict(self.sensitivities), "assumptions": list(self.assumptions),
                "combination": self.combination, "candidates_trace": dict(self.candidates)}


# --------------------------------------------------------------------------- least-noise combination
def _record_lmis(x: Any, verts: NDArray[np.float64], mu2: float) -> list[Any]:
    """x − v vᵀ/μ² ⪰ 0 per vertex: the Schur complement of [[x, v], [vᵀ, μ²]] ⪰ 0, i.e. vᵀx⁻¹v <= μ² (μ² > 0)."""
    out = []
    for v in verts:
        lmi = x - np.outer(v, v) / mu2
        out.append(0.5 * (lmi + lmi.T) >> 0)
    return out


def _quad_forms(cov: NDArray[np.float64], verts: NDArray[np.float64]) -> NDArray[np.float64]:
    """vᵀ cov⁻¹ v per vertex (``inf`` along directions where cov is numerically singular)."""
    c = 0.5 * (cov + cov.T)
    w, u = np.linalg.eigh(c)
    proj = verts @ u
    tiny = w <= max(1e-300, 1e-14 * float(np.max(np.abs(w), initial=0.0)))
    q = np.sum(proj[:, ~tiny] ** 2 / w[~tiny], axis=1)
    hit = np.any(np.abs(proj[:, tiny]) > 1e-12 * (1.0 + np.abs(verts).max()), axis=1)
    return np.where(hit, np.inf, q)


#: Vertices in the first active set of :func:`_solve` (per coordinate), and added per round at most.
#: The programs (the joint SDP and each Gaussian candidate's least-trace addition) are solved for at most this many
#: noise coordinates. Beyond it one interior-point solve takes about a minute of CPU (Clarabel, 18 coordinates:
#: Adult's education histogram with two more statistics); the certified closed-form options (each candidate plus
#: the least multiple of the record-only noise, and the Laplace candidates with Gaussian noise in their basis) are
#: used instead, and the claim's ``candidates_trace`` says that the programs were not solved.
MAX_PROGRAM_DIM = 10
ACTIVE_PER_DIM = 2
MAX_ROUNDS = 25


def _solve(base: NDArray[np.float64] | None, verts: NDArray[np.float64], mu_star: float,
           distp: list[tuple[NDArray[np.float64], NDArray[np.float64]]], d_star: float,
           active: list[int] | None = None, start: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """min tr Δ s.t. the record LMIs on base + Δ (``base`` given), or min tr Σ_Z s.t. record and DistP LMIs.

    Cutting planes: the program is solved with the record LMIs of an active set of vertices (first the worst
    ones under ``base``, or the identity), then every vertex is checked and the most violated ones are added,
    until none is violated beyond μ* (:func:`_pad` then removes the solver's last tolerance). A relaxation's
    optimum that meets every constraint is the full program's optimum, so this is exact, with a handful of
    LMIs instead of one per vertex (thousands for histograms and group-by). ``active``: vertex indices to
    start from (extended in place with those added: later programs over the same vertices start warm);
    ``start``: the covariance whose worst vertices form the first active set (default ``base``, or I).
    """
    m = verts.shape[1]
    k = ACTIVE_PER_DIM * m
    if len(verts) <= 2 * k:
        return _solve_set(base, verts, mu_star, distp, d_star)
    if start is None or not np.isfinite(_quad_forms(start, verts)).all():
        start = base if base is not None and np.isfinite(_quad_forms(base, verts)).all() else np.eye(m)
    q = _quad_forms(start, verts)
    if active is None:
        active = []
    active.extend(int(i) for i in np.argsort(-q, kind="stable")[:k] if int(i) not in active)
    for _ in range(MAX_ROUNDS):
        cov = _solve_set(base, verts[active], mu_star, distp, d_star)
        q = _quad_forms(cov, verts)
        q[active] = -np.inf  # already constrained (within the solver's tolerance)
        bad = np.flatnonzero(q > mu_star**2)
        if bad.size == 0:
            return cov
        order = bad[np.argsort(-q[bad], kind="stable")][: 2 * k]
        active.extend(int(i) for i in order)
    return _solve_set(base, verts, mu_star, distp, d_star)


def _solve_set(base: NDArray[np.float64] | None, verts: NDArray[np.float64], mu_star: float,
               distp: list[tuple[NDArray[np.float64], NDArray[np.float64]]], d_star: float) -> NDArray[np.float64]:
    """:func:`_solve` with the record LMIs of every vertex of ``verts``."""
    import cvxpy as cp

    m = verts.shape[1]
    x = cp.Variable((m, m), PSD=True)
    total = x if base is None else x + base
    cons = _record_lmis(total, verts, (mu_star * (1 - MARGIN)) ** 2)
    for s, d in distp:
        col = d.reshape(m, 1)
        block = cp.bmat([[s + x, col], [col.T, np.array([[(d_star * (1 - MARGIN)) ** 2]])]])
        cons.append(0.5 * (block + block.T) >> 0)
    prob = cp.Problem(cp.Minimize(cp.trace(x)), cons)
    prob.solve(solver=cp.CLARABEL)
    if x.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise InvalidParameterError(f"the record-DP semidefinite program was not solved (status {prob.status!r})",
                                    argument="record_epsilon")
    val = np.asarray(x.value, dtype=float)
    val = 0.5 * (val + val.T)
    ev, ue = np.linalg.eigh(val)
    val = (ue * np.clip(ev, 0.0, None)) @ ue.T
    return val if base is None else val + base


def _pad(cov: NDArray[np.float64], sens: SensitivitySet, mu_star: float) -> NDArray[np.float64]:
    """Least k >= 1 with μ(k²Σ) <= μ*: scaling the noise up is post-processing-safe for DistP.

    μ(k²Σ) = μ(Σ)/k exactly (both terms of :func:`max_mahalanobis` scale as 1/k), so k = μ(Σ)/μ* is tried first,
    nudged up by a few ulps while floating point disagrees; the bisection below is the fallback.
    """
    mu = max_mahalanobis(cov, sens)
    if mu <= mu_star:
        return cov
    if math.isfinite(mu):
        k = mu / mu_star
        for _ in range(8):
            if max_mahalanobis(k * k * cov, sens) <= mu_star:
                return k * k * cov
            k *= 1 + 1e-12
    lo, hi = 1.0, 2.0
    while max_mahalanobis(hi * hi * cov, sens) > mu_star:
        hi *= 2.0
        if hi > 1e8:
            raise InvalidParameterError("the record-DP noise cannot be padded to meet D* (solver failure)",
                                        argument="record_epsilon")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if max_mahalanobis(mid * mid * cov, sens) <= mu_star else (mid, hi)
        if hi - lo <= 1e-12 * hi:
            break
    return hi * hi * cov


def least_record_noise(sens: SensitivitySet, mu_star: float) -> NDArray[np.float64]:
    """The least-trace Gaussian covariance meeting record DP alone: min tr Σ s.t. vᵀΣ⁻¹v <= μ*² on S.

    When the groups move disjoint coordinates (:meth:`SensitivitySet.supports`, the sets this module builds) the
    optimum is block diagonal and the program splits: with Σ_g⁽¹⁾ the least-trace solution of group g at μ = 1
    (a scalar max v² for a one-coordinate group, a small cutting-plane program over the group's own coordinates
    otherwise) and t_g = tr Σ_g⁽¹⁾, the blocks Σ_g⁽¹⁾/μ_g² with μ_g² = μ*² √t_g / Σ_h √t_h meet
    Σ_g v_gᵀΣ_g⁻¹v_g <= μ*² at every product vertex, with tr Σ = (Σ_g √t_g)²/μ*². No Σ does better: for any
    feasible Σ and any λ in the simplex over the vertices, Q = Σ_v λ_v vvᵀ gives (tr Q^{1/2})² <= tr Σ · tr(Σ⁻¹Q)
    <= μ*² tr Σ (Cauchy–Schwarz), and the product of the groups' optimal symmetric λ_g makes Q block diagonal
    with tr Q^{1/2} = Σ_g √t_g (the weak-duality bound of least-trace factorisations). Otherwise the joint
    program over S. The result is padded (:func:`_pad`) so that the claim's μ, recomputed on every product
    vertex with the floating-point term, is at most μ*.
    """
    sup = sens.supports()
    if sup is None:
        return _pad(_solve(None, sens.vertices(), mu_star, [], 0.0), sens, mu_star)
    m = sens.dim
    blocks: list[NDArray[np.float64]] = []
    for g, cols in zip(sens.groups, sup, strict=True):
        half = g[: len(g) // 2] if _symmetric_halves(g) else g
        vg = half[:, cols]
        if len(cols) == 1:
            blocks.append(np.array([[float(np.max(vg * vg))]]))
        else:
            blocks.append(least_trace_cover(vg))
    roots = [math.sqrt(float(np.trace(b))) for b in blocks]
    total = math.fsum(roots)
    cov = np.zeros((m, m))
    for b, cols, r in zip(blocks, sup, roots, strict=True):
        cov[np.ix_(cols, cols)] = b * total / (r * mu_star**2)
    return _pad(cov, sens, mu_star)


#: Relative duality gap at which :func:`least_trace_cover` stops, and its most iterations.
COVER_GAP = 1e-4
COVER_ITERATIONS = 20_000


def least_trace_cover(verts: NDArray[np.float64]) -> NDArray[np.float64]:
    """min tr Σ s.t. vᵀΣ⁻¹v <= 1 for every row v of ``verts`` (which span ℝᵐ), by its dual, to a certified gap.

    Weak duality: for λ in the simplex and Q = Σ_v λ_v vvᵀ, every feasible Σ has tr Σ >= (tr Q^{1/2})²
    (:func:`least_record_noise`); and Σ(λ) = s·Q^{1/2} with s = max_v vᵀQ^{-1/2}v is feasible, of trace
    s·tr Q^{1/2}. At the optimum λ* (strong duality) vᵀQ^{-1/2}v = tr Q^{1/2} wherever λ*_v > 0, so the
    multiplicative update λ_v ← λ_v·vᵀQ^{-1/2}v / tr Q^{1/2} (it stays in the simplex, as
    Σ_v λ_v vᵀQ^{-1/2}v = tr Q^{1/2}; the fixed-point iteration of optimal-design problems) is iterated until
    s/tr Q^{1/2} <= 1 + :data:`COVER_GAP`: the Σ returned is feasible and its trace within that factor of the
    least. No semidefinite solver: one m×m eigendecomposition per iteration.
    """
    v = np.asarray(verts, dtype=float)
    lam = np.full(len(v), 1.0 / len(v))
    best: NDArray[np.float64] | None = None
    best_tr = math.inf
    for _ in range(COVER_ITERATIONS):
        q = (v * lam[:, None]).T @ v
        w, u = np.linalg.eigh(0.5 * (q + q.T))
        if not float(w[0]) > 1e-300 * max(1.0, float(w[-1])):
            raise InvalidParameterError(
                "the record sensitivity set does not span every coordinate: some statistics move together for "
                "every record (e.g. mean:x and sum:x of one column are proportional when n is public), so no "
                "record-level noise shape exists for them; release only one of each such group",
                argument="record_epsilon")
        root = np.sqrt(w)
        proj = v @ u
        g = np.sum(proj * proj / root, axis=1)  # vᵀQ^{-1/2}v
        t = float(np.sum(root))  # tr Q^{1/2}
        s = float(np.max(g))
        if s * t < best_tr:
            best_tr, best = s * t, s * ((u * root) @ u.T)
        if s <= t * (1 + COVER_GAP):
            break
        lam = lam * g / t
        lam /= lam.sum()
    assert best is not None
    return 0.5 * (best + best.T)


def _least_scaled_addition(base: NDArray[np.float64], add: NDArray[np.float64], sens: SensitivitySet,
                           mu_star: float) -> NDArray[np.float64]:
    """base + t·add with the least t in (0, 1] (bisection) meeting μ <= μ*; ``add`` meets it alone.

    μ(base + t·add) decreases in t (Loewner order), and t = 1 is feasible since base ⪰ 0: a cheap feasible point
    of the program min tr Δ s.t. μ(base + Δ) <= μ* (:func:`_solve`).
    """
    if max_mahalanobis(base, sens) <= mu_star:
        return base
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if max_mahalanobis(base + mid * add, sens) <= mu_star else (mid, hi)
        if hi - lo <= 1e-6 * hi:
            break
    return _pad(base + hi * add, sens, mu_star)


def _gaussian_stage(cand: Any) -> NDArray[np.float64] | None:
    """The Gaussian stage-1 covariance of a kept candidate (zeros when noiseless), ``None`` for Laplace noise."""
    if cand.base is None:
        return np.zeros((cand.dim, cand.dim))
    law = cand.base.noise
    if law.noiseless:
        return np.zeros((cand.dim, cand.dim))
    if not law.adds_gaussian:
        return None
    return np.asarray(law.gaussian_covariance, dtype=float)


def _with_noise(cand: Any, cov: NDArray[np.float64], *, label: str, guarantee: Guarantee, reason: str) -> Any:
    """A copy of ``cand`` whose stage-1 noise is N(0, cov) (a new Gaussian mechanism)."""
    from ..mechanisms.base import Mechanism
    from ..noise import NoiseLaw
    from .selection import Candidate, expected_l2

    base_g = guarantee
    mech = Mechanism(cand.name, label, cand.dim, NoiseLaw.gaussian(0.5 * (cov + cov.T)), base_g,
                     details={"record_dp": reason})
    err = expected_l2(mech)
    if cand.extra_laplace_scale > 0:
        from .selection import _mc_error

        err = _mc_error(mech, cand.extra_laplace_scale, cand.dim)
    return Candidate(cand.name, label, True, reason, cand.dim, mech, cand.extra_laplace_scale, cand.correction,
                     guarantee, err, cand.relaxation, None, list(cand.notes))


def combine(prep: Any, selection: Any, sens: SensitivitySet, *, epsilon: float, delta: float) -> tuple[Any, RecordClaim]:
    """The least-E‖Z‖² candidate meeting (ε, δ)-DistP for Ψ and (E, D)-DP for one record replaced (module docstring).

    ``sens`` is in the units the noise is added in (standardised). Returns the new selection and the record claim.
    """
    from ..mechanisms._common import Inputs, as_gaussian
    from ..mechanisms.exact import account_gaussian
    from ..mechanisms.optm import _constraints
    from .selection import Selection

    spec = prep.spec
    # D*(E, D) is a root found to ~1e-15: aim 1e-9 below it so that δ_μ(E) <= D holds in floating point too
    mu_star = gaussian_max_distance(epsilon, delta) * (1 - 1e-9)
    verts = sens.vertices()
    warm: list[int] = []  # the active vertices of the cutting planes, shared by the programs below
    options: dict[str, Any] = {}
    notes: dict[str, str] = {}
    dp_cov = least_record_noise(sens, mu_star)  # record DP alone: closed form over the groups
    added = ("record-DP Gaussian noise N(0, Δ) added independently to the distribution-private release "
             "(post-processing: the distribution-privacy claim is unchanged)")
    gaussian: list[tuple[Any, NDArray[np.float64]]] = []
    for cand in selection.candidates:
        if not cand.kept or cand.guarantee is None:
            continue
        cov = _gaussian_stage(cand)
        if cov is None:  # Laplace noise: Gaussian record noise added in its basis (release/record_mixed.py)
            from .record_mixed import mixed_candidate

            try:
                options[cand.name] = mixed_candidate(cand, sens, mu_star)
            except DistPrivError as exc:
                notes[cand.name] = str(exc)
            continue
        gaussian.append((cand, cov))
        try:  # a cheap feasible point: the candidate plus the least multiple of the record-only noise
            total = _least_scaled_addition(cov, dp_cov, sens, mu_star)
        except DistPrivError as exc:
            notes[cand.name] = str(exc)
            continue
        options[cand.name] = _with_noise(cand, total, label=f"{cand.label} + record DP",
                                         guarantee=cand.guarantee.with_assumptions(added),
                                         reason=f"{cand.reason}; plus a multiple of the least record-DP noise")
    diag = selection.diagnostics
    gaussian_ok = "gaussian" in diag.tests and diag.holds("gaussian")
    # E‖Z‖₂ >= (2/π)^{1/2} (tr Σ)^{1/2} for Gaussian Z (‖z‖₂ >= Σ_i w_i|z_i| with w ∝ σ), and the joint program's
    # trace is at least the record-only optimum's: skip the program when that bound cannot beat an option in hand
    joint_floor = math.sqrt(2.0 / math.pi * float(np.trace(dp_cov)) * (1 - 1e-3))
    if options and joint_floor >= min(float(c.expected_l2_error) for c in options.values()):
        notes["joint"] = "not solved: its error is at least that of an option in hand"
    elif dp_cov.shape[0] > MAX_PROGRAM_DIM:
        notes["joint"] = (f"not solved: {dp_cov.shape[0]} noise coordinates exceed the programs' size limit "
                          f"({MAX_PROGRAM_DIM}); the options listed are certified but may carry more noise than "
                          "the least")
    elif gaussian_ok or prep.declared is not None:
        try:
            model = prep.modelling.model
            fit = as_gaussian(model)
            inp = Inputs(model=model, pairs=tuple(spec.pairs), epsilon=spec.epsilon, delta=spec.delta,
                         calibration="exact")
            d_star = gaussian_max_distance(spec.epsilon, spec.delta)
            joint = _pad(_solve(None, verts, mu_star, _constraints(fit, inp), d_star, warm, start=dp_cov), sens,
                         mu_star)
            from ..mechanisms._common import GAUSSIAN
            from ..mechanisms.base import Mechanism
            from ..noise import NoiseLaw

            g0 = Guarantee(spec.epsilon, spec.delta, "optm", calibration="exact", pairs=tuple(spec.pairs),
                           assumptions=(GAUSSIAN,),
                           theorem="joint semidefinite program of OptM's Mahalanobis conditions (Chen & Ohrimenko "
                                   "Cor. B.1 with Balle & Wang 2018 Thm 8) and the record-DP conditions; claim "
                                   "certified by the exact profile")
            mech = account_gaussian(Mechanism("optm", "OptM (G) + record DP", fit.dim,
                                              NoiseLaw.gaussian(joint), g0, details={"record_dp": "joint SDP"}), inp)
            if mech.guarantee.epsilon <= spec.epsilon * (1 + 1e-9) and mech.guarantee.delta <= spec.delta * (1 + 1e-9):
                passed = ("Gaussianity of f_θ not rejected: the claim rests on the exact profile of the Gaussian fit"
                          if prep.declared is None else "declared Gaussian model")
                g = mech.guarantee.with_assumptions(passed)
                from .selection import Candidate, expected_l2

                options["joint"] = Candidate("optm", "OptM (G) + record DP", True,
                                             "least E‖Z‖² Gaussian noise meeting both guarantees (joint SDP)",
                                             fit.dim, mech, 0.0, None, g, expected_l2(mech))
        except DistPrivError as exc:
            notes["joint"] = str(exc)
    else:
        notes["joint"] = "Gaussianity of f_θ rejected: no joint program (the exact profile needs the Gaussian fit)"
    # the least-trace addition per Gaussian candidate (a semidefinite program), only where it can win: adding
    # independent zero-mean noise never lowers E‖Z‖₂ (Jensen), so a candidate whose own error is already at least
    # the best option's cannot win with any Δ ⪰ 0
    for cand, cov in sorted(gaussian, key=lambda cc: float(cc[0].expected_l2_error)):
        best_err = min((float(c.expected_l2_error) for c in options.values()), default=math.inf)
        if float(cand.expected_l2_error) >= best_err:
            continue
        if cov.shape[0] > MAX_PROGRAM_DIM:
            notes[f"{cand.name} (program)"] = (f"not solved: {cov.shape[0]} noise coordinates exceed the programs' "
                                               f"size limit ({MAX_PROGRAM_DIM})")
            continue
        try:
            total = _pad(_solve(cov, verts, mu_star, [], 0.0, warm, start=cov + dp_cov), sens, mu_star)
        except DistPrivError as exc:
            notes[f"{cand.name} (program)"] = str(exc)
            continue
        opt = _with_noise(cand, total, label=f"{cand.label} + record DP",
                          guarantee=cand.guarantee.with_assumptions(added),
                          reason=f"{cand.reason}; plus the least Gaussian noise meeting record DP")
        if cand.name not in options or opt.expected_l2_error < options[cand.name].expected_l2_error:
            options[cand.name] = opt
    if not options:
        raise InvalidParameterError(
            "no noise meets both guarantees: " + "; ".join(f"{k}: {v}" for k, v in notes.items()),
            argument="record_epsilon")
    # least expected error E‖Z‖₂ (the selection's criterion), ties to the joint program
    trace = {k: float(c.expected_l2_error) for k, c in options.items()}
    best_key = min(trace, key=lambda k: (trace[k], k != "joint"))
    best = options[best_key]
    from .record_mixed import MixedCandidate, mixed_mu

    if isinstance(best, MixedCandidate):
        mu = mixed_mu(best.basis_v, best.lap_scales, best.sigma, sens)
    else:
        mu = max_mahalanobis(np.asarray(best.base.noise_covariance, dtype=float), sens)
    proven = record_delta(mu, epsilon)
    if not proven <= delta:  # pragma: no cover - _pad guarantees it
        raise InvalidParameterError(f"record DP not met (δ = {proven:.3g} > {delta:g})", argument="record_epsilon")
    # the distribution-privacy candidates stay as evaluated (the report's error curves are theirs); the combined
    # noise is the chosen one, and every combination tried is in the claim's ``candidates_trace``
    cands = list(selection.candidates)
    unit = sens.per_statistic() * (prep.standardization.scale if prep.standardization is not None else 1.0)
    names = list(spec.names) if getattr(prep, "layout", None) is None else prep.layout.coordinate_names()
    claim = RecordClaim(
        epsilon, delta, mu, mu_star, proven, tuple(spec.bounds),
        {nm: float(v) for nm, v in zip(names, unit, strict=True)},
        (
            "replace-one neighbours: datasets of the same public n differing in one record",
            "every record's values lie in the declared domain (columns within their public bounds, values outside "
            "are clamped before any statistic is computed; each predicate 0 or 1): μ is the exact worst case over "
            "that domain, an upper bound where predicates are logically linked",
            "the engine's sum of n values is within n·2⁻⁵³·Σ|v| of the exact sum (recursive summation)",
            "the noise is drawn exactly from the Gaussian law rounded to the grid (post-processing)",
            "the release is not refused because of the records: the protected group is neither empty nor the whole "
            "table and no value is missing under missing='error' (those refusals depend on single records and are "
            "outside this claim; they write nothing)",
            *sens.assumptions,
        ),
        "joint semidefinite program" if best_key == "joint" else f"{best.label}: the distribution-private noise plus "
        "the least Gaussian record-DP noise",
        trace,
    )
    return Selection(best, cands, selection.diagnostics), claim


def clamped_notes(table: Any, bounds: Sequence[tuple[str, float, float]], query: Any) -> list[str]:
    """Curator-only: per bounded column a mean/sum reads, how many rows of the private table lie outside its bounds.

    Private (a count of the private table): for :attr:`~distpriv.release.core.ReleaseResult.curator_notes` only,
    never a public file. One aggregate pass pushed down to the table's engine.
    """
    import narwhals as nw

    used = {str(s.column) for s in query.statistics if s.kind in ("mean", "sum", "sumif")}
    cols = [(c, lo, hi) for c, lo, hi in bounds if c in used]
    if not cols:
        return []
    src = table.source
    exprs = [((nw.col(c).cast(nw.Float64) < lo) | (nw.col(c).cast(nw.Float64) > hi)).cast(nw.Int64).sum().alias(f"__dp_c{i}")
             for i, (c, lo, hi) in enumerate(cols)]
    out = src.frame.select(*exprs).collect()
    row = out.rows(named=True)[0] if hasattr(out, "rows") else out.to_dict(as_series=False)
    notes = []
    for i, (c, lo, hi) in enumerate(cols):
        k = row[f"__dp_c{i}"]
        k = int(k[0] if isinstance(k, list) else (k or 0))
        notes.append(f"record DP: {k} of the data's {table.rows} rows have {c} outside the declared bounds "
                     f"[{lo:g}, {hi:g}] and were clamped to them")
    return notes
