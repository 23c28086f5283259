"""SSP quantizer: Lin, Wang, Sekar & Fanti's quantization mechanism with exact distribution privacy.

Summary statistic privacy (Lin, Wang, Sekar & Fanti, "Summary Statistic Privacy in Data Sharing",
IEEE JSAIT 2024, Sec. V; public code ``fjxmlzn/summary_statistic_privacy``) hides a statistic of the
data by a *deterministic* quantizer: the statistic is moved to the midpoint of the bin of width s
that holds it, ``(⌊t/s⌋ + 1/2)·s`` (their ``mean_mechanism`` shifts the samples by that much; their
``fraction_mechanism`` does the same for a class share). Our implementation (not their code) applies
it to the released query value F(D) ∈ R^m of a secret pair (θ0, θ1) with f_θ = N(μ_θ, Σ_θ):

* basis: W with WᵀΣ_θ0 W = I and WᵀΣ_θ1 W = Λ diagonal (the generalised eigenvectors of the pair),
  so the coordinates u = WᵀF are independent under *both* secrets;
* release: every coordinate of u quantized to the midpoint of its bin of width s, mapped back:
  F̂ = W^{-T}(c + s·⌊(u − c)/s + 1/2⌋). Their code anchors the bins at 0; here one bin is centred on
  the pair's midpoint c = Wᵀ(μ_θ0 + μ_θ1)/2 (Ψ is public), which keeps a bin edge from falling
  between the two secrets' means by accident of the units. The error F̂ − F is bounded.

Exact accounting. The output is a deterministic function of F with a countable range, and under θ
its law is a product over coordinates of the bin masses P_θ(u_k ∈ [js, (j+1)s)) = Φ(·) − Φ(·) of
1-D Gaussians (closed form). So the privacy loss ℓ = ln P0(y)/P1(y) is a sum of independent finite
coordinate losses, and δ(ε) = Σ_y (P0(y) − e^ε P1(y))_+ is computed by the certified discretised
PLD of :mod:`distpriv.accounting.pld` (bins beyond ±12 standard deviations are lumped with loss +∞,
a valid upper bound). Gaussian tails make the bin ratio unbounded, so no pure ε exists: δ > 0.

Their own notion is reported beside: the attacker's success probability Π of guessing the secret
within a tolerance below |θ1 − θ0|/2 under a uniform prior on the pair is the Bayes-optimal accuracy
Σ_y max(P0(y), P1(y))/2 = (1 + TV)/2, TV = δ(0), computed by the same exact routine; their
distortion is the worst-case shift sup ||F̂ − F||₂ (a half cell diagonal mapped back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._validation import RngLike, as_rng, check_array, check_positive
from ..accounting import pld
from ..errors import InvalidParameterError, InvalidTypeError
from ..guarantees import Calibration, Guarantee
from ..models import GaussianModel
from ._common import GAUSSIAN, MODEL_IS_TRUTH, Inputs, as_gaussian

LABEL = "SSP quantizer"
#: Bins farther than this many standard deviations (of either law) from the means are lumped (loss +∞).
Z_RANGE = 12.0
#: Relative floating-point error allowed on every bin mass (log Φ differences are accurate to ~1e-15).
MASS_REL_ERR = 1e-12
#: Candidate bin widths, in whitened units (multiples of the pair's Mahalanobis distance).
WIDTH_GRID = tuple(float(x) for x in np.geomspace(0.05, 400.0, 121))
#: At most this many bins per coordinate (review32: identical means made the grid's smallest width 5e-8 whitened
#: units, 4.8e8 bins over ±Z_RANGE sd and 3.6 GB): the grid's unit is at least the width giving MAX_BINS bins at its
#: smallest multiple, and a fixed ``width`` below that is refused.
MAX_BINS = 200_000
#: The width search first tries every COARSE_STEP-th width of the grid, then the widths just below the first success.
COARSE_STEP = 8
SOURCE = "Lin, Wang, Sekar & Fanti, Summary Statistic Privacy in Data Sharing (IEEE JSAIT 2024), Sec. V"


# --------------------------------------------------------------------------- their 1-D mechanism
def ssp_mean_release(samples: ArrayLike, s: float) -> NDArray[np.float64]:
    """Lin et al.'s mean quantizer on a 1-D sample: shift every value so the mean is its bin's midpoint.

    new = x + ((⌊mean/s⌋ + 1/2)·s − mean). (Their code truncates toward zero with ``int``; for a
    non-negative mean, as in their examples, that is ⌊·⌋.)
    """
    x = check_array(samples, "samples", ndim=1)
    s = check_positive(s, "s")
    mean = float(x.mean())
    return x + ((math.floor(mean / s) + 0.5) * s - mean)


def ssp_quantile_release(samples: ArrayLike, s: float, level: float) -> NDArray[np.float64]:
    """Lin et al.'s quantile quantizer on a 1-D sample: rescale so the ``level``-quantile is its bin's midpoint.

    new = x · q'/q with q the sample quantile (linear interpolation) and q' = (⌊q/s⌋ + 1/2)·s;
    q must be non-zero (a scale change cannot move a zero quantile).
    """
    x = check_array(samples, "samples", ndim=1)
    s = check_positive(s, "s")
    if not 0.0 <= float(level) <= 1.0:
        raise InvalidParameterError(f"must lie in [0, 1], got {level}", argument="level")
    q = float(np.quantile(x, float(level)))
    if q == 0.0:
        raise InvalidParameterError("the quantile of the sample is 0; a rescaling cannot move it", argument="samples")
    return x * ((math.floor(q / s) + 0.5) * s / q)


def ssp_fraction_distribution(samples: ArrayLike, s: float, target: Any) -> dict[Any, float]:
    """Lin et al.'s fraction quantizer: the released class distribution (their ``fraction_mechanism`` then samples it).

    The share p of class ``target`` moves to its bin's midpoint p' = (⌊p/s⌋ + 1/2)·s; the other K − 1
    classes (in order of first appearance) each give up (p' − p)/(K − 1). If that makes a share
    negative, every share is raised by the deficit m = −min(shares) and the protected class lowered
    by (K − 1)·m so the total stays 1 (their adjustment). The released dataset is a sample of the
    original size from this distribution (:func:`ssp_fraction_release`).
    """
    x = list(np.asarray(samples).ravel().tolist())
    s = check_positive(s, "s")
    classes = list(dict.fromkeys(x))
    if target not in classes:
        raise InvalidParameterError(f"{target!r} does not occur in the samples", argument="target")
    if len(classes) < 2:
        raise InvalidParameterError("needs at least two classes (the others absorb the shift)", argument="samples")
    share = np.array([x.count(c) for c in classes], dtype=float) / len(x)
    k = classes.index(target)
    new_p = (math.floor(share[k] / s) + 0.5) * s
    out = share - (new_p - share[k]) / (len(classes) - 1)
    out[k] = new_p
    deficit = min(float(out.min()), 0.0)
    out -= deficit
    out[k] = new_p + deficit * (len(classes) - 1)
    return dict(zip(classes, (float(v) for v in out), strict=True))


def ssp_fraction_release(samples: ArrayLike, s: float, target: Any, rng: RngLike = None) -> NDArray[Any]:
    """A released dataset of the original size drawn from :func:`ssp_fraction_distribution`."""
    dist = ssp_fraction_distribution(samples, s, target)
    n = int(np.asarray(samples).size)
    keys = list(dist)
    idx = as_rng(rng).choice(len(keys), size=n, p=np.array([dist[c] for c in keys]))
    return np.asarray([keys[i] for i in idx])


# --------------------------------------------------------------------------- bin masses
def _log_diff(log_hi: NDArray[np.float64], log_lo: NDArray[np.float64]) -> NDArray[np.float64]:
    """ln(e^{a} − e^{b}) for a >= b (−inf where equal)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return log_hi + np.log1p(-np.exp(np.minimum(log_lo - log_hi, 0.0)))


def log_bin_masses(edges: NDArray[np.float64], mean: float, sd: float) -> NDArray[np.float64]:
    """ln P(edges[j] <= U < edges[j+1]) for U ~ N(mean, sd²), accurate in both tails."""
    z = (edges - mean) / sd
    lo, hi = z[:-1], z[1:]
    upper_side = lo > 0  # both ends above the mean: use survival functions Φ(−z)
    a = np.where(upper_side, special.log_ndtr(-lo), special.log_ndtr(hi))
    b = np.where(upper_side, special.log_ndtr(-hi), special.log_ndtr(lo))
    return _log_diff(a, b)


@dataclass(frozen=True)
class FiniteLoss:
    """One coordinate's privacy loss with finitely many atoms: ℓ_j with P-mass p_j, plus mass at +∞.

    Implements :class:`distpriv.accounting.pld.LossCoordinate` (rounding ℓ up/down to the grid is
    exact bookkeeping for finite atoms).
    """

    loss: NDArray[np.float64]
    mass: NDArray[np.float64]
    inf_mass: float = 0.0

    def loss_range(self, tail: float = pld.TAIL) -> tuple[float, float]:
        """[lo, hi] holding all but <= ``tail`` of the P-mass: at most tail/2 of it is left out at either end.

        The protocol's contract (:class:`distpriv.accounting.pld.LossCoordinate`): the grid ends there and
        :meth:`discretise` rounds the atoms beyond hi to +∞ and those below lo up to lo (upper end) or drops
        them (lower end), so both ends stay certified. Atoms of negligible mass far in the Gaussian tails (bins
        out to ±:data:`Z_RANGE` standard deviations) no longer stretch the grid (issue 25: a fine-width
        quantizer's PLD grid is a third shorter, its FFT half the size).
        """
        if self.loss.size == 0:
            return 0.0, 0.0
        order = np.argsort(self.loss, kind="stable")
        loss, mass = self.loss[order], self.mass[order]
        cut = 0.5 * max(float(tail), 0.0)
        lo = min(int(np.searchsorted(np.cumsum(mass), cut, side="right")), loss.size - 1)
        hi = max(loss.size - 1 - int(np.searchsorted(np.cumsum(mass[::-1]), cut, side="right")), 0)
        return float(loss[lo]), float(loss[max(hi, lo)])

    def spread(self) -> float:
        tot = float(self.mass.sum())
        if tot <= 0:
            return 1e-12
        m = float(self.mass @ self.loss) / tot
        return max(math.sqrt(max(float(self.mass @ (self.loss - m) ** 2) / tot, 0.0)), 1e-12)

    def discretise(self, h: float, k_lo: int, k_hi: int) -> pld.Discretised:
        size = k_hi - k_lo + 1
        up_k = np.ceil(self.loss / h).astype(np.int64)
        dn_k = np.floor(self.loss / h).astype(np.int64)
        upper = np.zeros(size)
        keep = up_k <= k_hi
        np.add.at(upper, np.clip(up_k[keep], k_lo, k_hi) - k_lo, self.mass[keep])
        inf_mass = self.inf_mass + float(self.mass[~keep].sum())
        lower = np.zeros(size)
        keep_dn = dn_k >= k_lo
        np.add.at(lower, np.clip(dn_k[keep_dn], k_lo, k_hi) - k_lo, self.mass[keep_dn])
        return pld.Discretised(upper, inf_mass, lower, MASS_REL_ERR)


# --------------------------------------------------------------------------- the pair's geometry
@dataclass(frozen=True)
class PairBasis:
    """u = WᵀF has independent coordinates under both secrets: N(m0, 1) and N(m1, λ) per coordinate."""

    w: NDArray[np.float64]
    w_inv_t: NDArray[np.float64]
    centre: NDArray[np.float64]
    m0: NDArray[np.float64]
    v0: NDArray[np.float64]
    m1: NDArray[np.float64]
    v1: NDArray[np.float64]


def pair_basis(model: GaussianModel, a: Any, b: Any) -> PairBasis:
    """Generalised eigenvectors of (Σ_b, Σ_a): WᵀΣ_a W = I, WᵀΣ_b W = diag(λ) (scipy.linalg.eigh).

    A direction e that both covariances leave without variance (a statistic fixed by the secret, e.g.
    the count of records satisfying the protected predicate) is a point mass under both laws: it gets
    a coordinate of variance 0, scaled so the pair's shift along it has length 1 (or left unit-norm
    without a shift). A null direction of one covariance only is refused (the output laws would be
    mutually singular there whatever the width).
    """
    from scipy import linalg

    sa, sb = model.covariance(a), model.covariance(b)
    tol = 1e-10 * max(1.0, float(np.abs(sa).max()), float(np.abs(sb).max()))
    wa, va = np.linalg.eigh(sa)
    null = va[:, wa <= tol]
    if null.shape[1] and (np.abs(null.T @ sb @ null).max() > tol or np.linalg.eigvalsh(sb).min() < -tol):
        raise InvalidParameterError("a direction has variance under one secret and none under the other; "
                                    "the SSP quantizer cannot account it", argument="model")
    rng_ = va[:, wa > tol]
    # generalised eigenproblem on the common range
    lam, u = linalg.eigh(rng_.T @ sb @ rng_, rng_.T @ sa @ rng_)
    w = rng_ @ np.asarray(u, dtype=float)
    v1 = np.asarray(lam, dtype=float)
    v0 = np.ones(w.shape[1])
    if null.shape[1]:
        shift = null.T @ (model.mean(b) - model.mean(a))
        cols = []
        for k in range(null.shape[1]):
            cols.append(null[:, k] / abs(shift[k]) if abs(shift[k]) > tol else null[:, k])
        w = np.hstack([w, np.column_stack(cols)])
        v0 = np.concatenate([v0, np.zeros(null.shape[1])])
        v1 = np.concatenate([v1, np.zeros(null.shape[1])])
    m0, m1 = w.T @ model.mean(a), w.T @ model.mean(b)
    return PairBasis(w, np.linalg.inv(w).T, 0.5 * (m0 + m1), m0, v0, m1, v1)


def _finest_width(pb: PairBasis) -> float:
    """The least bin width laying at most MAX_BINS bins over the ±Z_RANGE sd span of :func:`_edges` on any coordinate."""
    sd0, sd1 = np.sqrt(np.maximum(pb.v0, 0.0)), np.sqrt(np.maximum(pb.v1, 0.0))
    span = np.maximum(pb.m0 + Z_RANGE * sd0, pb.m1 + Z_RANGE * sd1) - np.minimum(pb.m0 - Z_RANGE * sd0,
                                                                                  pb.m1 - Z_RANGE * sd1)
    return float(np.max(span, initial=0.0)) / MAX_BINS


def _point_loss(mp: float, mq: float, width: float, centre: float) -> FiniteLoss:
    """A coordinate fixed under both laws: same bin -> loss 0; different bins -> all P-mass at +∞."""
    same = math.floor((mp - centre) / width + 0.5) == math.floor((mq - centre) / width + 0.5)
    return FiniteLoss(np.zeros(1), np.ones(1)) if same else FiniteLoss(np.zeros(0), np.zeros(0), 1.0)


def _edges(m0: float, s0: float, m1: float, s1: float, width: float, centre: float) -> tuple[NDArray[np.float64], float, float]:
    """Bin edges centre + (j + 1/2)·width covering ±Z_RANGE standard deviations of both laws."""
    lo = min(m0 - Z_RANGE * s0, m1 - Z_RANGE * s1) - centre
    hi = max(m0 + Z_RANGE * s0, m1 + Z_RANGE * s1) - centre
    j0, j1 = math.floor(lo / width - 0.5), math.floor(hi / width - 0.5) + 1
    edges = centre + (np.arange(j0, j1 + 1, dtype=float) + 0.5) * width
    return edges, float(edges[0]), float(edges[-1])


def coordinate_losses(pb: PairBasis, width: float, *, reverse: bool = False) -> list[FiniteLoss]:
    """Per-coordinate finite loss laws ℓ = ln P(y)/Q(y) under P (P = θ0's law, or θ1's when ``reverse``)."""
    out = []
    for k in range(pb.w.shape[1]):
        mp, vp, mq, vq = pb.m0[k], pb.v0[k], pb.m1[k], pb.v1[k]
        if reverse:
            mp, vp, mq, vq = mq, vq, mp, vp
        sp, sq = math.sqrt(vp), math.sqrt(vq)
        if sp == 0 or sq == 0:
            out.append(_point_loss(mp, mq, width, float(pb.centre[k])))
            continue
        edges, lo, hi = _edges(mp, sp, mq, sq, width, float(pb.centre[k]))
        lp, lq = log_bin_masses(edges, mp, sp), log_bin_masses(edges, mq, sq)
        outside = float(special.ndtr((lo - mp) / sp) + special.ndtr(-(hi - mp) / sp))
        finite = np.isfinite(lp) & np.isfinite(lq)
        inf_extra = float(np.exp(lp[~finite & np.isfinite(lp)]).sum())  # Q-mass 0: loss +∞
        out.append(FiniteLoss(lp[finite] - lq[finite], np.exp(lp[finite]), outside + inf_extra))
    return out


#: Atoms of P-mass below this are moved to the +∞ bucket before enumeration (upper end stays valid).
ATOM_FLOOR = 1e-18
#: Largest joint output set enumerated directly (beyond it the discretised PLD brackets δ).
DIRECT_ATOMS = 3_000_000


def _direct_delta(coords: list[FiniteLoss], epsilon: float, floor: float = ATOM_FLOOR) -> tuple[float, float] | None:
    """Exact Σ_y (P(y) − e^ε Q(y))_+ by enumerating the joint finite outputs; None when too many.

    Atoms with P-mass < :data:`ATOM_FLOOR` and the +∞ bucket count fully in the upper end and not
    at all in the lower end; every other output contributes P(y)(1 − e^{ε − ℓ(y)})_+ exactly.
    """
    kept = []
    for c in coords:
        big = c.mass >= floor
        kept.append((c.loss[big], c.mass[big]))
    if math.prod(max(len(k[0]), 1) for k in kept) > DIRECT_ATOMS:
        return None
    loss, mass = np.zeros(1), np.ones(1)
    for lk, mk in kept:
        loss = (loss[:, None] + lk[None, :]).ravel()
        mass = (mass[:, None] * mk[None, :]).ravel()
    with np.errstate(over="ignore"):
        w = -np.expm1(np.minimum(epsilon - loss, 0.0))
    finite = float(mass @ w)
    missing = max(0.0, 1.0 - float(mass.sum()))  # P-mass of every output holding a dropped or +∞ atom
    err = 1e-12 * (1.0 + finite)
    return max(0.0, finite - err), min(1.0, finite + missing + err)


def _order_delta(coords: list[FiniteLoss], epsilon: float, rtol: float, target: float | None,
                 floor: float) -> tuple[float, float]:
    """Certified [lower, upper] on δ(ε) of one order: direct enumeration when few outputs, else the PLD."""
    direct = _direct_delta(coords, epsilon, floor)
    if direct is not None:
        return direct
    br = pld.pld_bracket(coords, epsilon, rtol=rtol, target=target)
    return br.lower, br.upper


#: Relative tolerance of the decision-mode PLD that shows the second order of a full bracket cannot matter.
DECIDE_RTOL = 1e-2


def quantizer_delta(pb: PairBasis, width: float, epsilon: float, *, rtol: float = 1e-3,
                    target: float | None = None) -> tuple[float, float]:
    """Certified [lower, upper] on max over both orders of δ(ε) of the quantizer with bin width ``width``.

    Direct enumeration of the joint outputs when they are few (:func:`_direct_delta`), else the
    discretised PLD of :mod:`distpriv.accounting.pld`.

    Full bracket (``target`` None): the order θ0 → θ1 is bracketed to ``rtol`` first, [l0, u0]; the other
    order is then decided against l0 on a coarse grid (:data:`DECIDE_RTOL`, decision mode). When its
    certified upper end is <= l0, its δ is below the first order's, so max(δ0, δ1) = δ0 ∈ [l0, u0] is the
    answer without bracketing it to ``rtol`` (issue 25: the reverse order of a fine quantizer is often
    orders of magnitude smaller, and its fine PLD cost as much as the first); else it is bracketed to
    ``rtol`` too and the two brackets combined (max of the ends) as before.
    """
    orders = [coordinate_losses(pb, width, reverse=rev) for rev in (False, True)]
    if any(c.loss.size == 0 and c.inf_mass >= 1.0 for coords in orders for c in coords):
        return 1.0, 1.0  # a fixed coordinate lands in different bins: the outputs are disjoint, δ = 1
    if target is not None:
        # post-processing: one coordinate of the output proves a lower bound on the joint δ (cheap rejection)
        for coords in orders:
            for c in coords:
                one = _direct_delta([c], epsilon)
                if one is not None and one[0] > target:
                    return one[0], 1.0
        lo_w, up_w = 0.0, 0.0
        for coords in orders:
            lo, up = _order_delta(coords, epsilon, rtol, target, max(ATOM_FLOOR, 1e-9 * target))
            lo_w, up_w = max(lo_w, lo), max(up_w, up)
        return lo_w, up_w
    lo0, up0 = _order_delta(orders[0], epsilon, rtol, None, ATOM_FLOOR)
    if lo0 > 0.0 and _order_delta(orders[1], epsilon, max(rtol, DECIDE_RTOL), lo0, ATOM_FLOOR)[1] <= lo0:
        return lo0, up0
    lo1, up1 = _order_delta(orders[1], epsilon, rtol, None, ATOM_FLOOR)
    return max(lo0, lo1), max(up0, up1)


def quantizer_tv(pb: PairBasis, width: float, *, rtol: float = 1e-3) -> tuple[float, float]:
    """Certified [lower, upper] on the total variation distance of the quantizer's two output laws.

    TV = Σ_y (P(y) − Q(y))_+ = δ(0) of either order (both laws are probability measures, so the two
    orders' δ(0) are the same number): one order is bracketed, θ0 → θ1 (issue 25: the second order's
    bracket, which :func:`quantizer_delta` at ε = 0 also computed, bounds the same value).
    """
    coords = coordinate_losses(pb, width)
    if any(c.loss.size == 0 and c.inf_mass >= 1.0 for c in coords):
        return 1.0, 1.0
    return _order_delta(coords, 0.0, rtol, None, ATOM_FLOOR)


# --------------------------------------------------------------------------- the mechanism
@dataclass
class QuantizerMechanism:
    """A deterministic quantizer F ↦ W^{-T}(c + s·round((WᵀF − c)/s)) with its exact guarantee.

    Satisfies :class:`distpriv.protocol.CalibratedMechanism`. ``noise_covariance`` is the covariance
    s²/12·W^{-T}W^{-1} of the quantisation error if the error were uniform on a cell — an
    approximation offered only to attackers that need a Gaussian noise model (the likelihood-ratio
    attack); no claim uses it.
    """

    name: str
    label: str
    dim: int
    guarantee: Guarantee
    basis: NDArray[np.float64]
    width: float
    centre: NDArray[np.float64]
    details: dict[str, Any] = field(default_factory=dict)
    kind: str = "quantizer"
    _w_inv_t: NDArray[np.float64] | None = field(default=None, repr=False)

    @property
    def inverse_basis_t(self) -> NDArray[np.float64]:
        if self._w_inv_t is None:
            self._w_inv_t = np.linalg.inv(self.basis).T
        return self._w_inv_t

    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Quantize N query values, shape (N, m) -> (N, m) (deterministic; ``rng`` is ignored)."""
        arr = check_array(xs, "xs", ndim=2)
        if arr.shape[1] != self.dim:
            raise InvalidTypeError(f"xs: expected rows of length {self.dim}, got {arr.shape[1]}")
        u = arr @ self.basis - self.centre
        q = self.centre + np.floor(u / self.width + 0.5) * self.width
        return np.asarray(q @ self.inverse_basis_t.T, dtype=float)

    def release(self, x: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]:
        """Quantize one query value of length m."""
        arr = check_array(x, "x", ndim=1)
        if arr.shape[0] != self.dim:
            raise InvalidTypeError(f"x: expected a query value of length {self.dim}, got {arr.shape[0]}")
        return self.release_batch(arr[None, :])[0]

    @property
    def noise_covariance(self) -> NDArray[np.float64]:
        """s²/12 · W^{-T} W^{-1}: the uniform-cell approximation of the error covariance (attack models only)."""
        wt = self.inverse_basis_t
        return np.asarray((self.width**2 / 12.0) * (wt @ wt.T), dtype=float)

    @property
    def distortion(self) -> float:
        """sup_F ||F̂ − F||₂ = max over cell corners c ∈ {±s/2}^m of ||W^{-T} c||₂ (Lin et al.'s worst case)."""
        import itertools

        m = self.dim
        signs = np.array(list(itertools.product((-0.5, 0.5), repeat=m))) * self.width
        return float(np.linalg.norm(signs @ self.inverse_basis_t.T, axis=1).max())

    @property
    def expected_l2_error(self) -> float:
        """E||F̂ − F||₂ under the calibration model (mixture of the pair's laws), Monte Carlo, fixed seed."""
        return float(self.details["expected_l2_error"])

    def summary(self) -> dict[str, Any]:
        return {"mechanism": self.name, "label": self.label, "noise": self.kind, "bin_width": self.width,
                "expected_l2_error": self.expected_l2_error, "distortion": self.distortion,
                "guarantee": self.guarantee.to_dict()}


def _mc_error(model: GaussianModel, pair: tuple[Any, Any], mech: QuantizerMechanism, n: int = 20_000) -> float:
    g = np.random.default_rng(20240229)
    xs = np.vstack([model.sample(lab, n // 2, g) for lab in pair])
    return float(np.linalg.norm(mech.release_batch(xs) - xs, axis=1).mean())


def ssp_quantizer(inp: Inputs, *, width: float | None = None) -> QuantizerMechanism:
    """Calibrate the SSP quantizer on the one pair of Ψ: the least bin width (of :data:`WIDTH_GRID`) meeting (ε, δ).

    ``width`` (whitened units) fixes the bin width instead; the claim is then its exact δ(ε).
    δ(ε) need not be monotone in the width (it depends on where the bin edges fall): the search tries
    every :data:`COARSE_STEP`-th width from the smallest up, then the grid widths between the last
    coarse failure and the first coarse success, and keeps the least that meets the target. The
    claim is the certified δ(ε) of the chosen width, whatever the search.
    """
    if len(inp.pairs) != 1:
        raise InvalidParameterError(
            f"the SSP quantizer protects one secret pair (Lin et al.'s mechanisms hide one secret); got {len(inp.pairs)}",
            argument="pairs")
    g = as_gaussian(inp.model)
    a, b = inp.pairs[0]
    pb = pair_basis(g, a, b)
    eps, target = inp.epsilon, inp.delta
    dist = float(np.linalg.norm(pb.m1 - pb.m0))
    finest = _finest_width(pb)
    scale = max(dist, finest / WIDTH_GRID[0])
    tried = 0
    if width is not None:
        chosen = check_positive(width, "width")
        if chosen < finest:
            raise InvalidParameterError(
                f"bin width {chosen:g} would lay more than {MAX_BINS:,} bins over ±{Z_RANGE:g} standard deviations; "
                f"use a width of at least {finest:.3g} (whitened units)", argument="width")
        lo, up = quantizer_delta(pb, chosen, eps)
    else:
        chosen, lo, up = math.nan, 0.0, 1.0

        def meets(i: int) -> bool:
            nonlocal tried
            tried += 1
            return quantizer_delta(pb, WIDTH_GRID[i] * scale, eps, rtol=1e-2, target=target)[1] <= target

        coarse = next((i for i in range(0, len(WIDTH_GRID), COARSE_STEP) if meets(i)), None)
        if coarse is not None:
            start = max(0, coarse - COARSE_STEP + 1)
            best = next((i for i in range(start, coarse) if meets(i)), coarse)
            chosen = WIDTH_GRID[best] * scale
            lo, up = quantizer_delta(pb, chosen, eps)
        if math.isnan(chosen):
            raise InvalidParameterError(
                f"no bin width up to {WIDTH_GRID[-1]:g}× the pair's Mahalanobis distance meets (ε, δ) = "
                f"({eps:g}, {target:g}) for the SSP quantizer", argument="epsilon")
    tv_lo, tv_up = quantizer_tv(pb, chosen)
    claimed = min(1.0, up)
    notes = (
        f"exact accounting: the output law is finite (a product of 1-D bin masses in the pair's generalised "
        f"eigenbasis); certified δ(ε) ∈ [{lo:.4g}, {up:.4g}] over both orders (distpriv.accounting.pld)",
        f"their notion (Lin et al.): attacker success Π = (1 + TV)/2 ∈ [{(1 + tv_lo) / 2:.4f}, {(1 + tv_up) / 2:.4f}] "
        "for a uniform prior on the pair and a tolerance below |θ1 − θ0|/2",
        f"bin width s = {chosen:.6g} (whitened units; {chosen / scale:.4g}× the Mahalanobis distance "
        f"{dist:.4g}); one bin centred on the pair's midpoint" + (f"; {tried} widths scanned" if tried else ""),
    )
    guarantee = Guarantee(eps, claimed, "ssp-quantizer", calibration=Calibration.EXACT, pairs=inp.pairs,
                          assumptions=(GAUSSIAN, MODEL_IS_TRUTH), theorem=f"{SOURCE}; exact finite accounting",
                          notes=notes)
    mech = QuantizerMechanism("ssp-quantizer", LABEL, g.dim, guarantee, pb.w, chosen, pb.centre)
    mech.details.update({
        "bin_width": chosen, "delta_bracket": (lo, up), "tv_bracket": (tv_lo, tv_up),
        "attacker_success": (1 + tv_up) / 2, "mahalanobis": dist, "widths_scanned": tried,
    })
    mech.details["expected_l2_error"] = _mc_error(g, (a, b), mech)
    mech.details["distortion"] = mech.distortion
    return mech


