"""Output helpers shared by the library and the CLI: JSON/Markdown emission, `--format`/`--out` checks, progress bars."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InvalidParameterError, InvalidTypeError

FORMATS = ("json", "md")


def check_format(fmt: str) -> str:
    """``--format`` must be ``json`` or ``md``."""
    if fmt not in FORMATS:
        raise InvalidParameterError(f"expected one of {list(FORMATS)}, got {fmt!r}", argument="format")
    return fmt


def check_flag(value: Any, name: str) -> bool:
    """A boolean option (``True``/``False``; numpy booleans accepted)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidTypeError(f"expected True or False, got {value!r}", argument=name)


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, Paths and non-finite floats for ``json.dumps``."""
    # map() rather than comprehensions: one frame per level of nesting (a comprehension is a frame of its own)
    if isinstance(obj, Mapping):
        return dict(zip(map(str, obj.keys()), map(to_jsonable, obj.values()), strict=True))
    if isinstance(obj, (list, tuple)):
        return list(map(to_jsonable, obj))
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj: Any) -> str:
    """JSON text of ``obj`` (indent 2)."""
    return json.dumps(to_jsonable(obj), indent=2)


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            return "∞" if float(v) > 0 else "–"
        return f"{float(v):.{digits}g}"
    return _cell(str(v))


def _cell(text: str) -> str:
    """A table cell: pipes escaped, line breaks flattened (a cell must not end its row)."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table of ``rows`` (dicts), columns in the given order."""
    if not rows:
        return "_(no rows)_\n"
    cols = list(columns) if columns is not None else list(rows[0].keys())
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c), digits) for c in cols) + " |")
    return "\n".join(lines) + "\n"


@contextmanager
def progress(description: str, total: int | None, *, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on stderr (so JSON on stdout stays clean); yields ``advance(n=1)``."""
    if not enabled:
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n=1: prog.advance(task, n)


def parse_positive_list(text: str | None, name: str, kind: type = float) -> tuple[Any, ...] | None:
    """Parse a CLI list like ``"1,5,10"`` into positive finite numbers of type ``kind`` (``None`` stays ``None``)."""
    if text is None:
        return None
    what = "integers" if kind is int else "numbers"
    try:
        vals = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise InvalidParameterError(f"expected comma-separated {what}, got {text!r}", argument=name) from exc
    if not vals or any(not math.isfinite(v) or v <= 0 for v in vals):
        raise InvalidParameterError(f"expected positive {what}, got {text!r}", argument=name)
    return vals


def prepare_out(out: str | Path | None) -> Path | None:
    """Create the ``out`` folder of a reproduction or the demo if given and return it as a Path.

    The folder is checked first like a release's (:func:`distpriv.release.outdir.check_out` with
    ``force``): it must not be, lie under, or contain a symbolic link (so no file is ever written
    through a link), nor be the current folder or hold the ledger key. Existing regular files of the
    same names are replaced, so a reproduction can be re-run into its folder.
    """
    if out is None:
        return None
    from .release.outdir import check_out

    p = Path(out)
    check_out(p, force=True)
    p.mkdir(parents=True, exist_ok=True)
    return p
