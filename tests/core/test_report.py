"""distpriv.report: Markdown + self-contained HTML reports with embedded PNG figures."""

from __future__ import annotations

import base64
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from distpriv.errors import InvalidParameterError, InvalidTypeError  # noqa: E402
from distpriv.report import (  # noqa: E402
    Figure,
    Section,
    figure_png,
    markdown_to_html,
    render_html,
    render_markdown,
    write_report,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.images: list[str] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        self._in_cell = tag in ("td", "th")

    def handle_data(self, data: str) -> None:
        if self._in_cell and data.strip():
            self.cells.append(data.strip())

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._in_cell = False


def _fig() -> object:
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    return fig


BODY = "Some **bold** text and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2.5 |\n\n- item one\n- item two\n"


def test_figure_png_from_matplotlib_and_bytes() -> None:
    fig = _fig()
    png = figure_png(fig)
    assert png.startswith(PNG_MAGIC)
    assert figure_png(png) == png
    with pytest.raises(InvalidTypeError):
        figure_png(b"not a png")
    with pytest.raises(InvalidTypeError):
        figure_png(42)
    plt.close(fig)


def test_write_report_files_and_embedded_figures(tmp_path) -> None:
    fig = _fig()
    paths = write_report(tmp_path / "r", "My report", [Section("Intro", BODY, ["curve"]), ("Other", "text")],
                         [Figure("curve", fig, "a curve"), Figure("extra", figure_png(fig))])
    plt.close(fig)
    assert paths["markdown"].read_text().startswith("# My report")
    assert (tmp_path / "r" / "figures" / "curve.png").read_bytes().startswith(PNG_MAGIC)
    assert paths["figure:extra"].exists()
    md = paths["markdown"].read_text()
    assert "![curve](figures/curve.png)" in md and "## Figures" in md  # unplaced figure goes to a final section
    html = paths["html"].read_text()
    parser = _Collector()
    parser.feed(html)
    assert parser.tags.count("img") == 2
    for src in parser.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert "figures/" not in html  # self-contained: no links to files
    assert {"a", "b", "1", "2.5"} <= set(parser.cells)


@pytest.mark.parametrize("use_package", [True, False])
def test_markdown_conversion_both_paths(use_package: bool) -> None:
    out = markdown_to_html(BODY + "\n```python\nx = 1 < 2\n```\n", use_package=use_package)
    assert "<strong>bold</strong>" in out
    assert "<code>code</code>" in out
    assert "<table>" in out and "<td>2.5</td>" in out
    assert "<li>item one</li>" in out
    assert "x = 1 &lt; 2" in out


def test_render_functions_and_validation() -> None:
    md = render_markdown("T", {"A": "alpha"})
    assert md == "# T\n\n## A\n\nalpha\n"
    html = render_html("T <x>", {"A": "alpha"}, use_package=False)
    assert "<title>T &lt;x&gt;</title>" in html and "<p>alpha</p>" in html
    with pytest.raises(InvalidParameterError):
        Figure("bad name/..", b"")
    with pytest.raises(InvalidParameterError):
        render_markdown("T", [Section("A", "x", ["missing"])])
    with pytest.raises(InvalidParameterError):
        write_report("/tmp", "T", {"A": "x"}, basename="../evil")
