"""A quantile's law streams from its engine: one ``GROUP BY`` per column, no column in Python memory (issue 22).

On a Parquet population of 10⁶ rows (an 8 MB float64 column) the grid counts of a median and a 0.9-quantile of the
same column come from one ``GROUP BY`` (2 × 4096 rows back), and the Python allocations of the whole step (numpy
included: tracemalloc sees numpy's buffers) stay far below one column. The counts are checked against numpy's
bucketing of the column (the same formula, computed here on the full column after the measurement).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from distpriv.quantiles import GRID_POINTS
from distpriv.queries import Predicate
from distpriv.release.data import open_input
from distpriv.release.layout import quantile_laws
from distpriv.statspec import build_layout

ROWS = 1_000_000


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> tuple[str, pd.DataFrame]:
    rng = np.random.default_rng(5)
    rich = rng.random(ROWS) < 0.3
    frame = pd.DataFrame({"x": rng.lognormal(np.where(rich, 4.2, 3.8), 0.5), "income": np.where(rich, ">50K", "<=50K")})
    path = tmp_path_factory.mktemp("quantile_memory") / "pop.parquet"
    frame.to_parquet(path, index=False, row_group_size=250_000)
    return str(path), frame


def test_quantile_laws_stream_one_group_by_per_column(population, monkeypatch) -> None:
    path, frame = population
    stats = ["median:x", "quantile:x@0.9"]
    layout = build_layout(stats, stats)
    predicate = Predicate("income=>50K")
    source = open_input(path, layout.base, predicate, what="population")
    import distpriv.quantiles as quantiles

    calls: list[str] = []
    original = quantiles.bucket_counts

    def counting(*args, **kwargs):
        calls.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(quantiles, "bucket_counts", counting)
    tracemalloc.start()
    try:
        laws = quantile_laws(layout, source, predicate, 2000, replace=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert calls == ["x"]  # one GROUP BY for both levels of the column
    column_bytes = 8 * ROWS
    assert peak < column_bytes / 8, f"{peak / 2**20:.1f} MiB traced for an {column_bytes / 2**20:.0f} MiB column"
    (c0, _, _), (c1, _, _) = layout.quantile_coordinates
    assert laws[c0].counts is laws[c1].counts and laws[c0].grid.size == GRID_POINTS
    # the counts against numpy's bucketing of the full column, per group (row 0: the protected group)
    grid = laws[c0].grid
    b = grid.buckets(frame["x"].to_numpy())
    rich = (frame["income"] == ">50K").to_numpy()
    want = np.stack([np.bincount(b[rich], minlength=grid.size), np.bincount(b[~rich], minlength=grid.size)])
    np.testing.assert_array_equal(laws[c0].counts, want)
    assert grid.start == frame["x"].min() and grid.start + grid.step * (grid.size - 1) == pytest.approx(frame["x"].max())
