"""`distpriv reproduce kawamoto-tupling / kawamoto-coupling` on small sweeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from distpriv.datasets.checkins import synthetic_checkins
from distpriv.errors import InvalidParameterError
from distpriv.experiments import kawamoto_coupling, kawamoto_tupling


@pytest.fixture(scope="module")
def small_data():
    return synthetic_checkins(400, 20, rng=1)


def test_tupling_run_small(small_data, tmp_path: Path) -> None:
    res = kawamoto_tupling.run(
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
    assert "Table 2" in kawamoto_tupling.to_markdown(res)
    with pytest.raises(InvalidParameterError):
        kawamoto_tupling.run(data=small_data, quick=True, bogus=(1,))


def test_coupling_run_small(small_data) -> None:
    res = kawamoto_coupling.run(data=small_data, sizes=(50, 500), repeats=1, show_progress=False)
    assert res["fig2"]["expected_loss_nwc"] == pytest.approx(0.3)
    assert res["fig2"]["w1"] == pytest.approx(0.3)
    for row in res["sweep"]["rows"]:
        assert row["bound_dinf"] >= row["exact_dinf"] - 1e-9
        assert row["bound_kl"] >= row["exact_kl"] - 1e-9


def test_cli_commands(monkeypatch) -> None:
    app = typer.Typer()
    kawamoto_tupling.register(app)
    kawamoto_coupling.register(app)
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
