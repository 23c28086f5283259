"""Running a selection of Chen & Ohrimenko's tables and figures (``distpriv reproduce chen-ohrimenko``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from ...errors import InvalidParameterError
from .figures import figure2, figure3, figure4, figure5
from .settings import REPS, _check_calibration, _check_flag, _check_reps
from .tables import table3, table4

TABLES: dict[int, Callable[..., dict[str, Any]]] = {3: table3, 4: table4}
FIGURES: dict[int, Callable[..., dict[str, Any]]] = {2: figure2, 3: figure3, 4: figure4, 5: figure5}


def run_chen_ohrimenko(
    *, tables: Iterable[int] = (), figures: Iterable[int] = (), reps: int = REPS, seed: int = 0,
    calibration: str = "classic", paper_settings: bool = False, show_progress: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Compute the requested tables and figures; returns the results and seconds per item.

    ``paper_settings`` reaches the items showing DirM (L) (Table 3, Figure 2); the
    others record it and note that they are the same in both modes.
    """
    results, timing = [], {}
    for t in tables:
        if t not in TABLES:
            raise InvalidParameterError(f"expected one of {sorted(TABLES)}, got {t}", argument="table")
    for f in figures:
        if f not in FIGURES:
            raise InvalidParameterError(f"expected one of {sorted(FIGURES)}, got {f}", argument="figure")
    _check_reps(reps)
    _check_calibration(calibration)
    paper_settings = _check_flag(paper_settings, "paper_settings")
    for kind, items, funcs in (("table", tables, TABLES), ("figure", figures, FIGURES)):
        for i in items:
            start = time.perf_counter()
            kwargs: dict[str, Any] = {"seed": seed, "show_progress": show_progress}
            if not (kind == "figure" and i == 5):
                kwargs.update(reps=reps, calibration=calibration)
            uses_dirm = (kind, i) in (("table", 3), ("figure", 2))
            if uses_dirm:
                kwargs["paper_settings"] = paper_settings
            res = funcs[i](**kwargs)
            if not uses_dirm:
                res["settings"]["paper_settings"] = paper_settings
                if paper_settings:
                    res.setdefault("notes", []).append(
                        "paper settings change only DirM (L) (Table 3, Figure 2), which this item does not show: "
                        "its numbers are the same in both modes")
            results.append(res)
            timing[f"{kind} {i}"] = time.perf_counter() - start
    return results, timing
