"""Every code block in docs/*.md runs: ```python blocks in one namespace per page, ```bash/```console
blocks whose commands start with ``distpriv `` through the console script's entry point
(:func:`distpriv.cli.main`, in-process: a fresh process per command only added its imports, ~3 s CPU each; the
console script itself runs as a subprocess in tests/release/test_release.py), all in a temporary cwd."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import run_in_process

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
PAGES = sorted(DOCS.glob("*.md"))


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in FENCE.finditer(text)]


def shell_commands(code: str) -> list[str]:
    """Commands of a bash/console block: '$ ' prompts stripped, backslash continuations joined;
    in console blocks with prompts, lines without a prompt are output and ignored."""
    lines = code.splitlines()
    prompted = any(line.startswith("$ ") for line in lines)
    cmds: list[str] = []
    buf = ""
    for line in lines:
        if prompted and not line.startswith("$ ") and not buf:
            continue
        line = line[2:] if line.startswith("$ ") else line
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        cmd = (buf + line).strip()
        buf = ""
        if cmd and not cmd.startswith("#"):
            cmds.append(cmd)
    return cmds


def test_pages_exist_and_have_runnable_blocks() -> None:
    names = {p.name for p in PAGES}
    assert {"index.md", "concepts.md", "tutorial-adult.md", "howto-own-data.md", "mechanisms.md", "api.md"} <= names
    nav = (ROOT / "mkdocs.yml").read_text()
    for name in names:
        assert name in nav, f"{name} missing from mkdocs.yml nav"
    runnable = [b for p in PAGES for b in code_blocks(p.read_text()) if b[0] in ("python", "bash", "console")]
    assert len(runnable) >= 10


def test_api_reference_targets_import() -> None:
    targets = re.findall(r"^:::\s*([\w.]+)", (DOCS / "api.md").read_text(), re.M)
    assert "distpriv.calibrate" in targets and "distpriv.release" in targets
    for target in targets:
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            assert obj.__doc__, f"{target} has no docstring"
            break
        else:  # pragma: no cover - failure path
            pytest.fail(f"cannot import {target}")


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "api.md"], ids=lambda p: p.stem)
def test_page_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              request: pytest.FixtureRequest) -> None:
    if page.name == "tutorial-adult.md":
        request.getfixturevalue("adult_files")  # fetched like `make install` does, or skipped saying how
    if page.name == "getting-started.md" and importlib.util.find_spec("palmerpenguins") is None:
        pytest.skip("palmerpenguins (the table of the getting-started page; in the test extra) is not installed")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    ran = 0
    for i, (lang, code) in enumerate(code_blocks(page.read_text())):
        if lang == "python":
            exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)  # noqa: S102
            ran += 1
        elif lang in ("bash", "console"):
            for cmd in shell_commands(code):
                if not cmd.startswith("distpriv "):
                    continue
                res = run_in_process(shlex.split(cmd)[1:], tmp_path)
                assert res.returncode == 0, f"{page.name}: `{cmd}` failed:\n{res.stderr}"
                if "--format json" in cmd:
                    json.loads(res.stdout)
                ran += 1
    assert ran > 0


def test_role_hook_shows_targets_as_code() -> None:
    sys.path.insert(0, str(ROOT / "docs_hooks"))
    try:
        from roles import replace_roles
    finally:
        sys.path.pop(0)
    assert replace_roles("a :class:<code>~distpriv.GaussianModel</code> b") == "a <code>GaussianModel</code> b"
    assert replace_roles(":func:<code>distpriv.calibrate</code>") == "<code>distpriv.calibrate</code>"
    assert replace_roles("<code>a name of :data:`distpriv.MECHANISMS`, ``x``</code>") == (
        "<code>a name of distpriv.MECHANISMS, x</code>")
    assert replace_roles("<p>ratio: 3</p>") == "<p>ratio: 3</p>"


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """The site builds without a warning (mkdocs --strict), and the API page reads as documentation: the
    parameters of calibrate are its own, Examples are code, no Sphinx role is shown literally."""
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed (it is in the test extra: pip install -e '.[test]')")
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "WARNING" not in res.stderr, res.stderr[-3000:]
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert not re.search(r":(class|func|meth|mod|data|attr|exc):", api)
    start = api.index('id="distpriv.calibrate"')
    calibrate = api[start:api.index('class="doc doc-object', start + 10)]
    names = re.findall(r"<b><code>([^<]+)</code></b>", calibrate[calibrate.index("Parameters"):
                                                                 calibrate.index("Returns")])
    assert names == ["name", "model", "pairs", "epsilon", "delta", "calibration", "**options"], names
    example = calibrate[calibrate.index("Examples"):]
    assert "<pre" in example and "<p>&gt;&gt;&gt;" not in example  # Examples rendered as code, not paragraphs
    assert (site / "getting-started" / "index.html").is_file()
