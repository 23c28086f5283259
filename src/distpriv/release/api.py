"""``protect()``: the one-call Python entry point of a release (what ``distpriv release`` does)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError
from .core import ReleaseResult, prepare, release
from .spec import ReleaseSpec

__all__ = ["protect"]

_OPTIONS = ("names", "n", "samples", "calibration", "seed", "previous", "independent", "missing", "sep", "encoding",
            "interval_level")


def protect(
    data: Any,
    *,
    stats: Sequence[str],
    protect: str,
    pairs: Sequence[Sequence[float]],
    epsilon: float,
    delta: float,
    population: Any = None,
    model: str | Path | None = None,
    model_from_data: bool = False,
    mechanism: str = "auto",
    **options: Any,
) -> ReleaseResult:
    """Release ``stats`` of ``data`` while hiding the share of records satisfying ``protect``.

    ``data``/``population``: a pandas, Polars (eager or lazy), pyarrow, DuckDB, Dask or PySpark frame —
    used where it lives, with the predicate, the per-record contributions and the aggregates pushed down to
    its engine — or a CSV/Parquet path, glob or list of them, scanned lazily by DuckDB; f_θ comes from exactly one of
    ``population`` (public reference table), ``model`` (declared model file, see
    :mod:`distpriv.release.declared`) or ``model_from_data=True`` (outside the guarantee). ``stats``
    like ``["mean:age", "count:sex=Female"]``, ``pairs`` like ``[(0.45, 0.55)]``. Options: ``names``,
    ``n``, ``samples`` (default 1000), ``calibration``, ``seed`` (tests only: not private), ``previous``
    (earlier ``--out`` folders), ``independent``, ``missing`` (``"error"``/``"drop"``), ``sep``, ``encoding``, ``interval_level`` (1 − α of the
    per-statistic intervals, default 0.95).
    Returns a :class:`~distpriv.release.core.ReleaseResult`;
    ``.to_json()`` is what ``distpriv release --format json`` prints, and
    :func:`distpriv.release.output.write_release` writes the public files and the private ledger.
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidParameterError(f"{unknown[0]}: not an option of protect(); allowed: {list(_OPTIONS)}")
    if isinstance(stats, str):
        stats = [stats]
    kw: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    for key in ("names", "previous"):
        if key in kw:
            kw[key] = tuple(Path(p) for p in kw[key]) if key == "previous" else tuple(kw[key])

    def is_path(v: Any) -> bool:
        return isinstance(v, (str, Path))

    data_path = Path(data) if is_path(data) else None
    pop_path = Path(population) if is_path(population) else None
    pop_frame = None if population is None or is_path(population) else population
    if isinstance(population, (list, tuple)):  # several files
        pop_path, pop_frame = None, population
    spec = ReleaseSpec(
        data=data_path, stats=tuple(stats), protect=protect, pairs=tuple(tuple(p) for p in pairs),  # type: ignore[misc]
        epsilon=epsilon, delta=delta, mechanism=mechanism, population=pop_path,
        model=None if model is None else Path(model), model_from_data=bool(model_from_data),
        population_frame=pop_frame, **kw,
    )
    return release(prepare(spec, data=None if data_path is not None else data))
