"""HTML primitives: trusted :class:`Html` built from escaped parts.

The only way text enters an :class:`Html` is through :func:`esc` (``html.escape``), so a
verdict, variant, judge, file name or reason such as ``<script>alert(1)</script>`` is shown as
text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: the notebook output's copy of a fragment as the report page uses it (class-based styles);
#: ``text/html`` holds the inline-styled copy an untrusted JupyterLab notebook can show
FRAGMENT_MIME = "text/vnd.workbench.fragment+html"


class Html(str):
    """Trusted HTML: built here from escaped parts. Displays as HTML in Jupyter.

    In a notebook the ``text/html`` output is :func:`inline_styles` of it (JupyterLab drops
    ``<style>`` from an untrusted notebook's outputs but keeps safe inline styles, so headings,
    notes and tables still read well); the page itself is built from the class-based copy
    (:data:`FRAGMENT_MIME`)."""

    def _repr_html_(self) -> str:
        return inline_styles(str(self))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": inline_styles(str(self)), FRAGMENT_MIME: str(self)}


#: inline styles by class (light colours: what an untrusted notebook shows without the page's CSS)
_CLASS_STYLES = {
    "wb-h2": "font-size:21px;margin:30px 0 4px;padding-top:10px;border-top:1px solid #e3e7ec;text-align:left",
    "wb-num": "display:inline-block;min-width:30px;color:#5d6570;font-weight:500",
    "wb-lead": "font-size:15px;margin:4px 0 14px;text-align:left",
    "wb-dim": "color:#5d6570",
    "wb-badge": "display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600",
    "wb-banner": "border-radius:6px;padding:10px 14px;margin:10px 0;text-align:left;border:1px solid #e3e7ec",
    "wb-good": "background:#e6f4ec;color:#19703e",
    "wb-warn": "background:#fdf1d8;color:#8a5a00",
    "wb-bad": "background:#fbe6e3;color:#a4281b",
    "wb-neutral": "background:#e9eef4;color:#41556b",
    "wb-muted": "background:#eeeeee;color:#555555",
    "wb-table": "border-collapse:collapse;font-size:13.5px;margin:8px 0 14px",
    "wb-notes": "margin:0;padding-left:16px;font-size:12.5px;color:#4b5560;text-align:left",
    "wb-findings": "border:1px solid #e3e7ec;border-left:4px solid #1f5fa8;border-radius:6px;padding:6px 18px",
}
_TAG_STYLES = {
    "th": "text-align:left;font-weight:600;border-bottom:2px solid #cfd6de;padding:5px 8px;vertical-align:bottom",
    "td": "text-align:left;padding:5px 8px;border-bottom:1px solid #e3e7ec;vertical-align:top",
    "caption": "caption-side:bottom;text-align:left;color:#5d6570;font-size:12.5px;padding-top:4px",
    "p": "text-align:left", "ol": "text-align:left", "ul": "text-align:left", "li": "text-align:left",
    "h1": "text-align:left", "h2": "text-align:left", "summary": "text-align:left;cursor:pointer",
}
_NUM_STYLE = "text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap"
_START_TAG = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)(\s[^<>]*)?>")
_CLASS_ATTR = re.compile(r"""\sclass=(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_STYLE_ATTR = re.compile(r"""\sstyle=(?:"([^"]*)"|'([^']*)')""")


def inline_styles(fragment: str) -> str:
    """``fragment`` with the report's main class rules written as inline ``style`` attributes
    (a tag's own style kept last, so it wins); no tag is added or removed and no text changes."""

    def one(m: re.Match[str]) -> str:
        tag, attrs = m.group(1), m.group(2) or ""
        low = tag.lower()
        if low in ("style", "script", "svg", "path", "g", "img", "a", "br", "meta", "link"):
            return m.group(0)
        cm = _CLASS_ATTR.search(attrs)
        classes = (next(g for g in cm.groups() if g is not None).split() if cm else [])
        parts = [_TAG_STYLES[low]] if low in _TAG_STYLES else []
        parts += [_CLASS_STYLES[c] for c in classes if c in _CLASS_STYLES]
        if low in ("td", "th") and "num" in classes:
            parts.append(_NUM_STYLE)
        if not parts:
            return m.group(0)
        sm = _STYLE_ATTR.search(attrs)
        own = next((g for g in sm.groups() if g is not None), "") if sm else ""
        style = ";".join([*parts, own] if own else parts)
        rest = _STYLE_ATTR.sub("", attrs) if sm else attrs
        slash = "/" if rest.rstrip().endswith("/") else ""
        rest = rest.rstrip().rstrip("/") if slash else rest
        return f'<{tag}{rest} style="{style}"{slash}>'

    # scripts, styles and SVG are left exactly as they are
    pieces = _RAW_BLOCK.split(fragment)
    return "".join(p if i % 2 else _START_TAG.sub(one, p) for i, p in enumerate(pieces))


_RAW_BLOCK = re.compile(r"(<script\b.*?</script>|<style\b.*?</style>|<svg\b.*?</svg>)", re.S | re.I)


def esc(x: Any) -> str:
    """Text from anywhere, escaped for HTML (quotes too); None shows as ``-``."""
    return html.escape("-" if x is None else str(x), quote=True)


def _c(x: Any) -> str:
    """A table cell's content: trusted :class:`Html` as is, anything else escaped."""
    return str(x) if isinstance(x, Html) else esc(x)


def tag(name: str, content: Any = "", cls: str | None = None, **attrs: Any) -> Html:
    """``<name class=..>content</name>``; content escaped unless :class:`Html`."""
    a = "".join(
        f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None
    )
    c = f' class="{esc(cls)}"' if cls else ""
    return Html(f"<{name}{c}{a}>{_c(content)}</{name}>")


def join(parts: Iterable[Any], sep: str = "") -> Html:
    """Concatenate parts (each escaped unless :class:`Html`)."""
    return Html(sep.join(_c(p) for p in parts))


def name_cell(text: Any) -> Html:
    """A name (variant, judge, scenario, path) in a table cell: escaped, with a line-break
    opportunity (``<wbr>``) after each ``_ / :`` and each ``- .`` not before a digit (a
    version such as 2.2.1 stays whole) so a long name wraps at its parts rather
    than widening its column; ``.wb-name`` breaks it anywhere only as a last resort. The text
    (``textContent``, CSV) is unchanged."""
    body = str(text) if isinstance(text, Html) else _WBR.sub(lambda m: m.group(0) + "<wbr>", esc(text))
    return Html(f'<span class="wb-name">{body}</span>')


_WBR = re.compile(r"(?:[_/:]|[.-](?!\d))(?=[^<]{3})")


def badge(text: Any, kind: str = "neutral") -> Html:
    """A small coloured label (``good``, ``warn``, ``bad``, ``neutral``, ``muted``)."""
    return tag("span", text, cls=f"wb-badge wb-{kind}")


def table(
    headers: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    numeric: Iterable[int] = (),
    row_classes: Sequence[str | None] | None = None,
    caption: Any = None,
    cls: str = "",
    row_attrs: Sequence[Mapping[str, Any] | None] | None = None,
    table_attrs: Mapping[str, Any] | None = None,
) -> Html:
    """An HTML table; cells escaped unless :class:`Html`; ``numeric`` columns right-aligned.

    ``row_attrs`` gives each body row extra attributes (values escaped), e.g. the
    ``data-drill`` filter of a drill-down to the rows behind it.
    """
    num = set(numeric)
    head = "".join(
        f'<th scope="col"{" class=num" if i in num else ""}>{_c(h)}</th>' for i, h in enumerate(headers)
    )
    body = []
    for r_i, row in enumerate(rows):
        rc = row_classes[r_i] if row_classes else None
        extra = row_attrs[r_i] if row_attrs else None
        attrs = "".join(f' {k}="{esc(v)}"' for k, v in (extra or {}).items() if v is not None)
        cells = "".join(
            f"<td{' class=num' if i in num else ''}>{_c(v)}</td>" for i, v in enumerate(row)
        )
        body.append(f"<tr{f' class={chr(34)}{esc(rc)}{chr(34)}' if rc else ''}{attrs}>{cells}</tr>")
    cap = f"<caption>{_c(caption)}</caption>" if caption is not None else ""
    t_attrs = "".join(f' {k}="{esc(v)}"' for k, v in (table_attrs or {}).items() if v is not None)
    return Html(
        f'<div class="wb-table-wrap"><table class="wb-table {esc(cls)}"{t_attrs}>{cap}<thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def drill(**values: Any) -> dict[str, str]:
    """``row_attrs`` entry for a drill-down: the rows-appendix columns and values to show."""
    return {"data-drill": json.dumps({k: (None if v is None else str(v)) for k, v in values.items()},
                                     sort_keys=True)}


def details(summary: Any, content: Any, open_: bool = False) -> Html:
    """A collapsible block."""
    return Html(
        f'<details class="wb-details"{" open" if open_ else ""}><summary>{_c(summary)}</summary>'
        f"{_c(content)}</details>"
    )


def para(text: Any, cls: str | None = None) -> Html:
    return tag("p", text, cls=cls)


