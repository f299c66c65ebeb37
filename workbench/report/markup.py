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


class Html(str):
    """Trusted HTML: built here from escaped parts. Displays as HTML in Jupyter."""

    def _repr_html_(self) -> str:
        return str(self)


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


