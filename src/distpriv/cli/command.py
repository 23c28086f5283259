"""Command lines of ``distpriv release``: renderings of a release specification, made by the CLI alone.

The library records how to re-run a release as its public specification (``provenance.spec``,
:func:`distpriv.release.public.public_spec`) and the spec-file keys built from it
(:func:`distpriv.release.public.rerun_config`); a command line is a rendering of those keys with the
CLI's flags (:func:`distpriv.cli.arguments.flag_for`). The side-channel audit's synthetic runs are
command lines too (:func:`release_command`, passed to :func:`distpriv.release.sidechannel.side_channel_check`).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .arguments import flag_for

#: Between the two values of one ``--pairs`` option.
_PAIRS_SEP = ","


def config_args(config: Mapping[str, Any]) -> list[str]:
    """The ``distpriv release`` options of the spec-file keys ``config`` (``data`` excluded: it is positional).

    A list gives one option per item (``stats`` → ``--stat`` repeated; ``pairs`` → ``--pairs P1,P2``), a
    ``true`` boolean the bare flag, a ``false`` one nothing; floats are written by ``repr`` (read back exactly).
    Statistic names (a ``stats`` table) have no command-line form: the statistics' specs are given.
    """
    args: list[str] = []
    for key, value in config.items():
        if key == "data" or value is None or value is False:
            continue
        flag = flag_for(key)
        if value is True:
            args.append(flag)
            continue
        items = list(value.values()) if isinstance(value, Mapping) else value
        for v in items if isinstance(items, (list, tuple)) else [items]:
            text = _PAIRS_SEP.join(repr(float(x)) for x in v) if isinstance(v, (list, tuple)) else (
                repr(v) if isinstance(v, float) else str(v))
            args += [flag, text]
    return args


def command_line(config: Mapping[str, Any]) -> str:
    """``distpriv release DATA …``: the shell command of the spec-file keys ``config``
    (:func:`distpriv.release.public.rerun_config` of a published ``provenance.spec``)."""
    return shlex.join(["distpriv", "release", str(config.get("data", "DATA")), *config_args(config)])


def spec_release_args(spec: Any) -> list[str]:
    """``distpriv release`` options reproducing a :class:`~distpriv.release.spec.ReleaseSpec` (data excluded).

    Statistic names, a population frame and earlier releases cannot be given on the command line: the
    CLI passes its own options instead (``distpriv audit``)."""
    config: dict[str, Any] = {"stats": list(spec.stats), "protect": spec.protect, "pairs": [list(p) for p in spec.pairs],
                              "epsilon": float(spec.epsilon), "delta": float(spec.delta), "mechanism": spec.mechanism,
                              "calibration": spec.calibration, "missing": spec.missing, "sep": spec.sep,
                              "encoding": spec.encoding,
                              "population": None if spec.population is None else Path(spec.population).resolve(),
                              "model": None if spec.model is None else Path(spec.model).resolve(),
                              "model_from_data": bool(spec.model_from_data), "n": spec.n,
                              "samples": spec.samples if spec.model is None else None}
    return config_args(config)


def release_command(args: Sequence[str]) -> Callable[[Path, Path], list[str]]:
    """The fresh-process command of one synthetic release of the side-channel audit, as a function of the
    table and output folder: ``python -m distpriv.cli release TABLE <args> --out OUT --format json``."""

    def command(table: Path, out: Path) -> list[str]:
        return [sys.executable, "-m", "distpriv.cli", "release", str(table), *args, flag_for("out"), str(out),
                flag_for("format"), "json"]

    return command
