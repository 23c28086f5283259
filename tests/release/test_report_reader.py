"""Reports a reader trusts (issue 23): plain log ticks, a terminal view without HTML entities, no contradictory or
false sentence, user strings without direction controls, long names that wrap, and report.html checked in a real
browser (headless Chromium): every figure loads, no script or handler, the values table visible at 1280 px."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import matplotlib
import pytest

matplotlib.use("Agg")

from distpriv.accounting.topup import TopUp  # noqa: E402
from distpriv.release import protect  # noqa: E402
from distpriv.release.output import write_release  # noqa: E402
from distpriv.release.public import public_context  # noqa: E402
from distpriv.release.render import release_figures, release_sections  # noqa: E402
from distpriv.report import md_escape, render_markdown, terminal_markdown  # noqa: E402
from test_release import people  # noqa: E402

LONG = "body_mass_" + "g" * 290  # a 300-character column name
BIDI = "mass\u202eg_ydob"  # U+202E RIGHT-TO-LEFT OVERRIDE: reverses what follows in a browser or a terminal
STATS = [f"mean:{LONG}", f"mean:{BIDI}", "count:age>37"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """One release whose names hold a 300-character column, a direction control and '>' / '&'; written once."""
    def frame(n: int, seed: int, start: int = 0):
        d = people(n, seed, start)
        return d.assign(**{LONG: d["age"] * 2.0, BIDI: d["age"] + 1.0})

    res = protect(frame(200, 7), stats=STATS, protect="income=>50K", pairs=[(0.45, 0.55)], epsilon=1.0, delta=1e-3,
                  population=frame(1000, 9, 100_000), samples=40, mechanism="expm-laplace", seed=1)
    out = tmp_path_factory.mktemp("report") / "out"
    write_release(res, out, attack_reps=1)
    return res, out


def test_log_axis_ticks_are_plain_text(release) -> None:
    res, _ = release
    ctx = public_context(res)
    eps = [0.25, 0.5, 1.0, 2.0, 4.0]
    curves = {"epsilon": eps, res.chosen.name: [1000.0 / e for e in eps]}  # spans 250..4000: several decades
    fig = next(f for f in release_figures(ctx, curves, None) if f.name == "error_vs_epsilon").image
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and not any("$" in t or "mathdefault" in t for t in labels), labels
    assert "10³" in labels or "1000" in labels, labels


def test_terminal_markdown_has_no_entities_and_html_stays_escaped(release) -> None:
    res, out = release
    md = render_markdown("distpriv release", release_sections(public_context(res), figures=False))
    term = terminal_markdown(md)
    assert "&gt;" not in term and "&amp;" not in term and "&lt;" not in term
    assert "count:age>37" in term and "Chen & Ohrimenko" in term
    assert "`count:age>37`" in term  # code spans kept as they are
    # the files stay escaped: report.md for any Markdown renderer, report.html as HTML
    assert md_escape("<b>&") == "&lt;b&gt;&amp;"
    html = (out / "report.html").read_text()
    assert "count:age&gt;37" in html and "<b>" not in html
    # a 300-character name is shortened in the terminal table, in full in the files
    rows = [ln for ln in term.splitlines() if ln.startswith("|") and "body" in ln]
    assert rows and all(len(ln) < 400 for ln in rows) and all(LONG not in ln for ln in rows)
    assert LONG.replace("_", "\\_") in (out / "report.md").read_text()


def test_direction_controls_never_reach_a_report(release) -> None:
    res, out = release
    for text in ((out / "report.md").read_text(), (out / "report.html").read_text(),
                 terminal_markdown(render_markdown("r", release_sections(public_context(res), figures=False)))):
        assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", text)
    assert "mass g" in (out / "report.html").read_text()  # the control became a space, the text stays


def test_diagnostics_agree_with_the_assumptions(release) -> None:
    """When the selection says the covariances differ (exact moments), the diagnostics table says so too."""
    res, _ = release
    doc = res.to_json()
    texts = " ".join([*doc["guarantee"]["assumptions"], *(c.get("correction") or "" for c in doc["report"]["candidates"]),
                      *(c.get("reason") or "" for c in doc["report"]["candidates"])])
    body = next(s.body for s in release_sections(public_context(res), figures=False)
                if s.title == "Assumption diagnostics")
    row = next(ln for ln in body.splitlines() if ln.startswith("| equal covariance"))
    # the case: Box's M on the moment-matched samples does not reject, the exact moments differ
    assert "covariances differ across θ" in texts
    assert doc["report"]["diagnostics"]["tests"]["equal_covariance"]["holds"]
    assert row.split("|")[2].strip() == "no" and "covariances differ across θ" in row
    tr = next(ln for ln in body.splitlines() if ln.startswith("| translation"))
    assert tr.split("|")[2].strip() == "no" and "not a translation" in tr


def test_top_up_sentence_is_true() -> None:
    """'gave δ >= 0 > 0.001' was false: a lower bound of 0 refutes nothing; only the upper bound failed."""
    class P:
        def __init__(self, lo: float, hi: float) -> None:
            self.delta_lower, self.delta_upper, self.method = lo, hi, "exact"

        def describe(self) -> str:
            return f"δ ∈ [{self.delta_lower}, {self.delta_upper}]"

    def text(lo: float, hi: float) -> str:
        return TopUp(None, 1.5, 0.0, P(lo, hi), P(0.0, 5e-4), 3).describe(1e-3)  # type: ignore[arg-type]

    assert "could not be proven to meet δ = 0.001 (proven δ <= 0.002)" in text(0.0, 2e-3)
    assert ">= 0 >" not in text(0.0, 2e-3)
    assert "gave δ >= 0.0015 > 0.001" in text(1.5e-3, 2e-3)


# --------------------------------------------------------------------------- the browser
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
          "--window-size=1280,1000"]

# Appended to a COPY of the report (the shipped report holds no script): the checks' results as JSON in a <pre>.
_CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var values = null;
  document.querySelectorAll('h2').forEach(function (h) {
    if (h.textContent.trim() === 'Released statistics') {
      var el = h.nextElementSibling;
      while (el && el.tagName !== 'TABLE') { el = el.nextElementSibling; }
      values = el;
    }
  });
  var cells = values ? Array.prototype.slice.call(values.querySelectorAll('td, th')) : [];
  var handlers = 0;
  document.querySelectorAll('*').forEach(function (e) {
    for (var i = 0; i < e.attributes.length; i++) { if (/^on/i.test(e.attributes[i].name)) { handlers++; } }
  });
  var out = {
    width: window.innerWidth,
    images: imgs.length,
    loaded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
    scripts: document.querySelectorAll('script').length,
    handlers: handlers,
    table: values ? values.getBoundingClientRect().right : -1,
    cells: cells.length,
    cells_inside: cells.filter(function (c) { var r = c.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= window.innerWidth; }).length,
    page: document.documentElement.scrollWidth
  };
  var pre = document.createElement('pre');
  pre.id = 'distpriv-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


class _Active(HTMLParser):
    """Scripts, event handlers and javascript: addresses in an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "iframe", "object", "embed"):
            self.found.append(tag)
        for name, value in attrs:
            if name.lower().startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"{tag}[{name}]")


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("headless Chromium is not installed (`make test` installs Debian's chromium package with "
                    "apt-get when run as root)")
    return exe


def _run(exe: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="distpriv-chromium-") as profile:
        return subprocess.run([exe, *_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                              timeout=180)


@pytest.mark.slow
def test_report_html_in_headless_chromium(release, tmp_path) -> None:
    exe = _chromium()
    _, out = release
    page = (out / "report.html").read_text()
    active = _Active()
    active.feed(page)
    assert active.found == [], active.found  # the shipped report: no script, no handler
    check = tmp_path / "check.html"
    check.write_text(page.replace("</body>", _CHECK + "\n</body>"), encoding="utf-8")
    res = _run(exe, "--virtual-time-budget=10000", "--dump-dom", check.as_uri())
    m = re.search(r'<pre id="distpriv-check">(.*?)</pre>', res.stdout)
    assert m is not None, res.stderr[-2000:]
    got = json.loads(m.group(1).replace("&quot;", '"'))
    assert got["width"] == 1280
    assert got["images"] == 3 and got["loaded"] == got["images"]  # f_θ, error vs ε, attacks: all decoded
    assert got["scripts"] == 1 and got["handlers"] == 0  # only the check injected into the copy
    assert got["cells"] > 0 and got["cells_inside"] == got["cells"], got  # every value cell on screen
    assert 0 < got["table"] <= 1280 and got["page"] <= 1280, got  # no horizontal scrolling
    shot = tmp_path / "report.png"  # kept in the test's temp folder (a CI artefact)
    _run(exe, f"--screenshot={shot}", (out / "report.html").as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(shot.read_bytes()[16:20], "big") == 1280  # IHDR width
