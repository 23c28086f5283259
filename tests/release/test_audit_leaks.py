"""Six planted leaks, each reaching the CLI through a test-only ``sitecustomize.py``, each failing ``distpriv audit``.

The switch is the environment variable ``DISTPRIV_TEST_LEAK``; the module is written into a temporary folder put
first on ``PYTHONPATH`` (nothing test-only ships in ``src/``). It wraps ``distpriv.release.core.release`` to keep
the true statistics F(Data) of the table being released and plants one leak:

* ``figure``: the true value drawn as text in ``figures/f_theta.png``;
* ``caption``: the true value in the f_θ figure's caption (report.md / report.html);
* ``warning``: a stderr warning printed only when the true mean is high;
* ``sleep``: a sleep growing with the true value;
* ``grid``: each value published off its grid, value + 1e-9 · true;
* ``json``: the true mean added to ``release.json`` (audited with ``--model``).

The four leaks that act on a release from ``--population`` (figure, caption, warning, grid) are planted together in
one audit (``DISTPRIV_TEST_LEAK=figure,caption,warning,grid``): the check lists every difference it finds, so each
leak's test still asserts that its own difference is named, at the cost of one audit instead of four (two
synthetic release processes each, ~10 s CPU; issue 26). Each leak changes a different output (a PNG's bytes,
report.md's text, stderr, the published values), so none can stand in for another's expected difference.

The tables make the secret move the mean of ``age`` a lot (age = 1030 + 20 · protected + small noise, Ψ = {0.2, 0.8}:
true means ≈ 1034 vs 1046), so each leak shows between the audit's two synthetic releases; the values are far from
0 relative to the noise, so no text that depends on the published values alone (e.g. a warning that an interval is
wider than the value) tells the two runs apart by chance.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_release import distpriv_exe

SITECUSTOMIZE = '''
import os
import sys

LEAKS = set(os.environ.get("DISTPRIV_TEST_LEAK", "").split(",")) - {""}
if LEAKS:
    import time

    import numpy as np

    import distpriv.release.core as core
    import distpriv.release.public as public
    import distpriv.release.render as render

    TRUTH = []
    _release = core.release

    def release(prep, selection=None, *, bits=None, truth=None):
        x = np.asarray(prep.data.values if truth is None else truth, dtype=float)
        TRUTH[:] = [float(v) for v in x]
        if "warning" in LEAKS and TRUTH[0] > 1040.0:
            print("distpriv: warning: some values are unusually high", file=sys.stderr)
        if "sleep" in LEAKS:
            time.sleep(max(0.0, TRUTH[0] - 1038.0))
        result = _release(prep, selection, bits=bits, truth=truth)
        if "grid" in LEAKS:
            result.values = result.values + 1e-9 * x
        return result

    core.release = release
    _figure = render._f_theta_figure

    def f_theta_figure(ctx):
        fig = _figure(ctx)
        if "figure" in LEAKS:
            fig.image.text(0.01, 0.01, "%.2f" % TRUTH[0], fontsize=7)
        if "caption" in LEAKS:
            fig.caption += " (mean %.2f)" % TRUTH[0]
        return fig

    render._f_theta_figure = f_theta_figure
    _payload = public.public_payload

    def public_payload(result):
        doc = _payload(result)
        if "json" in LEAKS:
            doc["check"] = {"mean": TRUTH[0]}
        return doc

    public.public_payload = public_payload
'''

BASE = ["--stat", "mean:age", "--protect", "income=>50K", "--pairs", "0.2,0.8", "--epsilon", "1", "--delta", "1e-3",
        "--mechanism", "expm-laplace", "--trials", "1000", "--format", "json"]


def _people(n: int, share: float, rng: np.random.Generator) -> pd.DataFrame:
    flag = rng.random(n) < share
    return pd.DataFrame({"income": np.where(flag, ">50K", "<=50K"),
                         "age": np.round(1030 + 20 * flag + rng.normal(0, 2, n), 1)})


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("leaks")
    rng = np.random.default_rng(3)
    _people(200, 0.5, rng).to_csv(d / "t.csv", index=False)
    _people(3000, 0.5, rng).to_csv(d / "pop.csv", index=False)
    theta = {p: {"mean": [1030.0 + 20 * float(p)], "covariance": [[0.5]]} for p in ("0.2", "0.8")}
    (d / "model.json").write_text(json.dumps({"statistics": ["mean:age"], "theta": theta}))
    (d / "site").mkdir()
    (d / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return d


def _env(d: Path, leak: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(d / "site"), env.get("PYTHONPATH", "")) if p)
    env.pop("DISTPRIV_TEST_LEAK", None)
    if leak is not None:
        env["DISTPRIV_TEST_LEAK"] = leak
    return env


def _source(leak: str | None) -> list[str]:
    return ["--model", "model.json"] if leak in ("json", "model") else ["--population", "pop.csv", "--samples", "60"]


def _audit(d: Path, leak: str | None, runs: int = 1) -> subprocess.Popen[str]:
    args = [*distpriv_exe(), "audit", "t.csv", *BASE, *_source(leak), "--side-channel-runs", str(runs)]
    return subprocess.Popen(args, cwd=d, env=_env(d, leak), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


#: leak -> what the audit's differences must name
EXPECTED = {
    None: None,
    "model": None,  # a clean release with a declared model: its synthetic tables are built from the model
    "figure": "figures/f_theta.png (bytes",
    "caption": "report.md (",
    "warning": "stderr (",
    "grid": "off its grid",
    "json": "release.json: check",
}


#: the leaks planted together in one audit (module docstring): each changes a different output
TOGETHER = ("figure", "caption", "warning", "grid")


def _audited(leak: str | None) -> str | None:
    """The value of ``DISTPRIV_TEST_LEAK`` of the audit that shows ``leak``."""
    return ",".join(TOGETHER) if leak in TOGETHER else leak


@pytest.fixture(scope="module")
def audits(leaky: Path) -> dict[str | None, tuple[int, dict, str]]:
    """Every audit but the timing one (one synthetic release of each table per audit). The audits run the console
    script's entry point in-process (:mod:`_cli`) with the leak's environment: the leaks act in the synthetic
    releases, which the audit runs as fresh processes (forked from a server started in that environment,
    ``PYTHONPATH`` first to the ``sitecustomize.py``); the audit's own process would only add its imports. The timing audit below stays a
    subprocess end to end."""
    from _cli import run_in_process

    out = {}
    for leak in dict.fromkeys(_audited(k) for k in EXPECTED):
        args = ["audit", "t.csv", *BASE, *_source(leak), "--side-channel-runs", "1"]
        with pytest.MonkeyPatch.context() as mp:
            for key in ("PYTHONPATH", "DISTPRIV_TEST_LEAK"):
                mp.delenv(key, raising=False)
            for key, value in _env(leaky, leak).items():
                if key in ("PYTHONPATH", "DISTPRIV_TEST_LEAK"):
                    mp.setenv(key, value)
            res = run_in_process(args, leaky)
        out[leak] = (res.returncode, json.loads(res.stdout) if res.stdout.strip() else {}, res.stderr)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("clean", [None, "model"])
def test_clean_release_passes_the_audit(audits: dict, clean: str | None) -> None:
    code, doc, err = audits[clean]
    assert code == 0, err
    side = doc["side_channel"]
    assert side["passed"] and side["differences"] == [] and side["runs"] == 1
    assert "report.html" in side["compared"] and "figure bytes" in side["compared"]


@pytest.mark.slow
@pytest.mark.parametrize("leak", [k for k, v in EXPECTED.items() if v is not None])
def test_planted_leak_fails_the_audit(audits: dict, leak: str) -> None:
    code, doc, err = audits[_audited(leak)]
    assert code == 1, err
    side = doc["side_channel"]
    assert not side["passed"]
    assert any(EXPECTED[leak] in d for d in side["differences"]), side["differences"]
    assert "the side-channel check failed" in err


@pytest.mark.slow
def test_sleep_growing_with_the_value_fails_the_audit(leaky: Path) -> None:
    """Run time over 3 interleaved releases of each table: the θ = 0.8 table (mean ≈ 1046) sleeps ≈ 8 s more."""
    p = _audit(leaky, "sleep", runs=3)
    so, se = p.communicate(timeout=1800)
    side = json.loads(so)["side_channel"]
    assert p.returncode == 1, (se, side)
    timing = side["timing"]
    assert timing["compared"] and timing["flagged"]
    assert max(timing["median_relative_difference"], timing["fastest_relative_difference"]) >= 0.2
    assert [d for d in side["differences"] if d.startswith("run time")] and len(side["differences"]) == 1
