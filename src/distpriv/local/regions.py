"""Regions for the location experiments (tupling paper Section 7.1).

A bounding box is divided into a regular grid (the paper: Manhattan in 11 × 10
cells of 1 km); every *crowded* cell is then split recursively into four
quadrants until no cell holds more than a threshold of the check-ins (or a
maximum depth is reached), so that the regions have roughly similar
population. The set Y is all regions; the input set X is the regions whose
centre lies in a central sub-box (the paper: 228 of 276 regions in the central
10 km × 9 km). Ground distances are Euclidean distances between centres.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array, check_int, check_positive
from ..errors import InvalidParameterError
from .point import euclidean_cost


@dataclass(frozen=True)
class Regions:
    """Axis-aligned rectangular regions ``[x0, x1) × [y0, y1)`` (columns of ``bounds``)."""

    bounds: NDArray[np.float64]  # (n, 4): x0, y0, x1, y1
    depth: NDArray[np.int64]

    @property
    def n(self) -> int:
        """Number of regions."""
        return int(self.bounds.shape[0])

    @property
    def centres(self) -> NDArray[np.float64]:
        """``(n, 2)`` region centres."""
        b = self.bounds
        return np.column_stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2])

    def assign(self, points: ArrayLike) -> NDArray[np.int64]:
        """Region index of each point (``-1`` outside every region)."""
        p = check_array(points, "points", ndim=2)
        if p.shape[1] != 2:
            raise InvalidParameterError(f"points: expected shape (n, 2), got {p.shape}")
        out = np.full(p.shape[0], -1, dtype=np.int64)
        b = self.bounds
        for i in range(self.n):
            inside = (p[:, 0] >= b[i, 0]) & (p[:, 0] < b[i, 2]) & (p[:, 1] >= b[i, 1]) & (p[:, 1] < b[i, 3])
            out[inside & (out < 0)] = i
        return out

    def histogram(self, points: ArrayLike, subset: ArrayLike | None = None, *, smoothing: float = 0.0) -> NDArray[np.float64]:
        """Empirical distribution of ``points`` over the regions (or over ``subset`` indices),
        with optional additive smoothing; points outside are dropped."""
        idx = self.assign(points)
        counts = np.bincount(idx[idx >= 0], minlength=self.n).astype(float)
        if subset is not None:
            counts = counts[np.asarray(subset)]
        counts = counts + check_positive(smoothing, "smoothing", allow_zero=True)
        total = counts.sum()
        if total <= 0:
            raise InvalidParameterError("points: no point falls inside the regions")
        return counts / total

    def inner(self, box: ArrayLike) -> NDArray[np.int64]:
        """Indices of regions whose centre lies in ``box = (x0, y0, x1, y1)`` (the input set X)."""
        bx = check_array(box, "box", ndim=1)
        if bx.size != 4:
            raise InvalidParameterError("box: expected (x0, y0, x1, y1)")
        c = self.centres
        m = (c[:, 0] >= bx[0]) & (c[:, 0] <= bx[2]) & (c[:, 1] >= bx[1]) & (c[:, 1] <= bx[3])
        return np.flatnonzero(m)

    def distances(self, rows: ArrayLike | None = None, cols: ArrayLike | None = None) -> NDArray[np.float64]:
        """Euclidean distances between the centres of ``rows`` and ``cols`` (default: all)."""
        c = self.centres
        a = c if rows is None else c[np.asarray(rows)]
        b = c if cols is None else c[np.asarray(cols)]
        return euclidean_cost(a, b)


def _split(bounds: NDArray[np.float64], depth: NDArray[np.int64], points: NDArray[np.float64],
           threshold: float, max_depth: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Split every cell holding more than ``threshold`` points into quadrants, recursively."""
    out_b: list[tuple[float, float, float, float]] = []
    out_d: list[int] = []

    def rec(b: tuple[float, float, float, float], dpt: int, pts: NDArray[np.float64]) -> None:
        if pts.shape[0] > threshold and dpt < max_depth:
            xm, ym = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
            left, low = pts[:, 0] < xm, pts[:, 1] < ym
            rec((b[0], b[1], xm, ym), dpt + 1, pts[left & low])
            rec((xm, b[1], b[2], ym), dpt + 1, pts[~left & low])
            rec((b[0], ym, xm, b[3]), dpt + 1, pts[left & ~low])
            rec((xm, ym, b[2], b[3]), dpt + 1, pts[~left & ~low])
        else:
            out_b.append(b)
            out_d.append(dpt)

    for i in range(bounds.shape[0]):
        b = bounds[i]
        inside = (points[:, 0] >= b[0]) & (points[:, 0] < b[2]) & (points[:, 1] >= b[1]) & (points[:, 1] < b[3])
        rec(tuple(float(v) for v in b), int(depth[i]), points[inside])  # type: ignore[arg-type]
    return np.array(out_b, dtype=float), np.array(out_d, dtype=np.int64)


def build_regions(
    points: ArrayLike,
    bbox: ArrayLike,
    n_cols: int,
    n_rows: int,
    *,
    threshold: float | None = None,
    target: int | None = None,
    max_depth: int = 4,
) -> Regions:
    """Grid of ``n_cols × n_rows`` cells over ``bbox = (x0, y0, x1, y1)``, crowded cells split into
    quadrants recursively (Section 7.1).

    A cell is crowded when it holds more than ``threshold`` points. If
    ``target`` (a number of regions) is given instead, the threshold is chosen by
    bisection so that the number of regions is as close as possible to it.
    """
    pts = check_array(points, "points", ndim=2)
    if pts.shape[1] != 2:
        raise InvalidParameterError(f"points: expected shape (n, 2), got {pts.shape}")
    bx = check_array(bbox, "bbox", ndim=1)
    if bx.size != 4 or not (bx[2] > bx[0] and bx[3] > bx[1]):
        raise InvalidParameterError("bbox: expected (x0, y0, x1, y1) with x1 > x0 and y1 > y0")
    nc = check_int(n_cols, "n_cols", minimum=1)
    nr = check_int(n_rows, "n_rows", minimum=1)
    md = check_int(max_depth, "max_depth", minimum=0)
    xs = np.linspace(bx[0], bx[2], nc + 1)
    ys = np.linspace(bx[1], bx[3], nr + 1)
    base = np.array([(xs[i], ys[j], xs[i + 1], ys[j + 1]) for j in range(nr) for i in range(nc)])
    depth0 = np.zeros(base.shape[0], dtype=np.int64)
    inside = (pts[:, 0] >= bx[0]) & (pts[:, 0] < bx[2]) & (pts[:, 1] >= bx[1]) & (pts[:, 1] < bx[3])
    pts = pts[inside]
    if threshold is not None:
        b, d = _split(base, depth0, pts, check_positive(threshold, "threshold"), md)
        return Regions(b, d)
    if target is None:
        # default: split cells holding more than twice the mean count of a base cell
        b, d = _split(base, depth0, pts, 2.0 * max(pts.shape[0], 1) / base.shape[0], md)
        return Regions(b, d)
    tgt = check_int(target, "target", minimum=base.shape[0])
    lo, hi = 0.0, float(max(pts.shape[0], 1))
    best = _split(base, depth0, pts, hi, md)
    for _ in range(40):
        mid = float(np.floor(0.5 * (lo + hi)))
        b, d = _split(base, depth0, pts, mid, md)
        if abs(b.shape[0] - tgt) < abs(best[0].shape[0] - tgt):
            best = (b, d)
        if b.shape[0] > tgt:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1.0:
            break
    return Regions(*best)
