"""Location check-in data for the local distribution privacy experiments.

Two sources with one output format, :class:`CheckinData`:

* :func:`load_foursquare` reads the published files of the Foursquare
  *Global-scale Check-in Dataset* (Yang, Zhang & Qu, ACM TIST 2015 — the data
  of Kawamoto & Murakami's Section 7.1):

  - ``dataset_TIST2015_Checkins.txt``: tab-separated, no header —
    user ID, venue ID, UTC time (``Tue Apr 03 18:00:06 +0000 2012``),
    timezone offset in minutes;
  - ``dataset_TIST2015_POIs.txt``: venue ID, latitude, longitude, venue
    category name, country code;
  - optionally a user-attribute CSV with a ``user_id`` column and one column
    per attribute (e.g. ``gender``, ``social``), since attributes such as gender
    are not part of the published check-in files.

  A check-in is *at home* when its venue category is ``"Home (private)"``.

* :func:`synthetic_checkins` — the built-in default (the real data cannot be
  downloaded here). It simulates users in a Manhattan-sized box
  (longitude/latitude degrees, about 11 km × 10 km) whose check-ins follow
  distributions that differ by attribute:

  - ``n_hotspots`` activity centres (Gaussian blobs of random size and
    popularity) shared by everybody;
  - ``gender`` (male/female) and ``social`` (social/less-social) tilt the
    popularity of the hotspots: the weights are
    ``w_t ∝ w · exp(s_t · z)`` with ``z ~ N(0, 1)`` per hotspot and a small tilt
    ``s_t = ±attribute_strength/2`` (so λ_male and λ_female are close);
  - every user has a home drawn from a broad residential density in the north
    or south half (attribute ``north``); a check-in is at home with
    probability ``home_rate`` (higher at night), located near the home, and
    otherwise at a hotspot (``at_home`` is a check-in attribute, so λ_home and
    λ_out are far apart, as in the paper's Appendix A.1).

  Everything is drawn from the given seed, so the data are reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import RngLike, as_rng, check_array, check_int, check_positive
from ..errors import DataUnavailableError, InvalidParameterError

# (lon0, lat0, lon1, lat1): ~11 km × 10 km around Manhattan; 1° lon ≈ 84.3 km, 1° lat ≈ 111 km at 40.75° N
MANHATTAN_BBOX = (-74.030, 40.700, -73.900, 40.790)
# the central ~10 km × 9 km (input set X of the paper)
MANHATTAN_INNER_BBOX = (-74.024, 40.7045, -73.906, 40.7855)


@dataclass
class CheckinData:
    """Check-ins (one row each) and user attributes.

    ``checkins`` columns: ``user_id``, ``venue_id``, ``lon``, ``lat``,
    ``utc_time`` (datetime64, UTC), ``local_hour``, ``category``, ``at_home``
    (bool). ``users`` columns: ``user_id`` plus attribute columns.
    """

    checkins: pd.DataFrame
    users: pd.DataFrame
    bbox: tuple[float, float, float, float]
    source: str
    meta: dict[str, object] = field(default_factory=dict)

    def points(self, mask: np.ndarray | pd.Series | None = None) -> np.ndarray:
        """``(n, 2)`` array of (lon, lat) of the check-ins (optionally a boolean mask)."""
        df = self.checkins if mask is None else self.checkins[np.asarray(mask, dtype=bool)]
        return df[["lon", "lat"]].to_numpy(dtype=float)

    def with_user_attributes(self) -> pd.DataFrame:
        """Check-ins joined with the user attributes."""
        return self.checkins.merge(self.users, on="user_id", how="left")


def synthetic_checkins(
    n_users: int = 2000,
    checkins_per_user: float = 25.0,
    *,
    n_hotspots: int = 14,
    attribute_strength: float = 0.35,
    home_rate: float = 0.2,
    bbox: tuple[float, float, float, float] = MANHATTAN_BBOX,
    rng: RngLike = 0,
) -> CheckinData:
    """Synthetic check-ins with attribute-dependent location distributions (module docstring).

    Parameters: ``n_users >= 2``; ``checkins_per_user > 0`` (Poisson mean, at
    least one per user); ``n_hotspots >= 1``; ``attribute_strength >= 0`` (0 makes
    male/female and social/less-social identical in law); ``home_rate`` in [0, 1).
    """
    nu = check_int(n_users, "n_users", minimum=2)
    mean_c = check_positive(checkins_per_user, "checkins_per_user")
    nh = check_int(n_hotspots, "n_hotspots", minimum=1)
    s = check_positive(attribute_strength, "attribute_strength", allow_zero=True)
    hr = float(home_rate)
    if not 0.0 <= hr < 1.0:
        raise InvalidParameterError(f"home_rate: must be in [0, 1), got {hr}")
    bx = check_array(bbox, "bbox", ndim=1)
    if bx.size != 4 or not (bx[2] > bx[0] and bx[3] > bx[1]):
        raise InvalidParameterError("bbox: expected (lon0, lat0, lon1, lat1) with lon1 > lon0, lat1 > lat0")
    gen = as_rng(rng)
    w, h = bx[2] - bx[0], bx[3] - bx[1]

    # shared hotspots: centres, spreads and popularities
    centres = np.column_stack([bx[0] + w * gen.uniform(0.1, 0.9, nh), bx[1] + h * gen.uniform(0.1, 0.9, nh)])
    spreads = gen.uniform(0.003, 0.012, nh)
    popularity = gen.dirichlet(np.full(nh, 2.0))
    z_gender = gen.standard_normal(nh)
    z_social = gen.standard_normal(nh)

    def tilt(z: np.ndarray, sign: np.ndarray) -> np.ndarray:
        logits = np.log(popularity)[None, :] + (sign[:, None] * s / 2.0) * z[None, :]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    gender = np.where(gen.random(nu) < 0.5, "male", "female")
    social = np.where(gen.random(nu) < 0.4, "social", "less-social")
    north = gen.random(nu) < 0.5
    # homes: broad residential density in the user's half, away from the edges
    home_lon = bx[0] + w * np.clip(gen.normal(0.5, 0.22, nu), 0.03, 0.97)
    half = np.where(north, gen.uniform(0.52, 0.97, nu), gen.uniform(0.03, 0.48, nu))
    home_lat = bx[1] + h * half

    # user-specific hotspot preferences (gender and social tilts combined)
    sg = np.where(gender == "male", 1.0, -1.0)
    ss = np.where(social == "social", 1.0, -1.0)
    pref = tilt(z_gender, sg) * tilt(z_social, ss)
    pref /= pref.sum(axis=1, keepdims=True)

    counts = np.maximum(gen.poisson(mean_c, nu), 1)
    uid = np.repeat(np.arange(nu), counts)
    n = uid.size
    hour = gen.integers(0, 24, n)
    night = (hour < 7) | (hour >= 21)
    p_home = np.clip(hr * np.where(night, 2.0, 0.6), 0.0, 0.95)
    at_home = gen.random(n) < p_home
    # hotspot choice by inverse CDF on each user's preferences
    cdf = np.cumsum(pref[uid], axis=1)
    spot = np.minimum((gen.random(n)[:, None] > cdf).sum(axis=1), nh - 1)
    lon = np.where(at_home, home_lon[uid] + gen.normal(0, 0.0015, n), centres[spot, 0] + gen.normal(0, 1, n) * spreads[spot])
    lat = np.where(at_home, home_lat[uid] + gen.normal(0, 0.0012, n), centres[spot, 1] + gen.normal(0, 1, n) * spreads[spot] * 0.8)
    lon = np.clip(lon, bx[0], np.nextafter(bx[2], bx[0]))
    lat = np.clip(lat, bx[1], np.nextafter(bx[3], bx[1]))
    start = np.datetime64("2012-04-03T00:00:00")
    days = gen.integers(0, 500, n)
    utc = start + days.astype("timedelta64[D]") + ((hour + 4) % 24).astype("timedelta64[h]")
    venue = np.where(at_home, [f"home-{u}" for u in uid], [f"spot-{k}" for k in spot])
    checkins = pd.DataFrame(
        {
            "user_id": uid,
            "venue_id": venue,
            "lon": lon,
            "lat": lat,
            "utc_time": utc,
            "local_hour": hour,
            "category": np.where(at_home, "Home (private)", "Hotspot"),
            "at_home": at_home,
        }
    )
    users = pd.DataFrame(
        {
            "user_id": np.arange(nu),
            "gender": gender,
            "social": social,
            "north": np.where(north, "north", "south"),
            "home_lon": home_lon,
            "home_lat": home_lat,
        }
    )
    meta: dict[str, object] = {
        "n_users": nu,
        "checkins_per_user": mean_c,
        "n_hotspots": nh,
        "attribute_strength": s,
        "home_rate": hr,
        "seed": rng if isinstance(rng, int) else None,
    }
    return CheckinData(checkins, users, (float(bx[0]), float(bx[1]), float(bx[2]), float(bx[3])), "synthetic", meta)


def load_foursquare(
    checkins_path: str | Path,
    pois_path: str | Path,
    *,
    users_path: str | Path | None = None,
    bbox: tuple[float, float, float, float] | None = MANHATTAN_BBOX,
) -> CheckinData:
    """Load the Foursquare Global-scale Check-in Dataset (TIST 2015 file format, module docstring).

    Check-ins are joined with their venues and restricted to ``bbox``
    (``(lon0, lat0, lon1, lat1)``; ``None`` keeps all). ``users_path`` is an
    optional CSV with ``user_id`` and attribute columns.
    """
    cp, pp = Path(checkins_path), Path(pois_path)
    for p, nm in ((cp, "checkins_path"), (pp, "pois_path")):
        if not p.is_file():
            raise DataUnavailableError(f"file not found: {p}", argument=nm)
    chk = pd.read_csv(
        cp, sep="\t", header=None, names=["user_id", "venue_id", "utc_raw", "tz_offset"],
        encoding="latin-1", dtype={"venue_id": str},
    )
    pois = pd.read_csv(
        pp, sep="\t", header=None, names=["venue_id", "lat", "lon", "category", "country"],
        encoding="latin-1", dtype={"venue_id": str},
    )
    if chk.empty or pois.empty:
        raise InvalidParameterError("checkins_path / pois_path: files contain no rows")
    df = chk.merge(pois, on="venue_id", how="inner")
    if bbox is not None:
        bx = check_array(bbox, "bbox", ndim=1)
        if bx.size != 4:
            raise InvalidParameterError("bbox: expected (lon0, lat0, lon1, lat1)")
        df = df[(df.lon >= bx[0]) & (df.lon < bx[2]) & (df.lat >= bx[1]) & (df.lat < bx[3])]
        box = (float(bx[0]), float(bx[1]), float(bx[2]), float(bx[3]))
    else:
        box = (float(df.lon.min()), float(df.lat.min()), float(df.lon.max()), float(df.lat.max()))
    utc = pd.to_datetime(df["utc_raw"], format="%a %b %d %H:%M:%S %z %Y", utc=True)
    local = utc + pd.to_timedelta(df["tz_offset"].astype(float), unit="min")
    checkins = pd.DataFrame(
        {
            "user_id": df["user_id"].to_numpy(),
            "venue_id": df["venue_id"].to_numpy(),
            "lon": df["lon"].astype(float).to_numpy(),
            "lat": df["lat"].astype(float).to_numpy(),
            "utc_time": utc.dt.tz_convert(None).to_numpy(),
            "local_hour": local.dt.hour.to_numpy(),
            "category": df["category"].to_numpy(),
            "at_home": (df["category"] == "Home (private)").to_numpy(),
        }
    ).reset_index(drop=True)
    if users_path is not None:
        up = Path(users_path)
        if not up.is_file():
            raise DataUnavailableError(f"users_path: file not found: {up}")
        users = pd.read_csv(up)
        if "user_id" not in users.columns:
            raise InvalidParameterError("users_path: the CSV needs a 'user_id' column")
    else:
        users = pd.DataFrame({"user_id": np.unique(checkins["user_id"])})
    return CheckinData(checkins, users, box, "foursquare-tist2015", {"files": [str(cp), str(pp)]})
