"""Privacy profiles of additive noise on an empirical f_θ: the output law is a finite mixture.

Model: f_θ is the empirical law of the supplied samples (atoms x_i with weights p_i, the
multiplicities over N). The released value F + Z then has the law Σ_i p_i Z(· − x_i), a
finite mixture, and δ_{P‖Q}(ε) = ∫ (p_P − e^ε p_Q)_+ (Balle & Wang 2018 Thm 5) is computed

* exactly in 1-D for Laplace noise Lap(b): between consecutive atoms each density is
  a e^{−s/b} + c e^{−(w−s)/b}, so p_P − e^ε p_Q changes sign at most once per segment and its
  positive part integrates in closed form; the ratio p_P/p_Q is monotone on every segment (a
  Möbius map of e^{2y/b}) and constant beyond the extreme atoms, so the pure ε = sup |ln p_P/p_Q|
  is attained at an atom: exact too;
* by certified quadrature in 1-D for Gaussian noise N(0, σ²): on a cell [u, v] each component
  φ((y − x_i)/σ) lies between its values at the cell point nearest to and farthest from x_i,
  which brackets ∫ (p_P − e^ε p_Q)_+ over the cell; the mass beyond the grid is bounded by the
  Gaussian tails;
* by a proved upper bound in any dimension: for a coupling π of the two empirical laws,
  joint convexity of the hockey-stick divergence gives δ(ε) <= Σ π_ij δ_shift(x_i − y_j)(ε),
  where δ_shift(d) is the profile of the noise against itself shifted by d — the analytic
  Gaussian δ_D(ε) with D = ||Σ_Z^{-1/2} d|| (Balle & Wang Thm 8), or for Laplace noise on an
  orthonormal basis B with scales b the bound of :func:`~distpriv.accounting.laplace._laplace_shift_delta`
  at Σ_k |(Bᵀd)_k|/b_k (exact in 1-D). A shift outside the range of the noise (rank-deficient
  noise) makes the two components mutually singular: δ_shift = 1. The pure ε is likewise bounded
  by max over π_ij > 0 of Σ_k |(Bᵀd)_k|/b_k (each component pair is (ε, 0), so is the mixture).
  Any coupling gives a valid bound; the coupling used is an optimal assignment of the samples
  under the noise metric when both θ have the same number of samples (at most
  :data:`MAX_ASSIGNMENT`), else the sorted (north-west corner) coupling along the leading
  direction of the mean difference.

Every function returns a certified bracket (:class:`~distpriv.accounting.profile.Profile`) of
the worst ordered pair over Ψ, in both orders (Chen & Ohrimenko Definition 3.2).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ..calibration import gaussian_delta
from ..models import EmpiricalModel
from ..noise import NoiseLaw
from .laplace import _laplace_shift_delta, complete_basis
from .profile import EpsilonBound, Profile, worst

Array = NDArray[np.float64]

EXACT_LAPLACE_1D = ("exact: 1-D mixture of Laplace densities over the samples' atoms (piecewise exponentials, "
                    "closed-form integral of (p_P − e^ε p_Q)_+ per segment)")
CELLS_GAUSS_1D = ("certified quadrature: 1-D mixture of Gaussian densities over the samples' atoms, each "
                  "component bounded on every cell by its values nearest to and farthest from its atom")
COUPLING_MIXTURE = ("coupling bound: δ <= Σ π_ij δ_shift(x_i − y_j) over a coupling π of the two samples' laws "
                    "(joint convexity of the hockey-stick divergence)")
#: Largest number of samples per θ for which an optimal assignment (O(N³)) is computed.
MAX_ASSIGNMENT = 1500
#: Most cells of one certified 1-D Gaussian quadrature (bounded work; the cell width grows beyond it).
MAX_CELLS_1D = 1 << 21
#: Absolute slack on closed forms evaluated in floating point (rounding of sums of <= 1 terms).
ROUNDING = 1e-14


@dataclass(frozen=True)
class Atoms:
    """A finite law: distinct support points ``x`` (k × m) with weights ``w`` (summing to 1)."""

    x: Array
    w: Array


def atoms(samples: Array) -> Atoms:
    """The empirical law of the rows of ``samples`` (N × m): distinct rows and their multiplicities over N."""
    arr = np.asarray(samples, dtype=float)
    arr = arr[:, None] if arr.ndim == 1 else arr
    uniq, counts = np.unique(arr, axis=0, return_counts=True)
    return Atoms(uniq, counts / counts.sum())


# --------------------------------------------------------------------------- 1-D Laplace (exact)
def _laplace_sums(ux: Array, x: Array, w: Array, b: float) -> tuple[Array, Array]:
    """L[k] = Σ_{x_i <= u_k} w_i e^{−(u_k − x_i)/b}, R[k] = Σ_{x_i >= u_k} w_i e^{−(x_i − u_k)/b} on the sorted grid u."""
    k = ux.size
    mass = np.zeros(k)
    np.add.at(mass, np.searchsorted(ux, x), w)
    gaps = np.exp(-np.diff(ux) / b)
    left = np.empty(k)
    right = np.empty(k)
    acc = 0.0
    for j in range(k):
        acc = (acc * gaps[j - 1] if j else 0.0) + mass[j]
        left[j] = acc
    acc = 0.0
    for j in range(k - 1, -1, -1):
        acc = (acc * gaps[j] if j < k - 1 else 0.0) + mass[j]
        right[j] = acc
    return left, right


def _grid_1d(p: Atoms, q: Atoms) -> Array:
    return np.unique(np.concatenate([p.x[:, 0], q.x[:, 0]]))


def laplace_1d_delta(p: Atoms, q: Atoms, b: float, epsilon: float) -> float:
    """Exact δ_{P‖Q}(ε) of Σ p_i Lap(x_i, b) against Σ q_j Lap(y_j, b) (1-D), see the module docstring."""
    u = _grid_1d(p, q)
    lp, rp = _laplace_sums(u, p.x[:, 0], p.w, b)
    lq, rq = _laplace_sums(u, q.x[:, 0], q.w, b)
    k = math.exp(epsilon) if epsilon < 700 else math.inf
    # total = Σ over segments of ∫ (a e^{−s/b} + c e^{−(w−s)/b})_+ ds, then / (2b); tails give b·(·)_+
    with np.errstate(invalid="ignore", over="ignore"):
        left_tail = max(0.0, rp[0] - k * rq[0]) if math.isfinite(k) else (rp[0] if rq[0] == 0 else 0.0)
        right_tail = max(0.0, lp[-1] - k * lq[-1]) if math.isfinite(k) else (lp[-1] if lq[-1] == 0 else 0.0)
    total = b * (left_tail + right_tail)
    if u.size > 1:
        wd = np.diff(u)
        e = np.exp(-wd / b)
        # on segment j the left sums at u_j decay, the right sums at u_{j+1} grow: the left part excludes the atom
        # at u_{j+1}, the right part the atom at u_j, so a = L[j], c = R[j + 1]
        if math.isfinite(k):
            a = lp[:-1] - k * lq[:-1]
            c = rp[1:] - k * rq[1:]
        else:
            a = np.where(lq[:-1] > 0, -np.inf, lp[:-1])
            c = np.where(rq[1:] > 0, -np.inf, rp[1:])
        total += float(np.sum(_segment_positive(a, c, wd, e, b)))
    return min(1.0, max(0.0, total / (2.0 * b)) + ROUNDING)


def _segment_positive(a: Array, c: Array, wd: Array, e: Array, b: float) -> Array:
    """∫_0^w (a e^{−s/b} + c e^{−(w−s)/b})_+ ds, vectorised over segments (g changes sign at most once)."""
    out = np.zeros_like(wd)
    both = (a >= 0) & (c >= 0)
    out[both] = (a[both] + c[both]) * b * (1.0 - e[both])
    # a > 0 > c: positive on [0, s*), e^{(2s* − w)/b} = a/(−c)
    m1 = (a > 0) & (c < 0)
    if np.any(m1):
        aa, cc, w, ee = a[m1], c[m1], wd[m1], e[m1]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            s = np.clip(0.5 * (w + b * (np.log(aa) - np.log(-cc))), 0.0, w)
            val = aa * b * (-np.expm1(-s / b)) + np.where(np.isfinite(cc), cc * b * (np.exp(-(w - s) / b) - ee), 0.0)
        out[m1] = np.maximum(val, 0.0)
    m2 = (a < 0) & (c > 0)
    if np.any(m2):
        aa, cc, w, ee = a[m2], c[m2], wd[m2], e[m2]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            s = np.clip(0.5 * (w + b * (np.log(-aa) - np.log(cc))), 0.0, w)
            val = np.where(np.isfinite(aa), aa * b * (np.exp(-s / b) - ee), 0.0) + cc * b * (-np.expm1(-(w - s) / b))
        out[m2] = np.maximum(val, 0.0)
    return out


def laplace_1d_pure(p: Atoms, q: Atoms, b: float) -> float:
    """Exact pure ε = sup |ln p_P/p_Q| of the 1-D Laplace mixtures: the ratio is monotone between atoms and
    constant beyond them, so the sup is attained at an atom (2b p(u_k) = L[k] + R[k] − mass at u_k)."""
    u = _grid_1d(p, q)
    lp, rp = _laplace_sums(u, p.x[:, 0], p.w, b)
    lq, rq = _laplace_sums(u, q.x[:, 0], q.w, b)
    mp = np.zeros(u.size)
    np.add.at(mp, np.searchsorted(u, p.x[:, 0]), p.w)
    mq = np.zeros(u.size)
    np.add.at(mq, np.searchsorted(u, q.x[:, 0]), q.w)
    fp, fq = lp + rp - mp, lq + rq - mq
    with np.errstate(divide="ignore"):
        ell = np.log(fp) - np.log(fq)
    return float(np.max(np.abs(ell))) + 1e-12


# --------------------------------------------------------------------------- 1-D Gaussian (certified cells)
def gaussian_1d_bracket(p: Atoms, q: Atoms, sigma: float, epsilon: float, *, per: int = 16) -> tuple[float, float]:
    """Certified [lower, upper] on δ_{P‖Q}(ε) of Σ p_i N(x_i, σ²) against Σ q_j N(y_j, σ²) (1-D).

    Cells of width h = σ/``per`` cover [min − 9σ, max + 9σ]; atoms are binned into their cells. For an
    atom in cell c and a point of cell j the distance lies in [(|j − c| − 1)⁺h, (|j − c| + 1)h], so the
    mixture density on cell j lies between the histogram convolved with φ at the far ends and with φ
    at the near ends (offsets beyond 9σ add at most φ(9)/σ above and 0 below). Per cell
    ∫ (p_P − e^ε p_Q)_+ ∈ [h (P_lo − e^ε Q_hi)_+, h (P_hi − e^ε Q_lo)_+]; beyond the grid the integrand is at
    most the P mass there, 2Φ(−9). The cell count is capped at :data:`MAX_CELLS_1D` (h grows instead).
    """
    from scipy.signal import fftconvolve

    r = 9.0
    xp, xq = p.x[:, 0], q.x[:, 0]
    lo = float(min(xp.min(), xq.min())) - r * sigma
    hi = float(max(xp.max(), xq.max())) + r * sigma
    h = sigma / per
    if (hi - lo) / h > MAX_CELLS_1D:
        h = (hi - lo) / MAX_CELLS_1D
    cells = int(math.ceil((hi - lo) / h)) + 1
    norm = 1.0 / (sigma * math.sqrt(2.0 * math.pi))
    reach = int(math.ceil(r * sigma / h)) + 1
    off = np.arange(-reach, reach + 1)
    k_hi = norm * np.exp(-0.5 * (np.maximum(np.abs(off) - 1, 0) * h / sigma) ** 2)
    k_lo = norm * np.exp(-0.5 * ((np.abs(off) + 1) * h / sigma) ** 2)
    far = norm * math.exp(-0.5 * r * r)

    def hist(x: Array, w: Array) -> Array:
        idx = np.clip(np.floor((x - lo) / h).astype(np.int64), 0, cells - 1)
        return np.bincount(idx, weights=w, minlength=cells).astype(float)

    def conv(m: Array, k: Array) -> Array:
        if m.size * k.size <= 4_000_000:
            return np.convolve(m, k, mode="same")
        return np.asarray(fftconvolve(m, k, mode="same"))

    hp, hq = hist(xp, p.w), hist(xq, q.w)
    slack = 1e-12 * norm  # FFT / summation rounding, far below the certified widening
    p_hi = conv(hp, k_hi) + far + slack
    q_hi = conv(hq, k_hi) + far + slack
    p_lo = np.maximum(conv(hp, k_lo) - slack, 0.0)
    q_lo = np.maximum(conv(hq, k_lo) - slack, 0.0)
    k = math.exp(min(epsilon, 700.0))
    upper = h * float(np.sum(np.maximum(p_hi - k * q_lo, 0.0)))
    lower = h * float(np.sum(np.maximum(p_lo - k * q_hi, 0.0))) if epsilon <= 700.0 else 0.0
    tail = float(2.0 * special.ndtr(-r))
    return max(0.0, lower - ROUNDING), min(1.0, upper + tail + ROUNDING)


def gaussian_1d_refined(p: Atoms, q: Atoms, sigma: float, epsilon: float, *, rtol: float = 1e-2,
                        target: float | None = None) -> tuple[float, float]:
    """:func:`gaussian_1d_bracket` refined (cells per σ doubled, 16 to 1024) until the bracket is within ``rtol``
    or decides ``target`` (each step is certified, so stopping early only widens the bracket)."""
    per = 16
    while True:
        lo, up = gaussian_1d_bracket(p, q, sigma, epsilon, per=per)
        if up - lo <= rtol * up + 1e-15 or (target is not None and (up <= target or lo > target)) or per >= 1024:
            return lo, up
        per *= 4


# --------------------------------------------------------------------------- coupling bound (any dimension)
@dataclass(frozen=True)
class Metric:
    """The noise's shift cost: coordinates z = T d in which the shift profile depends on one number.

    Gaussian: T = Σ_Z^{-1/2} on its range (D = ||z||₂); Laplace: T = diag(1/b) Bᵀ (ℓ1 length ||z||₁).
    ``null`` projects d on the directions carrying no noise (a shift there gives δ = 1).
    """

    kind: str
    transform: Array
    null: Array
    dims: int
    #: shift lengths are ℓ2 (Gaussian noise) / ℓ1 Laplace losses (pure ε exists); neither: no noise
    euclidean: bool = False
    pure: bool = False

    @classmethod
    def of(cls, noise: NoiseLaw) -> Metric:
        m = noise.dim

        def gaussian(cov: Array) -> Metric:
            w, v = np.linalg.eigh(noise.gaussian_covariance)
            top = float(w.max(initial=0.0))
            keep = w > 1e-12 * top if top > 0 else np.zeros(m, dtype=bool)
            t = (v[:, keep] / np.sqrt(w[keep])).T
            return cls("gaussian", t, v[:, ~keep].T, int(keep.sum()), euclidean=True)

        def laplace(basis: Array, scales: Array) -> Metric:
            return cls("laplace", (basis / scales).T, complete_basis(basis).T, basis.shape[1], pure=True)

        return noise.match(gaussian=gaussian, laplace=laplace, none=lambda: cls("none", np.zeros((0, m)), np.eye(m), 0))

    def lengths(self, d: Array) -> tuple[Array, Array]:
        """(shift length in the noise metric, length outside the noise range) of every row of d."""
        z = d @ self.transform.T
        length = np.linalg.norm(z, axis=1) if self.euclidean else np.abs(z).sum(axis=1)
        out = np.linalg.norm(d @ self.null.T, axis=1) if self.null.shape[0] else np.zeros(d.shape[0])
        return length, out

    def shift_delta(self, length: Array, outside: Array, epsilon: float, scale: Array) -> Array:
        """δ_shift(d)(ε) of each coupled pair (1 where the shift leaves the noise range)."""
        off = outside > 1e-12 * np.maximum(scale, 1e-300)
        if self.euclidean:
            val = np.asarray(gaussian_delta(np.asarray(length, dtype=float), float(epsilon)), dtype=float)
            val = np.minimum(1.0, val + 1e-15)
        elif self.pure:
            val = _laplace_shift_delta(length, epsilon, max(self.dims, 1))
        else:
            val = np.where(length > 0, 1.0, 0.0)
        return np.where(off, 1.0, val)


@dataclass(frozen=True)
class Coupling:
    """A coupling of two finite laws: pairs (i, j) with masses."""

    i: NDArray[np.int64]
    j: NDArray[np.int64]
    mass: Array


def _northwest(p: Atoms, q: Atoms, direction: Array) -> Coupling:
    """Sorted (monotone) coupling along ``direction``: the north-west corner rule on the sorted orders."""
    op = np.argsort(p.x @ direction, kind="stable")
    oq = np.argsort(q.x @ direction, kind="stable")
    wp, wq = p.w[op].copy(), q.w[oq].copy()
    ii: list[int] = []
    jj: list[int] = []
    mm: list[float] = []
    a = c = 0
    while a < wp.size and c < wq.size:
        t = min(wp[a], wq[c])
        if t > 0:
            ii.append(int(op[a]))
            jj.append(int(oq[c]))
            mm.append(float(t))
        wp[a] -= t
        wq[c] -= t
        if wp[a] <= 1e-15:
            a += 1
        if wq[c] <= 1e-15:
            c += 1
    mass = np.array(mm)
    return Coupling(np.array(ii, dtype=np.int64), np.array(jj, dtype=np.int64), mass / mass.sum())


def couplings(model: EmpiricalModel, a: Hashable, b: Hashable, p: Atoms, q: Atoms, metric: Metric) -> list[Coupling]:
    """Candidate couplings of P_a and P_b (each gives a valid bound; the least bound is used)."""
    diff = p.x.T @ p.w - q.x.T @ q.w
    direction = diff / np.linalg.norm(diff) if np.linalg.norm(diff) > 0 else np.eye(p.x.shape[1])[:, 0]
    out = [_northwest(p, q, direction)]
    sa, sb = model.samples(a), model.samples(b)
    if sa.shape[0] == sb.shape[0] <= MAX_ASSIGNMENT and sa.shape[0] > 1:
        from scipy.optimize import linear_sum_assignment

        d = sa[:, None, :] - sb[None, :, :]
        length, outside = metric.lengths(d.reshape(-1, d.shape[2]))
        big = 1e6 * (1.0 + float(length.max(initial=0.0)))
        cost = (length + np.where(outside > 0, big, 0.0)).reshape(sa.shape[0], sb.shape[0])
        r, c = linear_sum_assignment(cost)
        # map rows back to atom indices
        ip = _atom_index(p.x, sa[r])
        iq = _atom_index(q.x, sb[c])
        out.append(Coupling(ip, iq, np.full(r.size, 1.0 / r.size)))
    return out


def _atom_index(support: Array, rows: Array) -> NDArray[np.int64]:
    order = np.lexsort(support.T[::-1])
    srt = support[order]
    # rows are exact copies of support points: locate by lexicographic search on the structured view
    view = np.ascontiguousarray(srt).view([("", srt.dtype)] * srt.shape[1]).ravel()
    rv = np.ascontiguousarray(rows).view([("", rows.dtype)] * rows.shape[1]).ravel()
    return order[np.searchsorted(view, rv)].astype(np.int64)


def coupling_bound(p: Atoms, q: Atoms, coupling: Coupling, metric: Metric, epsilon: float) -> float:
    """Σ π_ij δ_shift(x_i − y_j)(ε): a proven upper bound on δ_{P‖Q}(ε) of the output mixtures."""
    d = p.x[coupling.i] - q.x[coupling.j]
    length, outside = metric.lengths(d)
    scale = np.maximum(np.abs(p.x[coupling.i]).max(axis=1), np.abs(q.x[coupling.j]).max(axis=1)) + 1.0
    return min(1.0, float(coupling.mass @ metric.shift_delta(length, outside, epsilon, scale)) + ROUNDING)


def coupling_pure(p: Atoms, q: Atoms, coupling: Coupling, metric: Metric) -> float:
    """max over π_ij > 0 of the shift's ℓ1 loss (Laplace noise): a proven pure ε (∞ off the noise range)."""
    d = p.x[coupling.i] - q.x[coupling.j]
    length, outside = metric.lengths(d)
    scale = np.maximum(np.abs(p.x[coupling.i]).max(axis=1), np.abs(q.x[coupling.j]).max(axis=1)) + 1.0
    if not metric.pure or np.any(outside > 1e-12 * scale):
        return math.inf if np.any(length > 0) or np.any(outside > 1e-12 * scale) else 0.0
    return float(length.max(initial=0.0)) * (1 + 1e-12)


# --------------------------------------------------------------------------- over Ψ
def _one_d(noise: NoiseLaw) -> bool:
    if noise.dim != 1:
        return False
    return noise.match(gaussian=lambda c: float(noise.gaussian_covariance[0, 0]) > 0, laplace=lambda b, s: True,
                       none=lambda: False)


class Accountant:
    """Profiles of one noise shape on an :class:`~distpriv.EmpiricalModel` over Ψ (atoms and couplings cached)."""

    def __init__(self, model: EmpiricalModel, pairs: Sequence[tuple[Hashable, Hashable]]) -> None:
        self.model = model
        self.pairs = [(a, b) for a, b in pairs]
        self.atoms = {lab: atoms(model.samples(lab)) for pair in self.pairs for lab in pair}
        self._couplings: dict[tuple[Hashable, Hashable, str, bytes], list[Coupling]] = {}

    def _coupled(self, a: Hashable, b: Hashable, metric: Metric, noise: NoiseLaw) -> list[Coupling]:
        # a coupling stays valid for every noise; it is recomputed only per noise *shape* (kind and directions)
        key = (a, b, metric.kind, np.round(_shape(noise), 12).tobytes())
        if key not in self._couplings:
            self._couplings[key] = couplings(self.model, a, b, self.atoms[a], self.atoms[b], metric)
        return self._couplings[key]

    def delta(self, noise: NoiseLaw, epsilon: float, *, rtol: float = 1e-2, target: float | None = None) -> Profile:
        """Certified δ(ε) bracket of the worst ordered pair over Ψ."""
        profs: list[Profile] = []
        metric = Metric.of(noise)
        for a, b in self.pairs:
            for x, y in ((a, b), (b, a)):
                p, q = self.atoms[x], self.atoms[y]
                if _one_d(noise) and noise.pure:
                    assert noise.scales is not None
                    val = laplace_1d_delta(p, q, float(noise.scales[0]), epsilon)
                    profs.append(Profile(epsilon, val, max(0.0, val - 2 * ROUNDING), EXACT_LAPLACE_1D, (x, y)))
                elif _one_d(noise):
                    lo, up = gaussian_1d_refined(p, q, math.sqrt(float(noise.gaussian_covariance[0, 0])), epsilon,
                                                 rtol=rtol, target=target)
                    profs.append(Profile(epsilon, up, lo, CELLS_GAUSS_1D, (x, y)))
                else:
                    cs = self._coupled(a, b, metric, noise)
                    if (x, y) != (a, b):
                        cs = [Coupling(c.j, c.i, c.mass) for c in cs]
                    up = min(coupling_bound(p, q, c, metric, epsilon) for c in cs)
                    profs.append(Profile(epsilon, up, 0.0, COUPLING_MIXTURE, (x, y)))
        return worst(profs)

    def pure(self, noise: NoiseLaw) -> EpsilonBound:
        """Proven pure ε (exact for 1-D Laplace noise; the coupling bound otherwise; ∞ for Gaussian noise)."""
        best = 0.0
        pair: tuple[Hashable, Hashable] | None = None
        method = EXACT_LAPLACE_1D if _one_d(noise) and noise.pure else COUPLING_MIXTURE
        metric = Metric.of(noise)
        for a, b in self.pairs:
            for x, y in ((a, b), (b, a)):
                p, q = self.atoms[x], self.atoms[y]
                if noise.adds_gaussian:
                    val = math.inf
                elif _one_d(noise):
                    assert noise.scales is not None
                    val = laplace_1d_pure(p, q, float(noise.scales[0]))
                else:
                    cs = self._coupled(a, b, metric, noise)
                    if (x, y) != (a, b):
                        cs = [Coupling(c.j, c.i, c.mass) for c in cs]
                    val = min(coupling_pure(p, q, c, metric) for c in cs)
                if val >= best:
                    best, pair = val, (x, y)
        return EpsilonBound(best, 0.0 if method != EXACT_LAPLACE_1D else best * (1 - 1e-9), 0.0, method, pair)


def _shape(noise: NoiseLaw) -> Array:
    """A scale-free fingerprint of the noise's shape (its directions), for caching couplings."""
    def gaussian(cov: Array) -> Array:
        c = noise.gaussian_covariance
        top = float(np.abs(c).max(initial=0.0))
        return (c / top).ravel() if top > 0 else c.ravel()

    return noise.match(gaussian=gaussian, laplace=lambda b, s: np.concatenate([b.ravel(), s / s.max()]))


