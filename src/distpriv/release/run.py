"""One release, end to end: spec → result → public files + private ledger (issue 24 item 2).

:func:`run_release` is the one function that runs a release. :func:`distpriv.release.protect` calls it
without a folder; ``distpriv release`` parses its flags into the same
:class:`~distpriv.release.spec.ReleaseSpec` and calls it with ``out``, then prints what it returns. So the
policy (which option combinations are refused) and the output transaction (a folder that appears whole or
not at all, :class:`~distpriv.release.outdir.OutputFolder`) live here, not in the command line.

Order of work (each step refuses before the next one reads anything private):

1. policy on the spec alone: ``audit`` needs a valid trial count and refuses ``model_from_data`` (the audit
   would draw the private rows into the public report); ``out`` must be a new or empty folder (or
   ``force``) and not one of ``previous``;
2. :func:`~distpriv.release.core.prepare` (read the data, model f_θ), then
   :func:`~distpriv.release.core.release` (select the mechanism, draw the noise);
3. optionally the audit of the chosen mechanism (:func:`distpriv.release.audit.audit_release`);
4. with ``out``: the public files, then the ledger (:func:`~distpriv.release.output.write_release`),
   committed atomically; on any error nothing is left behind.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidParameterError, arg
from .core import ReleaseResult, prepare, release, select
from .spec import ReleaseSpec

#: Releases per secret of ``audit=True`` unless ``trials`` says otherwise (as ``distpriv release --audit``).
DEFAULT_AUDIT_TRIALS = 20_000


@dataclass(frozen=True)
class ReleaseRun:
    """What :func:`run_release` produced: the result, the audit (or ``None``) and the folder written (or ``None``)."""

    result: ReleaseResult
    audit: Any = None
    out: Path | None = None

    def to_json(self) -> dict[str, Any]:
        """The public payload (``result.to_json()``) with the audit's summary under ``"audit"`` when audited."""
        doc = self.result.to_json()
        if self.audit is not None:
            doc["audit"] = self.audit.to_dict()
        return doc


def check_run(spec: ReleaseSpec, *, out: Path | None = None, force: bool = False, audit: bool = False,
              trials: int = DEFAULT_AUDIT_TRIALS) -> None:
    """Refuse a release request from the spec and the options alone (step 1 of the module docstring)."""
    if out is not None:
        for p in spec.previous:
            if Path(p).exists() and Path(out).exists() and Path(out).resolve() == Path(p).resolve():
                raise InvalidParameterError(f"{out} is also given as {arg('previous')}; write the new release "
                                            "elsewhere", argument="out")
        from .outdir import check_out

        check_out(Path(out), force=force)
    if audit:
        from .audit import check_audit_options

        check_audit_options(trials, 0.95)
        if spec.model_from_data:
            raise InvalidParameterError(f"not with {arg('model_from_data')} (the audit would draw the private rows "
                                        "into the public report); run `distpriv audit` instead", argument="audit")


def run_release(spec: ReleaseSpec, *, data: Any = None, out: Path | None = None, force: bool = False,
                audit: bool = False, trials: int = DEFAULT_AUDIT_TRIALS, show_progress: bool | None = None
                ) -> ReleaseRun:
    """Run one release of ``spec`` (module docstring); write it to ``out`` when given.

    ``data``: a frame to release instead of ``spec.data`` (:func:`~distpriv.release.core.prepare`);
    ``audit``: also audit the chosen mechanism with ``trials`` releases per secret and add it to the report;
    ``show_progress``: a status line on stderr (default: when stderr is a terminal).
    """
    from .progress import Stages

    check_run(spec, out=out, force=force, audit=audit, trials=trials)
    folder: Any = None
    if out is not None:
        from .outdir import OutputFolder

        folder = OutputFolder(Path(out), force=force)
    checked = None
    with folder or nullcontext():
        with Stages("distpriv release", enabled=show_progress) as stages:
            stages.step("reading the data and modelling f_θ")
            prep = prepare(spec, data=data)
            stages.step("choosing the mechanism and drawing the noise")
            result = release(prep, select(prep))  # the two steps of core.release(prep), each called from here
        if audit:  # its own progress bar (one live display at a time)
            from .audit import audit_release
            from .audit_report import audit_progress

            with audit_progress("auditing") as tick:
                checked = audit_release(result.prepared, result.selection, trials=trials, progress=tick)
        if folder is not None:
            from .audit_report import audit_figures, audit_sections
            from .output import write_release

            assert folder.path is not None
            extra = None if checked is None else (audit_sections(checked), audit_figures(checked.reports))
            with Stages("distpriv release", enabled=show_progress) as stages:
                stages.step("writing the report")
                write_release(result, folder.path, extra=extra)
            folder.commit()
    return ReleaseRun(result, checked, None if out is None else Path(out))
