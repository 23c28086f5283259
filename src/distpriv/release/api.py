"""``protect()``: the one-call Python entry point of a release (what ``distpriv release`` does)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InvalidParameterError
from .core import ReleaseResult, prepare, release
from .data import Table, as_frame
from .spec import ReleaseSpec

__all__ = ["protect"]

_OPTIONS = ("names", "n", "samples", "calibration", "seed", "previous", "independent")


def protect(
    data: pd.DataFrame | str | Path,
    *,
    stats: Sequence[str],
    protect: str,
    pairs: Sequence[Sequence[float]],
    epsilon: float,
    delta: float,
    population: pd.DataFrame | str | Path | None = None,
    model: str | Path | None = None,
    model_from_data: bool = False,
    mechanism: str = "auto",
    **options: Any,
) -> ReleaseResult:
    """Release ``stats`` of ``data`` while hiding the share of records satisfying ``protect``.

    ``data``/``population``: a pandas DataFrame or a CSV/Parquet path; f_θ comes from exactly one of
    ``population`` (public reference table), ``model`` (declared model file, see
    :mod:`distpriv.release.declared`) or ``model_from_data=True`` (outside the guarantee). ``stats``
    like ``["mean:age", "count:sex=Female"]``, ``pairs`` like ``[(0.45, 0.55)]``. Options: ``names``,
    ``n``, ``samples`` (default 1000), ``calibration``, ``seed`` (tests only: not private), ``previous``
    (earlier ``--out`` folders), ``independent``. Returns a :class:`~distpriv.release.core.ReleaseResult`;
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
    table: Table | None = None
    data_path: Path | None = None
    if isinstance(data, (str, Path)):
        data_path = Path(data)
    else:
        table = Table(None, as_frame(data, "data"))
    pop_path: Path | None = None
    pop_frame = None
    if isinstance(population, (str, Path)):
        pop_path = Path(population)
    elif population is not None:
        pop_frame = as_frame(population, "population")
    spec = ReleaseSpec(
        data=data_path, stats=tuple(stats), protect=protect, pairs=tuple(tuple(p) for p in pairs),  # type: ignore[misc]
        epsilon=epsilon, delta=delta, mechanism=mechanism, population=pop_path,
        model=None if model is None else Path(model), model_from_data=bool(model_from_data),
        population_frame=pop_frame, **kw,
    )
    return release(prepare(spec, data=table))
