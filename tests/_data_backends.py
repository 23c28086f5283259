"""Test helper: one pandas table, handed to the data layer through every local backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

LOCAL_BACKENDS = ("pandas", "polars", "polars-lazy", "pyarrow", "duckdb", "parquet", "csv", "parquet-glob")


def mixed_table(rows: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Awkward column names, ints, floats, booleans, categoricals and strings."""
    rng = np.random.default_rng(seed)
    income = rng.choice([">50K", "<=50K"], rows, p=[0.3, 0.7])
    rich = income == ">50K"
    return pd.DataFrame(
        {
            "my age": np.where(rich, rng.integers(25, 70, rows), rng.integers(18, 80, rows)).astype(np.int64),
            "hours per week": np.round(rng.normal(40, 12, rows), 2),
            "sex": pd.Categorical(rng.choice(["Female", "Male"], rows, p=[0.35, 0.65])),
            "income": pd.Categorical(income),
            "work class": rng.choice(["Private", "State-gov", "Self-emp"], rows),
            "veteran": rng.random(rows) < 0.1,
            "year": 1e7 + rng.normal(0, 0.1, rows),  # |mean| / sd = 1e8: needs the centred pass
        }
    )


def as_backend(df: pd.DataFrame, backend: str, tmp_path: Path) -> Any:
    """``df`` as the given backend's native object (files are written under ``tmp_path``)."""
    if backend == "pandas":
        return df
    if backend in ("polars", "polars-lazy"):
        import polars as pl

        frame = pl.from_pandas(df)
        return frame.lazy() if backend == "polars-lazy" else frame
    if backend == "pyarrow":
        import pyarrow as pa

        return pa.Table.from_pandas(df, preserve_index=False)
    if backend == "duckdb":
        import duckdb

        con = duckdb.connect()
        return con.from_df(df)
    if backend == "parquet":
        path = tmp_path / "table.parquet"
        df.to_parquet(path, index=False)
        return path
    if backend == "parquet-glob":
        (tmp_path / "parts").mkdir(exist_ok=True)
        for i, part in enumerate(np.array_split(np.arange(len(df)), 3)):
            df.iloc[part].to_parquet(tmp_path / "parts" / f"part-{i}.parquet", index=False)
        return str(tmp_path / "parts" / "*.parquet")
    if backend == "csv":
        path = tmp_path / "table.csv"
        df.to_csv(path, index=False, float_format="%.17g")
        return path
    raise ValueError(backend)
