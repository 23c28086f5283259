"""Reproduction of Chen & Ohrimenko, Section 6 (Tables 3–4, Figures 2–5) on UCI Adult.

Setting (Section 6.1 and AISTATS appendix C):

* Adult without missing values (45,222 records) is split at random into 10,000
  auxiliary records (attacker's shadow datasets), 10,000 test records (attack
  evaluation) and the remainder (modelling f_θ for the mechanisms).
* Datasets have n = 100 records; the query F is Table 1's five statistics
  (average age, average years of education, number never married, number
  female, average hours per week).
* Sensitive properties: the share p_I of records with income > 50K and the
  share p_W of private-sector workers. For a protection level Δp the secret is
  whether p = 0.5 − Δp/2 or p = 0.5 + Δp/2 (AISTATS Section 5.1: "we want to
  prevent an attacker from determining whether p has value 0.5 − Δp/2 or
  0.5 + Δp/2"), so Θ = {p1, p2} and Ψ = {(p1, p2)}.
* f_θ is modelled as N(μ_θ, Σ_θ) fitted to F over 1,000 datasets sampled with
  property value θ from the modelling records (appendix C.1).
* L2 error (Section 6.2): the mean over 50 repetitions of ||M(F(D)) − F(D)||_2,
  D a freshly sampled dataset (half with p1, half with p2).
* Attack (Section 6.3): logistic-regression meta-classifier trained on F of 200
  shadow datasets from the auxiliary records (half p1, half p2), tested on 200
  protected releases of datasets from the test records, 50 repetitions, each
  with a fresh auxiliary/test split; see :mod:`distpriv.attacks`.
* Mechanisms (Table 2) with ε ∈ {0.2, 1, 5} and δ = 10⁻³ unless varied; group-DP
  baselines with k = n = 100 and per-record sensitivities range/n for means and
  1 for counts; the papers' classic Gaussian rule c = sqrt(2 ln(1.25/δ)) unless
  ``calibration="exact"``.

Every number is computed; the published values in :data:`PAPER_TABLE3`,
:data:`PAPER_TABLE4` and :data:`PAPER_TEXT` are reference data printed beside
ours and never used in a computation.

Modules: :mod:`.settings` (constants, mechanism rows, published values),
:mod:`.context` (the cached Adult data context), :mod:`.measures` (one row's
mechanism and the L2-error protocol), :mod:`.tables` / :mod:`.figures` (the
computations), :mod:`.render` (Markdown, figures, the written report) and
:mod:`.command` (:func:`run_chen_ohrimenko`). Everything callers use is re-exported here.
"""

from __future__ import annotations

from ...calibration import CALIBRATIONS
from ...formatting import dumps
from .command import FIGURES, TABLES, run_chen_ohrimenko
from .context import CONTEXT_CACHE_SIZE, Context, get_context
from .figures import figure2, figure3, figure4, figure5
from .measures import PAPER_DIRM_NOTE, paper_dirm_laplace
from .render import (
    ZERO_NOTE,
    build_figure,
    chen_ohrimenko_markdown,
    plot,
    write_chen_ohrimenko_report,
)
from .settings import (
    DELTA,
    DELTA_PS,
    DELTAS,
    DP_MECHANISMS,
    EPSILONS,
    EVM_MECHANISMS,
    FIG2_EPSILONS,
    FIG2_RANGE_NOTE,
    FIG4_DELTA_P,
    FIG4_EPSILONS,
    GAUSSIAN_EVM,
    GDP_MECHANISMS,
    MODEL_SAMPLES,
    N_RECORDS,
    N_SHADOW,
    N_TEST,
    PAPER_TABLE3,
    PAPER_TABLE4,
    PAPER_TEXT,
    PROPERTIES,
    PROPERTY_LABELS,
    REPS,
    STUDY,
    TABLE3_MECHANISMS,
    pair_for,
)
from .tables import table3, table3_differences, table4

__all__ = [
    "CALIBRATIONS", "CONTEXT_CACHE_SIZE", "DELTA", "DELTAS", "DELTA_PS", "DP_MECHANISMS", "EPSILONS",
    "EVM_MECHANISMS", "FIG2_EPSILONS", "FIG2_RANGE_NOTE", "FIG4_DELTA_P", "FIG4_EPSILONS", "FIGURES",
    "GAUSSIAN_EVM", "GDP_MECHANISMS", "MODEL_SAMPLES", "N_RECORDS", "N_SHADOW", "N_TEST", "PAPER_DIRM_NOTE",
    "PAPER_TABLE3", "PAPER_TABLE4", "PAPER_TEXT", "PROPERTIES", "PROPERTY_LABELS", "REPS", "STUDY",
    "TABLE3_MECHANISMS", "TABLES", "ZERO_NOTE", "Context", "build_figure", "dumps", "figure2", "figure3",
    "figure4", "figure5", "get_context", "pair_for", "paper_dirm_laplace", "plot", "chen_ohrimenko_markdown", "run_chen_ohrimenko",
    "table3", "table3_differences", "table4", "write_chen_ohrimenko_report",
]
