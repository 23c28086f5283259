"""Reading the curator's table and modelling the query distributions f_θ.

f_θ is the distribution of F(Data) when Data is a dataset of n records whose
share of records satisfying the protected predicate is θ (Chen & Ohrimenko
Sections 3, 6.1). It comes from information that is public with respect to the
secret, or — outside the guarantee — from the private table itself:

* **reference population** (``--population``), as in the paper: datasets of n
  records with ⌊θn⌉ records satisfying the predicate are sampled from the
  population (:class:`distpriv.property.PropertyModel`);
* **declared model** (``--model``): f_θ = N(μ_θ, Σ_θ) as declared in a file
  (:mod:`distpriv.release.declared`);
* **the data itself** (``--model-from-data``): datasets of n records are
  *resampled with replacement* from the data, ⌊θn⌉ of them from the rows
  satisfying the predicate and the rest from the others. This treats the data
  as representative of the records a dataset with share θ would contain, and
  makes the noise scale a function of the private data: what that reveals is
  not covered by the guarantee, and the release says so.

The randomness of the modelling (and of everything else that shapes the
published choice) is derived from the public inputs only (:func:`public_seed`),
so the same public inputs always give the same mechanism and noise scale. The
number of records n defaults to the number of rows of the data; it is treated
as public. The data file is only ever read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import as_rng
from ..errors import DataUnavailableError, DistPrivError, InvalidParameterError, InvalidTypeError
from ..models import EmpiricalModel, GaussianModel
from ..queries import Predicate, Query, Statistic

__all__ = [
    "Modelling",
    "Table",
    "as_frame",
    "bootstrap_sampler",
    "build_query",
    "file_sha256",
    "gaussian_sampler",
    "declared_modelling",
    "load_table",
    "model_f_theta",
    "public_seed",
]

SUFFIXES_CSV = (".csv", ".txt", ".tsv")
SUFFIXES_PARQUET = (".parquet", ".pq", ".parq")


@dataclass(frozen=True)
class Table:
    """A loaded table (``path`` is ``None`` for an in-memory frame)."""

    path: Path | None
    frame: pd.DataFrame

    @property
    def rows(self) -> int:
        return len(self.frame)

    @property
    def label(self) -> str:
        return "the data" if self.path is None else str(self.path)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (identifies public inputs such as a population or a model file)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_table(path: str | Path, what: str = "data") -> Table:
    """Read a CSV (``.csv``/``.tsv``/``.txt``) or Parquet (``.parquet``/``.pq``) file, read-only.

    CSV cells are stripped of surrounding spaces (as in the UCI Adult files).
    Raises :class:`DataUnavailableError` for a missing file and
    :class:`InvalidParameterError` for an unreadable or empty one.
    """
    p = Path(path)
    if not p.is_file():
        raise DataUnavailableError(f"{what}: file not found: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix in SUFFIXES_PARQUET:
            df = pd.read_parquet(p)
        elif suffix in SUFFIXES_CSV or suffix == "":
            sep = "\t" if suffix == ".tsv" else ","
            df = pd.read_csv(p, sep=sep, skipinitialspace=True)
        else:
            raise InvalidParameterError(
                f"{what}: unsupported file type {suffix!r} for {p}; expected CSV ({', '.join(SUFFIXES_CSV)}) "
                f"or Parquet ({', '.join(SUFFIXES_PARQUET)})"
            )
    except DistPrivError:
        raise
    except pd.errors.EmptyDataError:
        raise InvalidParameterError(f"{what}: {p} is empty") from None
    except Exception as exc:  # pandas/pyarrow raise many types for malformed files
        msg = str(exc).replace("\n", " ")
        raise InvalidParameterError(f"{what}: cannot read {p}: {msg}") from None
    if len(df) == 0:
        raise InvalidParameterError(f"{what}: {p} has no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return Table(p, df)


def as_frame(value: Any, what: str) -> pd.DataFrame:
    """A copy of an in-memory table with stripped string column names (pandas DataFrames only)."""
    if not isinstance(value, pd.DataFrame):
        raise InvalidTypeError(f"{what}: expected a pandas DataFrame or a file path, got {type(value).__name__}")
    if len(value) == 0:
        raise InvalidParameterError(f"{what}: the table has no rows")
    frame = value.copy()
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def public_seed(parts: dict[str, Any]) -> int:
    """A 64-bit seed from the SHA-256 of the canonical JSON of public inputs (never of the data)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


def build_query(stats: Sequence[str], names: Sequence[str]) -> Query:
    """The declarative query F from statistic specs (``"mean:age"``) and display names."""
    return Query([Statistic.parse(s, name=n) for s, n in zip(stats, names, strict=True)])


def check_against(table: Table, query: Query, predicate: Predicate, what: str) -> NDArray[np.bool_]:
    """Evaluate the query's columns and the predicate on ``table``; return the predicate mask.

    Raises when a column is unknown or not numeric, or when the predicate matches no row or every row
    (then the property share cannot be varied).
    """
    query.column_matrix(table.frame)  # unknown / non-numeric columns, NaNs
    mask = predicate.mask(table.frame)
    hits = int(mask.sum())
    if hits == 0:
        raise InvalidParameterError(f"--protect: predicate {str(predicate)!r} matches no row of {what}")
    if hits == len(mask):
        raise InvalidParameterError(
            f"--protect: predicate {str(predicate)!r} matches every row of {what}; the share cannot vary"
        )
    return mask


def check_pairs_achievable(pairs: Sequence[tuple[float, float]], n: int) -> dict[float, int]:
    """Number of protected records ⌊θn⌉ per θ; two values of a pair must give different counts."""
    counts: dict[float, int] = {}
    for a, b in pairs:
        ka, kb = int(round(a * n)), int(round(b * n))
        if ka == kb:
            raise InvalidParameterError(
                f"--pairs: {a} and {b} are not distinguishable with n = {n} records "
                f"(both round to {ka} protected records); use values at least 1/n = {1 / n:.3g} apart"
            )
        counts[a], counts[b] = ka, kb
    return counts


def bootstrap_sampler(
    matrix: NDArray[np.float64], mask: NDArray[np.bool_], query: Query, n: int, *, chunk: int = 200_000
) -> Any:
    """``sampler(p, size, rng) -> (size, m)``: F of datasets of n records resampled with replacement.

    ⌊pn⌉ records are drawn uniformly with replacement from the rows with ``mask``
    true and the others from the rows with ``mask`` false; F is computed from the
    column matrix V (``Query.column_matrix``) as s(n)·Σ V[rows]. Vectorised in
    chunks of about ``chunk`` gathered rows.
    """
    pos, neg = matrix[mask], matrix[~mask]

    def sample(p: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        g = as_rng(rng)
        k = int(round(float(p) * n))
        if not 0 <= k <= n:
            raise InvalidParameterError(f"p: property value {p} is outside [0, 1]")
        out = np.empty((size, matrix.shape[1]))
        per = max(1, chunk // max(n, 1))
        for start in range(0, size, per):
            stop = min(size, start + per)
            s = np.zeros((stop - start, matrix.shape[1]))
            if k:
                s += pos[g.integers(0, len(pos), size=(stop - start, k))].sum(axis=1)
            if n - k:
                s += neg[g.integers(0, len(neg), size=(stop - start, n - k))].sum(axis=1)
            out[start:stop] = query.reduce(s, n)
        return out

    return sample


@dataclass
class Modelling:
    """How f_θ was obtained, a sampler of F(Data) under θ and the model.

    ``source``: ``"population"``, ``"model"`` or ``"data"``; ``n``: records per dataset
    (``None`` for a declared model); ``samples``: datasets sampled per θ (``None`` for a declared
    model); ``model``: an :class:`~distpriv.EmpiricalModel` (sampled) or the declared
    :class:`~distpriv.GaussianModel`; ``note``: a public description; ``input_sha256``: SHA-256 of
    the population or model file (``None`` for the data).
    """

    source: str
    n: int | None
    samples: int | None
    sampler: Any  # (p, size, rng) -> (size, m)
    model: EmpiricalModel | GaussianModel
    note: str
    input_sha256: str | None = None

    @property
    def public(self) -> bool:
        """True when f_θ is a function of public inputs only (not modelled from the data)."""
        return self.source != "data"


def gaussian_sampler(model: GaussianModel) -> Any:
    """``sampler(p, size, rng)`` drawing F from the declared N(μ_p, Σ_p)."""
    by_value = {float(cast(float, lab)): lab for lab in model.labels}

    def sample(p: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        lab = by_value.get(float(p))
        if lab is None:
            raise InvalidParameterError(f"p: θ = {p} is not declared in the model")
        return model.sample(lab, size, as_rng(rng))

    return sample


def model_f_theta(
    data: Table,
    population: Table | None,
    query: Query,
    predicate: Predicate,
    pairs: Sequence[tuple[float, float]],
    *,
    n: int,
    samples: int,
    rng: Any,
    population_sha256: str | None = None,
) -> Modelling:
    """Estimate f_θ for every θ in Ψ from ``samples`` sampled datasets per θ (population or data; module docstring)."""
    g = as_rng(rng)
    counts = check_pairs_achievable(pairs, n)
    labels = list(dict.fromkeys(v for pr in pairs for v in pr))
    if population is not None:
        mask = check_against(population, query, predicate, "--population")
        sampler, source = _population_sampler(population, query, predicate, mask, n, counts), "population"
        note = (f"f_θ modelled from the reference population ({population.rows} records, SHA-256 "
                f"{(population_sha256 or '?')[:16]}…): datasets of n = {n} records with round(θn) records satisfying "
                f"{str(predicate)!r}, drawn without replacement (Chen & Ohrimenko Sec. 6.1).")
    else:
        mask = predicate.mask(data.frame)
        sampler = bootstrap_sampler(query.column_matrix(data.frame), mask, query, n)
        source = "data"
        note = (f"f_θ modelled from the private table itself (--model-from-data): datasets of n = {n} records "
                f"resampled with replacement, round(θn) of them from the rows satisfying {str(predicate)!r}. This "
                "assumes the data are representative of the records a dataset with share θ would hold, and makes "
                "the mechanism and its noise scale depend on the private data: what they reveal about it is "
                "outside the guarantee.")
    samples_by = {lab: np.asarray(sampler(lab, samples, g), dtype=float) for lab in labels}
    return Modelling(source, n, samples, sampler, EmpiricalModel(samples_by), note, population_sha256)


def declared_modelling(model: GaussianModel, path: Path, sha256: str) -> Modelling:
    """:class:`Modelling` of a declared model file (no sampling: f_θ is given)."""
    note = (f"f_θ declared in the model file {path.name} (SHA-256 {sha256[:16]}…): N(μ_θ, Σ_θ) for θ in "
            f"{[float(cast(float, v)) for v in model.labels]}; the guarantee is for the declared values.")
    return Modelling("model", None, None, gaussian_sampler(model), model, note, sha256)


def _population_sampler(
    population: Table, query: Query, predicate: Predicate, mask: NDArray[np.bool_], n: int, counts: dict[float, int]
) -> Any:
    """Sampler over a reference population, via :class:`distpriv.property.PropertyModel` (without replacement)."""
    pos, neg = int(mask.sum()), int((~mask).sum())
    for p, k in counts.items():
        if k > pos or n - k > neg:
            raise InvalidParameterError(
                f"--pairs: share {p} needs {k} records satisfying the predicate and {n - k} others out of n = {n}, "
                f"but the population has {pos} and {neg}"
            )
    from ..property import PropertyModel

    pm = PropertyModel(population.frame, predicate, query, n)

    def sample(p: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        # θ = p is realised with round(p·n) protected records, the nearest share PropertyModel accepts.
        return pm.sample_query(int(round(float(p) * n)) / n, size, rng)

    return sample
