"""Settings of Chen & Ohrimenko's Section 6 experiments: sizes, grids, mechanism rows, published values.

Section 6.1 / AISTATS appendix C: datasets of n = 100 Adult records, f_θ fitted
to 1,000 sampled datasets per θ, 50 repetitions, 200 shadow and 200 test
datasets for the attack, ε ∈ {0.2, 1, 5}, δ = 10⁻³. The published values
(:data:`PAPER_TABLE3`, :data:`PAPER_TABLE4`, :data:`PAPER_TEXT`) are reference
data printed beside ours and never used in a computation.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..._validation import check_choice, check_int
from ...calibration import CALIBRATIONS
from ...formatting import check_flag
from ...mechanisms import LABELS
from ...mechanisms.metadata import METADATA, names_where

STUDY = "chen-ohrimenko"
N_RECORDS = 100
MODEL_SAMPLES = 1000
N_SHADOW = 200
N_TEST = 200
REPS = 50
EPSILONS = (0.2, 1.0, 5.0)
DELTA = 1e-3
DELTAS = (1e-4, 1e-3, 1e-2)

#: Sensitive properties: predicate and the Δp used in Figure 2 / Table 3.
PROPERTIES: dict[str, dict[str, Any]] = {
    "income": {"predicate": "income=>50K", "delta_p": 0.1, "symbol": "p_I"},
    "workclass": {"predicate": "workclass=Private", "delta_p": 0.04, "symbol": "p_W"},
}


def _rows(*names: str) -> tuple[tuple[str, str], ...]:
    """(registry name, paper label) pairs, labels from the mechanism metadata."""
    return tuple((name, LABELS[name]) for name in names)


#: The DP / group-DP baselines: the mechanisms that need no Ψ (``MechanismInfo.needs_pairs``), registry order.
BASELINES = names_where(needs_pairs=False)
#: Group DP with k = n (Zhang et al.'s baseline): the baselines whose guarantee assumes bounded records.
GROUP_DP = tuple(name for name in BASELINES if "bounded" in METADATA[name].assumptions)
#: Record-level DP (k = 1): the other baselines.
PLAIN_DP = tuple(name for name in BASELINES if name not in GROUP_DP)

#: The five variants of the Expected Value Mechanism (Table 2; Figure 2), in the paper's order.
EVM_MECHANISMS = _rows("expm-laplace", "dirm-laplace", "expm-gauss", "eigm", "daum")
#: Gaussian variants attacked in Table 4 and Figure 4(b, c).
GAUSSIAN_EVM = tuple(row for row in EVM_MECHANISMS if METADATA[row[0]].noise == "gaussian")
GDP_MECHANISMS = _rows(*GROUP_DP)
DP_MECHANISMS = _rows(*PLAIN_DP)
#: Table 3 rows (registry name, paper label), in the paper's order: the EVM variants, then group DP.
TABLE3_MECHANISMS = EVM_MECHANISMS + GDP_MECHANISMS
#: Mechanisms calibrated without δ (a pure ε claim).
_LAPLACE = frozenset(names_where(needs_delta=False))

#: Figure grids (the paper varies ε from 0.1 to 10 and Δp over [0.02, 0.4]).
FIG2_EPSILONS = {
    "a": tuple(float(x) for x in np.geomspace(0.1, 10.0, 13)),
    "b": tuple(float(x) for x in np.linspace(1.0, 10.0, 10)),
    "c": tuple(float(x) for x in np.geomspace(0.1, 10.0, 13)),
}
#: Figure 2 captions: (b) "a low privacy ε range", (c) "a greater range of ε (higher privacy level)".
FIG2_RANGE_NOTE = {"a": "", "b": " (low-privacy range)", "c": " (wider range)"}
PROPERTY_LABELS = {"income": "income", "workclass": "work class"}
DELTA_PS = tuple(round(0.02 * k, 2) for k in range(1, 21))
FIG4_EPSILONS = tuple(float(x) for x in np.geomspace(0.1, 10.0, 9))
FIG4_DELTA_P = {"b": ("income", 0.1), "c": ("workclass", 0.2)}

# --------------------------------------------------------------------------- published values
#: Table 3 of the full paper (L2 error, income, Δp_I = 0.1, δ = 0.001): {(label, ε): value}.
PAPER_TABLE3: dict[tuple[str, float], float] = {
    ("ExpM (L)", 0.2): 99.83, ("ExpM (L)", 1.0): 21.58, ("ExpM (L)", 5.0): 4.13,
    ("DirM (L)", 0.2): 35.22, ("DirM (L)", 1.0): 7.24, ("DirM (L)", 5.0): 1.38,
    ("ExpM (G)", 0.2): 177.28, ("ExpM (G)", 1.0): 34.98, ("ExpM (G)", 5.0): 7.11,
    ("EigM (G)", 0.2): 175.65, ("EigM (G)", 1.0): 34.87, ("EigM (G)", 5.0): 4.89,
    ("DauM (G)", 0.2): 69.85, ("DauM (G)", 1.0): 13.40, ("DauM (G)", 5.0): 1.24,
    ("GDP (L)", 0.2): 5528.52, ("GDP (L)", 1.0): 1063.39, ("GDP (L)", 5.0): 213.61,
    ("GDP (G)", 0.2): 7394.67, ("GDP (G)", 1.0): 1539.93, ("GDP (G)", 5.0): 293.17,
}
#: Table 4 of the full paper (= AISTATS Table 3): attack accuracy, income, Δp_I = 0.1.
#: {(label, ε, δ): accuracy}.
PAPER_TABLE4: dict[tuple[str, float, float], float] = {
    ("ExpM (G)", 0.2, 1e-4): 0.492, ("ExpM (G)", 0.2, 1e-3): 0.500, ("ExpM (G)", 0.2, 1e-2): 0.502,
    ("ExpM (G)", 1.0, 1e-4): 0.506, ("ExpM (G)", 1.0, 1e-3): 0.511, ("ExpM (G)", 1.0, 1e-2): 0.520,
    ("ExpM (G)", 5.0, 1e-4): 0.530, ("ExpM (G)", 5.0, 1e-3): 0.539, ("ExpM (G)", 5.0, 1e-2): 0.549,
    ("EigM (G)", 0.2, 1e-4): 0.507, ("EigM (G)", 0.2, 1e-3): 0.501, ("EigM (G)", 0.2, 1e-2): 0.512,
    ("EigM (G)", 1.0, 1e-4): 0.510, ("EigM (G)", 1.0, 1e-3): 0.512, ("EigM (G)", 1.0, 1e-2): 0.503,
    ("EigM (G)", 5.0, 1e-4): 0.537, ("EigM (G)", 5.0, 1e-3): 0.550, ("EigM (G)", 5.0, 1e-2): 0.545,
    ("DauM (G)", 0.2, 1e-4): 0.517, ("DauM (G)", 0.2, 1e-3): 0.508, ("DauM (G)", 0.2, 1e-2): 0.511,
    ("DauM (G)", 1.0, 1e-4): 0.548, ("DauM (G)", 1.0, 1e-3): 0.545, ("DauM (G)", 1.0, 1e-2): 0.562,
    ("DauM (G)", 5.0, 1e-4): 0.714, ("DauM (G)", 5.0, 1e-3): 0.739, ("DauM (G)", 5.0, 1e-2): 0.744,
}
#: Values stated in the text (approximate, as worded by the authors).
PAPER_TEXT: dict[str, dict[str, Any]] = {
    "no_defence_income_dp_0.1": {"value": 0.75, "source": "AISTATS Sec. 5.3: 'the attack has 75% success rate when statistics are released with no defense'"},
    "no_defence_income_dp_0.4": {"value": 1.0, "source": "Sec. 6.3.2: 'close to 100% when Δp_I = 0.4'"},
    "no_defence_workclass_dp_0.4": {"value": 0.9, "source": "Sec. 6.3.2: 'close to 90% when Δp_W = 0.4'"},
    "daum_beats_dp_income_up_to": {"value": 0.12, "source": "Sec. 6.2: DauM incurs less error than DP if Δp_I <= 0.12"},
    "daum_beats_dp_workclass_up_to": {"value": 0.28, "source": "AISTATS Sec. 5.2: ... or Δp_W <= 0.28"},
    "var_female_income_0.45": {"value": 18.31, "source": "App. D.1: variance of the number of females ≈ 18.31 when p_I = 0.45"},
    "var_female_income_0.55": {"value": 18.03, "source": "App. D.1: ≈ 18.03 when p_I = 0.55"},
}


def _rng(seed: int, *key: Any) -> np.random.Generator:
    """An independent stream per (seed, task key): results do not depend on the order tasks run."""
    words = [int(seed)] + [zlib.crc32(repr(k).encode()) for k in key]
    return np.random.default_rng(words)


def pair_for(delta_p: float) -> tuple[float, float]:
    """(p1, p2) = (0.5 − Δp/2, 0.5 + Δp/2) (Section 6.3; AISTATS Section 5.1)."""
    return round(0.5 - delta_p / 2, 10), round(0.5 + delta_p / 2, 10)


def _check_reps(reps: Any) -> int:
    return check_int(reps, "reps", minimum=2)


def _check_flag(value: Any, name: str) -> bool:
    return check_flag(value, name)


def _check_calibration(calibration: str) -> str:
    return check_choice(calibration, "calibration", CALIBRATIONS)


def _other(calibration: str) -> str:
    return "exact" if calibration == "classic" else "classic"
