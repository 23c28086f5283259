"""`distpriv reproduce kawamoto-tupling / kawamoto-coupling` on small sweeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from distpriv.cli import kawamoto_coupling as cli_coupling
from distpriv.cli import kawamoto_tupling as cli_tupling
from distpriv.datasets.checkins import synthetic_checkins
from distpriv.errors import InvalidParameterError
from distpriv.experiments import kawamoto_coupling, kawamoto_tupling


@pytest.fixture(scope="module")
def small_data():
    return synthetic_checkins(400, 20, rng=1)


def test_tupling_run_small(small_data, tmp_path: Path) -> None:
    res = kawamoto_tupling.run_kawamoto_tupling(
        data=small_data, quick=True, k_values=(1, 10), eps_a_values=(10.0,), radii=(0.02,), asr_eps_a=(10.0,),
        rr_eps=(2.0,), pl_eps=(50.0,), pg_sigma=(0.01,), out=tmp_path, show_progress=False,
    )
    eps_k = [r["epsilon"] for r in res["fig2a"]["rows"]]
    assert eps_k[1] <= eps_k[0]  # more dummies, stronger DistP (Fig. 2a)
    for row in res["table2"]["rows"]:
        assert row["theorem_bound"] >= row["exact"]
    assert res["table2"]["rows"][0]["paper_theoretical"] == 2.170
    assert {r["mechanism"] for r in res["fig5"]["rows"]} == {"TM", "RR", "PL", "PG"}
    assert all(0.0 <= r["asr"] <= 1.0 for r in res["fig4"]["rows"])
    for f in res["figures"]:
        assert Path(f).stat().st_size > 1000
    assert json.loads((tmp_path / "kawamoto_tupling.json").read_text())["study"] == "kawamoto-tupling"
    assert "Table 2" in kawamoto_tupling.kawamoto_tupling_markdown(res)
    md = (tmp_path / "kawamoto_tupling.md").read_text()
    assert "Table 2" in md and "Timing" in md
    for f in res["figures"]:
        assert f"]({Path(f).name})" in md  # every PNG embedded in the report
    assert "TM: tupling mechanism" in md
    assert f"|Y| = {res['data']['n_regions']}" in res["data"]["regions_note"]
    for r in res["fig4"]["rows"]:
        assert r["asr_se"] == pytest.approx((r["asr"] * (1 - r["asr"]) / res["fig4"]["n_users_home"]) ** 0.5)
    with pytest.raises(InvalidParameterError):
        kawamoto_tupling.run_kawamoto_tupling(data=small_data, quick=True, bogus=(1,))


def test_region_counts_reachable_by_quadrant_splits() -> None:
    # each split adds 3 regions to the 110 cells of the 11 × 10 grid: 276 is not reachable
    assert kawamoto_tupling.reachable_region_counts(110, 276) == (275, 278)
    assert kawamoto_tupling.reachable_region_counts(110, 275) == (275, 275)
    assert kawamoto_tupling.reachable_region_counts(110, 100) == (110, 113)


def test_paper_region_count_explained() -> None:
    st = kawamoto_tupling.Setting(synthetic_checkins(2000, rng=0))
    assert (st.regions.n - 110) % 3 == 0 and st.regions.n in (275, 278)
    note = st.region_note()
    assert f"|Y| = {st.regions.n}" in note and "276 regions cannot arise" in note and "275 and 278" in note
    assert f"|X| = {st.inputs.size}" in note and "228" in note


def test_coupling_run_small(small_data) -> None:
    res = kawamoto_coupling.run_kawamoto_coupling(data=small_data, sizes=(50, 500), repeats=1, show_progress=False)
    assert res["fig2"]["expected_loss_nwc"] == pytest.approx(0.3)
    assert res["fig2"]["w1"] == pytest.approx(0.3)
    for row in res["sweep"]["rows"]:
        assert row["bound_dinf"] >= row["exact_dinf"] - 1e-9
        assert row["bound_kl"] >= row["exact_kl"] - 1e-9


def test_coupling_report(small_data, tmp_path: Path) -> None:
    res = kawamoto_coupling.run_kawamoto_coupling(data=small_data, sizes=(50,), repeats=1, show_progress=False, out=tmp_path)
    md = (tmp_path / "kawamoto_coupling.md").read_text()
    assert "](kawamoto_coupling_sweep.png)" in md and "Fig. 2" in md and "Timing" in md
    assert [Path(f).name for f in res["figures"]] == ["kawamoto_coupling_sweep.png"]


def test_cli_commands(monkeypatch) -> None:
    app = typer.Typer()
    cli_tupling.add_kawamoto_tupling_commands(app)
    cli_coupling.add_kawamoto_coupling_commands(app)
    runner = CliRunner()
    res = runner.invoke(app, ["kawamoto-coupling", "--format", "json", "--sizes", "100", "--repeats", "1",
                              "--users", "300"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.output)
    assert payload["study"] == "kawamoto-coupling" and len(payload["sweep"]["rows"]) == 1
    res = runner.invoke(app, ["kawamoto-tupling", "--format", "xml"])
    assert isinstance(res.exception, InvalidParameterError)
    res = runner.invoke(app, ["kawamoto-tupling", "--k", "0"])
    assert isinstance(res.exception, InvalidParameterError)
