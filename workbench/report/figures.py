"""Figures: matplotlib PNG/SVG files shown inline, and interactive Vega-Lite charts.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from workbench.common.errors import WorkbenchError
from workbench.report import plots
from workbench.report.markup import Html, esc
from workbench.report.model import Report
from workbench.report.queries import headline_contrasts, pooled_cells, pooled_offsets
from workbench.report.tables import published_cells


def _img(path: Path, alt: str) -> Html:
    """A PNG inline as a data: URI, at its natural size in CSS pixels (saved at 2x)."""
    raw = path.read_bytes()
    width = int.from_bytes(raw[16:20], "big") * 96 // plots.DPI
    data = base64.b64encode(raw).decode("ascii")
    return Html(
        f'<img class="wb-img" alt="{esc(alt)}" width="{width}" src="data:image/png;base64,{data}">'
    )


FIGURES = {
    "missing_heatmap": "Missing rate per judge x variant",
    "scorecard_forest": "Scorecard forest plot",
    "published_dumbbell": "Published value to valid mean",
    "offset_histograms": "Judge offset histogram",
    "contrasts": "Variant contrasts",
}


def make_figure(r: Report, name: str) -> Any | None:
    """The matplotlib figure ``name`` (see :data:`FIGURES`); None when there is nothing to draw."""
    doc, cfg = r.doc, r.cfg
    hl = r.headline
    if name == "missing_heatmap":
        return plots.missing_heatmap(doc.get("census", []), doc.get("census_margins", []), hl)
    if name == "scorecard_forest":
        return plots.scorecard_forest(pooled_cells(doc), hl, cfg.confidence, cfg.value_range,
                                      doc.get("ranks"))
    if name == "published_dumbbell":
        cells = published_cells(r)
        return plots.published_dumbbell(cells) if cells else None
    if name == "offset_histograms":
        pooled = pooled_offsets(doc)
        return plots.offset_histograms(pooled) if pooled else None
    if name == "contrasts":
        cs = headline_contrasts(doc)
        return plots.contrasts_plot(cs, hl, cfg.target_effect, cfg.confidence) if cs else None
    raise WorkbenchError(f"unknown figure {name!r}; known: {', '.join(FIGURES)}")


def save_figure(r: Report, name: str) -> dict[str, Path] | None:
    """Draw figure ``name`` and write ``figures/name.png`` and ``.svg``; None when not drawn."""
    fig = make_figure(r, name)
    if fig is None:
        return None
    return plots.save(fig, r.figures_dir, name)


def figure(r: Report, name: str) -> Html:
    """Write figure ``name`` to ``figures/`` (PNG and SVG) and show the PNG inline."""
    paths = save_figure(r, name)
    if paths is None:
        return Html("")
    cap = f"figures/{name}.png and .svg"
    return Html(
        f'<figure class="wb-figure">{_img(paths["png"], FIGURES[name])}'
        f"<figcaption>{esc(cap)}</figcaption></figure>"
    )


def chart_spec(r: Report, name: str) -> dict[str, Any]:
    """The Vega-Lite spec of an interactive chart (``missing_heatmap`` or ``scorecard_forest``)."""
    doc, cfg = r.doc, r.cfg
    if name == "missing_heatmap":
        chart = plots.altair_heatmap(
            doc.get("census", []), r.headline, doc.get("census_margins", [])
        )
    elif name == "scorecard_forest":
        chart = plots.altair_scorecard(pooled_cells(doc), r.headline, cfg.confidence,
                                       doc.get("ranks"))
    else:
        raise WorkbenchError(
            f"no interactive chart {name!r}; known: missing_heatmap, scorecard_forest"
        )
    spec: dict[str, Any] = chart.to_dict()
    spec.pop("$schema", None)
    # embed.js: in dark mode these mark colours are drawn lighter (contrast on the dark card)
    spec["usermeta"] = {"wb_dark_colors": DARK_COLORS}
    return spec


#: the charts' mark colours and what embed.js draws instead in dark mode (3:1 or more on the
#: dark card #1c2128; the page's --accent and --bad)
DARK_COLORS = {plots.VALID: "#8ab8f0", plots.ZERO: "#f59b8e"}


def _json_script(obj: Any) -> str:
    """JSON safe inside a <script> element: <, > and & as unicode escapes."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def chart(r: Report, name: str) -> Html:
    """An interactive (hover) altair chart with the matplotlib figure as its static fallback.

    The spec is inlined as JSON; the exported page inlines the Vega bundle once and draws it
    offline. Where scripts do not run (a notebook viewer), the matplotlib PNG shows instead.
    """
    paths = save_figure(r, name)
    fallback = _img(paths["png"], FIGURES[name]) if paths else Html("")
    spec = _json_script(chart_spec(r, name))
    cap = f"hover for details \u00b7 static copy: figures/{name}.png and .svg"
    return Html(
        f'<figure class="wb-figure wb-vega" id="chart-{esc(name)}">'
        f'<script type="application/json" class="wb-vega-spec">{spec}</script>'
        f'<div class="wb-vega-target"></div><div class="wb-fallback">{fallback}</div>'
        f"<figcaption>{esc(cap)}</figcaption></figure>"
    )


