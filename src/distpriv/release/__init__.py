"""Protect a property of your own table: ``distpriv release`` and ``distpriv audit``.

A data curator names the statistics to publish (``--stat mean:age``), the
property to hide (``--protect "income=>50K"``: the share of such records is the
secret θ) and the values to make indistinguishable (``--pairs 0.45,0.55``, or every adjacent pair of a public grid: ``--range 0.2:0.5 --gap 0.1``,
:func:`~distpriv.release.grid.grid`).
The release then

1. models f_θ, the distribution of the statistics over datasets with share θ,
   from public inputs — a reference population or a declared model
   (:mod:`distpriv.release.declared`) — or, outside the guarantee, by
   resampling the data itself (:mod:`distpriv.release.data`);
2. calibrates every mechanism of Chen & Ohrimenko for (ε, δ), tests its
   assumptions and applies Theorem 5.6/5.7 corrections where they fail, and
   keeps the valid mechanism with the smallest expected error
   (:mod:`distpriv.release.selection`);
3. draws the noise from the operating system's entropy with an exact,
   floating-point-safe sampler on a power-of-two grid
   (:mod:`distpriv.release.sampler`, :mod:`distpriv.release.noise`);
4. publishes only the noisy values, the guarantee, the noise and the public
   specification (:mod:`distpriv.release.public`), composing with earlier
   releases — read from their private ledgers — only where Propositions A.4/A.5
   allow (:mod:`distpriv.release.compose`, :mod:`distpriv.release.ledger`);
5. optionally writes ``release.json``, ``report.md``, a self-contained
   ``report.html`` and the private ledger (:mod:`distpriv.release.output`).

``distpriv audit`` audits the chosen mechanism with :func:`distpriv.audit` on
every pair of Ψ — a lower bound on ε from the attacker's whole trade-off curve
(:mod:`distpriv.auditing`, glue in :mod:`distpriv.release.audit`) — and checks that the public outputs reveal nothing beyond the noisy values
(:mod:`distpriv.release.sidechannel`).

Python use::

    from distpriv.release import protect
    result = protect("people.csv", stats=["mean:age"], protect="income=>50K", pairs=[(0.45, 0.55)],
                     epsilon=1.0, delta=1e-3, population="population.csv")
    result.to_json()["statistics"]
"""

from __future__ import annotations

from .api import protect
from .audit import ReleaseAudit, audit_release
from .compose import Composition, compose_releases, decide_propositions
from .core import Prepared, ReleaseResult, prepare, release, select
from .declared import DeclaredModel, load_model_file
from .grid import gap_profiles, grid, grid_of
from .ledger import Ledger, read_ledger
from .noise import NoisePlan, plan_noise
from .output import write_private_ledger, write_public_files, write_release
from .public import public_context, public_payload
from .selection import (
    Candidate,
    Diagnostics,
    Selection,
    diagnose_assumptions,
    evaluate_candidate,
    select_mechanism,
)
from .sidechannel import SideChannelResult, side_channel_check
from .spec import ReleaseSpec, build_spec, load_spec_file

__all__ = [
    "Candidate",
    "Composition",
    "DeclaredModel",
    "Diagnostics",
    "Ledger",
    "NoisePlan",
    "Prepared",
    "ReleaseAudit",
    "ReleaseResult",
    "ReleaseSpec",
    "Selection",
    "SideChannelResult",
    "audit_release",
    "build_spec",
    "compose_releases",
    "decide_propositions",
    "diagnose_assumptions",
    "evaluate_candidate",
    "gap_profiles",
    "grid",
    "grid_of",
    "load_model_file",
    "load_spec_file",
    "plan_noise",
    "prepare",
    "protect",
    "public_context",
    "public_payload",
    "read_ledger",
    "release",
    "select",
    "select_mechanism",
    "side_channel_check",
    "write_private_ledger",
    "write_public_files",
    "write_release",
]
