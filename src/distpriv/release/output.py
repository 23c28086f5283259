"""Writing a release to a folder: the public files, then the private ledger.

``DIR/`` gets the public outputs — ``release.json`` (:func:`~distpriv.release.public.public_payload`),
``report.md``, a self-contained ``report.html`` and ``figures/*.png`` — all built
from the public context only; ``DIR/private/`` gets the curator's ledger
(:mod:`distpriv.release.ledger`), labelled not for publication, which a later
``distpriv release --previous DIR`` reads to compose.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .core import ReleaseResult
from .ledger import PRIVATE_DIR, write_ledger


def write_public_files(result: ReleaseResult, out: Path, *, attack_reps: int = 5,
                       extra: tuple[list[Any], list[Any]] | None = None) -> dict[str, Path]:
    """``release.json``, ``report.md``, ``report.html`` and ``figures/*.png`` (public context only).

    ``extra``: (sections, figures) appended to the report (``release --audit``'s audit section).
    """
    from ..formatting import dumps
    from ..report import write_report
    from .public import public_context
    from .render import attack_summary, error_curves, release_figures, release_sections

    ctx = public_context(result)
    curves = error_curves(ctx)
    rows = attack_summary(ctx, reps=attack_reps)
    figures = release_figures(ctx, curves, rows)
    sections = release_sections(ctx, rows)
    if extra is not None:
        sections, figures = [*sections, *extra[0]], [*(figures or []), *extra[1]]
    out = Path(out)
    paths = dict(write_report(out, "distpriv release report", sections, figures or None))
    (out / "release.json").write_text(dumps(ctx.payload) + "\n", encoding="utf-8")
    paths["json"] = out / "release.json"
    return paths


def write_private_ledger(result: ReleaseResult, out: Path, *, public_sha256: str | None = None) -> Path:
    """``out/private/ledger.json`` and the fingerprint files (not for publication)."""
    return write_ledger(Path(out), result.ledger(public_sha256))


def write_release(result: ReleaseResult, out: Path, *, attack_reps: int = 5,
                  extra: tuple[list[Any], list[Any]] | None = None) -> dict[str, Path]:
    """Public files, then the private ledger linked to ``release.json`` by its SHA-256."""
    paths = write_public_files(result, out, attack_reps=attack_reps, extra=extra)
    sha = hashlib.sha256(paths["json"].read_bytes()).hexdigest()
    paths["ledger"] = write_private_ledger(result, out, public_sha256=sha)
    paths["private"] = Path(out) / PRIVATE_DIR
    return paths
