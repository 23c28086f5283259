"""Ψ from public knowledge (issue 21): ``--range LO:HI --gap G``, the k-gap profile, provenance, warnings.

* :func:`distpriv.release.grid` edge cases and bad input (Python and CLI: one line, exit 2, nothing written);
* the exact δ(kε) of values k gaps apart against the independent oracle (tests/profile_oracle.py);
* the population-coverage warning (public inputs only);
* two datasets differing only in θ, released with the documented recipe (a public ``--range``), publish the
  same Ψ and identical files apart from :data:`distpriv.release.public.MAY_DIFFER`; the note that the private
  share lies outside the range goes to the curator's stderr lines only; the CLI's command line of ``provenance.spec`` re-runs it.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import distpriv as dp
from _cli import run_in_process
from distpriv.errors import InvalidParameterError, InvalidTypeError
from distpriv.release import grid, grid_of
from distpriv.release.grid import MAX_POINTS, chained_delta, gap_profiles
from distpriv.release.public import CURATOR_PREFIX, MAY_DIFFER
from distpriv.release.spec import build_spec
from profile_oracle import noise_law, output_delta
from test_release_privacy import _refusals


# --------------------------------------------------------------------------- grid()
def test_grid_pairs_and_edges() -> None:
    assert grid(0.2, 0.5, 0.1) == ((0.2, 0.3), (0.3, 0.4), (0.4, 0.5))
    assert grid(0, 1, 0.25) == ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0))
    assert grid(0.1, 0.2, 0.1) == ((0.1, 0.2),)  # a one-step grid is one pair
    pts = [p[0] for p in grid(0.1, 0.7, 0.1)] + [0.7]
    assert pts == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]  # no 0.30000000000000004
    assert len(grid(0.0, 1.0, 0.01)) == 100 and len(grid(0.0, 1.0, 1 / (MAX_POINTS - 1))) == MAX_POINTS - 1
    g = grid_of(grid(0.2, 0.5, 0.1))
    assert g is not None and g.points == (0.2, 0.3, 0.4, 0.5) and g.gap == 0.1 and g.steps == 3
    assert g.pairs_apart(2) == [(0.2, 0.4), (0.3, 0.5)]
    assert grid_of([(0.3, 0.2), (0.4, 0.3)]) is not None  # order within a pair does not matter
    assert grid_of([(0.2, 0.3), (0.3, 0.5)]) is None  # uneven
    assert grid_of([(0.2, 0.3), (0.4, 0.5)]) is None  # not adjacent


@pytest.mark.parametrize(("args", "needle"), [
    ((0.5, 0.2, 0.1), "range: LO must be < HI"),
    ((0.3, 0.3, 0.1), "range: LO must be < HI"),
    ((0.2, 0.5, 0.0), "gap: must be > 0"),
    ((0.2, 0.5, -0.1), "gap: must be > 0"),
    ((-0.1, 0.5, 0.1), "range: LO:HI must lie in [0, 1]"),
    ((0.2, 1.5, 0.1), "range: LO:HI must lie in [0, 1]"),
    ((0.2, 0.5, 0.07), "gap: 0.07 does not divide the range 0.2:0.5"),
    ((0.2, 0.5, 0.4), "gap: 0.4 does not divide the range"),
    ((0.0, 1.0, 0.001), f"at most {MAX_POINTS}"),
    ((float("nan"), 0.5, 0.1), "range: must be a finite number"),
    ((0.2, 0.5, float("inf")), "gap: must be a finite number"),
])
def test_grid_bad_input(args: tuple[float, float, float], needle: str) -> None:
    with pytest.raises(InvalidParameterError, match=re.escape(needle)):
        grid(*args)


def test_grid_wrong_types() -> None:
    with pytest.raises(InvalidTypeError, match="^gap: "):
        grid(0.2, 0.5, "0.1")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="^range: "):
        grid(True, 0.5, 0.1)


def test_chained_delta_closed_form() -> None:
    assert chained_delta(1.0, 1e-3, 1) == 1e-3
    assert math.isclose(chained_delta(1.0, 1e-3, 3), 1e-3 * (1 + math.e + math.e**2), rel_tol=1e-12)
    assert math.isclose(chained_delta(0.5, 1e-4, 4), 1e-4 * math.expm1(2.0) / math.expm1(0.5), rel_tol=1e-12)
    assert chained_delta(50.0, 1e-3, 10) == 1.0


# --------------------------------------------------------------------------- spec: TOML and CLI
def _spec(tmp_path: Path, toml: str, **cli: object) -> object:
    (tmp_path / "d.csv").write_text("age,income\n30,>50K\n40,<=50K\n")
    cfg = tmp_path / "s.toml"
    cfg.write_text('data = "d.csv"\nstats = ["mean:age"]\nprotect = "income=>50K"\nepsilon = 1.0\ndelta = 1e-3\n'
                   "model_from_data = true\n" + toml)
    kw: dict[str, object] = {k: None for k in ("data", "stats", "protect", "pairs", "around", "gap", "epsilon",
                                                "delta", "mechanism", "population")}
    kw.update(cli)
    return build_spec(config=cfg, **kw)  # type: ignore[arg-type]


def test_toml_range_and_overrides(tmp_path: Path) -> None:
    s = _spec(tmp_path, 'range = "0.2:0.5"\ngap = 0.1\n')
    assert s.pairs == grid(0.2, 0.5, 0.1)  # type: ignore[attr-defined]
    assert _spec(tmp_path, "range = [0.2, 0.4]\ngap = 0.1\n").pairs == grid(0.2, 0.4, 0.1)  # type: ignore[attr-defined]
    # the command line wins: --pairs replaces the file's range, --range the file's pairs, --gap the file's gap
    assert _spec(tmp_path, 'range = "0.2:0.5"\ngap = 0.1\n', pairs=["0.4,0.6"]).pairs == ((0.4, 0.6),)  # type: ignore[attr-defined]
    assert _spec(tmp_path, "pairs = [[0.4, 0.6]]\n", range="0.1:0.3", gap=0.1).pairs == grid(0.1, 0.3, 0.1)  # type: ignore[attr-defined]
    assert _spec(tmp_path, 'range = "0.2:0.5"\ngap = 0.1\n', gap=0.15).pairs == grid(0.2, 0.5, 0.15)  # type: ignore[attr-defined]
    with pytest.raises(InvalidParameterError, match="config: give one of pairs"):
        _spec(tmp_path, 'range = "0.2:0.5"\ngap = 0.1\npairs = [[0.4, 0.6]]\n')
    with pytest.raises(InvalidParameterError, match="range: give the grid step with gap="):
        _spec(tmp_path, 'range = "0.2:0.5"\n')
    with pytest.raises(InvalidParameterError, match="range: give one of pairs="):
        _spec(tmp_path, "", range="0.2:0.5", gap=0.1, pairs=["0.4,0.6"])
    with pytest.raises(InvalidParameterError, match="range: give one of around="):
        _spec(tmp_path, "", range="0.2:0.5", gap=0.1, around=0.5)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_release_privacy import table

    d = tmp_path_factory.mktemp("range")
    table(12_000, 5_000, 1, 1_000_000).to_csv(d / "pop.csv", index=False)
    table(400, 160, 2, 0).to_csv(d / "d40.csv", index=False)  # θ = 0.40, inside the range
    table(400, 80, 3, 1_000).to_csv(d / "d20.csv", index=False)  # θ = 0.20, outside it; other rows
    return d


BAD_CLI = {
    "--range: LO must be < HI": ["--range", "0.5:0.2", "--gap", "0.1"],
    "--gap: must be > 0": ["--range", "0.2:0.5", "--gap", "0"],
    "--range: LO:HI must lie in [0, 1]": ["--range", "0.2:1.5", "--gap", "0.1"],
    "--gap: 0.07 does not divide the range": ["--range", "0.2:0.5", "--gap", "0.07"],
    "--range: expected LO:HI": ["--range", "0.2-0.5", "--gap", "0.1"],
    "--range: give the grid step with --gap G": ["--range", "0.2:0.5"],
    "--range: give one of --pairs": ["--range", "0.2:0.5", "--gap", "0.1", "--pairs", "0.4,0.6"],
}


def test_cli_range_bad_input_one_line_exit_2(small: Path) -> None:
    cmds = {needle: ["release", "d40.csv", "--stat", "mean:age", "--protect", "income=>50K", *opts, "--epsilon", "1",
                     "--delta", "1e-3", "--population", "pop.csv", "--out", f"never{i}"]
            for i, (needle, opts) in enumerate(BAD_CLI.items())}
    # one through the console script (its one stderr line and exit status end to end), the rest in-process
    res = _refusals(cmds, small, subprocess_case="--range: LO must be < HI", in_process=True)
    assert set(res) == set(BAD_CLI)
    for i, needle in enumerate(BAD_CLI):
        r = res[needle]
        assert r.returncode == 2, (needle, r.stdout, r.stderr)
        assert r.stderr.startswith("distpriv: error: ") and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
        assert r.stdout == "" and not (small / f"never{i}").exists()


# --------------------------------------------------------------------------- k-gap profile vs the oracle
POINTS = (0.2, 0.3, 0.4, 0.5)


def _model(dim: int) -> dp.GaussianModel:
    """f_θ with a mean and a covariance that both move with θ (no translation, no closed form)."""
    if dim == 1:
        return dp.GaussianModel(means={t: [10.0 * t] for t in POINTS},
                                covariances={t: [[0.8 + t]] for t in POINTS})
    means = {t: [10.0 * t, 4.0 * t * t] for t in POINTS}
    covs = {t: np.array([[1.0 + t, 0.3 * t], [0.3 * t, 0.6 + 0.5 * t]]) for t in POINTS}
    return dp.GaussianModel(means=means, covariances=covs)


@pytest.mark.parametrize(("name", "dim"), [("expm-gauss", 2), ("expm-laplace", 1)])
def test_k_gap_profile_matches_the_independent_oracle(name: str, dim: int) -> None:
    model = _model(dim)
    pairs = grid(POINTS[0], POINTS[-1], 0.1)
    eps, delta = 1.0, 1e-3
    mech = dp.calibrate(name, model, list(pairs), epsilon=eps, delta=delta)
    cand = SimpleNamespace(base=mech, extra_laplace_scale=0.0, dim=dim)
    spec = grid_of(pairs)
    assert spec is not None
    out = gap_profiles(model, spec, cand, epsilon=eps, delta=delta)
    law = noise_law(mech)
    assert [r["k"] for r in out["k_gaps"]] == [1, 2, 3]
    for row in out["k_gaps"]:
        k = row["k"]
        ref = [output_delta(model.mean(a), model.covariance(a), model.mean(b), model.covariance(b), law, k * eps)
               for a, b in spec.pairs_apart(k)]
        worst = max(ref, key=lambda p: p.delta)
        # certified upper end: never below the truth, and tight (the bracket is RTOL = 1e-2 relative)
        assert row["delta"] >= worst.delta - worst.tol, (k, row, worst)
        assert row["delta"] <= worst.delta * (1 + 1.5e-2) + worst.tol + 1e-12, (k, row, worst)
        assert row["epsilon"] == k * eps and row["pairs"] == 4 - k
        if k >= 2:  # the exact profile is below the chained bound
            assert row["delta"] < row["chained_delta"]
    # k = 1 is the release's own claim, pair by pair
    assert max(r["delta"] for r in out["per_pair"]) == out["k_gaps"][0]["delta"] <= delta * (1 + 1e-9)
    for r, (a, b) in zip(out["per_pair"], pairs, strict=True):
        ref1 = output_delta(model.mean(a), model.covariance(a), model.mean(b), model.covariance(b), law, eps)
        assert r["pair"] == [a, b] and abs(r["delta"] - ref1.delta) <= ref1.delta * 1.5e-2 + ref1.tol + 1e-12


# --------------------------------------------------------------------------- pruned k-gap rows (coupling bound)
COUPLING_POINTS = (0.2, 0.3, 0.4, 0.5, 0.6)


def _coupling_case() -> tuple[dp.GaussianModel, SimpleNamespace, object]:
    """2-D f_θ whose covariances move with θ, Laplace noise on one direction (Adult's shape): every pair is
    accounted by the coupling bound, the one :func:`gap_profiles` prunes."""
    from distpriv.noise import NoiseLaw

    means = {t: [10.0 * t, 4.0 * t * t] for t in COUPLING_POINTS}
    covs = {t: np.array([[1.0 + t, 0.3 * t], [0.3 * t, 0.6 + 0.5 * t]]) for t in COUPLING_POINTS}
    model = dp.GaussianModel(means=means, covariances=covs)
    law = NoiseLaw.laplace(np.array([[1.0], [1.0]]) / np.sqrt(2.0), [3.0])
    return model, SimpleNamespace(base=SimpleNamespace(noise=law), extra_laplace_scale=0.0, dim=2), law


def test_pruned_k_gap_rows_equal_the_full_computation_and_bound_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    import distpriv.accounting.release as acc
    from profile_oracle import NoiseLaw as OracleLaw

    model, cand, law = _coupling_case()
    spec = grid_of(grid(COUPLING_POINTS[0], COUPLING_POINTS[-1], 0.1))
    assert spec is not None
    calls: list[tuple[float, float]] = []
    full_profiles = acc.pair_profiles

    def spy(m, a, b, *args, **kw):
        calls.append((a, b))
        return full_profiles(m, a, b, *args, **kw)

    monkeypatch.setattr(acc, "pair_profiles", spy)
    pruned = gap_profiles(model, spec, cand, epsilon=1.0, delta=1e-3)
    searched = len(calls)
    full = gap_profiles(model, spec, cand, epsilon=1.0, delta=1e-3, prune=False)
    assert len(calls) - searched == 10 and searched < 10  # pairs were skipped, and the rows are the same
    assert pruned == full
    assert all(r["method"].startswith("coupling") for r in full["k_gaps"])
    # certified: every row bounds the true δ(kε) of each of its pairs (independent oracle, both orders)
    v = np.array([1.0, 1.0]) / np.sqrt(2.0)
    oracle = OracleLaw("laplace", 2 * 9.0 * np.outer(v, v), v[:, None], np.array([3.0]))
    for row in pruned["k_gaps"][1:]:
        for a, b in spec.pairs_apart(row["k"]):
            ref = output_delta(model.mean(a), model.covariance(a), model.mean(b), model.covariance(b), oracle,
                               row["epsilon"])
            assert row["delta"] >= ref.delta - ref.tol, (row, a, b, ref)


def test_one_split_of_the_coupling_bound_is_the_searched_term() -> None:
    """composition_bounds_at at the split the search chose returns the searched upper end (the same term of the
    same minimum), and at any other split a bound no smaller; None for a pair accounted exactly (Gaussian noise)."""
    from distpriv.accounting.release import composition_bounds_at, pair_profiles
    from distpriv.noise import NoiseLaw

    model, _, law = _coupling_case()
    for a, b, eps in ((0.2, 0.3, 1.0), (0.3, 0.6, 3.0)):
        p1, p2 = pair_profiles(model, a, b, law, eps, rtol=1e-2)
        for prof, order in ((p1, 0), (p2, 1)):
            split = prof.details["epsilon_split"]
            assert composition_bounds_at(model, a, b, law, eps, split)[order] == pytest.approx(prof.delta_upper,
                                                                                              rel=1e-12)
            for other in (0.0, 0.3 * eps, 0.9 * eps):
                assert composition_bounds_at(model, a, b, law, eps, other)[order] >= prof.delta_upper * (1 - 1e-12)
    assert composition_bounds_at(model, 0.2, 0.3, NoiseLaw.gaussian(np.eye(2)), 1.0, 0.1) is None


# --------------------------------------------------------------------------- population coverage warning
def test_population_coverage_warning_from_public_counts(tmp_path: Path) -> None:
    from distpriv.release import protect
    from test_release_privacy import table

    table(3_000, 100, 1, 1_000_000).to_csv(tmp_path / "pop.csv", index=False)  # 100 protected rows
    table(400, 60, 2, 0).to_csv(tmp_path / "d.csv", index=False)
    res = protect(str(tmp_path / "d.csv"), stats=["mean:age"], protect="income=>50K", pairs=grid(0.15, 0.25, 0.05),
                  epsilon=1.0, delta=1e-3, population=str(tmp_path / "pop.csv"), samples=40, seed=0)
    warns = [w for w in res.to_json()["warnings"] if w.startswith("the population cannot supply")]
    # θ = 0.25 needs round(0.25·400) = 100 protected records: all of the population's; θ = 0.2 needs 80 < 100
    assert len(warns) == 1 and "θ = 0.25" in warns[0] and "needs 100 records" in warns[0] and "has 100" in warns[0]
    ok = protect(str(tmp_path / "d.csv"), stats=["mean:age"], protect="income=>50K", pairs=grid(0.1, 0.2, 0.05),
                 epsilon=1.0, delta=1e-3, population=str(tmp_path / "pop.csv"), samples=40, seed=0)
    assert not any(w.startswith("the population cannot supply") for w in ok.to_json()["warnings"])
    assert ok.curator_notes == []  # 60/400 = 0.15 lies inside 0.1:0.2


# --------------------------------------------------------------------------- the documented recipe, end to end
RECIPE = ["--stat", "mean:age", "--stat", "count:sex=Female", "--protect", "income=>50K", "--range", "0.3:0.6",
          "--gap", "0.1", "--epsilon", "1", "--delta", "1e-3", "--population", "pop.csv", "--samples", "100",
          "--format", "json"]


def _drop(doc: dict, path: str) -> None:
    head, _, rest = path.partition(".")
    if head.endswith("[]"):
        for item in doc.get(head[:-2], []):
            _drop(item, rest)
    elif head in doc:
        if rest:
            _drop(doc[head], rest)
        else:
            doc.pop(head)


def _public(doc: dict) -> dict:
    d = copy.deepcopy(doc)
    for path in MAY_DIFFER:
        _drop(d, path)
    return d


def _mask(text: str, doc: dict) -> str:
    """Replace the renderings of the MAY_DIFFER fields (values, intervals, displays, provenance time and id)."""
    from distpriv.release.render import value_renderings

    for r in value_renderings(doc):  # displays, and passages shown only for some values (removed)
        text = text.replace(r, "" if r.startswith("\n\n") else "VALUE")
    ends = [e for s in doc["statistics"] for e in s.get("interval") or []]
    for v in sorted({repr(float(x)) for x in [*(s["value"] for s in doc["statistics"]), *ends]}, key=len,
                    reverse=True):
        text = re.sub(rf"(?<![\d.]){re.escape(v)}(?![\d])", "VALUE", text)
    return text.replace(doc["provenance"]["time"], "TIME").replace(doc["provenance"]["release_id"], "ID")


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and p.relative_to(folder).parts[0] != "private")


@pytest.fixture(scope="module")
def recipe_runs(small: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """The two releases of the diff, through the console script's entry point in-process with the warnings a fresh
    process shows (_cli.run_in_process: a process each added only its imports, issue 26)."""
    return {k: run_in_process(["release", f"d{k}.csv", *RECIPE, "--out", f"out{k}"], small, fresh_warnings=True)
            for k in ("40", "20")}


@pytest.mark.slow
def test_range_release_publishes_identical_files_apart_from_may_differ(
        small: Path, recipe_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    a, b = recipe_runs["40"], recipe_runs["20"]
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert ja["guarantee"]["pairs"] == jb["guarantee"]["pairs"] == [[0.3, 0.4], [0.4, 0.5], [0.5, 0.6]]
    assert ja["psi"]["range"] == [0.3, 0.6] and [r["k"] for r in ja["psi"]["k_gaps"]] == [1, 2, 3]
    assert _public(ja) == _public(jb)  # stdout JSON: everything but MAY_DIFFER
    assert [s["value"] for s in ja["statistics"]] != [s["value"] for s in jb["statistics"]]
    fa, fb = small / "out40", small / "out20"
    assert _files(fa) == _files(fb)  # file names
    assert json.loads((fa / "release.json").read_text()) == ja and json.loads((fb / "release.json").read_text()) == jb
    for name in ("report.md", "report.html"):
        assert _mask((fa / name).read_text(), ja) == _mask((fb / name).read_text(), jb), name
    for png in (p for p in _files(fa) if p.endswith(".png")):
        assert (fa / png).read_bytes() == (fb / png).read_bytes(), png
    # stderr: public lines identical; the private share outside the range only on the curator's lines
    pub_a = [ln for ln in a.stderr.splitlines() if not ln.startswith(CURATOR_PREFIX)]
    pub_b = [ln for ln in b.stderr.splitlines() if not ln.startswith(CURATOR_PREFIX)]
    assert pub_a == pub_b
    assert not any(ln.startswith(CURATOR_PREFIX) for ln in a.stderr.splitlines())  # 0.40 is inside 0.3:0.6
    notes = [ln for ln in b.stderr.splitlines() if ln.startswith(CURATOR_PREFIX)]
    assert len(notes) == 1 and "0.2 (80 of 400 rows)" in notes[0] and "outside the published range 0.3–0.6" in notes[0]
    for p in (fb / f for f in _files(fb)):  # the note is in no public file
        if p.suffix in (".json", ".md", ".html"):
            text = p.read_text()
            assert "80 of 400" not in text and "private share" not in text, p
    # provenance
    prov = ja["provenance"]
    assert prov["version"] == dp.__version__ and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", prov["time"])
    assert re.fullmatch(r"[0-9a-f]{32}", prov["release_id"]) and prov["release_id"] != jb["provenance"]["release_id"]
    assert prov["spec"]["range"] == [0.3, 0.6] and prov["spec"]["gap"] == 0.1
    assert "## Provenance" in (fa / "report.md").read_text()


@pytest.mark.slow
def test_provenance_command_reruns_the_release(small: Path,
                                               recipe_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    from distpriv.cli.command import command_line
    from distpriv.release.public import rerun_config

    ja = json.loads(recipe_runs["40"].stdout)
    assert "command" not in ja["provenance"]["spec"]  # the library publishes the spec; the CLI renders commands
    args = shlex.split(command_line(rerun_config(ja["provenance"]["spec"])))
    assert args[:3] == ["distpriv", "release", "DATA"]
    r = run_in_process(["release", *({"DATA": "d20.csv", "POP": "pop.csv"}.get(x, x) for x in args[2:]), "--format",
                        "json"], small)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["provenance"]["spec"] == ja["provenance"]["spec"]


def test_range_is_the_same_psi_as_grid_pairs(small: Path) -> None:
    """``--range`` and ``protect(pairs=grid(...))`` are the same public Ψ (also the public seed)."""
    spec = build_spec(data=small / "d40.csv", stats=["mean:age"], protect="income=>50K", pairs=None, around=None,
                      gap=0.1, epsilon=1.0, delta=1e-3, mechanism=None, population=small / "pop.csv", config=None,
                      range="0.3:0.6")
    assert spec.pairs == grid(0.3, 0.6, 0.1)
