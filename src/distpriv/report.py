"""Markdown and self-contained HTML reports with embedded figures.

A report is a title, a list of :class:`Section` s (Markdown bodies) and named
figures (matplotlib figures or PNG bytes). :func:`write_report` writes

* ``<basename>.md`` — the Markdown text, figures referenced as ``figures/<name>.png``
  (written next to it);
* ``<basename>.html`` — one self-contained HTML file: the same text converted to
  HTML with every figure embedded as a base64 ``data:image/png`` URI, so it can
  be mailed or archived alone.

Markdown is converted with the ``markdown`` package (``tables`` and
``fenced_code`` extensions) when it is installed, otherwise with a small
built-in converter that covers what the reports use: headings, paragraphs,
lists, pipe tables, fenced code, inline code, bold, italics and links.

User-supplied strings (column names, category values, statistic names,
predicates, file names) must never be interpreted: callers pass them through
:func:`md_escape` (plain text) or :func:`md_code` (a code span), and the HTML
conversion itself is safe on any input — raw HTML in the Markdown is escaped,
not passed through, and links or images whose address is not ``http(s)``,
relative, an anchor or an embedded PNG are dropped (so ``javascript:`` never
reaches an ``href``).

Used by ``distpriv release`` / ``distpriv audit`` and by the demo workflow.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidParameterError, InvalidTypeError

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]~!{}#])")
#: Control characters, line/paragraph separators and the Unicode direction controls (U+061C, U+200E/F,
#: U+202A–U+202E, U+2066–U+2069) and zero-width marks that could reorder or hide what follows them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_SAFE_URL = re.compile(r"^(https?://|#|data:image/png;base64,|(?![A-Za-z][A-Za-z0-9+.-]*:)[^\s]*$)", re.I)


def clean_text(text: object) -> str:
    """``text`` with control characters, line breaks and Unicode direction controls (U+202E …) replaced by
    spaces: a user string can neither break a line nor reverse the text after it."""
    return _CONTROL.sub(" ", str(text))


def md_escape(text: object) -> str:
    """``text`` as plain Markdown text: shown literally in report.md and report.html.

    Line breaks, control characters and direction controls become spaces (:func:`clean_text`: a user
    string cannot start a heading, list or table row, nor reverse the text after it); ``&``, ``<`` and
    ``>`` become HTML entities (no raw HTML; :func:`terminal_markdown` shows them plainly on a terminal);
    the Markdown punctuation ``\\ ` * _ [ ] | ~ ! { } #`` is backslash-escaped (no emphasis, link,
    image, code span or table cell break).
    """
    t = clean_text(text)
    t = t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", t)


def md_code(text: object) -> str:
    """``text`` as a Markdown code span, whatever backticks it contains (its content is never interpreted)."""
    t = clean_text(text)
    if "|" in t:  # a pipe would end a table cell even inside a code span; show it as escaped text
        return md_escape(t)
    runs = [len(r) for r in re.findall(r"`+", t)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or not t.strip() else ""
    return f"{fence}{pad}{t}{pad}{fence}"


_ENTITY = re.compile(r"&(lt|gt|amp);")
_BACKSLASHED = re.compile(r"\\([\\`*_\[\]~!{}#])")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&"}


def _plain(part: str) -> str:
    """Undo :func:`md_escape` outside code spans: entities and backslash escapes (``\\|`` stays: table cells)."""
    return _ENTITY.sub(lambda m: _ENTITIES[m.group(1)], _BACKSLASHED.sub(r"\1", part))


def terminal_markdown(text: str, *, cell_width: int = 80) -> str:
    """A report's Markdown as a person reads it on a terminal: no HTML entities (``count:age>37``,
    ``Chen & Ohrimenko``), no backslash escapes outside code spans, and table cells longer than
    ``cell_width`` characters shortened in the middle (``abc…xyz``) so a long name cannot push the
    values off-screen. For display only: files keep :func:`md_escape`'s escaped text (report.md
    is safe for any Markdown renderer; report.html is escaped HTML).
    """
    out = []
    for line in text.splitlines():
        parts, pos = [], 0
        for m in _CODE_SPAN.finditer(line):
            parts.append(_plain(line[pos:m.start()]))
            parts.append(m.group(0))
            pos = m.end()
        parts.append(_plain(line[pos:]))
        plain = "".join(parts)
        if plain.startswith("|") and len(plain) > cell_width:
            cells = re.split(r"(?<!\\)\|", plain.strip().strip("|"))
            short = [c if len(c.strip()) <= cell_width else
                     f" {c.strip()[: cell_width // 2 - 1]}…{c.strip()[-(cell_width // 2 - 1):]} " for c in cells]
            plain = "|" + "|".join(short) + "|"
        out.append(plain)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def safe_url(url: str) -> bool:
    """True for ``http(s)``, anchors, relative paths and embedded PNG images (no ``javascript:`` etc.)."""
    return bool(_SAFE_URL.match(url.strip()))

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;
padding:0 1em;line-height:1.5;color:#1f2328;overflow-wrap:break-word}p,li,code{overflow-wrap:anywhere}
h1,h2,h3{line-height:1.25}h1{border-bottom:1px solid #d0d7de;padding-bottom:.3em}
table{border-collapse:collapse;margin:1em 0;font-size:.92em;max-width:100%}th,td{border:1px solid #d0d7de;
padding:.3em .6em;text-align:left;overflow-wrap:anywhere;word-break:break-word}td code{word-break:break-all}th{background:#f6f8fa}code{background:#f6f8fa;padding:.1em .3em;border-radius:4px;font-size:.9em}
pre{background:#f6f8fa;padding:.8em;overflow:auto;border-radius:6px}pre code{background:none;padding:0}
figure{margin:1.5em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#57606a;font-size:.9em}
""".strip()


@dataclass
class Figure:
    """A named figure: a matplotlib ``Figure`` or PNG bytes, with a caption.

    ``name`` becomes the file name ``figures/<name>.png`` and must consist of
    letters, digits, ``_``, ``-`` and ``.`` only.
    """

    name: str
    image: Any
    caption: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise InvalidParameterError(
                f"figure name: must match [A-Za-z0-9_.-]+, got {self.name!r}"
            )


@dataclass
class Section:
    """A report section: a heading, a Markdown body and the figures shown after the body."""

    title: str
    body: str = ""
    figures: Sequence[str] = field(default_factory=tuple)


def figure_png(image: Any, *, dpi: int = 110) -> bytes:
    """PNG bytes of a matplotlib figure (rendered with the Agg backend) or of PNG bytes as given."""
    if isinstance(image, (bytes, bytearray)):
        data = bytes(image)
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            raise InvalidTypeError("figure: bytes given are not a PNG image")
        return data
    if hasattr(image, "savefig"):
        buf = io.BytesIO()
        image.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        return buf.getvalue()
    raise InvalidTypeError(f"figure: expected a matplotlib Figure or PNG bytes, got {type(image).__name__}")


def _as_sections(sections: Sequence[Section | tuple[str, str]] | Mapping[str, str]) -> list[Section]:
    if isinstance(sections, Mapping):
        return [Section(str(k), str(v)) for k, v in sections.items()]
    out: list[Section] = []
    for s in sections:
        if isinstance(s, Section):
            out.append(s)
        elif isinstance(s, tuple) and len(s) == 2:
            out.append(Section(str(s[0]), str(s[1])))
        else:
            raise InvalidTypeError("sections: expected Section objects or (title, markdown) tuples")
    return out


def _as_figures(figures: Sequence[Figure] | Mapping[str, Any] | None) -> dict[str, Figure]:
    if figures is None:
        return {}
    items = [Figure(k, v) for k, v in figures.items()] if isinstance(figures, Mapping) else list(figures)
    out: dict[str, Figure] = {}
    for f in items:
        if not isinstance(f, Figure):
            raise InvalidTypeError("figures: expected Figure objects or a {name: figure} mapping")
        if f.name in out:
            raise InvalidParameterError(f"figures: duplicate figure name {f.name!r}")
        out[f.name] = f
    return out


def _placement(sections: list[Section], figures: dict[str, Figure]) -> list[tuple[Section, list[Figure]]]:
    """Figures listed by a section go after its body; the others go into a final 'Figures' section."""
    used: set[str] = set()
    placed: list[tuple[Section, list[Figure]]] = []
    for s in sections:
        figs = []
        for name in s.figures:
            if name not in figures:
                raise InvalidParameterError(f"section {s.title!r}: unknown figure {name!r}")
            figs.append(figures[name])
            used.add(name)
        placed.append((s, figs))
    rest = [f for k, f in figures.items() if k not in used]
    if rest:
        placed.append((Section("Figures"), rest))
    return placed


def render_markdown(
    title: str,
    sections: Sequence[Section | tuple[str, str]] | Mapping[str, str],
    figures: Sequence[Figure] | Mapping[str, Any] | None = None,
    *,
    figure_dir: str = "figures",
) -> str:
    """The Markdown text of a report; figures are linked as ``<figure_dir>/<name>.png``."""
    secs = _as_sections(sections)
    figs = _as_figures(figures)
    lines = [f"# {clean_text(title)}", ""]
    for s, fs in _placement(secs, figs):
        lines += [f"## {clean_text(s.title)}", ""]
        if s.body.strip():
            lines += [s.body.strip(), ""]
        for f in fs:
            lines += [f"![{f.name}]({figure_dir}/{f.name}.png)", ""]
            if f.caption:
                lines += [f"*Figure: {clean_text(f.caption)}*", ""]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- Markdown -> HTML
_ESCAPABLE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>])")
_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(.+?)(?<!`)\1(?!`)")


def _escape_html(text: str) -> str:
    """HTML-escape, keeping well-formed entities (``&amp;``, ``&#39;``) as they are."""
    t = re.sub(r"&(?!#?[A-Za-z0-9]+;)", "&amp;", text)
    return t.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _link(match: re.Match[str], image: bool) -> str:
    label, url = match.group(1), match.group(2)
    if not safe_url(html.unescape(url)):
        return label
    return f'<img alt="{label}" src="{url}">' if image else f'<a href="{url}">{label}</a>'


def _inline(text: str) -> str:
    """Inline Markdown (code spans, backslash escapes, bold, italics, links) of one line, HTML-escaped."""
    out = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_inline_text(text[pos:m.start()]))
        out.append(f"<code>{html.escape(m.group(2).strip() if m.group(2).strip() else m.group(2))}</code>")
        pos = m.end()
    out.append(_inline_text(text[pos:]))
    return "".join(out)


def _inline_text(part: str) -> str:
    escaped: list[str] = []

    def stash(m: re.Match[str]) -> str:
        escaped.append(m.group(1))
        return f"\x00{len(escaped) - 1}\x00"

    t = _escape_html(_ESCAPABLE.sub(stash, part))
    t = re.sub(r"!\[([^\]]*)\]\(([^)\s]+)\)", lambda m: _link(m, True), t)
    t = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: _link(m, False), t)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    t = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", t)
    t = re.sub(r"(?<![\w_])_(?!\s)(.+?)(?<!\s)_(?![\w_])", r"<em>\1</em>", t)
    return re.sub("\x00(\\d+)\x00", lambda m: html.escape(escaped[int(m.group(1))]), t)


def _table_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", s)]


def _basic_markdown(text: str) -> str:
    """A minimal Markdown converter (used when the ``markdown`` package is missing)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + _inline(" ".join(p.strip() for p in para)) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            lang = stripped[3:].strip()
            i += 1
            code: list[str] = []
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            cls = f' class="language-{html.escape(lang)}"' if lang else ""
            out.append(f"<pre><code{cls}>" + html.escape("\n".join(code)) + "</code></pre>")
            i += 1
            continue
        m = re.match(r"^(#{1,6})\s+(.*)$", stripped)
        if m:
            flush()
            k = len(m.group(1))
            out.append(f"<h{k}>{_inline(m.group(2).strip())}</h{k}>")
            i += 1
            continue
        if stripped.startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|?\s*:?-{3,}", lines[i + 1]):
            flush()
            head = _table_row(stripped)
            i += 2
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_table_row(lines[i]))
                i += 1
            out.append("<table>\n<thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in head) + "</tr></thead>\n<tbody>")
            for r in rows:
                out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>")
            out.append("</tbody>\n</table>")
            continue
        if re.match(r"^([-*]|\d+\.)\s+", stripped):
            flush()
            ordered = bool(re.match(r"^\d+\.", stripped))
            tag = "ol" if ordered else "ul"
            out.append(f"<{tag}>")
            while i < len(lines) and re.match(r"^\s*([-*]|\d+\.)\s+", lines[i]):
                item = re.sub(r"^\s*([-*]|\d+\.)\s+", "", lines[i])
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() and not re.match(r"^\s*([-*]|\d+\.)\s+", lines[i]):
                    item += " " + lines[i].strip()
                    i += 1
                out.append(f"<li>{_inline(item)}</li>")
            out.append(f"</{tag}>")
            continue
        if not stripped:
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return "\n".join(out)


def markdown_to_html(text: str, *, use_package: bool = True) -> str:
    """Convert Markdown to an HTML fragment (``markdown`` package if available, else the built-in converter)."""
    if use_package:
        try:
            import markdown as md
        except ImportError:  # pragma: no cover - depends on the environment
            pass
        else:
            return _safe_markdown(md, text)
    return _basic_markdown(text)


def _safe_markdown(md: Any, text: str) -> str:
    """Python-Markdown with raw HTML escaped (not passed through) and unsafe link/image addresses dropped."""
    conv = md.Markdown(extensions=["tables", "fenced_code"])
    conv.preprocessors.deregister("html_block")
    conv.inlinePatterns.deregister("html")
    from markdown.treeprocessors import Treeprocessor

    class _Urls(Treeprocessor):
        def run(self, root: Any) -> None:
            for el in root.iter():
                for attr in ("href", "src"):
                    v = el.get(attr)
                    if v is not None and not safe_url(v):
                        del el.attrib[attr]

    conv.treeprocessors.register(_Urls(conv), "safe_urls", 0)
    return str(conv.convert(text))


def render_html(
    title: str,
    sections: Sequence[Section | tuple[str, str]] | Mapping[str, str],
    figures: Sequence[Figure] | Mapping[str, Any] | None = None,
    *,
    use_package: bool = True,
) -> str:
    """A self-contained HTML page: the report's Markdown as HTML, figures embedded as base64 PNG."""
    secs = _as_sections(sections)
    figs = _as_figures(figures)
    body = [f"<h1>{html.escape(clean_text(title))}</h1>"]
    for s, fs in _placement(secs, figs):
        body.append(f"<h2>{html.escape(clean_text(s.title))}</h2>")
        if s.body.strip():
            body.append(markdown_to_html(s.body, use_package=use_package))
        for f in fs:
            b64 = base64.b64encode(figure_png(f.image)).decode("ascii")
            alt = html.escape(clean_text(f.caption or f.name))
            cap = f"<figcaption>{html.escape(clean_text(f.caption))}</figcaption>" if f.caption else ""
            body.append(f'<figure id="fig-{f.name}"><img alt="{alt}" src="data:image/png;base64,{b64}">{cap}</figure>')
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{html.escape(clean_text(title))}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def write_report(
    out_dir: str | Path,
    title: str,
    sections: Sequence[Section | tuple[str, str]] | Mapping[str, str],
    figures: Sequence[Figure] | Mapping[str, Any] | None = None,
    *,
    basename: str = "report",
    use_package: bool = True,
) -> dict[str, Path]:
    """Write ``<basename>.md``, ``<basename>.html`` and ``figures/<name>.png`` into ``out_dir``.

    Parameters
    ----------
    out_dir:
        Directory (created if missing).
    title:
        Report title (the ``#`` heading).
    sections:
        :class:`Section` objects, ``(title, markdown)`` tuples or a ``{title: markdown}`` dict.
    figures:
        :class:`Figure` objects or a ``{name: figure}`` dict of matplotlib figures / PNG bytes.
        Figures named by a section's ``figures`` follow its body, the rest close the report.

    Returns
    -------
    dict
        ``{"markdown": md_path, "html": html_path, "figure:<name>": png_path, ...}``.
    """
    if not isinstance(basename, str) or not _NAME_RE.match(basename):
        raise InvalidParameterError(f"basename: must match [A-Za-z0-9_.-]+, got {basename!r}")
    out = Path(out_dir)
    figs = {k: Figure(f.name, figure_png(f.image), f.caption) for k, f in _as_figures(figures).items()}
    secs = _as_sections(sections)
    md_text = render_markdown(title, secs, list(figs.values()))
    html_text = render_html(title, secs, list(figs.values()), use_package=use_package)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    if figs:
        fig_dir = out / "figures"
        fig_dir.mkdir(exist_ok=True)
        for name, f in figs.items():
            p = fig_dir / f"{name}.png"
            p.write_bytes(figure_png(f.image))
            paths[f"figure:{name}"] = p
    md_path = out / f"{basename}.md"
    md_path.write_text(md_text, encoding="utf-8")
    html_path = out / f"{basename}.html"
    html_path.write_text(html_text, encoding="utf-8")
    paths["markdown"] = md_path
    paths["html"] = html_path
    return paths
