"""f_θ of the published statistics of a :class:`~distpriv.statspec.Layout` (variances, quantiles, histograms, ...).

The base query (linear statistics) is modelled as before (:func:`distpriv.release.data.model_f_theta`:
closed-form moments, shape from the stratified resampler :class:`~distpriv.release.data.MomentSampler`).
Each sampled dataset's base sums are then mapped to the published coordinates
(:meth:`~distpriv.statspec.Layout.transform`):

* linear coordinates (histograms, group-by sums and counts) are coordinates of the base query, so their
  samples keep exactly the closed-form mean and covariance;
* variances, standard deviations, ratios and group means are the nonlinear functions of the same sampled
  sums (Chen & Ohrimenko Sec. 6.1: datasets of n records, ⌊θn⌉ of them protected); their law is the
  resampler's, and the selection tests the Gaussian assumption on them as on every other statistic
  (relaxed corrections, or the Wasserstein mechanism, where it fails);
* a quantile's marginal law is exact (:class:`distpriv.quantiles.QuantileLaw`): the j-th smallest of the N
  sampled values of θ is F_θ⁻¹((j − ½)/N), the exact quantile function at the stratified levels; the
  resampler only decides which sampled dataset gets which value (the dependence on the other coordinates,
  by the rank of the quantile of each resampled dataset, ties broken at random).
"""

from __future__ import annotations

from typing import Any

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from .._validation import as_rng
from ..models import EmpiricalModel
from ..quantiles import Grid, QuantileLaw
from ..statspec import Layout
from .data import Modelling, MomentSampler, weighted_draws

#: Thresholds of the indicator columns used to rank the resampled datasets' quantiles.
_RANK_THRESHOLDS = 512


class RecordingSampler(MomentSampler):
    """A :class:`MomentSampler` that can also return, per raw draw, the count of values <= each of a few
    thresholds of the quantile columns (indicator columns appended to each group's rows: the draws are the
    same, since they depend on the number of rows only)."""

    q_columns: list[int] = []  # noqa: RUF012 - set per instance by setup()
    recording: list[NDArray[np.float64]] | None = None

    def setup(self, columns: list[int], r: list[int]) -> None:
        """Thresholds per quantile (base column index ``columns[j]``, rank ``r[j]``). Quantiles of the same
        column share its thresholds and indicator columns (a median and a 0.9-quantile of x: one block)."""
        self.q_columns = columns
        self.q_ranks = r
        self.distinct = list(dict.fromkeys(columns))
        self.thresholds: list[NDArray[np.float64]] = []
        for c in self.distinct:
            vals = np.unique(np.concatenate([self.pos[:, c], self.neg[:, c]]))
            if vals.size > _RANK_THRESHOLDS:
                vals = np.unique(np.quantile(vals, np.linspace(0, 1, _RANK_THRESHOLDS)))
            self.thresholds.append(vals)
        self.ind_pos = self._indicators(self.pos)
        self.ind_neg = self._indicators(self.neg)
        self.recording: list[NDArray[np.float64]] | None = None

    def _indicators(self, mat: NDArray[np.float64]) -> NDArray[np.float64]:
        cols = [(mat[:, c][:, None] <= t[None, :]).astype(float) for c, t in zip(self.distinct, self.thresholds,
                                                                                strict=True)]
        return np.hstack(cols) if cols else np.zeros((len(mat), 0))

    def _group(self, mat: NDArray[np.float64], k: int, size: int, g: np.random.Generator) -> NDArray[np.float64]:
        if self.recording is None or not self.q_columns:
            return super()._group(mat, k, size, g)
        ind = self.ind_pos if mat is self.pos else self.ind_neg
        m = mat.shape[1]
        both = self._weights_times(np.hstack([mat, ind]), k, size, g)
        self.recording.append(both[:, m:])
        return both[:, :m]

    def _weights_times(self, mat: NDArray[np.float64], k: int, size: int, g: np.random.Generator
                       ) -> NDArray[np.float64]:
        """W @ mat for the weights W that :meth:`MomentSampler._group` draws (the same draws from ``g``: they
        depend on the number of rows, k and size only)."""
        return weighted_draws(mat, k, size, g, replace=self.replace)

    def raw_with_ranks(self, p: float, size: int, rng: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Raw draws of the base query and, per quantile, the index of the resampled dataset's quantile among
        the thresholds (size, n_quantiles)."""
        self.recording = []
        try:
            x = self.raw(p, size, rng)
            counts = self.recording[0] + self.recording[1]
        finally:
            self.recording = None
        starts = np.cumsum([0, *(t.size for t in self.thresholds)])
        out = np.empty((size, len(self.q_columns)))
        for j, c in enumerate(self.q_columns):
            d = self.distinct.index(c)
            block = counts[:, starts[d] : starts[d + 1]]
            hit = block >= self.q_ranks[j] - 1e-9
            out[:, j] = np.where(hit.any(axis=1), hit.argmax(axis=1), block.shape[1])
        return x, out


class LayoutSampler:
    """``sampler(p, size, rng) -> (size, m)``: the published coordinates of datasets drawn under θ = p."""

    def __init__(self, base: MomentSampler, layout: Layout, laws: dict[int, QuantileLaw], n: int) -> None:
        self.base = base
        self.layout = layout
        self.laws = laws
        self.n = int(n)
        self.coords = [c for c, _, _ in layout.quantile_coordinates]

    def _fill(self, out: NDArray[np.float64], p: float, ranks: NDArray[np.float64] | None,
              g: np.random.Generator) -> NDArray[np.float64]:
        k = int(round(float(p) * self.n))
        size = out.shape[0]
        for j, c in enumerate(self.coords):
            key = ranks[:, j] if ranks is not None else np.zeros(size)
            order = np.lexsort((np.asarray(g.random(size)), key))  # by rank, ties at random
            values = self.laws[c].inverse(k, (np.arange(size) + 0.5) / size)
            out[order, c] = values
        return out

    def reference_samples(self, p: float) -> NDArray[np.float64]:
        """The model's samples of θ = p (module docstring)."""
        base = self.base
        ref = base.reference_samples(p)
        out = self.layout.transform(ref, self.n)
        if self.coords:
            k = base._k(p)
            ranks = None
            if isinstance(base, RecordingSampler) and not base.gaussian_shape.get(k, False):
                _, ranks = base.raw_with_ranks(p, base.reference, base.reference_rng())  # replays the reference draws
            out = self._fill(out, p, ranks, np.random.default_rng([base.seed, k, 1]))
        return out

    def __call__(self, p: float, size: int, rng: Any) -> NDArray[np.float64]:
        g = as_rng(rng)
        out = self.layout.transform(self.base(p, size, g), self.n)
        if self.coords:
            ranks = None
            if isinstance(self.base, RecordingSampler):
                _, ranks = self.base.raw_with_ranks(p, size, g)
            out = self._fill(out, p, ranks, g)
        return out


def layout_modelling(mod: Modelling, layout: Layout, laws: dict[int, QuantileLaw], labels: list[Any]) -> Modelling:
    """The :class:`Modelling` of the published coordinates from that of the base query."""
    assert mod.n is not None
    sampler = LayoutSampler(mod.sampler, layout, laws, mod.n)
    samples = {lab: sampler.reference_samples(lab) for lab in labels}
    parts = []
    if any(not o.linear and o.quantile is None for o in layout.outputs):
        parts.append("variances, ratios and group means are the nonlinear functions of the sampled datasets' sums")
    for c, col, q in layout.quantile_coordinates:
        parts.append(f"the q = {q:g} quantile of {col!r} on {laws[c].grid.describe()} has its exact law (two "
                     "hypergeometrics per grid point; dependence on the other statistics from the resampler)")
    note = mod.note + (" " + "; ".join(parts) + "." if parts else "")
    return Modelling(mod.source, mod.n, mod.samples, sampler, EmpiricalModel(samples, claim_scope="release"), note,
                     mod.input_sha256, mod.subsample)


def quantile_laws(layout: Layout, source: Any, predicate: Any, n: int, *, replace: bool) -> dict[int, QuantileLaw]:
    """The exact law of every quantile coordinate, from one ``GROUP BY`` of ``source`` (the population, or the
    data with ``--model-from-data``) per quantile; the grid from ``source``'s range (:mod:`distpriv.quantiles`)."""
    from ..data.aggregate import OK, G
    from ..data.aggregate import contribution_frame as prepare_frame
    from ..quantiles import bucket_counts, grid_for

    laws: dict[int, QuantileLaw] = {}
    if not layout.quantile_coordinates:
        return laws
    frame = prepare_frame(source.source, layout.base, predicate).frame.filter(nw.col(OK))
    by_column: dict[str, tuple[Grid, NDArray[np.int64]]] = {}  # one GROUP BY per column, whatever its levels q
    for c, col, q in layout.quantile_coordinates:
        if col not in by_column:
            lo, hi = source.summary.ranges[col]
            grid = grid_for(lo, hi, bool(source.source.schema[col].is_integer()))
            by_column[col] = grid, bucket_counts(frame, col, grid, G, source.source.what, source.source.backend)
        grid, counts = by_column[col]
        laws[c] = QuantileLaw(grid, counts, n, q, replace=replace)
    return laws


def true_values(layout: Layout, data: Any, predicate: Any, n: int, laws: dict[int, QuantileLaw]) -> NDArray[np.float64]:
    """F(Data) of the published coordinates (private): the base values mapped by the layout, and each quantile
    from one ``GROUP BY`` of the data on the public grid. Refuses values outside every declared bin."""
    from ..data.aggregate import OK
    from ..data.aggregate import contribution_frame as prepare_frame
    from ..quantiles import bucket_counts, quantile_of_counts

    base = data.values
    layout.check_data(base, data.kept)
    out = layout.transform(base, n)
    if laws:
        frame = prepare_frame(data.source, layout.base, predicate).frame.filter(nw.col(OK))
        by_column: dict[str, NDArray[np.int64]] = {}
        for c, col, _ in layout.quantile_coordinates:
            law = laws[c]
            if col not in by_column:
                by_column[col] = bucket_counts(frame, col, law.grid, None, data.source.what, data.source.backend)
            out[c] = quantile_of_counts(by_column[col], law.r, law.grid)
    return out
