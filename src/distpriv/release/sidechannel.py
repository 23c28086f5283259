"""The audit's side-channel check: do the public outputs reveal θ beyond what may differ?

Two synthetic tables that differ only in θ — the two values θ0, θ1 of the first
pair of Ψ — are built (:func:`synthetic_tables`) and each is released through the
*whole* public path from scratch, as a fresh process:
``python -m distpriv.cli release SYNTHETIC.csv <the audited options> --out DIR --format json`` (the
command is the CLI's, passed in: :func:`side_channel_check`), forked from a server that has only imported
the release's modules (:mod:`.forkserver`: why that is the fresh run from the fork on; about half the CPU
time of a fresh process, issue 26).
Nothing is reused from the prepared private release, so whatever the release code
reads from its input — the true values included — is whatever the synthetic
table holds, and a leak of it shows as a difference between the two runs.

**What is compared** (:func:`compare_runs`). Every public artefact of the two runs:
the exit code, stdout (the JSON payload), the public stderr (every line not
starting with :data:`~distpriv.release.public.CURATOR_PREFIX`), the names of the
public files (everything under ``--out`` but ``private/``, the curator's ledger),
``release.json``, ``report.md``, ``report.html`` and the bytes (hence sizes) of
every other file (the figures). Apart from the documented fields
:data:`~distpriv.release.public.MAY_DIFFER`:

* in JSON, the values at exactly those paths are masked;
* in text (Markdown, HTML, stderr), the *renderings of exactly those values* are
  masked: string values of 8 characters or more (a release id, a time, a display
  string) are replaced where they occur verbatim, HTML- or Markdown-escaped, and
  the numbers inside every string value count as its renderings; the text is then cut into
  number tokens and the rest, the rest must be identical and a number token may
  differ only where the first run's token renders one of its may-differ values
  (``repr``, ``str`` or 3–17 significant digits) and the second run's token one of
  its own. A true value printed anywhere, a figure drawn from it, a warning
  printed only for some values, an extra file: all differ.

Each published value must also lie on its published grid
(``statistics[].grid``, a power of two: value / grid an integer, exactly), in
stdout and in ``release.json`` of every run. Run time is compared over ``runs``
releases of each table, interleaved θ0 θ1 θ1 θ0 θ0 θ1 … so that a change of the
machine's load hits both alike: the check fails when the median over the
interleaved pairs of (t1 − t0) / min(t0, t1), or the relative difference of the
two tables' fastest runs (load only adds time, so the fastest run is the least
disturbed), is at least 20% in either direction (:data:`TIMING_THRESHOLD`,
:func:`timing_difference`; not compared with fewer than :data:`MIN_TIMING_RUNS`
runs).

**With ``--model-from-data``** the fields listed in the payload's
``data_dependent`` depend on the private data by design. JSON differences at
those paths are reported as data-dependent (outside the guarantee), and so is
any remaining difference of the rendered reports, stderr or run time once the
renderings of those fields are masked as well; a JSON difference at a path the
payload does not list, a different set of files, a different exit code or a
value off its grid still fails the check. The list of data-dependent
differences is the one *derived from the diff*: it is what the two runs showed.

**Synthetic tables** (:func:`synthetic_tables`): with ``--population``, n rows
sampled from the population's stratified subsample (public) with ⌊θn⌉ protected
ones; with ``--model``, a table of n rows built from the declared model alone
(:func:`declared_table`: the protected share θ, and columns set so that the
statistics equal a draw from N(μ_θ, Σ_θ)); with ``--model-from-data`` there is
no public input to draw from, so the rows are resampled from the private table
(the synthetic tables live in a private temporary folder, 0700, deleted after).

**Limits.** The check tests the code path on two datasets, not every dataset: a
leak that only fires for values neither table reaches is missed. A timing
dependence below 20% of a run's time, or one smaller than the run-to-run scatter
of a loaded machine, is missed; with 5 interleaved pairs a median of paired
differences tolerates 2 disturbed pairs.
"""

from __future__ import annotations

import copy
import html
import json
import math
import os
import re
import statistics as _stats
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidParameterError
from .forkserver import ForkServer, module_of, start
from .public import CURATOR_PREFIX, MAY_DIFFER

if TYPE_CHECKING:
    import pandas as pd

    from .core import Prepared

#: Releases of each synthetic table (``--side-channel-runs``): the first pair is diffed, all are timed.
DEFAULT_RUNS = 5
#: Fewer runs of each table than this: run time is not compared.
MIN_TIMING_RUNS = 3
#: The median paired relative run-time difference that fails the check.
TIMING_THRESHOLD = 0.2
_MASK = "<may differ>"
_PRIVATE_DIR = "private"
_NUMBER = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_TEXT_SUFFIXES = (".md", ".html", ".htm", ".txt", ".csv", ".svg")
_STREAM_SIDE = 4
#: Strings of at least this length are masked where they occur verbatim (ids, times); shorter ones would also
#: hit unrelated text, and are masked through their number tokens only.
_MIN_LITERAL = 8


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class PublicRun:
    """What one ``distpriv release`` run published: exit code, stdout, public stderr, public files, time."""

    theta: float
    exit_code: int
    stdout: str
    stderr: str
    files: dict[str, bytes]
    seconds: float

    def payload(self, name: str = "stdout") -> Any:
        """The JSON of stdout or of ``release.json`` (``None`` when absent or not JSON)."""
        text = self.stdout if name == "stdout" else self.files.get(name, b"").decode("utf-8", "replace")
        try:
            return json.loads(text)
        except ValueError:
            return None


@dataclass(frozen=True)
class SideChannelResult:
    """Outcome of :func:`side_channel_check` (``differences`` empty: passed)."""

    pair: tuple[float, float]
    differences: tuple[str, ...]
    data_dependent_differences: tuple[str, ...]
    description: str
    runs: int = 1
    compared: tuple[str, ...] = ()
    timing: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "pair": list(self.pair), "differences": list(self.differences),
                "data_dependent_differences": list(self.data_dependent_differences), "runs": self.runs,
                "compared": list(self.compared), "timing": dict(self.timing), "description": self.description}


# --------------------------------------------------------------------------- JSON paths
def json_differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths (``statistics[].value`` style, list indices dropped) where two JSON documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(p)
            else:
                out += json_differences(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path]
        out = []
        for x, y in zip(a, b, strict=True):
            out += json_differences(x, y, f"{path}[]")
        return out
    if type(a) is not type(b) or a != b:
        return [path]
    return []


def _at(doc: Any, parts: list[str]) -> list[Any]:
    """The values at a path (``a.b[].c`` split on dots) of a JSON document (every list element for ``[]``)."""
    if not parts:
        return [doc]
    head, rest = parts[0], parts[1:]
    many = head.endswith("[]")
    key = head[:-2] if many else head
    if not isinstance(doc, dict) or key not in doc:
        return []
    node = doc[key]
    if many:
        return [v for item in (node if isinstance(node, list) else []) for v in _at(item, rest)]
    return _at(node, rest)


def _mask_path(doc: Any, parts: list[str]) -> None:
    if not parts or not isinstance(doc, dict):
        return
    head, rest = parts[0], parts[1:]
    many = head.endswith("[]")
    key = head[:-2] if many else head
    if key not in doc:
        return
    if many and isinstance(doc[key], list):
        if rest:
            for item in doc[key]:
                _mask_path(item, rest)
        else:
            doc[key] = _MASK
    elif rest:
        _mask_path(doc[key], rest)
    else:
        doc[key] = _MASK


def _masked(doc: Any, paths: Sequence[str]) -> Any:
    out = copy.deepcopy(doc)
    for p in paths:
        _mask_path(out, p.split("."))
    return out


def _under(path: str, fields: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f + ".") or path.startswith(f + "[") for f in fields)


# --------------------------------------------------------------------------- text masking
@dataclass(frozen=True)
class _Renderings:
    numbers: frozenset[str]
    strings: tuple[str, ...]
    #: whole passages the report adds only for some values (the interval warnings of
    #: :func:`distpriv.release.render.value_renderings`), in their Markdown and HTML forms: removed, not masked,
    #: since one release may carry such a passage where the other has none
    passages: tuple[str, ...] = ()


def _number_strings(v: float) -> set[str]:
    out = {repr(v), str(v)}
    if isinstance(v, float) and math.isfinite(v):
        out |= {f"{v:.{p}g}" for p in range(3, 18)}
    return out


def _renderings(doc: Any, paths: Sequence[str]) -> _Renderings:
    """The renderings of the values at ``paths`` of a payload (see the module docstring)."""
    numbers: set[str] = set()
    strings: list[str] = []

    def add(v: Any) -> None:
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, (int, float)):
            numbers.update(_number_strings(v))
        elif isinstance(v, str):
            if v.strip():
                strings.append(v)
                numbers.update(_NUMBER.findall(v))
        elif isinstance(v, list):
            for x in v:
                add(x)
        elif isinstance(v, dict):
            for x in v.values():
                add(x)

    if isinstance(doc, dict):
        for p in paths:
            for v in _at(doc, p.split(".")):
                add(v)
    from ..report import md_escape

    forms: set[str] = set()
    for s in strings:
        if len(s) >= _MIN_LITERAL:  # a short string ("45.6") is masked by its number tokens only
            forms |= {s, html.escape(s), html.escape(s, quote=False), md_escape(s), html.escape(md_escape(s))}
    return _Renderings(frozenset(numbers), tuple(sorted(forms, key=len, reverse=True)), _passages(doc, paths))


def _passages(doc: Any, paths: Sequence[str]) -> tuple[str, ...]:
    """The report passages computed from the published values alone (:func:`~distpriv.release.render.
    value_renderings`: each starts with a blank line), as Markdown and as the HTML the report writer makes of them.

    Only when ``statistics[].value`` may differ: these passages are renderings of that field (and of its interval
    and display), never of anything else.
    """
    if not isinstance(doc, dict) or "statistics[].value" not in paths or not isinstance(doc.get("statistics"), list):
        return ()
    from ..report import markdown_to_html
    from .render import value_renderings

    try:
        texts = [t for t in value_renderings(doc) if t.startswith("\n\n")]
    except (KeyError, TypeError, ValueError):  # a payload without the fields (a failed or foreign run)
        return ()
    out: set[str] = set()
    for t in texts:
        out.add(t)
        out.add("\n" + markdown_to_html(t.strip()).strip())
    return tuple(sorted(out, key=len, reverse=True))


def _text_difference(ta: str, tb: str, ra: _Renderings, rb: _Renderings) -> str | None:
    """``None`` when the texts agree up to the renderings of what may differ, else where they first differ."""
    if ta == tb:
        return None
    for s in ra.passages:
        ta = ta.replace(s, "")
    for s in rb.passages:
        tb = tb.replace(s, "")
    for s in ra.strings:
        ta = ta.replace(s, _MASK)
    for s in rb.strings:
        tb = tb.replace(s, _MASK)
    pa, pb = _NUMBER.split(ta), _NUMBER.split(tb)
    if len(pa) != len(pb):
        la, lb = (_NUMBER.sub("#", t).splitlines() for t in (ta, tb))
        k = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), min(len(la), len(lb)))
        x, y = (lines[k][:60] if k < len(lines) else "(end)" for lines in (la, lb))
        return f"line {k + 1}: {x!r} vs {y!r}"
    for i, (x, y) in enumerate(zip(pa, pb, strict=True)):
        if x == y:
            continue
        if i % 2 == 1 and x in ra.numbers and y in rb.numbers:
            continue
        where = "".join(pa[max(0, i - 2):i])[-40:]
        return f"after …{' '.join(where.split())!r}: {x[:30]!r} vs {y[:30]!r}"
    return None


# --------------------------------------------------------------------------- checks
def off_grid(payload: Any) -> list[str]:
    """Statistics whose published value is not an integer multiple of its published grid (a power of two)."""
    out: list[str] = []
    if not isinstance(payload, dict) or not isinstance(payload.get("statistics"), list):
        return ["statistics (missing)"]
    for k, st in enumerate(payload["statistics"]):
        if not isinstance(st, dict):
            out.append(f"statistics[{k}]")
            continue
        grid, value = st.get("grid"), st.get("value")
        if grid is None:  # a noiseless release (Theorem 5.4) publishes F(Data) itself: no grid
            continue
        gs = grid if isinstance(grid, list) else None
        vs = value if isinstance(value, list) else [value]
        for i, v in enumerate(vs):
            g = gs[i] if gs is not None and i < len(gs) else grid
            ok = (isinstance(g, (int, float)) and not isinstance(g, bool) and g > 0 and math.isfinite(g)
                  and math.frexp(float(g))[0] == 0.5 and isinstance(v, (int, float)) and not isinstance(v, bool)
                  and math.isfinite(float(v)) and (float(v) / float(g)).is_integer())
            if not ok:
                out.append(f"statistics[{k}].value" + (f"[{i}]" if isinstance(value, list) else ""))
    return out


def timing_difference(seconds: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Run times (t0, t1) of interleaved pairs compared two ways, each flagged at :data:`TIMING_THRESHOLD`:

    * the median over pairs of (t1 − t0) / min(t0, t1) — pairing cancels load that changes slowly;
    * (min t1 − min t0) / min(min t0, min t1) — the fastest run of each table is the one least slowed by other
      processes (load only ever adds time), so this is the more stable on a loaded machine.
    Not compared with fewer than :data:`MIN_TIMING_RUNS` pairs.
    """
    rel = [(t1 - t0) / max(min(t0, t1), 1e-9) for t0, t1 in seconds]
    med = float(_stats.median(rel)) if rel else 0.0
    m0 = min((t0 for t0, _ in seconds), default=0.0)
    m1 = min((t1 for _, t1 in seconds), default=0.0)
    fastest = (m1 - m0) / max(min(m0, m1), 1e-9) if seconds else 0.0
    compared = len(seconds) >= MIN_TIMING_RUNS
    return {
        "compared": compared,
        "seconds_theta0": [round(t0, 4) for t0, _ in seconds],
        "seconds_theta1": [round(t1, 4) for _, t1 in seconds],
        "median_relative_difference": med,
        "fastest_relative_difference": float(fastest),
        "threshold": TIMING_THRESHOLD,
        "flagged": compared and max(abs(med), abs(fastest)) >= TIMING_THRESHOLD,
    }


def compare_runs(a: PublicRun, b: PublicRun, *, from_data: bool = False) -> tuple[list[str], list[str]]:
    """(differences that fail the check, data-dependent differences) between two runs (module docstring)."""
    fail: list[str] = []
    dd: list[str] = []
    if a.exit_code != b.exit_code:
        fail.append(f"exit code ({a.exit_code} vs {b.exit_code})")
    elif a.exit_code != 0:
        last = (a.stderr.strip().splitlines() or ["no message"])[-1]
        fail.append(f"the synthetic releases failed (exit code {a.exit_code}: {last[:200]})")
    ja, jb = a.payload(), b.payload()
    if ja is None:
        ja = a.payload("release.json")
    if jb is None:
        jb = b.payload("release.json")
    declared = sorted(set(ja.get("data_dependent", []) if isinstance(ja, dict) else [])
                      | set(jb.get("data_dependent", []) if isinstance(jb, dict) else [])) if from_data else []
    may = list(MAY_DIFFER)
    ra, rb = _renderings(ja, may), _renderings(jb, may)
    ra_dd, rb_dd = _renderings(ja, may + declared), _renderings(jb, may + declared)

    def diff_json(name: str, x: Any, y: Any) -> None:
        if x is None or y is None:
            if (x is None) != (y is None) or a.exit_code == 0:
                fail.append(f"{name} (not JSON)")
            return
        for p in json_differences(_masked(x, may), _masked(y, may)):
            (dd if from_data and _under(p, declared) else fail).append(f"{name}: {p}")

    def diff_text(name: str, x: str, y: str) -> None:
        where = _text_difference(x, y, ra, rb)
        if where is None:
            return
        if from_data and _text_difference(x, y, ra_dd, rb_dd) is None:
            dd.append(name)
        else:
            (dd if from_data else fail).append(f"{name} ({where})")

    diff_json("stdout", a.payload(), b.payload())
    diff_text("stderr", a.stderr, b.stderr)
    names_a, names_b = set(a.files), set(b.files)
    if names_a != names_b:
        only_a, only_b = sorted(names_a - names_b), sorted(names_b - names_a)
        fail.append(f"files (only with θ0: {only_a}, only with θ1: {only_b})")
    for name in sorted(names_a & names_b):
        x, y = a.files[name], b.files[name]
        if name.endswith(".json"):
            try:
                diff_json(name, json.loads(x), json.loads(y))
            except ValueError:
                if x != y:
                    fail.append(f"{name} (bytes)")
        elif name.endswith(_TEXT_SUFFIXES):
            diff_text(name, x.decode("utf-8", "replace"), y.decode("utf-8", "replace"))
        elif x != y:
            fail.append(f"{name} (bytes, {len(x)} vs {len(y)})")
    for run in (a, b):
        for src in ("stdout", "release.json"):
            doc = run.payload(src)
            if doc is not None:
                fail += [f"{src}: {p} off its grid (θ = {run.theta})" for p in off_grid(doc)]
    return list(dict.fromkeys(fail)), list(dict.fromkeys(dd))


# --------------------------------------------------------------------------- synthetic tables
def _numeric(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _condition_values(op: str, value: str) -> tuple[Any, Any]:
    """(a value satisfying ``column op value``, one violating it)."""
    v = _numeric(value)
    if v is None:  # a label: only = and != apply
        other = value + "~" if value != "" else "~"
        return (value, other) if op == "=" else (other, value)
    table = {"=": (v, v + 1), "!=": (v + 1, v), ">": (v + 1, v), ">=": (v, v - 1), "<": (v - 1, v),
             "<=": (v, v + 1)}
    return table[op]


def _assign(columns: dict[str, Any], predicate: Any, hit: np.ndarray) -> bool:
    """Set the predicate's columns so that exactly the rows of ``hit`` satisfy it (False if a column is taken)."""
    conds = predicate.conditions
    if any(c.column in columns for c in conds):
        return False
    n = hit.size
    for j, c in enumerate(conds):
        sat, viol = _condition_values(c.op, c.value)
        col = np.empty(n, dtype=object if isinstance(sat, str) else float)
        col[:] = sat
        if j == 0:
            col[~hit] = viol
        columns[c.column] = col
    return True


def declared_table(prep: Prepared, theta: float, rng: np.random.Generator) -> pd.DataFrame:
    """A table built from the declared model alone: ⌊θn⌉ protected rows, statistics equal to a draw x ~ N(μ_θ, Σ_θ).

    n = max(200, 2 × the largest declared count over every θ) (a declared model has no n of its own; both
    tables get the same n). The protected rows satisfy every condition of the predicate, the others fail its
    first one. A count/proportion statistic gets ⌊x⌉ (or ⌊x·n⌉)
    rows satisfying its predicate, a mean (sum) column the values x + e_i (x/n + e_i) with Σ e_i = 0, so the
    statistic equals x; a statistic whose columns the predicate or an earlier statistic already set keeps
    whatever value they give it.
    """
    import pandas as pd

    declared = prep.declared
    assert declared is not None
    model = declared.model
    mean = np.asarray(model.mean(theta), dtype=float)
    cov = np.asarray(model.covariance(theta), dtype=float)
    x = rng.multivariate_normal(mean, cov, method="eigh") if np.any(cov) else mean
    stats = prep.query.statistics
    counts = [abs(float(model.mean(lab)[j])) for lab in model.labels for j, s in enumerate(stats) if s.kind == "count"]
    n = int(max(200, 2 * math.ceil(max(counts, default=0.0))))
    k = int(round(theta * n))
    hit = np.zeros(n, dtype=bool)
    hit[rng.choice(n, size=k, replace=False)] = True
    columns: dict[str, Any] = {}
    _assign(columns, prep.predicate, hit)
    for j, s in enumerate(stats):
        if s.kind in ("count", "proportion"):
            c = int(round(x[j] if s.kind == "count" else x[j] * n))
            rows = np.zeros(n, dtype=bool)
            rows[rng.choice(n, size=min(max(c, 0), n), replace=False)] = True
            _assign(columns, s.predicate, rows)
        elif s.column not in columns:
            target = float(x[j]) if s.kind == "mean" else float(x[j]) / n
            e = rng.normal(0.0, 1.0, n)
            columns[str(s.column)] = target + (e - e.mean())
    return pd.DataFrame(columns)


def _sampled_table(prep: Prepared, theta: float, rng: np.random.Generator) -> pd.DataFrame:
    """n rows with ⌊θn⌉ protected ones from the modelling's stratified subsample (without replacement from a
    population where the subsample suffices, else with replacement)."""
    n = prep.modelling.n
    sub = prep.modelling.subsample
    assert n is not None and sub is not None
    k = int(round(theta * n))
    flags = sub.protected
    pos_rows, neg_rows = np.flatnonzero(flags), np.flatnonzero(~flags)
    with_replacement = prep.population is None or k > pos_rows.size or n - k > neg_rows.size
    pos = rng.choice(pos_rows, size=k, replace=with_replacement)
    neg = rng.choice(neg_rows, size=n - k, replace=with_replacement)
    rows = np.concatenate([pos, neg])
    rng.shuffle(rows)
    return sub.frame.iloc[rows].reset_index(drop=True)


def synthetic_tables(prep: Prepared, rng: np.random.Generator) -> tuple[tuple[float, float], list[pd.DataFrame], str]:
    """((θ0, θ1), the two tables, how they were built): module docstring."""
    a, b = prep.spec.pairs[0]
    if prep.declared is not None:
        tables = [declared_table(prep, t, rng) for t in (a, b)]
        how = "tables built from the declared model alone (statistics drawn from N(μ_θ, Σ_θ))"
    else:
        tables = [_sampled_table(prep, t, rng) for t in (a, b)]
        how = ("n rows sampled from the reference population" if prep.population is not None
               else "n rows resampled from the private table (--model-from-data has no public input to draw from)")
    return (float(a), float(b)), tables, how


# --------------------------------------------------------------------------- runs
def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    """The environment of a synthetic run: the caller's, with this distpriv first on PYTHONPATH."""
    out = dict(os.environ if env is None else env)
    src = str(Path(__file__).resolve().parents[2])
    out["PYTHONPATH"] = os.pathsep.join(p for p in (src, out.get("PYTHONPATH", "")) if p)
    return out


#: The argv of one synthetic release, given the table and the output folder (the CLI's
#: ``distpriv.cli.command.release_command``: the library makes no command line).
ReleaseCommand = Callable[[Path, Path], Sequence[str]]


def _run(theta: float, folder: Path, command: ReleaseCommand, out: str, env: dict[str, str], timeout: float,
         server: ForkServer | None = None, io_dir: Path | None = None) -> PublicRun:
    """One release of ``folder/data.csv`` into ``folder/out``, run in ``folder``: both tables are released under the
    same relative names, so no path tells the runs apart. With ``server``, forked from it
    (:mod:`.forkserver`, its captures in ``io_dir``), else a fresh process."""
    cmd = list(command(Path("data.csv"), Path(out)))
    if server is not None and io_dir is not None:
        code, so, se, seconds = server.run(cmd[3:], folder, io_dir, timeout)
    else:
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, cwd=folder, env=env, timeout=timeout, check=False)
            code, so, se = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, so, se = -9, exc.stdout or b"", (exc.stderr or b"") + f"\ntimed out after {timeout:g} s".encode()
        seconds = time.perf_counter() - t0
    files: dict[str, bytes] = {}
    where = folder / out
    if where.is_dir():
        for p in sorted(where.rglob("*")):
            rel = p.relative_to(where)
            if p.is_file() and rel.parts[0] != _PRIVATE_DIR:
                files[rel.as_posix()] = p.read_bytes()
    return PublicRun(theta, code, so.decode("utf-8", "replace"), public_stderr(se.decode("utf-8", "replace")), files,
                     seconds)


def public_stderr(text: str) -> str:
    """The public lines of a release's stderr: every line not starting with :data:`CURATOR_PREFIX`."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(CURATOR_PREFIX))


def check_runs(runs: Any) -> int:
    """``--side-channel-runs``: an integer >= 1, else a one-line error naming the option."""
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise InvalidParameterError(f"must be an integer >= 1, got {runs!r}", argument="side_channel_runs")
    return int(runs)


def side_channel_check(
    prep: Prepared,
    command: ReleaseCommand,
    *,
    runs: int = DEFAULT_RUNS,
    env: dict[str, str] | None = None,
    timeout: float = 1800.0,
    progress: Callable[[float], None] | None = None,
    fork: bool = True,
) -> SideChannelResult:
    """Release two synthetic tables differing only in θ in fresh processes and diff everything (module docstring).

    ``command``: the argv of one release of the audited settings, given the synthetic table and the output folder
    (both relative to the run's own temporary folder, so paths it holds must be absolute; the CLI passes
    ``distpriv.cli.command.release_command`` of its own options); ``runs``: releases of each table (all timed,
    every interleaved pair diffed); ``env``: of the runs (default: this process's, with this distpriv first on
    ``PYTHONPATH``); ``progress``: called with the fraction of runs done; ``fork``: fork the runs from one
    server that has imported the release's modules (:mod:`.forkserver`; the default where the command is
    ``python -m MODULE …`` and ``os.fork`` exists), else start each as a fresh process.
    """
    n_runs = check_runs(runs)
    from_data = bool(prep.spec.model_from_data)
    (a, b), tables, how = synthetic_tables(prep, prep.stream(_STREAM_SIDE))
    child_env = _child_env(env)
    with tempfile.TemporaryDirectory(prefix="distpriv-audit-") as tmp:
        folders = []
        for i, t in enumerate(tables):
            f = Path(tmp) / f"theta{i}"
            f.mkdir()
            spec = prep.spec  # written as the release will read it (its delimiter, encoding and decimal mark)
            t.to_csv(f / "data.csv", index=False, sep=spec.sep or ",", encoding=spec.encoding or "utf-8",
                     decimal=getattr(spec, "decimal", None) or ".")
            folders.append(f)
        module = module_of(command(Path("data.csv"), Path("out")))
        server = start(module, child_env, Path(tmp) / "server") if module is not None and fork else None
        io_dir = Path(tmp) / "io"
        io_dir.mkdir()

        def all_runs(server: ForkServer | None, tag: str) -> list[tuple[PublicRun, PublicRun]]:
            out: list[tuple[PublicRun, PublicRun]] = []
            done = 0
            for r in range(n_runs):
                order = (0, 1) if r % 2 == 0 else (1, 0)  # θ0 θ1 θ1 θ0 θ0 θ1 …
                got: dict[int, PublicRun] = {}
                for i in order:
                    got[i] = _run((a, b)[i], folders[i], command, f"out{tag}{r}", child_env, timeout, server, io_dir)
                    done += 1
                    if progress is not None:
                        progress(done / (2 * n_runs))
                out.append((got[0], got[1]))
            return out

        used_server = server is not None
        try:
            results = all_runs(server, "")
        except OSError:  # the server stopped: every run again as a fresh process (times stay comparable)
            if server is None:
                raise
            used_server = False
            results = all_runs(None, "fresh")
        finally:
            if server is not None:
                server.close()
    fail: list[str] = []
    dd: list[str] = []
    for ra, rb in results:
        bad, dep = compare_runs(ra, rb, from_data=from_data)
        fail += bad
        dd += dep
    timing = timing_difference([(ra.seconds, rb.seconds) for ra, rb in results])
    forked = " forked from a server that had only imported the release's modules" if used_server else ""
    if timing["flagged"]:
        msg = (f"run time (median paired difference {timing['median_relative_difference']:+.0%}, fastest runs "
               f"{timing['fastest_relative_difference']:+.0%}, over {n_runs} interleaved runs of each table; "
               f"threshold ±{TIMING_THRESHOLD:.0%})")
        (dd if from_data else fail).append(msg)
    compared = ("exit code", "stdout", "public stderr", "file names", "release.json", "report.md", "report.html",
                "figure bytes", "values on their grid") + (("run time",) if timing["compared"] else ())
    desc = (f"Two synthetic tables differing only in θ ({a!r} vs {b!r}; {how}) were each released "
            f"{n_runs} time(s) from scratch, each as a fresh process{forked} (`distpriv release … --out DIR"
            " --format json`); "
            "the check fails if their public outputs — " + ", ".join(compared) + " — differ beyond the fields that "
            "may differ (" + ", ".join(f"`{m}`" for m in MAY_DIFFER) + ")"
            + (" and the fields declared data-dependent (reported, outside the guarantee)" if from_data else "")
            + (f", or if the median paired run time or the fastest runs differ by {TIMING_THRESHOLD:.0%} or more"
               if timing["compared"]
               else f"; run time was not compared (fewer than {MIN_TIMING_RUNS} runs)") + ".")
    return SideChannelResult((a, b), tuple(dict.fromkeys(fail)), tuple(dict.fromkeys(dd)), desc, n_runs, compared,
                             timing)
