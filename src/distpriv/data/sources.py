"""Opening a table for the data layer: files through DuckDB, frames through narwhals.

:func:`open_table` accepts

* a CSV or Parquet file path, a glob (``"logs/*.parquet"``) or a list of them:
  scanned lazily by an embedded DuckDB connection (nothing is read until an
  aggregate runs, and DuckDB streams the files, so memory stays flat);
* a pandas, Polars (eager or lazy) or pyarrow frame, a DuckDB relation, a Dask
  or a PySpark DataFrame: wrapped unchanged with narwhals, so every
  computation of :mod:`distpriv.data` runs inside the frame's own engine.

The result is a :class:`Table`, a narwhals ``LazyFrame`` plus what the other
modules need to know about where it came from.
"""

from __future__ import annotations

import codecs
import contextlib
import glob
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import narwhals as nw

from ..errors import (
    DataUnavailableError,
    DistPrivError,
    EngineError,
    InvalidParameterError,
    InvalidTypeError,
    arg,
)

SUFFIXES_CSV = (".csv", ".txt", ".tsv")
SUFFIXES_PARQUET = (".parquet", ".pq", ".parq")
_COMPRESSED = (".gz", ".zst")

#: Backends a :class:`Table` can have (files are scanned by ``"duckdb"``).
BACKENDS = ("pandas", "polars", "polars-lazy", "pyarrow", "duckdb", "dask", "pyspark")

SUPPORTED_INPUTS = (
    "a CSV/Parquet path or glob (or a list of them), or a pandas, Polars (eager or lazy), pyarrow, "
    "DuckDB relation, Dask or PySpark DataFrame"
)

_IMPLEMENTATIONS = {
    nw.Implementation.PANDAS: "pandas",
    nw.Implementation.POLARS: "polars",
    nw.Implementation.PYARROW: "pyarrow",
    nw.Implementation.DUCKDB: "duckdb",
    nw.Implementation.DASK: "dask",
    nw.Implementation.PYSPARK: "pyspark",
    nw.Implementation.PYSPARK_CONNECT: "pyspark",
}

#: Columns pandas writes for a non-default index (``DataFrame.to_parquet``): dropped from Parquet scans.
#: CSV inputs up to this many bytes in total are read once into an in-memory DuckDB table (:func:`open_table`).
SMALL_CSV_BYTES = 8 * 2**20
_PANDAS_INDEX = re.compile(r"^__index_level_\d+__$")

#: Cells read as missing in CSV files unless ``na_values`` says otherwise (R's ``NA``, pandas' ``NaN``, JSON's
#: ``null``, spreadsheets' ``N/A``); an empty cell is always missing.
NA_VALUES = ("", "NA", "N/A", "NaN", "nan", "null", "NULL")

# DuckDB's CSV reader decodes these natively (others need an extension download).
_DUCKDB_ENCODINGS = {"utf-8": "utf-8", "utf-16": "utf-16", "iso8859-1": "latin-1"}


def list_preview(items: Sequence[Any], limit: int = 10) -> str:
    """``['a', 'b', ...]`` with at most ``limit`` entries and "… and N more"."""
    shown = ", ".join(repr(str(x)) for x in items[:limit])
    more = f", … and {len(items) - limit} more" if len(items) > limit else ""
    return f"[{shown}{more}]"


_CSV_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CSV_FILE = re.compile(r"^\s*file = (.+?)\s*$", re.MULTILINE)
_CONVERT = re.compile(r'converting column "(.+?)"\. Could not convert string "(.*?)" to')


def translate_engine_error(message: str, what: str, backend: str) -> str:
    """One line for an engine's error, prefixed with ``what``: :func:`engine_error_text`."""
    return f"{what}: {engine_error_text(message, what, backend)}"


def engine_error_text(message: str, what: str, backend: str) -> str:
    """One line for an engine's error: for DuckDB's CSV errors the file, the line and the option that likely
    fixes it (``encoding``, ``sep``, ``na_values``/``decimal``/``thousands``, written as ``{arg:…}``
    references, :func:`distpriv.errors.arg`); else its first line."""
    line = _CSV_LINE.search(message)
    if backend == "duckdb" and line is not None:
        fm = _CSV_FILE.search(message)
        where = f"{Path(fm.group(1)).name} line {line.group(1)}" if fm else f"line {line.group(1)}"
        conv = _CONVERT.search(message)
        low = message.lower()
        pop = what.startswith("population")
        enc_opt = f"{arg('encoding')} (or {arg('population_encoding')})" if pop else arg("encoding")
        sep_opt = f"{arg('sep')} (or {arg('population_sep')})" if pop else arg("sep")
        if "utf-8" in low or "unicode" in low or "encod" in low:
            return (f"cannot read {where}: the bytes are not valid in the expected encoding; give the "
                    f"file's encoding with {enc_opt} (e.g. latin-1)")
        if conv is not None:
            return (f"cannot read {where}: column {conv.group(1)!r} holds {conv.group(2)!r}, not a number "
                    f"like the rows before it; if it marks a missing value add it to {arg('na_values')}, if it is a "
                    f"number written with separators give {arg('decimal')}/{arg('thousands')}")
        if "column" in low and ("expected" in low or "too many" in low or "number of columns" in low):
            return (f"cannot read {where}: the row has a different number of columns than the header; "
                    f"give the delimiter with {sep_opt} (e.g. ';')")
        if "quote" in low:
            return f"cannot read {where}: an unterminated quoted value; check the delimiter ({sep_opt})"
        first = next((ln.strip() for ln in message.splitlines()[1:] if ln.strip()), "")
        return (f"cannot read {where}: {first[:200]}; check {arg('sep')}, {arg('encoding')} and "
                f"{arg('na_values')}")
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{backend} engine error: {first}"


@contextlib.contextmanager
def engine_errors(what: str, backend: str) -> Iterator[None]:
    """Turn an engine's exception into a one-line :class:`EngineError` (distpriv errors pass through);
    DuckDB's CSV errors name the file, the line and the likely option (:func:`translate_engine_error`)."""
    try:
        yield
    except DistPrivError:
        raise
    except MemoryError:
        raise EngineError(f"the {backend} engine ran out of memory", argument=what) from None
    except Exception as exc:  # engines raise many unrelated types
        text = str(exc) if str(exc).strip() else type(exc).__name__
        # "data (x.csv)": a DuckDB CSV error names the file itself, so the argument is the input alone
        base = re.sub(r" \(.*\)$", "", what) if _CSV_FILE.search(text) and _CSV_LINE.search(text) else what
        raise EngineError(engine_error_text(text, what, backend), argument=base) from None


@dataclass(frozen=True, eq=False)
class Table:
    """A table ready for pushed-down computations.

    Attributes
    ----------
    frame:
        narwhals ``LazyFrame`` over the data (eager frames are wrapped lazily).
    backend:
        One of :data:`BACKENDS`; file inputs are ``"duckdb"``.
    native:
        The object handed in (a frame or relation), or the DuckDB relation scanning the files.
    files:
        The files scanned, in order (empty for frames).
    file_columns:
        The column names of each file (to report a column missing from some files).
    connection:
        The DuckDB connection owning ``native`` for file inputs, else ``None``.
    what:
        The argument name used in error messages (``"data"``, ``"population"``, ...).
    """

    frame: nw.LazyFrame[Any]
    backend: str
    native: Any
    files: tuple[Path, ...] = ()
    file_columns: tuple[tuple[str, ...], ...] = ()
    connection: Any = None
    what: str = "data"
    _schema: dict[str, Any] = field(default_factory=dict, repr=False)
    #: declared public bounds ``((column, lo, hi), ...)``: the mean/sum contributions of these columns are clamped
    #: to [lo, hi] (record-level DP, :mod:`distpriv.release.record`); predicates read the raw values
    clamp: tuple[tuple[str, float, float], ...] = ()

    @property
    def schema(self) -> dict[str, Any]:
        """Column name -> narwhals dtype (read from metadata; no scan)."""
        if not self._schema:
            with engine_errors(self.what, self.backend):
                self._schema.update(dict(self.frame.collect_schema().items()))
        return self._schema

    @property
    def columns(self) -> list[str]:
        """Column names, in order."""
        return list(self.schema)

    @property
    def eager(self) -> bool:
        """True for in-memory frames (pandas, Polars DataFrame, pyarrow)."""
        return self.backend in ("pandas", "polars", "pyarrow")

    def check_columns(self, columns: Sequence[str], purpose: str) -> None:
        """Raise when a column is unknown, or present in only some of the files."""
        schema = self.schema
        for col in columns:
            if col not in schema:
                hint = _column_hint(str(col), [str(c) for c in schema])
                raise InvalidParameterError(
                    f"unknown column {col!r} in {self.what}{hint}; available columns are "
                    f"{list_preview(list(schema))}", argument=purpose
                )
        if self.files:
            for col in columns:
                absent = [f.name for f, cols in zip(self.files, self.file_columns, strict=True) if col not in cols]
                if absent:
                    raise InvalidParameterError(
                        f"column {col!r} is missing from {len(absent)} of {len(self.files)} files: "
                        f"{list_preview(absent)}", argument=self.what
                    )

    def __repr__(self) -> str:
        src = f"files={len(self.files)}" if self.files else f"native={type(self.native).__name__}"
        return f"Table(backend={self.backend!r}, {src})"


# --------------------------------------------------------------------------- files
def _is_pathlike(data: Any) -> bool:
    return isinstance(data, (str, os.PathLike))


def _expand(data: Any, what: str) -> list[Path]:
    items = [data] if _is_pathlike(data) else list(data)
    if not items:
        raise InvalidParameterError("the list of files is empty", argument=what)
    out: list[Path] = []
    for item in items:
        if not _is_pathlike(item):
            raise InvalidTypeError(f"a list of inputs must hold file paths or globs, got {type(item).__name__}", argument=what)
        text = os.path.expanduser(os.fspath(item))
        if glob.has_magic(text):
            hits = sorted(p for p in glob.glob(text, recursive=True) if os.path.isfile(p))
            if not hits:
                raise DataUnavailableError(f"no file matches {text!r}", argument=what)
            out.extend(Path(p) for p in hits)
        else:
            p = Path(text)
            if p.is_dir():
                raise InvalidParameterError(
                    f"{p} is a directory; pass a glob such as '{p / '*.parquet'}'", argument=what
                )
            if not p.is_file():
                raise DataUnavailableError(f"file not found: {p}", argument=what)
            out.append(p)
    return list(dict.fromkeys(out))


def _format(path: Path, what: str) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    if suffix in SUFFIXES_PARQUET:
        return "parquet"
    if suffix in SUFFIXES_CSV or suffix == "":
        return "csv"
    raise InvalidParameterError(
        f"unsupported file type {suffix!r} for {path}; expected CSV ({', '.join(SUFFIXES_CSV)}) "
        f"or Parquet ({', '.join(SUFFIXES_PARQUET)})", argument=what
    )


def _duckdb_encoding(encoding: str | None, what: str) -> str | None:
    if encoding is None:
        return None
    if not isinstance(encoding, str):
        raise InvalidTypeError(f"expected a string such as 'latin-1', got {type(encoding).__name__}", argument="encoding")
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise InvalidParameterError(f"unknown encoding {encoding!r}", argument="encoding") from None
    if name not in _DUCKDB_ENCODINGS:
        raise InvalidParameterError(
            f"{encoding!r} is not supported for lazy CSV scans; use one of utf-8, utf-16, latin-1 "
            "(or read the file with pandas and pass the DataFrame)", argument="encoding"
        )
    return _DUCKDB_ENCODINGS[name]


def check_na_values(na_values: Any) -> tuple[str, ...]:
    """The tokens read as missing: :data:`NA_VALUES` for ``None``; else the given strings plus the empty cell."""
    if na_values is None:
        return NA_VALUES
    if isinstance(na_values, str):
        na_values = na_values.split(",")
    if not isinstance(na_values, (list, tuple)) or not all(isinstance(v, str) for v in na_values):
        raise InvalidTypeError(f"expected strings such as 'NA,-999', got {na_values!r}", argument="na_values")
    return tuple(dict.fromkeys(["", *(v.strip() for v in na_values)]))


def check_number_format(decimal: Any, thousands: Any) -> tuple[str | None, str | None]:
    """Validate ``decimal`` ('.' or ',') and ``thousands`` (one character, not the decimal mark)."""
    if decimal is not None and decimal not in (".", ","):
        raise InvalidParameterError(f"expected '.' or ',', got {decimal!r}", argument="decimal")
    if thousands is not None and (not isinstance(thousands, str) or len(thousands) != 1 or thousands.isalnum()):
        raise InvalidParameterError(f"expected one separator character such as ',' or '.', got "
                                    f"{thousands!r}", argument="thousands")
    if thousands is not None and thousands == (decimal or "."):
        raise InvalidParameterError(f"{thousands!r} is also the decimal mark; give {arg('decimal')} as well", argument="thousands")
    return decimal, thousands


def is_csv_input(data: Any) -> bool:
    """True when ``data`` is a path, a glob or a list of them naming CSV files (by suffix): what the CSV
    options (delimiter, encoding, missing-value tokens, number format) apply to."""
    items = [data] if _is_pathlike(data) else (list(data) if isinstance(data, (list, tuple)) else [])
    if not items or not all(map(_is_pathlike, items)):
        return False
    try:
        return all(_format(Path(os.fspath(i)), "data") == "csv" for i in items)
    except DistPrivError:
        return False


def quote_ident(name: str) -> str:
    """A DuckDB identifier in double quotes (embedded quotes doubled)."""
    return '"' + str(name).replace('"', '""') + '"'


def _open_files(
    paths: list[Path],
    *,
    what: str,
    sep: str | None,
    encoding: str | None,
    strip: bool,
    duckdb_config: dict[str, Any] | None,
    na_values: Any = None,
    decimal: str | None = None,
    thousands: str | None = None,
) -> Table:
    import duckdb

    formats = {p: _format(p, what) for p in paths}
    kinds = set(formats.values())
    if len(kinds) > 1:
        raise InvalidParameterError("cannot mix CSV and Parquet files in one table", argument=what)
    kind = kinds.pop()
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1):
        raise InvalidParameterError(f"expected a single character such as ';', got {sep!r}", argument="sep")
    enc = _duckdb_encoding(encoding, what)
    if kind == "parquet" and (sep is not None or enc is not None):
        raise InvalidParameterError(f"sep, encoding: only apply to CSV files, but {what} is Parquet")
    if kind == "parquet" and (na_values is not None or decimal is not None or thousands is not None):
        raise InvalidParameterError(f"na_values, decimal, thousands: only apply to CSV files, but {what} is Parquet")
    nulls = check_na_values(na_values)
    decimal, thousands = check_number_format(decimal, thousands)
    config = {"preserve_insertion_order": True, **(duckdb_config or {})}
    with engine_errors(what, "duckdb"):
        con = duckdb.connect(":memory:", config=config)
        con.execute("SET enable_progress_bar = false")

    delim = sep if sep is not None else ("\t" if all(p.suffix.lower() == ".tsv" for p in paths) else None)

    def read(files: list[str]) -> Any:
        many = len(files) > 1
        if kind == "parquet":
            return con.read_parquet(files if many else files[0], union_by_name=many)
        # SQL with parameters: the Python read_csv wrapper of some DuckDB versions ignores `encoding`.
        params: dict[str, Any] = {"files": files, "union": many, "nulls": list(nulls)}
        opts = ["header = true", "union_by_name = $union", "nullstr = $nulls"]
        if decimal is not None:
            opts.append("decimal_separator = $dec")
            params["dec"] = decimal
        if thousands is not None:
            opts.append("thousands = $thou")
            params["thou"] = thousands
        if delim is not None:
            opts.append("sep = $sep")
            params["sep"] = delim
        if enc is not None:
            opts.append("encoding = $enc")
            params["enc"] = enc
        return con.sql(f"SELECT * FROM read_csv($files, {', '.join(opts)})", params=params)

    file_columns: list[tuple[str, ...]] = []
    single: Any = None
    for p in paths:
        with engine_errors(f"{what} ({p.name})", "duckdb"):
            single = read([str(p)])
            file_columns.append(tuple(single.columns))
    for p, cols in zip(paths, file_columns, strict=True):
        dupes = sorted({c for c in cols if cols.count(c) > 1})
        if dupes:
            raise InvalidParameterError(f"{p.name} has repeated column names {list_preview(dupes)}", argument=what)
    with engine_errors(what, "duckdb"):
        # one file: its relation is the table's (binding read_csv again would sniff the file again, issue 26)
        rel = single if len(paths) == 1 else read([str(p) for p in paths])
        index_cols = [c for c in rel.columns if _PANDAS_INDEX.match(c)]
        if kind == "parquet" and index_cols:  # a pandas index saved with the frame is not data
            rel = rel.project(", ".join(quote_ident(c) for c in rel.columns if c not in index_cols))
            file_columns = [tuple(c for c in cols if c not in index_cols) for cols in file_columns]
        if kind == "csv" and strip:
            # Mirror pandas' skipinitialspace (as pandas' skipinitialspace did for the release's old CSV reader): strip spaces after the
            # delimiter from text cells; DuckDB already trims headers and numbers.
            exprs = [
                f"ltrim({quote_ident(c)}, ' ') AS {quote_ident(c)}" if str(t) == "VARCHAR" else quote_ident(c)
                for c, t in zip(rel.columns, rel.types, strict=True)
            ]
            rel = rel.project(", ".join(exprs))
        if kind == "csv" and sum(p.stat().st_size for p in paths) <= SMALL_CSV_BYTES:
            # a small CSV is parsed once into an in-memory table: every later pass would parse (and the first
            # bind sniff) the file again, ~20 ms each for 1,000 rows (issue 26: a release's fixed cost)
            rel.create("__dp_table")
            rel = con.table("__dp_table")
        frame = nw.from_native(rel)
    return Table(frame, "duckdb", rel, tuple(paths), tuple(file_columns), con, what)


# --------------------------------------------------------------------------- frames
def _wrap_frame(data: Any, what: str) -> Table:
    with warnings.catch_warnings():
        # narwhals announces that Dask support moves to a plugin package; the built-in support still works.
        warnings.filterwarnings("ignore", message=".*narwhals-dask.*", category=FutureWarning)
        warnings.filterwarnings("ignore", message="Dask support is moving.*", category=FutureWarning)
        try:
            frame = nw.from_native(data)
        except nw.exceptions.DuplicateError:
            cols = [str(c) for c in data.columns]
            dupes = sorted({c for c in cols if cols.count(c) > 1})
            raise InvalidParameterError(f"repeated column names {list_preview(dupes)}", argument=what) from None
        except TypeError:
            raise InvalidTypeError(
                f"unsupported input type {type(data).__module__}.{type(data).__name__}; expected "
                f"{SUPPORTED_INPUTS}", argument=what
            ) from None
    backend = _IMPLEMENTATIONS.get(frame.implementation)
    if backend is None:
        raise InvalidTypeError(
            f"unsupported frame type {type(data).__name__} ({frame.implementation.value}); expected "
            f"{SUPPORTED_INPUTS}", argument=what
        )
    if isinstance(frame, nw.DataFrame):
        with engine_errors(what, backend):
            lazy = frame.lazy()
    else:
        lazy = frame
        if backend == "polars":
            backend = "polars-lazy"
    native = nw.to_native(frame) if isinstance(data, (nw.DataFrame, nw.LazyFrame)) else data
    return Table(lazy, backend, native, what=what)


def open_table(
    data: Any,
    *,
    what: str = "data",
    sep: str | None = None,
    encoding: str | None = None,
    strip: bool = True,
    duckdb_config: dict[str, Any] | None = None,
    na_values: Sequence[str] | str | None = None,
    decimal: str | None = None,
    thousands: str | None = None,
) -> Table:
    """A :class:`Table` over ``data`` (see the module docstring for what is accepted).

    Parameters
    ----------
    data:
        File path, glob or list of them; or a supported frame; or a :class:`Table` (returned as is).
    what:
        Name of the argument in error messages.
    sep, encoding:
        CSV options (single-character delimiter; utf-8, utf-16 or latin-1). ``.tsv`` files default to tabs.
    na_values:
        CSV cells read as missing (a list, or one comma-separated string); default :data:`NA_VALUES`
        (``NA``, ``N/A``, ``NaN``, ``nan``, ``null``, ``NULL``); an empty cell is always missing.
    decimal, thousands:
        Number format of CSV cells: the decimal mark (``'.'`` default, or ``','``) and a thousands
        separator (none by default), so that ``"3,250"`` reads as 3250 with ``thousands=','``.
    strip:
        Strip spaces after the delimiter in CSV text cells (pandas' ``skipinitialspace``, as the
        release's CSV reader does).
    duckdb_config:
        Extra DuckDB settings for file inputs (e.g. ``{"memory_limit": "500MB", "threads": 2}``).

    Raises
    ------
    DataUnavailableError
        A file does not exist or a glob matches nothing.
    InvalidParameterError
        Mixed or unknown file types, bad CSV options, repeated column names.
    InvalidTypeError
        An unsupported object (the message names the supported ones).
    EngineError
        The engine cannot read a file.
    """
    if isinstance(data, Table):
        if (sep is not None or encoding is not None or duckdb_config is not None or na_values is not None
                or decimal is not None or thousands is not None):
            raise InvalidParameterError("sep, encoding, na_values, decimal, thousands, duckdb_config: apply when a "
                                        "table is opened, not to a Table")
        return data
    if not isinstance(what, str) or not what:
        raise InvalidTypeError(f"what: expected a non-empty string, got {what!r}")
    if not isinstance(strip, bool):
        raise InvalidTypeError(f"strip: expected True or False, got {strip!r}")
    if _is_pathlike(data) or (isinstance(data, (list, tuple)) and data and all(map(_is_pathlike, data))):
        paths = _expand(data, what)
        return _open_files(paths, what=what, sep=sep, encoding=encoding, strip=strip, duckdb_config=duckdb_config,
                           na_values=na_values, decimal=decimal, thousands=thousands)
    if isinstance(data, (list, tuple)):
        raise InvalidTypeError(f"a list of inputs must hold file paths or globs; expected {SUPPORTED_INPUTS}", argument=what)
    if sep is not None or encoding is not None:
        raise InvalidParameterError("sep, encoding: only apply to CSV file inputs, not to frames")
    if na_values is not None or decimal is not None or thousands is not None:
        raise InvalidParameterError("na_values, decimal, thousands: only apply to CSV file inputs, not to frames")
    return _wrap_frame(data, what)


def _column_hint(col: str, names: Sequence[str]) -> str:
    """A hint for an unknown column: backticks when a longer name starting with ``col`` holds operator
    characters (``a-b`` parsed as ``a`` minus ``b``), else the closest names (``difflib``)."""
    import difflib

    near = [c for c in names if c.startswith(col) and c != col]
    ops = [c for c in near if not c.replace(" ", "_").isidentifier()]
    if ops:
        return f" (a name containing operators such as {ops[0]!r} needs backticks: `{ops[0]}`)"
    close = (near + [c for c in difflib.get_close_matches(col, names, n=3, cutoff=0.6) if c not in near])[:3]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
