"""Command-line values converted without pydantic where the result is the same (issue 26: a release's start-up).

typer 0.29 converts every option's value, given or default, through a pydantic ``TypeAdapter``: the first
conversion imports pydantic (~0.1 s of CPU, a tenth of a 1,000-row release) although ``distpriv``'s options are
plain ``str``, ``int``, ``float``, ``Path`` and lists of them. :func:`install` gives each such option a
converter that returns exactly what typer's adapter returns for the values whose conversion is unambiguous:

* ``str``: a ``str`` as is; ``bool``: a ``bool`` as is (typer skips a flag's ``True``/``False`` but still
  builds the adapter for its ``None``);
* ``int``: an ``int`` (not ``bool``) as is; a string of 1–18 ASCII digits with an optional ``-`` by ``int``;
* ``float``: a ``float`` as is; a plain ASCII decimal (``-1.5``, ``.5``, ``1e-3``) by ``float`` when finite
  (pydantic and CPython both round a decimal to the nearest double);
* ``Path``: typer's own path checks (:func:`typer._param_types.coerce_cli_path`) on the string, then ``Path``
  (pydantic's conversion of a ``str`` to a ``Path`` is ``Path(value)``);
* ``list[...]``: each item as above, into a list.

Any other value (``"1_000"``, ``" 1 "``, ``"inf"``, ``"0x10"``, a bytes value, a custom parser, bounds, choices)
goes to typer's own converter, which then imports pydantic as before: the values, the errors and their
messages are typer's. With another typer version (its private runtime-parameter API absent or changed),
:func:`install` does nothing. ``tests/cli/test_cli_coercion.py`` compares both converters value by value.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_INT = re.compile(r"-?[0-9]{1,18}", re.ASCII)
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?", re.ASCII)
_NO = object()  # "not decided here": typer's converter takes over


def _leaf(annotation: Any, info: Any) -> Any:
    """A converter ``(value, param, ctx) -> result or _NO`` for one leaf annotation, or ``None`` if not handled."""
    if annotation is str:
        return lambda v, p, c: v if type(v) is str else _NO
    if annotation is bool:
        return lambda v, p, c: v if type(v) is bool else _NO
    if annotation is int:
        return lambda v, p, c: v if type(v) is int else (int(v) if type(v) is str and _INT.fullmatch(v) else _NO)
    if annotation is float:
        def to_float(v: Any, p: Any, c: Any) -> Any:
            if type(v) is float:
                return v
            if type(v) is str and _FLOAT.fullmatch(v):
                x = float(v)
                return x if math.isfinite(x) else _NO
            return _NO

        return to_float
    if annotation is Path and info.path_type is None and not info.allow_dash:
        try:
            from typer._param_types import _coerce_path_result, coerce_cli_path
        except ImportError:  # pragma: no cover - another typer version: its own converter
            return None

        def to_path(v: Any, p: Any, c: Any) -> Any:
            if type(v) is str:  # typer: Path(v) via pydantic, then the checks (they read only str(rv))
                checked: Any = coerce_cli_path(v, info, path_type=None, param=p, ctx=c)
                return _coerce_path_result(checked, Path)
            if isinstance(v, Path):  # typer: no pydantic for a Path
                return coerce_cli_path(v, info, path_type=Path, param=p, ctx=c)
            return _NO

        return to_path
    return None


def _converter(descriptor: Any) -> Any:
    """The fast converter of a typer type descriptor, or ``None`` when typer's own is needed."""
    info = descriptor.parameter_info
    if (descriptor.file_annotation is not None or getattr(info, "parser", None) is not None
            or getattr(info, "click_type", None) is not None or getattr(info, "min", None) is not None
            or getattr(info, "max", None) is not None or descriptor.choices is not None):
        return None
    annotation = descriptor.annotation
    if descriptor.is_list:
        from typing import get_args

        args = get_args(annotation)
        leaf = _leaf(args[0], info) if len(args) == 1 else None
        if leaf is None:
            return None

        def to_list(v: Any, p: Any, c: Any) -> Any:
            items = v if isinstance(v, (list, tuple)) else [v]
            out = [leaf(i, p, c) for i in items]
            return _NO if any(o is _NO for o in out) else out

        return to_list
    return _leaf(annotation, info)


@functools.cache
def _fast_class() -> Any:
    """typer's runtime-parameter class extended with the fast converter (``None`` with another typer version)."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:  # pragma: no cover - another typer version: keep its converters
        return None

    @dataclass(frozen=True)
    class Fast(RuntimeParam):
        """``convert`` first; typer's own converter (pydantic) for the values it leaves."""

        convert: Any
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                out = self.convert(value, param, ctx)
            except (TypeError, AttributeError):  # pragma: no cover - another typer version's helpers: typer decides
                out = _NO
            if out is _NO:
                return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)
            return out

    return Fast


def install(command: Any) -> None:
    """Give every option of ``command`` (recursively) whose values it can convert exactly the fast converter."""
    fast = _fast_class()
    if fast is None:  # pragma: no cover - another typer version
        return
    for sub in getattr(command, "commands", {}).values():
        install(sub)
    for param in [*getattr(command, "params", []), getattr(command, "_help_option", None)]:  # --help: kept aside
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", 0) is not None:
            continue
        try:
            convert = _converter(descriptor)
        except Exception:  # pragma: no cover - another typer version's descriptor: keep its converter
            continue
        if convert is not None:
            param._runtime_param = fast(descriptor.parameter_info, descriptor.annotation, convert, descriptor)
