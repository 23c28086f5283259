"""The public API type-checks in users' code (``py.typed``): mypy on a script using the stable entry points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_SCRIPT = '''
import numpy as np
import distpriv as dp
from distpriv import local
from distpriv.release import protect

mu_a: dict[str, list[float]] = {"a": [1.0, 2.0], "b": [1.5, 2.5]}
cov = np.eye(2)
model = dp.GaussianModel(means=mu_a, covariances={"a": cov, "b": cov})
emp = dp.EmpiricalModel(samples={0.45: np.zeros((10, 2)), 0.55: np.ones((10, 2))})
g: dp.GaussianModel = emp.to_gaussian()
mech = dp.calibrate("expm-gauss", model, [("a", "b")], epsilon=1.0, delta=1e-3, calibration="exact")
y: np.ndarray = mech.release(np.zeros(2), rng=np.random.default_rng(0))
eps: float = mech.guarantee.epsilon
w: float = dp.distances.w_infinity(np.array([1.0, 2.0]), np.array([0.5, 0.5]), np.array([1.0, 3.0]),
                                   np.array([0.5, 0.5]), norm=1)
rr = local.randomized_response(3, 1.0)
t = local.Tupling(base=rr, k=2)
e2: float = local.distp_epsilon(rr, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), 0.01)
c = local.CouplingMechanism.optimal(inputs={"s": np.array([0.5, 0.5])}, target=np.array([0.5, 0.5]),
                                    cost=np.ones((2, 2)))
r = dp.audit(mech, model, ("a", "b"), trials=1000, rng=np.random.default_rng(0))
lower: float = r.epsilon_lower
res = protect
from distpriv.protocol import CalibratedMechanism, PrivacyMechanism
central: CalibratedMechanism = mech
channel: PrivacyMechanism = rr
tupled: PrivacyMechanism = t
from distpriv.attribute.apgm import AttributeGaussianMechanism
from distpriv.attribute.markov_quilt import QuiltMechanism


def _attribute(a: AttributeGaussianMechanism, q: QuiltMechanism) -> tuple[CalibratedMechanism, CalibratedMechanism]:
    return a, q
'''

BROKEN = USER_SCRIPT + "\nbad: str = mech.guarantee.epsilon\nnot_calibrated: CalibratedMechanism = rr\n"


def test_user_script_type_checks_and_errors_are_caught(tmp_path: Path) -> None:
    """One mypy run (project config and cache) on two scripts: the good one passes, the broken one fails.

    The options are the project's own (no ``--follow-imports``), so the cache ``make test``'s ``mypy src/distpriv``
    step has just written in the checkout serves the imported distpriv modules: ~1 s CPU instead of ~14 s for
    re-analysing them under other options (``follow_imports`` is part of mypy's cache key; issue 26). Errors in
    the package itself would be that step's failure; here only the two scripts' lines are read."""
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    good, bad = tmp_path / "user_good.py", tmp_path / "user_bad.py"
    good.write_text(USER_SCRIPT, encoding="utf-8")
    bad.write_text(BROKEN, encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", str(good), str(bad)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    lines = [ln for ln in res.stdout.splitlines() if ": error:" in ln]
    assert not [ln for ln in lines if "user_good.py" in ln], res.stdout + res.stderr
    bad_lines = [ln for ln in lines if "user_bad.py" in ln and "incompatible types in assignment" in ln.lower()]
    assert len(bad_lines) == 2, res.stdout  # a str from a float; a local channel is not a CalibratedMechanism
