"""Opening the curator's tables in their engines and modelling the query distributions f_θ.

f_θ is the distribution of F(Data) when Data is a dataset of n records whose
share of records satisfying the protected predicate is θ (Chen & Ohrimenko
Sections 3, 6.1). It comes from information that is public with respect to the
secret, or — outside the guarantee — from the private table itself:

* **reference population** (``--population``), as in the paper: datasets of n
  records with ⌊θn⌉ records satisfying the predicate drawn without replacement
  from the population;
* **declared model** (``--model``): f_θ = N(μ_θ, Σ_θ) as declared in a file
  (:mod:`distpriv.release.declared`);
* **the data itself** (``--model-from-data``): datasets of n records are
  *resampled with replacement* from the data, ⌊θn⌉ of them from the rows
  satisfying the predicate and the rest from the others. This treats the data
  as representative of the records a dataset with share θ would contain, and
  makes the noise scale a function of the private data: what that reveals is
  not covered by the guarantee, and the release says so.

Every table — a CSV/Parquet path or glob (scanned lazily by DuckDB) or a pandas,
Polars, DuckDB, Dask or PySpark frame (used where it lives) — is read through
:mod:`distpriv.data`: one aggregate pass gives the per-group counts, sums and
cross-products of the statistics' per-record contributions, from which the
mean and covariance of f_θ follow in closed form (:mod:`distpriv.moments`), the
true statistics and the column ranges; a bounded stratified subsample drawn
inside the engine gives the shape of f_θ for what needs samples
(:class:`MomentSampler`). Nothing grows with the table.

The randomness of the modelling (and of everything else that shapes the
published choice) is derived from the public inputs only (:func:`public_seed`),
so the same public inputs always give the same mechanism and noise scale. The
number of records n defaults to the number of rows of the data (less those
dropped with ``--missing drop``); it is treated as public. Input files are only
ever read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from .._validation import as_rng
from ..data import Table as EngineTable
from ..data import TableSummary, open_table, stratified_sample, summarize
from ..data.sample import Subsample
from ..data.sources import is_csv_input
from ..errors import InvalidParameterError
from ..models import EmpiricalModel, GaussianModel
from ..moments import DatasetSampler, GroupMoments
from ..queries import Predicate, Query, Statistic
from .resample import resample_counts


@dataclass(frozen=True, eq=False)
class SummarizedTable:
    """A table opened in its own engine (:func:`distpriv.data.open_table`) and summarised by one aggregate pass.

    ``source``: the engine table (files scanned lazily by DuckDB, or the frame where it lives);
    ``summary``: per-group counts, sums and cross-products of the query's per-record contributions,
    ranges and missing values (:func:`distpriv.data.summarize`). Nothing else is read into Python.
    """

    source: EngineTable
    summary: TableSummary

    @property
    def rows(self) -> int:
        """Rows of the table (complete or not): what the ledger fingerprints."""
        return int(self.summary.rows)

    @property
    def kept(self) -> int:
        """Rows the statistics are computed from (all rows, less those dropped with ``--missing drop``)."""
        return int(self.summary.kept)

    @property
    def label(self) -> str:
        files = self.source.files
        if not files:
            return "the data" if self.source.what == "data" else self.source.what
        return str(files[0]) if len(files) == 1 else f"{len(files)} files"

    @property
    def values(self) -> NDArray[np.float64]:
        """The true statistics F over the kept rows, computed by the engine (private: never published)."""
        return self.summary.values


_PENDING: dict[Path, Future[str]] = {}


def prefetch_sha256(value: Any) -> None:
    """Start hashing a single file ``value`` in a background thread (file reads and hashlib release the
    GIL), so that :func:`file_sha256` overlaps the engine's scan of the same file; other values: no-op."""
    if not isinstance(value, (str, Path)):
        return
    path = Path(value)
    if not path.is_file():
        return
    key = path.resolve()
    if key not in _PENDING:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distpriv-sha256")
        _PENDING[key] = pool.submit(_sha256_of, path)
        pool.shutdown(wait=False)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (identifies public inputs such as a population or a model file)."""
    fut = _PENDING.pop(Path(path).resolve(), None)
    return fut.result() if fut is not None else _sha256_of(Path(path))


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def csv_options(spec: Any, what: str) -> dict[str, Any]:
    """The CSV options of one input of a :class:`~distpriv.release.spec.ReleaseSpec`: ``--sep``, ``--encoding``,
    ``--na-values``, ``--decimal`` and ``--thousands`` apply to every input; ``--population-sep`` and
    ``--population-encoding`` override the first two for the population."""
    sep, encoding = spec.sep, spec.encoding
    if what == "population":
        sep = spec.population_sep if spec.population_sep is not None else sep
        encoding = spec.population_encoding if spec.population_encoding is not None else encoding
    return {"sep": sep, "encoding": encoding, "na_values": spec.na_values, "decimal": spec.decimal,
            "thousands": spec.thousands}


def open_input(
    value: Any,
    query: Query,
    predicate: Predicate,
    *,
    what: str,
    missing: str = "error",
    sep: str | None = None,
    encoding: str | None = None,
    na_values: Sequence[str] | str | None = None,
    decimal: str | None = None,
    thousands: str | None = None,
    clamp: Sequence[tuple[str, float, float]] = (),
) -> SummarizedTable:
    """Open ``value`` (a path, glob or list of them, or a supported frame) and run the aggregate pass.

    The CSV options (delimiter, encoding, missing-value tokens, number format:
    :func:`distpriv.data.open_table`) apply when ``value`` names CSV files and are ignored for Parquet
    files and frames, so one set of options can describe every input of a release.

    Parameters
    ----------
    value : frame, path, glob or list of paths
        The table (an opened :class:`SummarizedTable` is returned as is).
    query : Query
        The statistics F, whose per-record contributions the aggregate pass sums.
    predicate : Predicate
        The protected predicate (the two groups of the aggregates).
    what : str
        The input's name in error messages: ``"data"`` or ``"population"``.
    missing : {"error", "drop"}
        Refuse missing cells in a used column, or drop their rows.
    sep, encoding, na_values, decimal, thousands
        CSV options (:func:`distpriv.data.open_table`); ignored unless ``value`` names CSV files.

    Returns
    -------
    SummarizedTable
        The engine table and its summary (counts, sums, cross-products, ranges, missing cells).

    Raises
    ------
    DistPrivError
        Naming ``what``, for a missing file, a glob matching nothing, a column missing from some files,
        unknown or non-numeric columns, missing values (unless ``missing="drop"``), an engine error or an
        unsupported frame type, and when the protected predicate matches no row or every row (then the
        share cannot vary).
    """
    if isinstance(value, SummarizedTable):
        return value
    opts: dict[str, Any] = {}
    if is_csv_input(value):
        opts = {"sep": sep, "encoding": encoding, "na_values": na_values, "decimal": decimal, "thousands": thousands}
    source = open_table(value, what=what, **opts)
    if clamp:  # declared public bounds: mean/sum contributions clamped (record-level DP, release/record.py)
        from dataclasses import replace as _replace

        source = _replace(source, clamp=tuple(clamp))
    summary = summarize(source, query, predicate, missing=missing)
    where = "the data" if what == "data" else what
    counts = summary.moments.counts
    if counts[0] == 0:
        raise InvalidParameterError(f"predicate {str(predicate)!r} matches no row of {where}", argument="protect")
    if counts[1] == 0:
        raise InvalidParameterError(
            f"predicate {str(predicate)!r} matches every row of {where}; the share cannot vary", argument="protect"
        )
    return SummarizedTable(source, summary)


def input_sha256(table: SummarizedTable) -> str:
    """Identifier of a public input table: the SHA-256 of its file (of the files' names and SHA-256s for
    several), or for a frame the SHA-256 of its aggregates (what f_θ is computed from)."""
    files = table.source.files
    if len(files) == 1:
        return file_sha256(files[0])
    h = hashlib.sha256()
    if files:
        for f in files:
            h.update(f"{f.name}\0{file_sha256(f)}\n".encode())
        return h.hexdigest()
    mom = table.summary.moments
    h.update(b"distpriv-aggregates/v1\0")
    h.update(json.dumps({"query": [str(s) for s in mom.query.statistics], "protect": str(mom.predicate),
                         "rows": table.rows, "ranges": sorted(table.summary.ranges.items())}).encode())
    for arr in (mom.counts, mom.sums, mom.scatter):  # 12 significant digits: summation order does not matter
        h.update(" ".join(f"{x:.12g}" for x in np.ravel(arr)).encode())
    return h.hexdigest()


def public_seed(parts: dict[str, Any]) -> int:
    """A 64-bit seed from the SHA-256 of the canonical JSON of public inputs (never of the data)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


def build_query(stats: Sequence[str], names: Sequence[str]) -> Query:
    """The declarative query F from statistic specs (``"mean:age"``) and display names."""
    return Query([Statistic.parse(s, name=n) for s, n in zip(stats, names, strict=True)])


def check_pairs_achievable(pairs: Sequence[tuple[float, float]], n: int) -> dict[float, int]:
    """Number of protected records ⌊θn⌉ per θ; two values of a pair must give different counts."""
    counts: dict[float, int] = {}
    for a, b in pairs:
        ka, kb = int(round(a * n)), int(round(b * n))
        if ka == kb:
            raise InvalidParameterError(
                f"{a} and {b} are not distinguishable with n = {n} records "
                f"(both round to {ka} protected records); use values at least 1/n = {1 / n:.3g} apart", argument="psi"
            )
        counts[a], counts[b] = ka, kb
    return counts


def bootstrap_sampler(
    matrix: NDArray[np.float64], mask: NDArray[np.bool_], query: Query, n: int
) -> Any:
    """``sampler(p, size, rng) -> (size, m)``: F of datasets of n records resampled with replacement.

    ⌊pn⌉ records are drawn uniformly with replacement from the rows with ``mask``
    true and the others from the rows with ``mask`` false; F = s(n)·Σ V[rows] with V
    the column matrix (``Query.column_matrix``): :meth:`distpriv.moments.DatasetSampler.raw`
    with ``replace=True``.
    """
    moments = GroupMoments.from_rows(matrix, mask, query)
    return DatasetSampler(matrix[mask], matrix[~mask], moments, n, replace=True).raw


@dataclass
class Modelling:
    """How f_θ was obtained, a sampler of F(Data) under θ and the model.

    ``source``: ``"population"``, ``"model"`` or ``"data"``; ``n``: records per dataset
    (``None`` for a declared model); ``samples``: datasets sampled per θ (``None`` for a declared
    model); ``model``: an :class:`~distpriv.EmpiricalModel` whose samples have exactly the closed-form
    moments (:class:`MomentSampler`), or the declared :class:`~distpriv.GaussianModel`; ``note``: a public
    description; ``input_sha256``: identifier of the population or model file (``None`` for the data);
    ``subsample``: the bounded stratified subsample the samples' shape comes from (``None`` for a
    declared model; private with ``--model-from-data``).
    """

    source: str
    n: int | None
    samples: int | None
    sampler: Any  # (p, size, rng) -> (size, m)
    model: EmpiricalModel | GaussianModel
    note: str
    input_sha256: str | None = None
    subsample: Subsample | None = None

    @property
    def public(self) -> bool:
        """True when f_θ is a function of public inputs only (not modelled from the data)."""
        return self.source != "data"


def _sqrt_psd(a: NDArray[np.float64], inverse: bool = False) -> NDArray[np.float64]:
    """Symmetric square root (or pseudo-inverse square root) of a PSD matrix; eigenvalues below
    1e-12 of the largest count as zero."""
    w, v = np.linalg.eigh(0.5 * (a + a.T))
    top = float(w.max()) if w.size else 0.0
    keep = w > max(top, 0.0) * 1e-12
    if top <= 0.0:
        keep[:] = False
    root = np.zeros_like(w)
    root[keep] = 1.0 / np.sqrt(w[keep]) if inverse else np.sqrt(w[keep])
    return (v * root) @ v.T


def _sorted_rows(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    if matrix.shape[0] == 0:
        return matrix
    return matrix[np.lexsort(matrix.T[::-1])]


def shared_weighted_draws(mat: NDArray[np.float64], ks: Sequence[int], size: int, g: np.random.Generator, *,
                          replace: bool) -> dict[int, NDArray[np.float64]]:
    """For every k in ``ks``: ``size`` rows of W_k @ mat, W_k the weights of k records drawn from the rows of ``mat``.

    *Without replacement* (k <= s, s the rows of ``mat``): one matrix of i.i.d. uniform keys U (size × s) is
    drawn for all k, and row i of W_k is the indicator of the k smallest keys of U's row i (:func:`_subset_sums`).
    The ranks of i.i.d. continuous keys are a uniform random permutation, and
    the first k entries of a uniform permutation are a uniform k-subset, so each k's rows are i.i.d. uniform
    k-subsets: exactly the law of a dataset's k records, for every k. The subsets of two k in one row are
    nested (datasets of different θ share records), so draws of different k are dependent; each k's batch
    alone is an exact sample of its law. The work that dominates (the keys and their partition) is done
    once for all k instead of once per k; each further k costs a running sum over the keys ranked between
    the previous k and it.

    *With replacement* (``replace``, or k > s without replacement: a subsample smaller than k): multinomial
    counts (:func:`resample_counts`) from a generator seeded by (one integer drawn from ``g``, k).

    ``g`` is consumed the same way whatever ``ks`` is (size × s keys unless ``replace``, then one integer),
    so the draws of a k are the same whether it is drawn alone or with others (the same subsets; the sums
    equal to rounding, as they are added in another order), and depend on the number of rows, k and size only (:class:`MomentSampler` and the layout's recording sampler rely on this to replay
    the reference datasets). k = 0 gives zeros. Chunked to bound memory (the keys' stream does not depend on
    the chunking).
    """
    s, m = mat.shape
    want = sorted({int(k) for k in ks})
    if want and (want[0] < 0 or (not replace and s == 0 and want[-1] > 0)):
        raise InvalidParameterError(f"cannot draw {want} records from {s} rows", argument="k")
    out = {k: np.zeros((size, m)) for k in want}
    subset = [k for k in want if 0 < k <= s] if not replace else []
    chunk = max(1, 2_000_000 // max(s, 1))
    if not replace:
        for start in range(0, size, chunk):
            b = min(size, start + chunk) - start
            keys = g.random((b, s))
            if subset:
                _subset_sums(mat, keys, subset, out, start)
    sub = int(g.integers(2**62))
    for k in want:
        if k == 0 or k in subset:
            continue
        gk = np.random.default_rng([sub, k])
        for start in range(0, size, chunk):
            b = min(size, start + chunk) - start
            out[k][start : start + b] = resample_counts(k, s, b, gk) @ mat
    return out


#: Widest ``mat`` whose k-subset sums are gathered row by row (a (rows, k, m) array); wider ones use W @ mat.
_GATHER_MAX_COLS = 4


def _subset_sums(mat: NDArray[np.float64], keys: NDArray[np.float64], ks: list[int],
                 out: dict[int, NDArray[np.float64]], start: int) -> None:
    """``out[k][start + i] = Σ of mat's rows at the k smallest keys of keys[i]`` for every k in ``ks`` (sorted,
    1 <= k <= s). A partition at the largest k and, inside it, at the smallest; only the keys between them are
    sorted, so that each k adds the next keys in order (a running sum)."""
    b, s = keys.shape
    lo, hi = ks[0], ks[-1]
    # the hi smallest keys, then the lo smallest among them (two single-k partitions: faster than one at both k)
    top = np.argpartition(keys, hi - 1, axis=1)[:, :hi] if hi < s else np.broadcast_to(np.arange(s), (b, s))
    top_keys = np.take_along_axis(keys, top, axis=1)
    if lo < hi:
        j = np.argpartition(top_keys, lo - 1, axis=1)
        top, top_keys = np.take_along_axis(top, j, axis=1), np.take_along_axis(top_keys, j, axis=1)
    idx = top
    middle = np.take_along_axis(top[:, lo:hi], np.argsort(top_keys[:, lo:hi], axis=1), axis=1)
    if mat.shape[1] <= _GATHER_MAX_COLS:
        base = mat[idx[:, :lo]].sum(axis=1)
        run = np.cumsum(mat[middle], axis=1) if hi > lo else np.zeros((b, 0, mat.shape[1]))
        for k in ks:
            out[k][start : start + b] = base if k == lo else base + run[:, k - lo - 1]
        return
    w = np.zeros((b, s))
    rows = np.arange(b)[:, None]
    w[rows, idx[:, :lo]] = 1.0
    prev = lo
    for k in ks:
        w[rows, middle[:, prev - lo : k - lo]] = 1.0  # the keys ranked prev+1 … k join the subset
        out[k][start : start + b] = w @ mat
        prev = k


def weighted_draws(mat: NDArray[np.float64], k: int, size: int, g: np.random.Generator, *, replace: bool
                   ) -> NDArray[np.float64]:
    """``size`` rows of W @ mat, W the weights of k records drawn from the rows of ``mat`` (one row per draw):
    :func:`shared_weighted_draws` for one k (the same draws as the k of a shared call with the same ``g``)."""
    return shared_weighted_draws(mat, [k], size, g, replace=replace)[int(k)]


#: Streams of :class:`MomentSampler`'s seed: the reference batches (all θ), a θ's Gaussian shape.
_STREAM_REFERENCE = 1
_STREAM_GAUSSIAN_SHAPE = 2


class MomentSampler(DatasetSampler):
    """F(Data) for datasets of n records with k = ⌊θn⌉ protected ones, shaped by a bounded subsample and
    matched exactly to the closed-form moments of the sampler.

    *Raw draws.* The protected part of a dataset is k records of the P-subsample (s_P rows, a uniform
    random subset of the N_P protected rows, :func:`distpriv.data.stratified_sample`), the rest n − k of
    the Q-subsample: without replacement when the model draws without replacement (a population) and
    k <= s_P — a uniform k-subset of a uniform s_P-subset is a uniform k-subset of the group, so each
    raw draw then has exactly the sampler's law — and otherwise k draws with replacement from the
    subsample (multinomial counts, O(s) work per dataset whatever n is, drawn by
    :func:`distpriv.release.resample.resample_counts`; exactly the model's law when the subsample is the
    whole group and the model draws with replacement).

    *Moment matching.* For each θ a reference batch X of R raw draws (one stream from the public seed shared by all θ, :meth:`prepare`)
    with mean x̄ and covariance C is mapped to x̄ ↦ μ_θ, X ↦ μ_θ + (X − x̄) C^{+1/2} Σ_θ^{1/2}, where
    (μ_θ, Σ_θ) are the exact moments of F under the sampler (:meth:`distpriv.moments.GroupMoments.dataset_moments`,
    with the finite-population correction without replacement). The mapped batch has sample mean μ_θ and
    sample covariance Σ_θ exactly (to rounding) when the range of Σ_θ lies in that of C, so every
    Gaussian-model mechanism calibrated on the model uses the closed-form moments; the subsample only
    supplies the shape (what the Wasserstein mechanism, the assumption tests and the W∞ gaps look at).
    When a direction of Σ_θ has no spread in the subsample (a tiny subsample), the draws of that θ are
    Gaussian instead (:attr:`gaussian_shape`). Later calls apply the same map to fresh raw draws.

    Engines draw different subsamples of a group larger than the subsample (same law, other rows): the
    moments, hence every Gaussian-model calibration, are identical across engines; the shape-based parts
    (assumption tests, W∞ gaps) differ by sampling error. A group held whole gives identical draws.

    The law, its closed-form moments (:meth:`exact_moments`) and the groups' rows (``pos``, ``neg``) are
    those of :class:`distpriv.moments.DatasetSampler`, which :class:`distpriv.property.PropertyModel` draws
    from; only the route of a raw draw (weights over the subsample, :func:`weighted_draws`) and the moment
    matching are this class's own.
    """

    def __init__(
        self,
        sub: Subsample,
        moments: GroupMoments,
        n: int,
        *,
        replace: bool,
        reference: int,
        seed: int,
    ) -> None:
        # rows in a canonical order (by value), so that a group held whole by the subsample gives the same
        # draws whatever engine, file order or partitioning it came from
        super().__init__(_sorted_rows(sub.matrix[sub.protected]), _sorted_rows(sub.matrix[~sub.protected]), moments,
                         n, replace=replace)
        self.reference = int(reference)
        self.seed = int(seed)
        self.gaussian_shape: dict[int, bool] = {}
        self._maps: dict[int, tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                                    NDArray[np.float64]]] = {}

    def _group(self, mat: NDArray[np.float64], k: int, size: int, g: np.random.Generator) -> NDArray[np.float64]:
        # k = 0 too goes through weighted_draws: ``g`` is consumed the same way whatever k is (replay)
        return weighted_draws(mat, k, size, g, replace=self.replace)

    def raw(self, p: float, size: int, rng: Any) -> NDArray[np.float64]:
        """``size`` raw draws of F by weights over the subsample's rows (:func:`weighted_draws`), no moment matching."""
        g = as_rng(rng)
        k = self._k(p)
        total = self._group(self.pos, k, size, g) + self._group(self.neg, self.n - k, size, g)
        return self.query.reduce(total, self.n)

    def reference_rng(self) -> np.random.Generator:
        """The generator of the reference batches: one stream for every θ (:meth:`prepare`); ``raw(p,
        self.reference, self.reference_rng())`` replays the raw reference draws of θ = p."""
        return np.random.default_rng([self.seed, _STREAM_REFERENCE])

    def prepare(self, ps: Sequence[float]) -> None:
        """Compute the reference batches of every θ in ``ps`` at once (:func:`shared_weighted_draws`: one set
        of keys per group for all θ, so each θ costs one product instead of a fresh draw and partition).

        The raw reference draws of θ are those of ``raw(p, self.reference, self.reference_rng())`` (to rounding)
        whatever other θ are prepared with it, so the batch of a θ does not depend on Ψ's other values; batches of
        different θ share records (nested subsets) and are dependent, each an exact sample of its own law.
        """
        ks = sorted({self._k(p) for p in ps} - set(self._maps))
        if not ks:
            return
        g = self.reference_rng()
        pos = shared_weighted_draws(self.pos, ks, self.reference, g, replace=self.replace)
        neg = shared_weighted_draws(self.neg, [self.n - k for k in ks], self.reference, g, replace=self.replace)
        for k in ks:
            self._match(k, self.query.reduce(pos[k] + neg[self.n - k], self.n))

    def _match(self, k: int, x: NDArray[np.float64]) -> None:
        """The moment-matching map of θ = k/n from its raw reference draws ``x`` (class docstring)."""
        mu, sigma = self.moments.dataset_moments(k / self.n, self.n, replace=self.replace)
        xbar = x.mean(axis=0)
        c = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
        root = _sqrt_psd(sigma)
        a = _sqrt_psd(c, inverse=True) @ root
        scale = max(float(np.abs(sigma).max()), 1e-300)
        gaussian = not np.allclose(a.T @ c @ a, sigma, rtol=1e-8, atol=1e-9 * scale)
        if gaussian:  # a direction of Σ_θ without spread in the subsample: Gaussian shape
            z = np.random.default_rng([self.seed, k, _STREAM_GAUSSIAN_SHAPE]).standard_normal(x.shape)
            xbar, c = z.mean(axis=0), np.atleast_2d(np.cov(z, rowvar=False, ddof=1))
            a = _sqrt_psd(c, inverse=True) @ root
            x = z
        self.gaussian_shape[k] = gaussian
        ref = mu + (x - xbar) @ a
        ref[:, ~np.any(a != 0, axis=0)] = mu[~np.any(a != 0, axis=0)]  # exactly constant where Σ_θ is zero
        self._maps[k] = (xbar, a, mu, ref)

    def _map(self, p: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                                      NDArray[np.float64]]:
        k = self._k(p)
        if k not in self._maps:
            self.prepare([p])
        return self._maps[k]

    def reference_samples(self, p: float) -> NDArray[np.float64]:
        """The moment-matched reference batch of θ = p (sample mean μ_θ, sample covariance Σ_θ)."""
        return self._map(p)[3].copy()

    def __call__(self, p: float, size: int, rng: Any) -> NDArray[np.float64]:
        xbar, a, mu, _ = self._map(p)
        if self.gaussian_shape[self._k(p)]:
            x = as_rng(rng).standard_normal((size, self.query.dim))
        else:
            x = self.raw(p, size, rng)
        out = mu + (x - xbar) @ a
        const = ~np.any(a != 0, axis=0)
        out[:, const] = mu[const]
        return out


#: Rows per group of the stratified subsample that shapes the sampled f_θ (bounded whatever the table size).
SUBSAMPLE_ROWS = 4000


def declared_sampler(model: GaussianModel) -> Any:
    """``sampler(p, size, rng)`` drawing F from the declared N(μ_p, Σ_p)."""
    by_value = {float(cast(float, lab)): lab for lab in model.labels}

    def sample(p: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        lab = by_value.get(float(p))
        if lab is None:
            raise InvalidParameterError(f"p: θ = {p} is not declared in the model")
        return model.sample(lab, size, as_rng(rng))

    return sample


def model_f_theta(
    data: SummarizedTable,
    population: SummarizedTable | None,
    query: Query,
    predicate: Predicate,
    pairs: Sequence[tuple[float, float]],
    *,
    n: int,
    samples: int,
    rng: Any,
    population_sha256: str | None = None,
    missing: str = "error",
    subsample: int = SUBSAMPLE_ROWS,
    sampler_cls: type[MomentSampler] | None = None,
) -> Modelling:
    """Model f_θ for every θ in Ψ from the source's aggregates and a bounded subsample (module docstring).

    The moments of F come in closed form from the aggregate pass (:mod:`distpriv.moments`: without
    replacement with the finite-population correction from a population, with replacement from the data);
    ``samples`` datasets per θ are drawn by :class:`MomentSampler` from a stratified subsample of at most
    ``subsample`` rows per group, drawn inside the engine, and matched to those moments. Nothing scales
    with the table: one aggregate pass, one sampling pass, O(samples · subsample) work per θ.
    """
    g = as_rng(rng)
    counts = check_pairs_achievable(pairs, n)
    labels = list(dict.fromkeys(v for pr in pairs for v in pr))
    src = population if population is not None else data
    replace = population is None
    mom = src.summary.moments
    if not replace:
        pos, neg = (int(c) for c in mom.counts)
        for p, k in counts.items():
            if k > pos or n - k > neg:
                raise InvalidParameterError(
                    f"share {p} needs {k} records satisfying the predicate and {n - k} others out of n = "
                    f"{n}, but the population has {pos} and {neg}", argument="psi"
                )
    sub = stratified_sample(src.source, query, predicate, subsample, seed=int(g.integers(2**62)), missing=missing,
                            summary=src.summary)
    sampler = (sampler_cls or MomentSampler)(sub, mom, n, replace=replace, reference=samples,
                                             seed=int(g.integers(2**62)))
    if population is not None:
        source = "population"
        note = (f"f_θ modelled from the reference population ({population.kept} records, SHA-256 "
                f"{(population_sha256 or '?')[:16]}…): datasets of n = {n} records with round(θn) records satisfying "
                f"{str(predicate)!r}, drawn without replacement (Chen & Ohrimenko Sec. 6.1); mean and covariance "
                "in closed form from one aggregate pass, shape from a stratified subsample of at most "
                f"{subsample} records per group.")
    else:
        source = "data"
        note = (f"f_θ modelled from the private table itself (--model-from-data): datasets of n = {n} records "
                f"resampled with replacement, round(θn) of them from the rows satisfying {str(predicate)!r}. This "
                "assumes the data are representative of the records a dataset with share θ would hold, and makes "
                "the mechanism and its noise scale depend on the private data: what they reveal about it is "
                "outside the guarantee.")
    sampler.prepare(labels)  # every θ's reference batch from one set of keys per group
    samples_by = {lab: sampler.reference_samples(lab) for lab in labels}
    return Modelling(source, n, samples, sampler, EmpiricalModel(samples_by, claim_scope="release"), note, population_sha256, sub)


def declared_modelling(model: GaussianModel, path: Path, sha256: str) -> Modelling:
    """:class:`Modelling` of a declared model file (no sampling: f_θ is given)."""
    note = (f"f_θ declared in the model file {path.name} (SHA-256 {sha256[:16]}…): N(μ_θ, Σ_θ) for θ in "
            f"{[float(cast(float, v)) for v in model.labels]}; the guarantee is for the declared values.")
    return Modelling("model", None, None, declared_sampler(model), model, note, sha256)
