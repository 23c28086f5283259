"""Record-level DP in the curator's ledger: per release (E, D, μ), composed across the releases of a chain.

Each release made with ``record_epsilon`` stores in its chain entry its record-level claim: (E, D) and μ,
the worst-case Mahalanobis sensitivity of its Gaussian noise over the replace-one sensitivity set
(:mod:`distpriv.release.record`). A record of the data that several releases read is exposed by all of
them, so the record-level guarantees compose (conservatively over every release of the chain, whether or
not its rows overlap this one's):

* **basic composition**: (Σ E_i, Σ D_i) (Dwork & Roth 2014, Thm 3.16);
* **exact Gaussian composition**: the privacy loss of k Gaussian releases with worst-case Mahalanobis
  sensitivities μ_i is dominated by one Gaussian shift of length μ = sqrt(Σ μ_i²) (the μ-GDP composition of
  Dong, Roth & Su 2022, Cor. 2, exact for Gaussian mechanisms, adaptively chosen or not), so at E = Σ E_i
  δ = δ_μ(E) (Balle & Wang 2018, Thm 8).

The composed claim is (Σ E_i, min(Σ D_i, δ_μ(Σ E_i))). A chain holding a release without a record-level
claim composes to none: that release did not protect individual records. Distribution privacy composes as
before (Props. A.4/A.5, :mod:`distpriv.release.compose`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..calibration import gaussian_delta

#: Fields of a chain entry's ``record``.
RECORD_KEYS = {"epsilon", "delta", "mu"}


def parse_record(raw: Any, what: str) -> dict[str, float] | None:
    """Validate a chain entry's ``record`` (``None``: no record-level claim); raises ``ValueError`` naming ``what``."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != RECORD_KEYS:
        raise ValueError(f"{what}: 'record' must hold exactly {sorted(RECORD_KEYS)}")
    out: dict[str, float] = {}
    for k in sorted(RECORD_KEYS):
        v = raw[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise ValueError(f"{what}: record {k} is not a finite number")
        out[k] = float(v)
    if out["epsilon"] <= 0 or not 0.0 < out["delta"] < 1.0 or out["mu"] < 0:
        raise ValueError(f"{what}: record (E, D, μ) = ({out['epsilon']}, {out['delta']}, {out['mu']}) out of range")
    if float(gaussian_delta(out["mu"], out["epsilon"])) > out["delta"] * (1 + 1e-9):
        raise ValueError(f"{what}: record μ = {out['mu']} does not give δ <= {out['delta']} at E = {out['epsilon']}")
    return out


def compose_record(records: Sequence[dict[str, float] | None]) -> dict[str, Any]:
    """The composed record-level claim of a chain (module docstring)."""
    if not records:
        return {"protected": False, "reason": "no release"}
    missing = sum(r is None for r in records)
    if missing:
        return {"protected": False, "releases": len(records),
                "reason": f"{missing} release(s) of the chain made no record-level claim: individual records are not "
                          "protected by the composition"}
    recs = [r for r in records if r is not None]
    eps = math.fsum(r["epsilon"] for r in recs)
    basic = min(1.0, math.fsum(r["delta"] for r in recs))
    mu = math.sqrt(math.fsum(r["mu"] ** 2 for r in recs))
    exact = float(gaussian_delta(mu, eps))
    return {"protected": True, "releases": len(recs), "epsilon": eps, "delta": min(basic, exact),
            "framework": "differential-privacy", "neighbours": "replace-one",
            "basic_delta": basic, "gaussian_mu": mu, "gaussian_delta": exact,
            "method": "min of basic composition (Σ E, Σ D) and the exact Gaussian composition "
                      "μ = sqrt(Σ μ_i²) (Dong, Roth & Su 2022 Cor. 2; Balle & Wang 2018 Thm 8) at E = Σ E_i"}
