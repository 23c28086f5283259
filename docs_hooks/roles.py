"""mkdocs hook: Sphinx cross-reference roles in docstrings (``:class:`~distpriv.GaussianModel```) shown as code.

mkdocstrings renders docstrings as Markdown, where a Sphinx role would appear literally
(``:class:<code>~distpriv.GaussianModel</code>``). This hook rewrites the rendered HTML: the role
disappears, the target stays in a code span (``~`` keeps the last component, as Sphinx does).
"""

from __future__ import annotations

import re
from typing import Any

_ROLES = r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|ref|term):"
_ROLE = re.compile(_ROLES + r"<code>(~?)([^<]*)</code>")
# inside a code span (a one-line "name: text" attribute that mkdocstrings shows as its type): the raw role
_RAW_ROLE = re.compile(_ROLES + r"`(~?)([^`]*)`")
_CODE = re.compile(r"<code>([^<]*)</code>")


def _target(match: re.Match[str]) -> str:
    tilde, target = match.group(1), match.group(2)
    shown = target.rsplit(".", 1)[-1] if tilde else target
    return f"<code>{shown}</code>"


def _raw(match: re.Match[str]) -> str:
    tilde, target = match.group(1), match.group(2)
    return target.rsplit(".", 1)[-1] if tilde else target


def _in_code(match: re.Match[str]) -> str:
    return "<code>" + _RAW_ROLE.sub(_raw, match.group(1)).replace("``", "") + "</code>"


def replace_roles(html: str) -> str:
    """The HTML with every ``:role:<code>target</code>`` replaced by ``<code>target</code>``, and roles and
    reST double backticks removed inside code spans."""
    return _CODE.sub(_in_code, _ROLE.sub(_target, html))


def on_page_content(html: str, **kwargs: Any) -> str:
    """mkdocs event: applied to every page's HTML after Markdown (and mkdocstrings) conversion."""
    return replace_roles(html)
