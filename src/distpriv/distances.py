"""Distances between finite distributions: W∞, (W, δ)-closeness and p-Wasserstein.

A finite distribution on R^m is given by support points ``xs`` (shape (n, m),
or (n,) for m = 1) and weights ``p`` (non-negative, summing to 1). Empirical
samples are the special case of equal weights 1/N.

* :func:`w_infinity` — the ∞-Wasserstein distance with the L1 ground norm
  (Chen & Ohrimenko Definition 4.1)::

      W∞(μ, ν) = inf_{γ ∈ Γ(μ, ν)} max_{(x, y) ∈ supp γ} ||x − y||_1

  (``norm=2`` or ``norm=inf`` swap the ground norm).
* :func:`closeness_radius` — the least W such that μ and ν are (W, δ)-close
  (Chen & Ohrimenko Section 4.1): some γ ∈ Γ(μ, ν) and R ⊆ supp γ with
  ||x − y|| <= W on R and γ(R) >= 1 − δ. The Approximate Wasserstein
  Mechanism (Theorem 4.2) scales Laplace noise to this W.
* :func:`wasserstein` — the p-Wasserstein distance (POT's exact network
  simplex ``ot.emd2``; exact quantile formula in one dimension).

Algorithm (bottleneck transport)
--------------------------------
For a threshold t let G_t be the bipartite graph joining x_i and y_j when
d(x_i, y_j) <= t, and let F(t) be the value of a maximum flow
source → x_i (capacity p_i) → y_j (unbounded, edges of G_t) → sink (capacity q_j).

*(W, δ)-closeness holds iff F(W) >= 1 − δ.* If γ and R witness closeness,
γ restricted to R is a sub-coupling (row sums <= p, column sums <= q) on edges
of G_W, i.e. a flow of value γ(R) >= 1 − δ. Conversely, from a flow f of
value |f| >= 1 − δ the leftover masses r = p − f1 and s = q − fᵀ1 both have
total 1 − |f|, so γ = f + r sᵀ / (1 − |f|) is a coupling of μ and ν (γ = f when
|f| = 1) with γ >= f; R = supp f lies in G_W and γ(R) >= |f| >= 1 − δ.
With δ = 0 this says W∞(μ, ν) is the least t at which G_t carries the whole
unit of mass (a coupling supported on {d <= t}).

F is a non-decreasing step function that only changes at the pairwise
distances, so the least feasible t is one of them: we sort the distinct
pairwise distances (above the lower bound max(max_i min_j d_ij, max_j min_i d_ij)
when δ = 0) and binary search, O(log(nk)) feasibility tests. The feasibility
test is exact:

* integer weights — when p = a/D and q = b/D for integers a, b and a common
  denominator D < 2^31 (empirical samples: D = lcm(N, K)), the flow is an
  integer max-flow (``scipy.sparse.csgraph.maximum_flow``, Dinic; for
  equal-size samples this is a maximum bipartite matching): integer
  arithmetic, no rounding at all. (``maximum_bipartite_matching`` is not used:
  its Hopcroft–Karp DFS takes exponential time on layered graphs such as the
  band-shaped threshold graphs of 1-D data, scipy issue gh-26147.)
  Weights are only treated as a/D when Σ|p − a/D| + Σ|q − b/D| is below the
  mass tolerance, and max-flow is 1-Lipschitz in the capacities (L1), so the
  decision is the same as for the real weights;
* real weights — the max-flow linear program (maximise Σ f_e subject to row
  sums <= p, column sums <= q, f >= 0) solved by the HiGHS dual simplex with
  feasibility tolerances 1e-10. A simplex vertex of this network matrix is
  obtained from the weights by additions and subtractions only, so its value
  is exact up to floating-point rounding of the inputs. (Integer-scaling real
  weights for an integer max-flow is *not* exact, and a pure-Python float
  max-flow, e.g. networkx, is orders of magnitude slower on dense graphs.)

Weights are themselves floats, so "the whole unit of mass" means mass
>= 1 − ``tol`` (default 1e-10); zero-weight points are not in the support
and are dropped.

In one dimension the monotone (quantile) coupling is optimal for W∞ and
every Wp, so W∞ = sup_u |F⁻¹(u) − G⁻¹(u)| and Wp^p = ∫₀¹ |F⁻¹(u) − G⁻¹(u)|^p du
are evaluated exactly in O((n + k) log(n + k)) (``method="auto"`` picks this
path when m = 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import (
    check_array,
    check_choice,
    check_delta,
    check_positive,
    check_probability_vector,
)
from .errors import InvalidParameterError

#: Mass tolerance: a flow of value >= 1 − δ − DEFAULT_TOL counts as moving 1 − δ.
DEFAULT_TOL = 1e-10

_INT32_MAX = 2**31 - 1
_METRICS = {1: "cityblock", 2: "euclidean", math.inf: "chebyshev"}
_METHODS = ("auto", "general", "quantile")
#: Largest n·k for which the general algorithms build the full distance matrix (8 bytes per pair).
MAX_PAIRS = 100_000_000

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------- validation
def _check_norm(norm: Any) -> str:
    """``norm`` ∈ {1, 2, inf} (also "l1", "l2", "inf") -> scipy cdist metric name."""
    if isinstance(norm, str):
        key = norm.strip().lower()
        table = {
            "1": 1,
            "l1": 1,
            "2": 2,
            "l2": 2,
            "inf": math.inf,
            "linf": math.inf,
            "max": math.inf,
        }
        if key not in table:
            raise InvalidParameterError(f"norm: expected 1, 2 or inf, got {norm!r}")
        return _METRICS[table[key]]
    if isinstance(norm, bool) or not isinstance(norm, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"norm: expected 1, 2 or inf, got {norm!r}")
    value = float(norm)
    if value not in _METRICS:
        raise InvalidParameterError(f"norm: expected 1, 2 or inf, got {norm!r}")
    return _METRICS[value]


def _check_points(xs: ArrayLike, name: str) -> FloatArray:
    """Support points as an (n, m) float array; a 1-D array is n points in R^1."""
    arr = check_array(xs, name, ndim=(1, 2))
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape[0] == 0:
        raise InvalidParameterError("must contain at least one support point", argument=name)
    if arr.shape[1] == 0:
        raise InvalidParameterError("support points must have dimension m >= 1", argument=name)
    return arr


def _check_weights(p: ArrayLike, name: str, n: int, points_name: str) -> FloatArray:
    w = check_probability_vector(p, name)
    if w.shape[0] != n:
        raise InvalidParameterError(
            f"has {w.shape[0]} weights but {points_name} has {n} support points", argument=name
        )
    return w / w.sum()


def _check_tol(tol: Any) -> float:
    t = check_positive(tol, "tol", allow_zero=True)
    if t >= 1e-3:
        raise InvalidParameterError(f"tol: must be in [0, 1e-3), got {t}")
    return t


def _check_method(method: Any) -> str:
    return check_choice(method, "method", _METHODS)


def _prepare(
    xs: ArrayLike, p: ArrayLike, ys: ArrayLike, q: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Validate two finite distributions and drop zero-weight points (not in the support)."""
    x = _check_points(xs, "xs")
    y = _check_points(ys, "ys")
    if x.shape[1] != y.shape[1]:
        raise InvalidParameterError(
            f"ys: points have dimension {y.shape[1]} but xs points have dimension {x.shape[1]}"
        )
    pw = _check_weights(p, "p", x.shape[0], "xs")
    qw = _check_weights(q, "q", y.shape[0], "ys")
    kp, kq = pw > 0, qw > 0
    return x[kp], pw[kp], y[kq], qw[kq]


def _check_cost(
    cost: ArrayLike, p: ArrayLike, q: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    c = check_array(cost, "cost", ndim=2)
    if c.shape[0] == 0 or c.shape[1] == 0:
        raise InvalidParameterError(
            f"cost: must have at least one row and one column, got shape {c.shape}"
        )
    pw = check_probability_vector(p, "p")
    qw = check_probability_vector(q, "q")
    if pw.shape[0] != c.shape[0]:
        raise InvalidParameterError(f"p: has {pw.shape[0]} weights but cost has {c.shape[0]} rows")
    if qw.shape[0] != c.shape[1]:
        raise InvalidParameterError(
            f"q: has {qw.shape[0]} weights but cost has {c.shape[1]} columns"
        )
    pw, qw = pw / pw.sum(), qw / qw.sum()
    kp, kq = pw > 0, qw > 0
    return c[np.ix_(kp, kq)], pw[kp], qw[kq]


def _check_samples(X: ArrayLike, Y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    x = _check_points(X, "X")
    y = _check_points(Y, "Y")
    if x.shape[1] != y.shape[1]:
        raise InvalidParameterError(
            f"Y: samples have dimension {y.shape[1]} but X samples have dimension {x.shape[1]}"
        )
    return x, y


def cost_matrix(xs: ArrayLike, ys: ArrayLike, norm: Any = 1) -> FloatArray:
    """Pairwise ground distances d(x_i, y_j) = ||x_i − y_j||_norm, shape (n, k)."""
    x = _check_points(xs, "xs")
    y = _check_points(ys, "ys")
    if x.shape[1] != y.shape[1]:
        raise InvalidParameterError(
            f"ys: points have dimension {y.shape[1]} but xs points have dimension {x.shape[1]}"
        )
    return _cost(x, y, _check_norm(norm))


def _cost(x: FloatArray, y: FloatArray, metric: str) -> FloatArray:
    pairs = x.shape[0] * y.shape[0]
    if pairs > MAX_PAIRS:
        raise InvalidParameterError(
            f"xs, ys: {x.shape[0]} x {y.shape[0]} support points need a {pairs:.3g}-entry distance matrix, "
            f"more than MAX_PAIRS = {MAX_PAIRS:.0e}; subsample (one-dimensional W∞ and Wp use the "
            "O(n log n) quantile path instead)"
        )
    if x.shape[1] == 1:
        return np.abs(x[:, 0][:, None] - y[:, 0][None, :])
    # lazy (as scipy.sparse below): a release that needs no W∞ graph does not import them
    from scipy.spatial.distance import cdist

    return cdist(x, y, metric=metric)


# --------------------------------------------------------------------------- integer weights
def _integer_weights(
    p: FloatArray, q: FloatArray, tol: float
) -> tuple[NDArray[np.int64], NDArray[np.int64], int] | None:
    """(a, b, D) with p ≈ a/D, q ≈ b/D, D < 2^31, when the L1 rounding error is below tol/2.

    Candidate denominators: the support sizes and 1/min weight (empirical
    weights c/N with some c = 1), combined by lcm.
    """

    def cands(w: FloatArray) -> set[int]:
        out = {int(w.shape[0])}
        r = 1.0 / float(w.min())
        if r < _INT32_MAX:
            out.add(max(1, int(round(r))))
        return out

    budget = 0.25 * tol
    for dp in sorted(cands(p)):
        for dq in sorted(cands(q)):
            d = math.lcm(dp, dq)
            if d >= _INT32_MAX:
                continue
            a = np.rint(p * d)
            b = np.rint(q * d)
            if a.sum() != d or b.sum() != d or np.any(a <= 0) or np.any(b <= 0):
                continue
            if np.abs(p - a / d).sum() <= budget and np.abs(q - b / d).sum() <= budget:
                return a.astype(np.int64), b.astype(np.int64), d
    return None


# --------------------------------------------------------------------------- max-flow oracles
def _flow_oracle(
    p: FloatArray, q: FloatArray, tol: float
) -> Callable[[NDArray[np.bool_], float], bool]:
    """Return ``ok(mask, need)``: can the edges where ``mask`` is true carry mass >= need − tol?"""
    n, k = p.shape[0], q.shape[0]
    ints = _integer_weights(p, q, tol)
    if ints is not None:
        a, b, d = ints

        def target_of(need: float) -> int:
            return math.ceil(need * d - tol * d - 1e-9)

        a32 = a.astype(np.int32)
        b32 = b.astype(np.int32)
        # node ids: x_i = i, y_j = n + j, source = n + k, sink = n + k + 1; CSR built row by row
        src_row = np.arange(n, dtype=np.int32)
        y_rows = np.full(k, n + k + 1, dtype=np.int32)

        def ok_intflow(mask: NDArray[np.bool_], need: float) -> bool:
            target = target_of(need)
            rows, cols = np.nonzero(mask)
            row_deg = np.count_nonzero(mask, axis=1)
            if rows.size == 0 or min(a[row_deg > 0].sum(), b[mask.any(axis=0)].sum()) < target:
                return False
            indptr = np.concatenate(
                [[0], np.cumsum(row_deg), rows.size + np.arange(1, k + 1), [rows.size + k + n] * 2]
            )
            indices = np.concatenate([(n + cols).astype(np.int32), y_rows, src_row])
            caps = np.concatenate([np.minimum(a32[rows], b32[cols]), b32, a32]).astype(np.int32)
            from scipy.sparse import csr_array
            from scipy.sparse.csgraph import maximum_flow

            graph = csr_array((caps, indices, indptr), shape=(n + k + 2, n + k + 2))
            return int(maximum_flow(graph, n + k, n + k + 1).flow_value) >= target

        return ok_intflow

    bounds = np.concatenate([p, q])

    def ok_lp(mask: NDArray[np.bool_], need: float) -> bool:
        rows, cols = np.nonzero(mask)
        if rows.size == 0:
            return False
        # cheap upper bound: mass of rows/columns that have at least one edge
        if min(p[mask.any(axis=1)].sum(), q[mask.any(axis=0)].sum()) < need - tol:
            return False
        e = rows.size
        data = np.ones(2 * e)
        from scipy.sparse import coo_array

        a_ub = coo_array(
            (data, (np.concatenate([rows, n + cols]), np.tile(np.arange(e), 2))), shape=(n + k, e)
        ).tocsc()
        from scipy.optimize import linprog  # lazy: scipy.optimize costs ~0.4 s to import

        res = linprog(
            -np.ones(e),
            A_ub=a_ub,
            b_ub=bounds,
            bounds=(0, None),
            method="highs-ds",
            options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        )
        if res.status != 0:  # pragma: no cover - HiGHS always solves this bounded feasible LP
            raise RuntimeError(f"max-flow LP failed: {res.message}")
        return -float(res.fun) >= need - tol

    return ok_lp


def _bottleneck(cost: FloatArray, p: FloatArray, q: FloatArray, delta: float, tol: float) -> float:
    """Least t among the entries of ``cost`` with max-flow(G_t) >= 1 − δ (see module docstring).

    Equal weights on both sides (p = q = 1/n: two samples of one size) take the warm-started
    matching search of :func:`_bottleneck_matching`; other weights the max-flow oracle
    (:func:`_bottleneck_maxflow`). Both return the same value.
    """
    n, k = cost.shape
    if n == k and n > 1 and np.all(p == p[0]) and np.all(q == q[0]) and abs(float(p[0]) * n - 1.0) <= 1e-12:
        need = 1.0 - delta
        if need <= tol:
            return 0.0
        return _bottleneck_matching(cost, max(1, math.ceil(need * n - tol * n - 1e-9)), delta == 0.0)
    return _bottleneck_maxflow(cost, p, q, delta, tol)


def _bottleneck_maxflow(cost: FloatArray, p: FloatArray, q: FloatArray, delta: float, tol: float) -> float:
    """Threshold bisection with a fresh max-flow per threshold (any weights; the baseline of the matching search)."""
    need = 1.0 - delta
    if need <= tol:
        return 0.0
    ok = _flow_oracle(p, q, tol)
    if delta == 0.0:
        # every support point must be coupled with something
        lower = max(float(cost.min(axis=1).max()), float(cost.min(axis=0).max()))
    else:
        lower = float(cost.min())
    vals = np.unique(cost[cost >= lower])
    lo, hi = 0, vals.size - 1  # vals[hi] = max cost is always feasible (complete graph)
    if ok(cost <= vals[lo], need):
        return float(vals[lo])
    while hi - lo > 1:  # invariant: vals[lo] infeasible, vals[hi] feasible
        mid = (lo + hi) // 2
        if ok(cost <= vals[mid], need):
            hi = mid
        else:
            lo = mid
    return float(vals[hi])


class _Window:
    """The edges of a square cost matrix with cost <= ``upper``, in row-major order (CSR without a sort).

    A BFS over G_t, t <= ``upper``, reads the window rows of its frontier and keeps the edges with
    cost <= t, so no graph is rebuilt between thresholds.
    """

    def __init__(self, cost: FloatArray, upper: float) -> None:
        n = cost.shape[0]
        flat = cost.ravel()
        sel = np.flatnonzero(flat <= upper)  # ascending: grouped by row
        self.n = n
        self.indices = sel % n
        self.costs = flat[sel]
        counts = np.bincount(sel // n, minlength=n)
        self.count = counts
        self.start = np.concatenate([[0], np.cumsum(counts)[:-1]])


def _augment_all(win: _Window, t: float, match_x: NDArray[np.int64], match_y: NDArray[np.int64]) -> int:
    """One BFS phase over alternating paths of G_t (window edges with cost <= t); flips vertex-disjoint shortest
    augmenting paths found at the first level that reaches free y's. Returns how many (0: the matching is
    maximum in G_t, Berge's theorem)."""
    n = win.n
    frontier = np.flatnonzero(match_x < 0)
    visited = np.zeros(n, dtype=bool)
    parent = np.full(n, -1, dtype=np.int64)
    while frontier.size:
        c = win.count[frontier]
        total = int(c.sum())
        if total == 0:
            return 0
        offs = np.repeat(win.start[frontier] - (np.cumsum(c) - c), c) + np.arange(total)
        ys = win.indices[offs]
        px = np.repeat(frontier, c)
        fresh = (win.costs[offs] <= t) & ~visited[ys]
        ys, px = ys[fresh], px[fresh]
        if ys.size == 0:
            return 0
        parent[ys] = px  # any frontier neighbour is a valid parent
        new = np.zeros(n, dtype=bool)
        new[ys] = True
        visited |= new
        level = np.flatnonzero(new)
        free = level[match_y[level] < 0]
        if free.size:
            used = np.zeros(n, dtype=bool)
            done = 0
            for y0 in free.tolist():
                path = []
                y = y0
                clash = False
                while True:
                    x = int(parent[y])
                    if used[x]:
                        clash = True
                        break
                    path.append((x, y))
                    prev = int(match_x[x])
                    if prev < 0:
                        break
                    y = prev
                if clash:
                    continue
                for x, y in path:
                    used[x] = True
                    match_x[x] = y
                    match_y[y] = x
                done += 1
            return done
        frontier = match_y[level]
    return 0


def _initial_matching(win: _Window, n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """A maximum matching of the window's graph as (match_x, match_y): one unit-capacity max-flow (scipy's Dinic).

    (Not ``maximum_bipartite_matching``: its DFS takes exponential time on some threshold graphs, scipy gh-26147.)
    """
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_flow

    m = win.indices.size
    # nodes: x_i = i, y_j = n + j, source = 2n, sink = 2n + 1
    indptr = np.concatenate([[0], np.cumsum(win.count), m + np.arange(1, n + 1), [m + 2 * n] * 2])
    indices = np.concatenate([n + win.indices, np.full(n, 2 * n + 1), np.arange(n)]).astype(np.int32)
    graph = csr_array((np.ones(m + 2 * n, dtype=np.int32), indices, indptr), shape=(2 * n + 2, 2 * n + 2))
    flow = maximum_flow(graph, 2 * n, 2 * n + 1).flow
    sub = csr_array(flow)[:n, n:2 * n]
    rows, cols = sub.nonzero()
    pos = np.asarray(sub[rows, cols]).ravel() > 0
    mx = np.full(n, -1, dtype=np.int64)
    my = np.full(n, -1, dtype=np.int64)
    mx[rows[pos]] = cols[pos]
    my[cols[pos]] = rows[pos]
    return mx, my


def _grow(win: _Window, t: float, match_x: NDArray[np.int64], match_y: NDArray[np.int64], need: int) -> int:
    """Augment the matching in place inside G_t until it has ``need`` edges or is maximum; its size."""
    size = int(np.count_nonzero(match_x >= 0))
    while size < need:
        got = _augment_all(win, t, match_x, match_y)
        if got == 0:
            break
        size += got
    return size


def _bottleneck_matching(cost: FloatArray, need: int, perfect: bool) -> float:
    """Least entry t of the square ``cost`` with a matching of ``need`` edges inside G_t = {cost <= t}.

    Exact, like the max-flow bisection, but warm-started:

    * the search starts at the lower bound max(max_i min_j, max_j min_i) (δ = 0: every point
      needs an edge) and gallops up over the k-th smallest costs (k = edges below the bound +
      max(4n, k₀/4), doubling) until a matching of ``need`` edges exists; only the edges below that
      upper end are kept (:class:`_Window`);
    * binary search over the distinct costs of the window: a matching of G_lo (lo infeasible)
      stays a matching of every G_t with t > lo, so each test starts from the larger of it and the
      last feasible matching restricted to G_t, and only augments the deficit by BFS phases of
      vertex-disjoint shortest augmenting paths (Hopcroft–Karp, :func:`_augment_all`). A failed
      test leaves a maximum matching of G_mid, the next warm start.
    """
    n = cost.shape[0]
    flat = cost.ravel()
    if perfect:
        lower = max(float(cost.min(axis=1).max()), float(cost.min(axis=0).max()))
    else:
        lower = float(cost.min())
    below = int(np.count_nonzero(flat <= lower))
    lo_x = np.full(n, -1, dtype=np.int64)
    lo_y = np.full(n, -1, dtype=np.int64)
    extra = max(4 * n, below // 4)
    first = True
    while True:
        k = below + extra - 1
        if first:
            upper = lower  # often feasible already (then the answer): no selection needed
        else:
            upper = float(flat.max()) if k >= flat.size - 1 else float(np.partition(flat, k)[k])
        first = False
        win = _Window(cost, upper)
        cand_x, cand_y = lo_x.copy(), lo_y.copy()
        if not np.any(cand_x >= 0):
            cand_x, cand_y = _initial_matching(win, n)  # a maximum matching of G_upper from scratch (compiled)
        if _grow(win, upper, cand_x, cand_y, need) >= need:
            break
        lo_x, lo_y = cand_x, cand_y  # maximum in G_upper: a warm start for every larger threshold
        if upper > lower:
            extra *= 2
        lower = upper
    vals = np.sort(win.costs[win.costs >= lower])
    keep = np.empty(vals.size, dtype=bool)
    keep[0] = True
    np.not_equal(vals[1:], vals[:-1], out=keep[1:])
    vals = vals[keep]
    hi_x = cand_x
    lo, hi = -1, vals.size - 1  # vals[hi] = upper is feasible; the value below vals[0] is not
    while hi - lo > 1:
        mid = lo + 1 if lo < 0 else (lo + hi) // 2
        t = float(vals[mid])
        cand_x, cand_y = lo_x.copy(), lo_y.copy()
        rx = hi_x.copy()
        has = rx >= 0
        has[has] = cost[np.flatnonzero(has), rx[has]] <= t
        rx[~has] = -1
        if int(np.count_nonzero(rx >= 0)) > int(np.count_nonzero(cand_x >= 0)):
            cand_x = rx
            cand_y = np.full(n, -1, dtype=np.int64)
            cand_y[rx[rx >= 0]] = np.flatnonzero(rx >= 0)
        if _grow(win, t, cand_x, cand_y, need) >= need:
            hi, hi_x = mid, cand_x
        else:
            lo, lo_x, lo_y = mid, cand_x, cand_y
    return float(vals[hi])


# --------------------------------------------------------------------------- 1-D quantile coupling
def _sorted_union(a: NDArray[Any], b: NDArray[Any]) -> NDArray[Any]:
    """The distinct values of two non-decreasing arrays, ascending (= ``np.unique`` of their concatenation).

    A stable sort of the two concatenated runs is a linear merge (timsort finds the runs) and a mask
    drops repeats; ``np.unique`` takes a hash-based path on numpy >= 2.3 that is several times slower here.
    """
    merged = np.sort(np.concatenate([a, b]), kind="stable")
    if merged.size < 2:
        return merged
    keep = np.empty(merged.size, dtype=bool)
    keep[0] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    return merged[keep]


def _pieces(
    xs: FloatArray, cp: NDArray[Any], ys: FloatArray, cq: NDArray[Any]
) -> tuple[FloatArray, NDArray[Any]]:
    """Monotone coupling from sorted points and cumulative weights (last entries equal).

    On the piece (left, brk] between consecutive breakpoints of the union of
    the cumulative weights, F⁻¹(u) = xs[first i with cp[i] >= brk] and likewise
    for G⁻¹. Returns |F⁻¹ − G⁻¹| and the (unnormalised) piece lengths.
    """
    brk = _sorted_union(cp, cq)
    left = np.concatenate([np.zeros(1, dtype=brk.dtype), brk[:-1]])
    i = np.minimum(np.searchsorted(cp, brk, side="left"), xs.size - 1)
    j = np.minimum(np.searchsorted(cq, brk, side="left"), ys.size - 1)
    return np.abs(xs[i] - ys[j]), brk - left


def _quantile_pieces(
    x: FloatArray, p: FloatArray, y: FloatArray, q: FloatArray, tol: float
) -> tuple[FloatArray, FloatArray]:
    """Monotone coupling of two 1-D distributions: (|F⁻¹(u) − G⁻¹(u)|, length) on each piece of (0, 1).

    Cumulative weights are computed in integers when p = a/D, q = b/D (e.g.
    empirical samples), so coinciding quantile breakpoints coincide exactly.
    """
    ox = np.argsort(x, kind="stable")
    oy = np.argsort(y, kind="stable")
    ints = _integer_weights(p, q, tol)
    if ints is not None:
        a, b, d = ints
        dist, length = _pieces(x[ox], np.cumsum(a[ox]), y[oy], np.cumsum(b[oy]))
        return dist, length / d
    # clip cumulative round-off above 1 (keeps the arrays non-decreasing), end exactly at 1
    cp = np.minimum(np.cumsum(p[ox]), 1.0)
    cq = np.minimum(np.cumsum(q[oy]), 1.0)
    cp[-1] = cq[-1] = 1.0
    dist, length = _pieces(x[ox], cp, y[oy], cq)
    return dist, np.asarray(length, dtype=float)


def _quantile_w_infinity(
    x: FloatArray, p: FloatArray, y: FloatArray, q: FloatArray, tol: float
) -> float:
    dist, length = _quantile_pieces(x, p, y, q, tol)
    order = np.argsort(-dist, kind="stable")
    dropped = np.cumsum(length[order])
    # largest distance whose piece cannot be ignored within the mass tolerance
    keep = np.nonzero(dropped > tol)[0]
    return float(dist[order[keep[0]]]) if keep.size else 0.0


def _samples_1d_pieces(x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Quantile coupling of two 1-D samples with exact integer cumulative weights (L = lcm(N, K))."""
    n, k = x.size, y.size
    if n == k:  # equal weights 1/n: the i-th order statistics are coupled, one piece each
        return np.abs(np.sort(x) - np.sort(y)), np.full(n, 1.0 / n)
    big = math.lcm(n, k)
    cp = np.arange(1, n + 1, dtype=np.int64) * (big // n)
    cq = np.arange(1, k + 1, dtype=np.int64) * (big // k)
    dist, length = _pieces(np.sort(x), cp, np.sort(y), cq)
    return dist, length / big


# --------------------------------------------------------------------------- W∞ and closeness
def w_infinity(
    xs: ArrayLike,
    p: ArrayLike,
    ys: ArrayLike,
    q: ArrayLike,
    norm: Any = 1,
    *,
    method: str = "auto",
    tol: float = DEFAULT_TOL,
) -> float:
    """∞-Wasserstein distance W∞(μ, ν) between μ = Σ p_i δ_{x_i} and ν = Σ q_j δ_{y_j}.

    W∞(μ, ν) = inf_{γ ∈ Γ(μ, ν)} max_{(x, y) ∈ supp γ} ||x − y||_norm
    (Chen & Ohrimenko Definition 4.1 uses the L1 norm, the default).

    Parameters
    ----------
    xs, ys:
        Support points, shape (n, m) and (k, m) (or (n,), (k,) for m = 1).
    p, q:
        Non-negative weights summing to 1 (length n and k).
    norm:
        Ground norm: 1 (default), 2 or ``inf``.
    method:
        ``"auto"`` (quantile formula when m = 1, bottleneck transport
        otherwise), ``"general"`` (bottleneck transport: binary search over the
        sorted pairwise distances with an exact max-flow feasibility test) or
        ``"quantile"`` (m = 1 only: W∞ = sup_u |F⁻¹(u) − G⁻¹(u)|, the monotone
        coupling being optimal on the line).
    tol:
        Mass tolerance for floating-point weights (see module docstring).

    Examples
    --------
    Figure 1 of Chen & Ohrimenko, μ = (0.6, 0.2, 0, 0.2) and ν = (0.4, 0.3, 0.2, 0.1) on {1, 2, 3, 100}:

    >>> from distpriv import distances
    >>> distances.w_infinity([1, 2, 3, 100], [0.6, 0.2, 0, 0.2], [1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])
    97.0
    """
    metric = _check_norm(norm)
    meth = _check_method(method)
    t = _check_tol(tol)
    x, pw, y, qw = _prepare(xs, p, ys, q)
    if meth == "quantile" and x.shape[1] != 1:
        raise InvalidParameterError(
            f"method: 'quantile' needs one-dimensional points, got dimension {x.shape[1]}"
        )
    if x.shape[1] == 1 and meth != "general":
        return _quantile_w_infinity(x[:, 0], pw, y[:, 0], qw, t)
    return _bottleneck(_cost(x, y, metric), pw, qw, 0.0, t)


def w_infinity_from_cost(
    cost: ArrayLike, p: ArrayLike, q: ArrayLike, *, tol: float = DEFAULT_TOL
) -> float:
    """Bottleneck transport value min_{γ ∈ Γ(p, q)} max_{(i, j) : γ_ij > 0} cost[i, j].

    With cost[i, j] = d(x_i, y_j) this is W∞ under the ground distance d
    (Chen & Ohrimenko Definition 4.1; Kawamoto & Murakami's W∞,d). ``cost`` is
    any (|X|, |Y|) real matrix (it need not be a metric); p and q are
    probability vectors of length |X| and |Y|.
    """
    t = _check_tol(tol)
    c, pw, qw = _check_cost(cost, p, q)
    return _bottleneck(c, pw, qw, 0.0, t)


def w_infinity_samples(X: ArrayLike, Y: ArrayLike, norm: Any = 1, *, method: str = "auto") -> float:
    """W∞ between the empirical distributions of samples X (N, m) and Y (K, m).

    Each sample point has weight 1/N (resp. 1/K). For N = K this is the
    bottleneck assignment min_π max_i ||X_i − Y_π(i)|| (a unit-capacity max-flow
    per threshold); otherwise an integer max-flow with capacities K/g and N/g,
    g = gcd(N, K). In one dimension (``method="auto"``) the sorted samples are
    matched by quantile: exact and O((N + K) log(N + K)).
    """
    metric = _check_norm(norm)
    meth = _check_method(method)
    x, y = _check_samples(X, Y)
    if meth == "quantile" and x.shape[1] != 1:
        raise InvalidParameterError(
            f"method: 'quantile' needs one-dimensional samples, got dimension {x.shape[1]}"
        )
    n, k = x.shape[0], y.shape[0]
    if x.shape[1] == 1 and meth != "general":
        dist, _ = _samples_1d_pieces(x[:, 0], y[:, 0])
        return float(dist.max())
    return _bottleneck(
        _cost(x, y, metric), np.full(n, 1.0 / n), np.full(k, 1.0 / k), 0.0, DEFAULT_TOL
    )


def closeness_radius(
    xs: ArrayLike,
    p: ArrayLike,
    ys: ArrayLike,
    q: ArrayLike,
    delta: float,
    norm: Any = 1,
    *,
    tol: float = DEFAULT_TOL,
) -> float:
    """Least W such that μ and ν are (W, δ)-close (Chen & Ohrimenko Section 4.1).

    (W, δ)-close: there are γ ∈ Γ(μ, ν) and R ⊆ supp γ with ||x − y|| <= W on R
    and γ(R) >= 1 − δ. Equivalently (module docstring) the maximum flow through
    the bipartite graph of pairs at distance <= W, with capacities p on the
    left and q on the right, is >= 1 − δ; the least such W is a pairwise
    distance, found by binary search. δ = 0 gives W∞ (same value as
    :func:`w_infinity`).

    Example (Figure 1): μ = (0.6, 0.2, 0, 0.2), ν = (0.4, 0.3, 0.2, 0.1) on
    {1, 2, 3, 100}: W∞ = 97 but closeness_radius(..., delta=0.1) = 1.
    """
    metric = _check_norm(norm)
    d = check_delta(delta, "delta", allow_zero=True)
    t = _check_tol(tol)
    x, pw, y, qw = _prepare(xs, p, ys, q)
    if d == 0.0 and x.shape[1] == 1:
        return _quantile_w_infinity(x[:, 0], pw, y[:, 0], qw, t)
    return _bottleneck(_cost(x, y, metric), pw, qw, d, t)


def closeness_radius_from_cost(
    cost: ArrayLike, p: ArrayLike, q: ArrayLike, delta: float, *, tol: float = DEFAULT_TOL
) -> float:
    """Least W with a coupling moving mass >= 1 − δ along entries cost[i, j] <= W (Section 4.1)."""
    d = check_delta(delta, "delta", allow_zero=True)
    t = _check_tol(tol)
    c, pw, qw = _check_cost(cost, p, q)
    return _bottleneck(c, pw, qw, d, t)


def closeness_radius_samples(X: ArrayLike, Y: ArrayLike, delta: float, norm: Any = 1) -> float:
    """Least W such that the empirical distributions of X and Y are (W, δ)-close (Section 4.1).

    Exact: for N = K the least W at which a matching of size >= ⌈N(1 − δ)⌉
    uses only pairs at distance <= W; otherwise an integer max-flow.
    """
    metric = _check_norm(norm)
    d = check_delta(delta, "delta", allow_zero=True)
    x, y = _check_samples(X, Y)
    if d == 0.0:
        return w_infinity_samples(x, y, norm=norm)
    n, k = x.shape[0], y.shape[0]
    return _bottleneck(
        _cost(x, y, metric), np.full(n, 1.0 / n), np.full(k, 1.0 / k), d, DEFAULT_TOL
    )


# --------------------------------------------------------------------------- p-Wasserstein
def _check_order(order: Any) -> float:
    o = check_positive(order, "order")
    if o < 1:
        raise InvalidParameterError(f"order: must be >= 1, got {o}")
    return o


def _emd(cost_p: FloatArray, p: FloatArray, q: FloatArray) -> float:
    import ot

    val = ot.emd2(p, q, cost_p, numItermax=max(1_000_000, 50 * p.size * q.size))
    return max(float(val), 0.0)


def wasserstein(
    xs: ArrayLike,
    p: ArrayLike,
    ys: ArrayLike,
    q: ArrayLike,
    order: float = 1,
    norm: Any = 1,
    *,
    method: str = "auto",
) -> float:
    """p-Wasserstein distance Wp(μ, ν) = (min_{γ ∈ Γ(μ, ν)} Σ γ_ij ||x_i − y_j||^p)^{1/p}.

    Kawamoto & Murakami (divergence DistP) Section on p-Wasserstein metrics;
    Chen & Ohrimenko Definition 4.1 is the limit p → ∞. Solved exactly by POT's
    network simplex (``ot.emd2``); with m = 1 and ``method="auto"`` by the
    quantile formula Wp^p = ∫₀¹ |F⁻¹(u) − G⁻¹(u)|^p du (W1 = ∫ |F − G|).
    """
    o = _check_order(order)
    metric = _check_norm(norm)
    meth = _check_method(method)
    x, pw, y, qw = _prepare(xs, p, ys, q)
    if meth == "quantile" and x.shape[1] != 1:
        raise InvalidParameterError(
            f"method: 'quantile' needs one-dimensional points, got dimension {x.shape[1]}"
        )
    if x.shape[1] == 1 and meth != "general":
        dist, length = _quantile_pieces(x[:, 0], pw, y[:, 0], qw, DEFAULT_TOL)
        return float(np.sum(length * dist**o) ** (1.0 / o))
    return _emd(_cost(x, y, metric) ** o, pw, qw) ** (1.0 / o)


def wasserstein_from_cost(cost: ArrayLike, p: ArrayLike, q: ArrayLike, order: float = 1) -> float:
    """(min_{γ ∈ Γ(p, q)} Σ γ_ij cost_ij^order)^{1/order} for a non-negative (|X|, |Y|) cost matrix."""
    o = _check_order(order)
    c, pw, qw = _check_cost(cost, p, q)
    if np.any(c < 0):
        raise InvalidParameterError("cost: entries must be >= 0 for a p-Wasserstein distance")
    return _emd(c**o, pw, qw) ** (1.0 / o)


def wasserstein_samples(X: ArrayLike, Y: ArrayLike, order: float = 1, norm: Any = 1) -> float:
    """p-Wasserstein distance between the empirical distributions of samples X and Y."""
    o = _check_order(order)
    metric = _check_norm(norm)
    x, y = _check_samples(X, Y)
    n, k = x.shape[0], y.shape[0]
    if x.shape[1] == 1:
        dist, length = _samples_1d_pieces(x[:, 0], y[:, 0])
        return float(np.sum(length * dist**o) ** (1.0 / o))
    return _emd(_cost(x, y, metric) ** o, np.full(n, 1.0 / n), np.full(k, 1.0 / k)) ** (1.0 / o)
