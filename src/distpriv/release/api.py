"""``protect()``: the one-call Python entry point of a release (what ``distpriv release`` does)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError
from .core import ReleaseResult
from .spec import ReleaseSpec

_OPTIONS: tuple[str, ...] = ("names", "n", "samples", "calibration", "seed", "previous", "independent", "id", "missing", "sep",
            "encoding", "na_values", "decimal", "thousands", "population_sep", "population_encoding",
            "interval_level")
#: record-level DP from the same noise draw (issue 22; :mod:`distpriv.release.record`)
_OPTIONS = (*_OPTIONS, "record_epsilon", "record_delta", "bounds")


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

    f_θ comes from exactly one of ``population``, ``model`` or ``model_from_data=True``.

    Parameters
    ----------
    data : frame or path
        The private table: a pandas, Polars (eager or lazy), pyarrow, DuckDB, Dask or PySpark frame —
        used where it lives, with the predicate, the per-record contributions and the aggregates pushed
        down to its engine — or a CSV/Parquet path, glob or list of them, scanned lazily by DuckDB.
    stats : sequence of str
        Statistics ``KIND:TARGET``, e.g. ``["mean:age", "count:sex=Female"]`` (kinds ``mean``, ``sum`` of a
        numeric column; ``count``, ``proportion`` of a predicate).
    protect : str
        The predicate whose share of records is the secret, e.g. ``"income=>50K"``.
    pairs : sequence of (float, float)
        Ψ: the shares to make indistinguishable, e.g. ``[(0.45, 0.55)]``.
    epsilon, delta : float
        The privacy target: (ε, δ)-distribution privacy for Ψ (Chen & Ohrimenko Def. 3.2).
    population : frame or path, optional
        Public reference table from which f_θ is modelled (as ``data``).
    model : str or Path, optional
        Declared f_θ: a JSON/TOML file of per-θ means and covariances (``distpriv.release.declared``).
    model_from_data : bool
        Model f_θ by resampling ``data`` itself (the noise then depends on the private data: outside the
        guarantee).
    mechanism : str
        ``"auto"`` (smallest expected error among the mechanisms whose guarantee holds) or a name.
    **options
        ``names``, ``n``, ``samples`` (default 1000), ``calibration``, ``seed`` (tests only: not private),
        ``previous`` (earlier ``--out`` folders), ``independent``, ``id`` (a column identifying records,
        compared with earlier releases' ledgers), ``missing`` (``"error"``/``"drop"``),
        ``sep``, ``encoding``, ``na_values``, ``decimal``, ``thousands``, ``population_sep``,
        ``population_encoding`` (CSV options, as on the command line), ``interval_level`` (1 − α of the
        per-statistic intervals, default 0.95), ``record_epsilon``, ``record_delta`` and ``bounds``
        (``{"age": (17, 90)}`` or ``["age=17:90"]``): also (E, D)-differential privacy for one record replaced,
        from the same noise draw (``result.record_guarantee``; :mod:`distpriv.release.record`); ``out`` (a new
        folder: the public files and the private ledger are written there, all or nothing, as
        ``distpriv release --out``) and ``force``.

    Returns
    -------
    ReleaseResult
        ``.to_json()`` is what ``distpriv release --format json`` prints;
        ``distpriv.release.output.write_release`` writes the public files and the private ledger.

    Examples
    --------
    >>> from distpriv.release import protect
    >>> result = protect("people.csv", stats=["mean:age"], protect="income=>50K",
    ...                  pairs=[(0.45, 0.55)], epsilon=1.0, delta=1e-3, population="census.csv")  # doctest: +SKIP
    >>> result.to_json()["statistics"][0]["value"]  # doctest: +SKIP
    """
    # out/force: write the public files and the private ledger, as ``distpriv release --out`` (run_release)
    out, force = options.pop("out", None), bool(options.pop("force", False))
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
    from .run import run_release

    # the one release path (issue 24 item 2): the CLI's `distpriv release` calls the same function
    return run_release(spec, data=None if data_path is not None else data, out=out, force=force,
                       show_progress=False).result
