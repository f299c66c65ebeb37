"""Figures: matplotlib for the static files, altair where hovering helps.

Every function takes plain records (the lists of dicts in ``results.json``) and returns a
figure or chart; none computes a statistic. Matplotlib figures are built on
:class:`matplotlib.figure.Figure` directly (no pyplot state, so a notebook never shows them
twice) and saved by :func:`save`, which writes byte-identical PNG and SVG files for identical
input: fixed sizes, a fixed SVG hash salt, no dates, text as paths in the bundled font.

Non-measured scorecard cells are drawn grey, hollow and unranked everywhere; the text of any
label comes from the input, so it is passed through :func:`label` (matplotlib would otherwise
read ``$...$`` as math).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from workbench.common.text import safe

#: Colours, one meaning each across every figure.
VALID = "#1f5fa8"  # valid mean and its interval
ZERO = "#c0392b"  # zero-filled (the silent-zero reducer) / published value
BOUNDS = "#b9c4d0"  # range if the missing rows were anywhere in the rubric
MUTED = "#9a9a9a"  # non-measured cells
PAIRED = "#2e8b57"  # paired estimates
TEXT = "#222222"

STYLE: dict[str, Any] = {
    "svg.hashsalt": "workbench-report",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "axes.labelsize": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#888888",
    "xtick.color": "#444444",
    "ytick.color": "#444444",
    "legend.frameon": False,
    "legend.fontsize": 8.0,
    "path.simplify": False,
}

STATUS_TEXT = {
    "measured": "measured",
    "insufficient": "INSUFFICIENT",
    "not_measured": "NOT MEASURED",
}


@contextmanager
def style() -> Iterator[None]:
    """The report's matplotlib settings, applied while a figure is built or saved."""
    with matplotlib.rc_context(STYLE):
        yield


def label(text: Any) -> str:
    """Input text made safe for a matplotlib label (``$`` would start math mode)."""
    return str(text).replace("$", r"\$")


def _num(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


#: PNG resolution: twice CSS pixels (96 per inch), sharp on high-density screens.
DPI = 192


def save(fig: Figure, folder: str | Path, name: str, dpi: int = DPI) -> dict[str, Path]:
    """Write ``folder/name.png`` and ``folder/name.svg``; returns both paths.

    Deterministic: the SVG carries no date and a fixed hash salt; the PNG no software tag.
    """
    from workbench.common.outdir import guard_write

    out = Path(folder)
    guard_write(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"png": out / f"{name}.png", "svg": out / f"{name}.svg"}
    with style():
        for kind, path in paths.items():
            guard_write(path)
            # written beside and moved into place: a link made at the name is replaced, never followed
            tmp = path.with_name(f".wb-tmp-{os.getpid()}-{path.name}")
            try:
                if kind == "png":
                    fig.savefig(tmp, dpi=dpi, metadata={"Software": None}, format="png")
                else:
                    fig.savefig(tmp, metadata={"Date": None, "Creator": None}, format="svg")
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
    return paths


def _empty(message: str, size: tuple[float, float] = (7.0, 1.2)) -> Figure:
    with style():
        fig = Figure(figsize=size, layout="constrained")
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, message, ha="center", va="center", color=MUTED)
    return fig


# --------------------------------------------------------------------------- census heatmap


def missing_heatmap(
    census: Sequence[dict[str, Any]], margins: Sequence[dict[str, Any]] = (), field: str = "overall"
) -> Figure:
    """Judge x variant heatmap of the missing rate, ``rate`` and ``missing/judgments`` in cells.

    ``census`` is ``results.json``'s census (one record per judge x variant); ``margins`` adds
    an "all variants" column and an "all judges" row. Cells with no judgments are hatched.
    """
    judges = sorted({str(c["judge"]) for c in census})
    variants = sorted({str(c["variant"]) for c in census})
    if not judges or not variants:
        return _empty("no judgments to count")
    cells = {(str(c["judge"]), str(c["variant"])): c for c in census}
    for m in margins:
        j = "all judges" if m["judge"] is None else str(m["judge"])
        v = "all variants" if m["variant"] is None else str(m["variant"])
        cells[(j, v)] = m
    has_margins = bool(margins)
    cols = variants + (["all variants"] if has_margins else [])
    rows = judges + (["all judges"] if has_margins else [])
    rates = [c["missing_rate"] for c in cells.values() if c.get("missing_rate") is not None]
    vmax = max(0.5, max(rates, default=0.0))
    cmap = matplotlib.colormaps["OrRd"]
    width = 2.2 + 1.05 * len(cols)
    height = 1.5 + 0.62 * len(rows)
    with style():
        fig = Figure(figsize=(width, height), layout="constrained")
        ax = fig.add_subplot()
        for yi, j in enumerate(rows):
            for xi, v in enumerate(cols):
                c = cells.get((j, v))
                x0 = xi + (0.12 if v == "all variants" else 0.0)
                y0 = yi + (0.12 if j == "all judges" else 0.0)
                if c is None or not c.get("judgments"):
                    ax.add_patch(
                        matplotlib.patches.Rectangle(
                            (x0, y0),
                            0.96,
                            0.94,
                            facecolor="#f2f2f2",
                            hatch="///",
                            edgecolor="#cccccc",
                            lw=0,
                        )
                    )
                    ax.text(
                        x0 + 0.48,
                        y0 + 0.47,
                        "no rows",
                        ha="center",
                        va="center",
                        color=MUTED,
                        fontsize=7.5,
                    )
                    continue
                rate = c["missing_rate"]
                colour = cmap(0.08 + 0.92 * rate / vmax)
                ax.add_patch(
                    matplotlib.patches.Rectangle((x0, y0), 0.96, 0.94, facecolor=colour, lw=0)
                )
                dark = rate / vmax > 0.55
                ax.text(
                    x0 + 0.48,
                    y0 + 0.38,
                    f"{rate:.0%}",
                    ha="center",
                    va="center",
                    fontsize=10,
                    fontweight="bold",
                    color="white" if dark else TEXT,
                )
                ax.text(
                    x0 + 0.48,
                    y0 + 0.68,
                    f"{c['missing']}/{c['judgments']}",
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    color="white" if dark else "#444444",
                )
        ax.set_xlim(-0.05, len(cols) + (0.17 if has_margins else 0.0))
        ax.set_ylim(len(rows) + (0.17 if has_margins else 0.0), -0.05)
        ax.set_xticks(
            [i + 0.48 + (0.12 if v == "all variants" else 0) for i, v in enumerate(cols)],
            [label(v) for v in cols],
            rotation=30,
            ha="right",
        )
        ax.set_yticks(
            [i + 0.47 + (0.12 if j == "all judges" else 0) for i, j in enumerate(rows)],
            [label(j) for j in rows],
        )
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_title(
            f"Judgments with no valid {label(field)}: rate and missing/judgments", loc="left"
        )
        sm = matplotlib.cm.ScalarMappable(norm=matplotlib.colors.Normalize(0, vmax), cmap=cmap)
        bar = fig.colorbar(
            sm, ax=ax, shrink=0.8, pad=0.02, format=matplotlib.ticker.PercentFormatter(1.0)
        )
        bar.outline.set_visible(False)
    return fig


# --------------------------------------------------------------------------- scorecard forest


def scorecard_order(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Measured cells by mean (highest first), then every other cell by name, unranked."""
    measured = sorted(
        (c for c in cells if c["status"] == "measured"),
        key=lambda c: (-c["mean"], str(c["variant"])),
    )
    others = sorted(
        (c for c in cells if c["status"] != "measured"), key=lambda c: str(c["variant"])
    )
    return measured + others


def _rank_labels(ranks: dict[str, Any] | None) -> dict[str, str]:
    """variant -> ``"2"`` or ``"1\u20133"`` for measured cells (results.json ``ranks``)."""
    from workbench.analysis.ranks import by_variant, rank_label

    return {v: rank_label(c, "\u2013") for v, c in by_variant(ranks).items() if c.get("rank_low") is not None}


def scorecard_forest(
    cells: Sequence[dict[str, Any]],
    field: str = "overall",
    confidence: float = 0.95,
    value_range: tuple[float, float] | None = None,
    ranks: dict[str, Any] | None = None,
) -> Figure:
    """Forest plot of pooled scorecard cells: valid mean with its interval per variant.

    Beside each mean: the zero-filled value (red x) and the range the mean could take if the
    missing rows were anywhere in the rubric (grey band). With ``ranks`` (results.json
    ``ranks``) a measured cell's label carries its rank or rank interval (``1-3.``, not
    distinguishable); others are grey, hollow, labelled with their status and never ranked.
    """
    rank_of = _rank_labels(ranks)
    order = scorecard_order(cells)
    if not order:
        return _empty("no scorecard cells")
    n = len(order)
    with style():
        fig = Figure(figsize=(8.6, 1.5 + 0.46 * n), layout="constrained")
        ax = fig.add_subplot()
        ticks = []
        xs: list[float] = []
        for y, c in enumerate(order):
            measured = c["status"] == "measured"
            colour = VALID if measured else MUTED
            if c.get("lower_bound") is not None:
                ax.plot(
                    [c["lower_bound"], c["upper_bound"]],
                    [y, y],
                    color=BOUNDS,
                    lw=7,
                    alpha=0.55,
                    solid_capstyle="butt",
                    zorder=1,
                )
                xs += [c["lower_bound"], c["upper_bound"]]
            if c.get("ci_low") is not None:
                ax.plot([c["ci_low"], c["ci_high"]], [y, y], color=colour, lw=1.8, zorder=2)
                ax.plot([c["ci_low"]] * 2, [y - 0.12, y + 0.12], color=colour, lw=1.2, zorder=2)
                ax.plot([c["ci_high"]] * 2, [y - 0.12, y + 0.12], color=colour, lw=1.2, zorder=2)
                xs += [c["ci_low"], c["ci_high"]]
            if c.get("mean") is not None:
                ax.plot(
                    [c["mean"]],
                    [y],
                    "o",
                    ms=7,
                    color=colour,
                    mfc=colour if measured else "white",
                    mew=1.6,
                    zorder=3,
                )
                xs.append(c["mean"])
            if c.get("zero_filled_mean") is not None:
                ax.plot(
                    [c["zero_filled_mean"]], [y + 0.28], "x", ms=6, color=ZERO, mew=1.6, zorder=3
                )
                xs.append(c["zero_filled_mean"])
            if measured:
                prefix = rank_of.get(str(c["variant"]))
                ticks.append(f"{prefix}. {label(c['variant'])}" if prefix else label(c["variant"]))
            else:
                ticks.append(
                    f"{label(c['variant'])}  ({STATUS_TEXT.get(c['status'], c['status'])})"
                )
            ax.text(
                1.01,
                y,
                f"{_num(c.get('mean'))} ({c['valid_n']}/{c['rows']})",
                transform=ax.get_yaxis_transform(),
                va="center",
                fontsize=8,
                color=TEXT if measured else MUTED,
            )
        ax.set_yticks(range(n), ticks)
        for tick, c in zip(ax.get_yticklabels(), order, strict=True):
            if c["status"] != "measured":
                tick.set_color(MUTED)
                tick.set_fontstyle("italic")
        lo = min(xs) if xs else 0.0
        hi = max(xs) if xs else 1.0
        if value_range is not None:
            lo, hi = max(lo, value_range[0] - 0.5), min(hi, value_range[1] + 0.5)
        pad = 0.04 * (hi - lo or 1.0)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(n - 0.4, -0.6)
        ax.grid(axis="x", color="#e5e5e5", lw=0.8)
        ax.set_axisbelow(True)
        ax.tick_params(axis="y", length=0)
        ax.set_xlabel(f"{label(field)} (valid rows only)")
        ax.set_title(
            f"{label(field)}: valid mean with {confidence:.0%} clustered interval, judges pooled",
            loc="left",
        )
        handles = [
            matplotlib.lines.Line2D(
                [], [], color=VALID, marker="o", lw=1.8, label=f"valid mean, {confidence:.0%} CI"
            ),
            matplotlib.lines.Line2D(
                [], [], color=ZERO, marker="x", lw=0, mew=1.6, label="zero-filled (missing = 0)"
            ),
            matplotlib.lines.Line2D(
                [], [], color=BOUNDS, lw=7, alpha=0.55, label="if missing were min..max"
            ),
            matplotlib.lines.Line2D(
                [],
                [],
                color=MUTED,
                marker="o",
                mfc="white",
                lw=1.8,
                label="not measured: not ranked",
            ),
        ]
        ax.legend(
            handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.3 / n), ncol=4
        )
    return fig


# --------------------------------------------------------------------------- published dumbbell


def published_dumbbell(cells: Sequence[dict[str, Any]]) -> Figure:
    """From the published value to the recomputed valid mean, one row per published cell.

    ``cells``: records with ``label``, ``field``, ``published``, ``valid_mean``, ``ci_low``,
    ``ci_high``, ``status`` and ``reproduced_by``; one panel per field.
    """
    if not cells:
        return _empty("no published cells")
    fields = list(dict.fromkeys(str(c["field"]) for c in cells))
    panels = [[c for c in cells if str(c["field"]) == f] for f in fields]
    tallest = max(len(p) for p in panels)
    with style():
        fig = Figure(figsize=(4.6 * len(fields) + 1.4, 1.5 + 0.42 * tallest), layout="constrained")
        axes = fig.subplots(1, len(fields), squeeze=False)[0]
        for ax, fld, panel in zip(axes, fields, panels, strict=True):
            for y, c in enumerate(panel):
                measured = c.get("status", "measured") == "measured"
                colour = VALID if measured else MUTED
                if c.get("valid_mean") is not None and c.get("published") is not None:
                    ax.annotate(
                        "",
                        xy=(c["valid_mean"], y),
                        xytext=(c["published"], y),
                        arrowprops={
                            "arrowstyle": "-|>",
                            "color": "#777777",
                            "lw": 1.1,
                            "shrinkA": 4,
                            "shrinkB": 5,
                        },
                    )
                if c.get("ci_low") is not None:
                    ax.plot([c["ci_low"], c["ci_high"]], [y - 0.2, y - 0.2], color=colour, lw=1.4)
                if c.get("published") is not None:
                    ax.plot([c["published"]], [y], "s", ms=6.5, color=ZERO, zorder=3)
                if c.get("valid_mean") is not None:
                    ax.plot(
                        [c["valid_mean"]],
                        [y],
                        "o",
                        ms=7,
                        color=colour,
                        mfc=colour if measured else "white",
                        mew=1.6,
                        zorder=3,
                    )
            ax.set_yticks(range(len(panel)), [label(c["label"]) for c in panel])
            ax.set_ylim(len(panel) - 0.4, -0.6)
            ax.grid(axis="x", color="#e5e5e5", lw=0.8)
            ax.set_axisbelow(True)
            ax.tick_params(axis="y", length=0)
            ax.set_title(f"{label(fld)}: published -> valid mean", loc="left")
        handles = [
            matplotlib.lines.Line2D(
                [], [], color=ZERO, marker="s", lw=0, label="published (as printed)"
            ),
            matplotlib.lines.Line2D(
                [], [], color=VALID, marker="o", lw=1.4, label="valid mean and interval"
            ),
            matplotlib.lines.Line2D(
                [], [], color=MUTED, marker="o", mfc="white", lw=1.4, label="not measured"
            ),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncol=3)
    return fig


# --------------------------------------------------------------------------- judge offsets


def offset_histograms(offsets: Sequence[dict[str, Any]], max_panels: int = 6) -> Figure:
    """Histogram of paired differences (judge a - judge b) per judge pair, from ``diff_counts``."""
    panels = [o for o in offsets if o.get("diff_counts")][:max_panels]
    if not panels:
        return _empty("no items scored by two judges")
    ncol = min(2, len(panels))
    nrow = (len(panels) + ncol - 1) // ncol
    with style():
        fig = Figure(figsize=(4.6 * ncol + 0.6, 2.9 * nrow + 0.3), layout="constrained")
        axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
        for ax, o in zip(axes, panels, strict=False):
            pairs = sorted((float(k), int(v)) for k, v in o["diff_counts"].items())
            xs = [p[0] for p in pairs]
            ys = [p[1] for p in pairs]
            colours = ["#8e9aa6" if x == 0 else (VALID if x < 0 else "#d07c1f") for x in xs]
            width = 0.8 * (
                min(b - a for a, b in zip(xs, xs[1:], strict=False)) if len(xs) > 1 else 1.0
            )
            ax.bar(xs, ys, width=width, color=colours)
            ax.axvline(0, color="#555555", lw=0.8)
            if o.get("mean_diff") is not None:
                ax.axvline(o["mean_diff"], color=ZERO, lw=1.4, ls="--")
            ax.set_xlabel(f"{label(o['judge_a'])} - {label(o['judge_b'])}")
            ax.set_ylabel("items")
            where = "" if o.get("variant") is None else f" ({label(o['variant'])})"
            ax.set_title(
                f"{o['pairs']} shared items{where}, mean {_num(o.get('mean_diff'))}", loc="left"
            )
        for ax in axes[len(panels) :]:
            ax.axis("off")
    return fig


# --------------------------------------------------------------------------- contrasts


def contrasts_plot(
    contrasts: Sequence[dict[str, Any]],
    field: str = "overall",
    target_effect: float | None = None,
    confidence: float = 0.95,
) -> Figure:
    """Variant contrasts a - b: unpaired and paired intervals, with the minimum detectable effect.

    The shaded band around 0 on each row spans +-MDE: a true difference inside it would
    usually have gone undetected. Dashed lines mark +-``target_effect``.
    """
    if not contrasts:
        return _empty("no contrasts")
    n = len(contrasts)
    xs: list[float] = [0.0]
    # a long pair of names goes on two lines (a / - b), so the labels do not push the plot and
    # its title and legend past the figure's right edge
    names = [f"{label(c['a'])} - {label(c['b'])}" for c in contrasts]
    two = any(len(t) > 44 for t in names)
    if two:
        names = [f"{label(c['a'])}\n- {label(c['b'])}" for c in contrasts]
    with style():
        fig = Figure(figsize=(8.6, 1.9 + (0.62 if two else 0.4) * n), layout="constrained")
        ax = fig.add_subplot()
        for y, c in enumerate(contrasts):
            if c.get("mde") is not None:
                ax.add_patch(
                    matplotlib.patches.Rectangle(
                        (-c["mde"], y - 0.36),
                        2 * c["mde"],
                        0.72,
                        facecolor="#eef1f5",
                        lw=0,
                        zorder=0,
                    )
                )
                xs += [-c["mde"], c["mde"]]
            if c.get("ci_low") is not None:
                ax.plot([c["ci_low"], c["ci_high"]], [y - 0.1, y - 0.1], color=VALID, lw=1.8)
                xs += [c["ci_low"], c["ci_high"]]
            if c.get("diff") is not None:
                ax.plot([c["diff"]], [y - 0.1], "o", color=VALID, ms=6)
            if c.get("paired_ci_low") is not None:
                ax.plot(
                    [c["paired_ci_low"], c["paired_ci_high"]],
                    [y + 0.16, y + 0.16],
                    color=PAIRED,
                    lw=1.4,
                )
                xs += [c["paired_ci_low"], c["paired_ci_high"]]
            if c.get("paired_diff") is not None:
                ax.plot([c["paired_diff"]], [y + 0.16], "s", color=PAIRED, ms=5)
        ax.axvline(0, color="#555555", lw=0.9)
        if target_effect:
            for s in (-1, 1):
                ax.axvline(s * target_effect, color="#777777", lw=0.8, ls="--")
        ax.set_yticks(range(n), names)
        ax.set_ylim(n - 0.4, -0.6)
        lo, hi = min(xs), max(xs)
        pad = 0.05 * (hi - lo or 1.0)
        ax.set_xlim(lo - pad, hi + pad)
        ax.grid(axis="x", color="#e5e5e5", lw=0.8)
        ax.set_axisbelow(True)
        ax.tick_params(axis="y", length=0)
        ax.set_xlabel(f"difference in {label(field)} (a - b, valid rows)")
        fig.suptitle(
            f"Variant contrasts on {label(field)}: {confidence:.0%} intervals and detectable "
            "effect",
            x=0.02, ha="left", fontweight="bold",
        )
        handles = [
            matplotlib.lines.Line2D(
                [], [], color=VALID, marker="o", lw=1.8, label="difference of valid means"
            ),
            matplotlib.lines.Line2D(
                [], [], color=PAIRED, marker="s", lw=1.4, label="paired on matched rows"
            ),
            matplotlib.patches.Patch(facecolor="#eef1f5", label="+-MDE (undetectable)"),
        ]
        if target_effect:
            handles.append(
                matplotlib.lines.Line2D(
                    [],
                    [],
                    color="#777777",
                    ls="--",
                    lw=0.8,
                    label=f"+-target effect {target_effect:g}",
                )
            )
        fig.legend(handles=handles, loc="outside lower center", ncol=2)
    return fig


# --------------------------------------------------------------------------- altair


def _alt() -> Any:
    import altair as alt

    return alt


def altair_heatmap(
    census: Sequence[dict[str, Any]], field: str = "overall", margins: Sequence[dict[str, Any]] = ()
) -> Any:
    """Interactive judge x variant missing-rate heatmap with margins (hover: counts, interval)."""
    alt = _alt()
    records = [*census, *margins]
    variant_names = sorted({str(c["variant"]) for c in census})
    judge_names = sorted({str(c["judge"]) for c in census})
    vi = {v: i for i, v in enumerate(variant_names)}
    ji = {j: i for i, j in enumerate(judge_names)}
    data = [
        {
            "judge": "all judges" if c["judge"] is None else safe(c["judge"]),
            "variant": "all variants" if c["variant"] is None else safe(c["variant"]),
            # the axes' order: Vega-Lite turns a sort *list* into an expression holding every
            # name, which a name with U+2028 or U+2029 breaks (the chart is not drawn)
            "ji": len(ji) if c["judge"] is None else ji[str(c["judge"])],
            "vi": len(vi) if c["variant"] is None else vi[str(c["variant"])],
            "missing_rate": c["missing_rate"],
            "missing": c["missing"],
            "judgments": c["judgments"],
            "valid": c["valid"],
            "partial": c["partial"],
            "empty": c["empty"],
            "no_row": c["missing_planned"],
            "label": "-" if c["missing_rate"] is None else f"{c['missing_rate']:.0%}",
            "counts": f"{c['missing']}/{c['judgments']}",
            "interval": (
                "-"
                if c.get("missing_rate_ci_low") is None
                else f"{c['missing_rate_ci_low']:.0%} to {c['missing_rate_ci_high']:.0%}"
            ),
        }
        for c in records
    ]
    variants = variant_names + (["all variants"] if margins else [])
    judges = judge_names + (["all judges"] if margins else [])
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X(
            "variant:N", sort=alt.EncodingSortField(field="vi", op="min"), title=None,
            axis=alt.Axis(labelAngle=-30, orient="bottom"),
        ),
        y=alt.Y("judge:N", sort=alt.EncodingSortField(field="ji", op="min"), title=None,
                axis=alt.Axis(labelLimit=320)),
    )
    rate_max = max([d["missing_rate"] for d in data if d["missing_rate"] is not None] + [0.5])
    rect = base.mark_rect(stroke="white", strokeWidth=3).encode(
        color=alt.Color(
            "missing_rate:Q",
            title="missing",
            scale=alt.Scale(scheme="orangered", domain=[0, rate_max]),
            legend=alt.Legend(format=".0%"),
        ),
        tooltip=[
            alt.Tooltip("judge:N"),
            alt.Tooltip("variant:N"),
            alt.Tooltip("label:N", title=f"no valid {field}"),
            alt.Tooltip("counts:N", title="missing/judgments"),
            alt.Tooltip("interval:N", title="95% Wilson"),
            alt.Tooltip("valid:Q"),
            alt.Tooltip("partial:Q"),
            alt.Tooltip("empty:Q"),
            alt.Tooltip("no_row:Q", title="planned, no row"),
        ],
    )
    dark = alt.datum.missing_rate > 0.55 * rate_max
    text = base.mark_text(fontSize=13, fontWeight="bold", dy=-7).encode(
        text="label:N", color=alt.condition(dark, alt.value("white"), alt.value("#222222"))
    )
    counts = base.mark_text(fontSize=10, dy=9).encode(
        text="counts:N", color=alt.condition(dark, alt.value("white"), alt.value("#444444"))
    )
    return (
        (rect + text + counts)
        .properties(
            width=max(300, 96 * len(variants)),
            height=max(90, 54 * len(judges)),
            title=f"Judgments with no valid {field} (hover a cell for counts)",
        )
        .configure_view(stroke=None)
        .configure_axis(labelFontSize=12)
        .configure_title(fontSize=14)
    )


def altair_scorecard(
    cells: Sequence[dict[str, Any]], field: str = "overall", confidence: float = 0.95,
    ranks: dict[str, Any] | None = None,
) -> Any:
    """Interactive forest plot of the pooled scorecard (hover: valid/rows, CI, zero-filled);
    ``ranks`` as in :func:`scorecard_forest`."""
    alt = _alt()
    order = scorecard_order(cells)
    rank_of = _rank_labels(ranks)
    data = []
    for k, c in enumerate(order):
        measured = c["status"] == "measured"
        prefix = rank_of.get(str(c["variant"]))
        shown = safe(c["variant"])  # a line separator or a bidi control shown escaped
        name = (
            (f"{prefix}. {shown}" if prefix else shown)
            if measured
            else f"{shown} ({STATUS_TEXT.get(c['status'], c['status'])})"
        )
        data.append(
            {
                "row": name,
                "order": k,
                "variant": shown,
                "status": c["status"],
                "kind": "measured" if measured else "not measured (not ranked)",
                "mean": c["mean"],
                "ci_low": c["ci_low"],
                "ci_high": c["ci_high"],
                "zero_filled": c["zero_filled_mean"],
                "lower_bound": c["lower_bound"],
                "upper_bound": c["upper_bound"],
                "valid": f"{c['valid_n']}/{c['rows']}",
                "scenarios": c["clusters"],
                "interval": "-"
                if c["ci_low"] is None
                else f"[{c['ci_low']:.2f}, {c['ci_high']:.2f}]",
            }
        )
    # sorted by the row's index, not by a list of the names (see altair_heatmap)
    y = alt.Y("row:N", sort=alt.EncodingSortField(field="order", op="min"), title=None,
              axis=alt.Axis(labelLimit=320))
    colour = alt.Color(
        "kind:N",
        title=None,
        scale=alt.Scale(domain=["measured", "not measured (not ranked)"], range=[VALID, MUTED]),
    )
    tip = [
        alt.Tooltip("variant:N"),
        alt.Tooltip("status:N"),
        alt.Tooltip("mean:Q", format=".2f", title="valid mean"),
        alt.Tooltip("valid:N", title="valid/rows"),
        alt.Tooltip("interval:N", title=f"{confidence:.0%} CI"),
        alt.Tooltip("zero_filled:Q", format=".2f", title="zero-filled"),
        alt.Tooltip("lower_bound:Q", format=".2f", title="if missing = min"),
        alt.Tooltip("upper_bound:Q", format=".2f", title="if missing = max"),
        alt.Tooltip("scenarios:Q"),
    ]
    base = alt.Chart(alt.Data(values=data)).encode(y=y)
    bounds = base.mark_rule(color=BOUNDS, strokeWidth=9, opacity=0.55).encode(
        x=alt.X("lower_bound:Q", title=f"{field} (valid rows only)", scale=alt.Scale(zero=False)),
        x2="upper_bound:Q",
        tooltip=tip,
    )
    ci = base.mark_rule(strokeWidth=2).encode(
        x="ci_low:Q", x2="ci_high:Q", color=colour, tooltip=tip
    )
    point = base.mark_point(size=90, opacity=1, strokeWidth=2).encode(
        x="mean:Q",
        stroke=alt.Stroke(
            "kind:N",
            legend=None,
            scale=alt.Scale(domain=["measured", "not measured (not ranked)"], range=[VALID, MUTED]),
        ),
        tooltip=tip,
        fill=alt.condition(alt.datum.status == "measured", alt.value(VALID), alt.value("white")),
    )
    zero = base.mark_point(
        shape="cross", size=70, color=ZERO, filled=True, yOffset=9, angle=45
    ).encode(x="zero_filled:Q", tooltip=tip)
    return (
        (bounds + ci + point + zero)
        .properties(
            width=640,
            height=max(120, 38 * len(data)),
            title=alt.TitleParams(
                f"{field}: valid mean with {confidence:.0%} interval, judges pooled",
                subtitle=(
                    "red x = zero-filled (missing = 0); grey band = the mean if the missing rows "
                    "were anywhere in the "
                    "rubric; hollow grey = not measured, not ranked"
                ),
            ),
        )
        .configure_view(stroke=None)
        .configure_legend(orient="bottom", labelFontSize=12)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_title(fontSize=14)
    )
