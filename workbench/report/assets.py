"""The report's static assets, shipped as package data in ``assets/``.

``report.css`` is the page's stylesheet (also inlined in the notebook's header output),
``embed.js`` draws the inlined Vega-Lite specs, ``report.html.j2`` is the nbconvert template
that wraps the exported notebook into one self-contained page.
"""

from __future__ import annotations

from importlib import resources


def read(name: str) -> str:
    """The text of ``assets/name``."""
    return (resources.files(__package__) / "assets" / name).read_text(encoding="utf-8")


CSS = read("report.css")
_EMBED_JS = read("embed.js")
TABLES_JS = read("tables.js")
_TEMPLATE = read("report.html.j2")
