"""Regions (Section 7.1) and check-in data: synthetic generator and Foursquare-format loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from distpriv import local
from distpriv.datasets.checkins import MANHATTAN_BBOX, load_foursquare, synthetic_checkins
from distpriv.errors import DataUnavailableError, InvalidParameterError


def test_synthetic_is_reproducible_and_attributes_differ() -> None:
    a = synthetic_checkins(300, 10, rng=5)
    b = synthetic_checkins(300, 10, rng=5)
    assert a.checkins.equals(b.checkins) and a.users.equals(b.users)
    pts = a.points()
    assert np.all((pts[:, 0] >= MANHATTAN_BBOX[0]) & (pts[:, 0] < MANHATTAN_BBOX[2]))
    df = a.with_user_attributes()
    assert set(df.gender) == {"male", "female"} and df.at_home.any() and (~df.at_home).any()
    # home check-ins of northern users lie further north on average
    north = df[df.at_home & (df.north == "north")].lat.mean()
    south = df[df.at_home & (df.north == "south")].lat.mean()
    assert north > south
    with pytest.raises(InvalidParameterError, match="home_rate"):
        synthetic_checkins(10, home_rate=1.0)


def test_regions_quad_partition_balances_counts() -> None:
    rng = np.random.default_rng(0)
    dense = rng.normal([0.25, 0.25], 0.03, size=(3000, 2))
    sparse = rng.uniform(0, 1, size=(1000, 2))
    pts = np.clip(np.vstack([dense, sparse]), 0, 0.999)
    base = local.build_regions(pts, (0, 0, 1, 1), 4, 4, threshold=1e9)
    assert base.n == 16
    reg = local.build_regions(pts, (0, 0, 1, 1), 4, 4, threshold=300, max_depth=5)
    counts = np.bincount(reg.assign(pts), minlength=reg.n)
    assert counts.sum() == pts.shape[0]
    assert counts.max() <= 300 and reg.n > 16
    assert np.bincount(base.assign(pts)).max() > 700
    # regions tile the box
    b = reg.bounds
    assert np.sum((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])) == pytest.approx(1.0)
    tgt = local.build_regions(pts, (0, 0, 1, 1), 4, 4, target=60, max_depth=6)
    assert abs(tgt.n - 60) <= 6
    d = tgt.distances()
    assert d.shape == (tgt.n, tgt.n) and np.allclose(np.diag(d), 0)
    lam = tgt.histogram(pts, tgt.inner((0.2, 0.2, 0.8, 0.8)))
    assert lam.sum() == pytest.approx(1.0)


def test_foursquare_loader_reads_tist2015_format(tmp_path: Path) -> None:
    chk = tmp_path / "dataset_TIST2015_Checkins.txt"
    poi = tmp_path / "dataset_TIST2015_POIs.txt"
    users = tmp_path / "users.csv"
    chk.write_text(
        "1\tv1\tTue Apr 03 18:00:06 +0000 2012\t-240\n"
        "1\tv2\tTue Apr 03 23:30:00 +0000 2012\t-240\n"
        "2\tv3\tWed Apr 04 01:00:00 +0000 2012\t-240\n"
        "2\tv4\tWed Apr 04 02:00:00 +0000 2012\t540\n"
    )
    poi.write_text(
        "v1\t40.75\t-73.99\tCoffee Shop\tUS\n"
        "v2\t40.76\t-73.98\tHome (private)\tUS\n"
        "v3\t40.72\t-74.00\tOffice\tUS\n"
        "v4\t35.68\t139.76\tRamen Restaurant\tJP\n"
    )
    users.write_text("user_id,gender\n1,male\n2,female\n")
    data = load_foursquare(chk, poi, users_path=users)
    assert len(data.checkins) == 3  # the Tokyo check-in is outside the box
    assert data.checkins.at_home.tolist() == [False, True, False]
    assert data.checkins.local_hour.tolist() == [14, 19, 21]
    assert data.with_user_attributes().gender.tolist() == ["male", "male", "female"]
    assert len(load_foursquare(chk, poi, bbox=None).checkins) == 4
    with pytest.raises(DataUnavailableError):
        load_foursquare(tmp_path / "missing.txt", poi)
