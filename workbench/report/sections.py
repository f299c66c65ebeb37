"""Section headings and the report header (title, gate banner, key findings, contents).
"""

from __future__ import annotations

from pathlib import Path

from workbench.analysis import board as board_mod
from workbench.report.assets import CSS
from workbench.report.formats import _plural, interval, signed
from workbench.report.markup import Html, badge, esc, name_cell, table
from workbench.report.model import SECTIONS, VERDICT_CLASS, Report


def heading(r: Report, key: str) -> Html:
    """A section's numbered heading and its one generated sentence."""
    i, title = next((i, t) for i, (k, t) in enumerate(SECTIONS) if k == key)
    return Html(
        f'<h2 id="{esc(key)}" class="wb-h2"><span class="wb-num">{i + 1}</span>{esc(title)}</h2>'
        f'<p class="wb-lead">{esc(r.leads.get(key, ""))}</p>'
    )


def header(r: Report) -> Html:
    """Title, gate banner, the key findings (each section's sentence) and the contents."""
    doc = r.doc
    rows = r.analysis.rows
    names = [Path(i["path"]).name for i in doc["inputs"]]
    title = names[0] if len(names) == 1 else f"{len(names)} input files"
    counts = []
    for col, word in (("judge", "judge"), ("variant", "variant"), ("scenario", "scenario")):
        if col in rows.columns:
            counts.append(_plural(int(rows[col].drop_nulls().n_unique()), word))
    lo, hi = r.cfg.value_range
    dot = " \u00b7 "
    sub = (
        f"{doc['ledger']['lines']} lines{dot}{dot.join(counts)}{dot}headline {r.headline} "
        f"({doc.get('value_unit', 'rubric points')}, {lo:g} to {hi:g})"
    )
    gate = doc.get("gate") or {}
    if gate.get("passed", True):
        banner = Html(
            f'<div class="wb-banner wb-good"><b>Gate passed.</b> Every pooled {esc(r.headline)} '
            "cell has "
            f"at least {esc(gate.get('min_valid_n'))} valid judgments and "
            f"{esc(gate.get('min_clusters'))} scenarios.</div>"
        )
    else:
        why = "; ".join(f"{f['variant']}: {f['why']}" for f in gate["failing"])
        banner = Html(
            f'<div class="wb-banner wb-bad"><b>Gate failed.</b> {esc(why)}. These cells are shown '
            "but never ranked.</div>"
        )
    notes = _first_screen_notes(r)
    order = ["claims", "published", "census", "scorecard", "offsets", "contrasts", "limits"]
    items = []
    for key in order:
        if key == "claims" and doc.get("claims") is None:
            continue
        if key == "published" and doc.get("published_check") is None:
            continue
        title_k = dict(SECTIONS)[key].split(":")[0]
        items.append(
            f'<li><a href="#{esc(key)}">{esc(title_k)}</a> {esc(r.leads.get(key, ""))}</li>'
        )
    toc = "".join(
        f'<a href="#{esc(k)}"><span>{i + 1}</span> {esc(t.split(":")[0])}</a>'
        for i, (k, t) in enumerate(SECTIONS)
    )
    verdicts = ""
    if doc.get("claims"):
        verdicts = (
            '<div class="wb-verdicts">'
            + "".join(
                f'<div class="wb-verdict-card"><div class="wb-vname">{esc(c["name"])}</div>'
                f'<div class="wb-vnums">claimed <b>{esc(signed(c["claimed"]))}</b> \u2192 '
                "recomputed "
                f"<b>{esc(signed(c['recomputed']))}</b> "
                f"{esc(interval(c['ci_low'], c['ci_high'], sign=True))}</div>"
                f"{badge(c['verdict'].upper(), VERDICT_CLASS.get(c['verdict'], 'neutral'))}"
                f"{' ' + badge('confounded', 'warn') if c.get('confounded') else ''}</div>"
                for c in doc["claims"]
            )
            + "</div>"
        )
    return Html(
        f'<style>{CSS}</style><header class="wb-header"><div class="wb-kicker">workbench '
        "reanalysis report</div>"
        f'<h1>{esc(title)}</h1><p class="wb-sub">{esc(sub)}</p>{banner}{verdicts}{board_html(r)}{notes}'
        f'<section class="wb-findings"><h2>Key findings</h2><ol>{"".join(items)}</ol></section>'
        f'<nav class="wb-toc">{toc}</nav></header>'
    )


def board_html(r: Report) -> str:
    """The board: one row per variant, sorted, the valid-row figure at the decimals its interval
    supports with valid/rows, interval, rank interval, missing share, status, and the harness's
    own figure beside it (results.json ``board``)."""
    boards = r.doc.get("board") or []
    out = []
    for b in boards:
        rows = b.get("rows") or []
        if not rows:
            continue
        harness = b.get("harness_figure")
        swap = any("position_swap_disagreement" in x for x in rows)
        lc = any(x.get("lc_win_rate") is not None for x in rows)
        head = board_mod.columns(b, r.cfg.confidence, "valid / rows")
        body = []
        for x in rows:
            nd = int(x.get("decimals") or 2)
            fig = "-" if x.get("mean") is None else f"{x['mean']:.{nd}f}"
            ci = interval(x.get("ci_low"), x.get("ci_high"), nd)
            kind = {"measured": "good", "insufficient": "warn"}.get(str(x.get("status")), "muted")
            cells: list[object] = [board_mod.rank_text(x, "\u2013"), name_cell(x["variant"]),
                                   Html(f"<b>{esc(fig)}</b> <span class=wb-dim>{esc(ci)}</span>"),
                                   f"{x.get('valid_n')}/{x.get('rows')}", board_mod.missing_text(x),
                                   badge(str(x.get("status") or "-"), kind)]
            if harness:
                text = board_mod.harness_text(x)
                mark = " \u2260" if x.get("harness_differs") else ""
                cells.append(Html(f'<span title="{esc(x.get("harness_why") or "")}">{esc(text + mark)}</span>'))
            if lc:
                v, pub = x.get("lc_win_rate"), x.get("lc_published")
                text = "-" if v is None else f"{v:.2f} {interval(x.get('lc_ci_low'), x.get('lc_ci_high'), 2)}"
                published = "" if pub is None else f" <span class=wb-dim>({pub:.2f})</span>"
                cells.append(Html(f'<span title="{esc(x.get("lc_difficulty") or x.get("lc_why") or "")}">'
                                  f"{esc(text)}</span>{published}"))
            if swap:
                cells.append(_rate(x.get("position_swap_disagreement"), x.get("position_swap_ci_low"),
                                   x.get("position_swap_ci_high")))
            body.append(cells)
        differs = [x for x in rows if x.get("harness_differs")]
        foot = ("sorted by the valid-row figure (measured cells first); the figure at the decimals its "
                "interval supports; rank: the interval of ranks the Holm-adjusted contrasts allow; missing: "
                "judgments with no valid score (absent: planned, no row)")
        if harness:
            foot += (f"; harness: the figure the harness ({b.get('harness_rule')}) itself prints, from every "
                     "row as read (hover for why it differs or is not compared)")
        if differs:
            foot += "; \u2260 differs from the valid-row figure: " + "; ".join(
                f"{x['variant']}: {x.get('harness_why')}" for x in differs[:3])
        if lc:
            foot += ("; LC: AlpacaEval's length-controlled win rate by its GLM (instruction difficulty fitted from "
                     "the given annotations unless --lc-difficulty supplies it), the leaderboard's figure in brackets")
        numeric = [0, 2, 3, 4] + list(range(6, len(head)))
        out.append(f'<section class="wb-board" id="board"><h2>Board: {esc(b["field"])}</h2>'
                   + str(table(head, body, numeric=numeric, caption=foot, cls="wb-board-table",
                               row_attrs=[{"data-variant": x["variant"]} for x in rows]))
                   + "</section>")
    return "".join(out)




def _first_screen_notes(r: Report) -> str:
    """Absent rows, provenance findings and the harness's own figures, on the first screen."""
    doc = r.doc
    out: list[str] = []
    led = doc.get("ledger") or {}
    plan = doc.get("plan") or {}
    absent = led.get("missing_planned")
    if absent:
        src = {"complete": "every observed scenario x variant x trial x judge", "file": "the plan file",
               "tasks": "the harness's task list"}.get(plan.get("mode") or "", "the plan")
        out.append(
            f'<div class="wb-banner wb-warn"><b>Absent rows.</b> {esc(absent)} of '
            f"{esc(plan.get('planned'))} planned judgments ({esc(src)}) have no row in any input. "
            "They count in every cell's rows, bounds and zero-filled figure below; no score is "
            "invented for them.</div>")
    prov = [p for p in doc.get("provenance_checks") or [] if p.get("message")]
    if prov:
        items = "".join(f"<li>{esc(p['message'])}</li>" for p in prov[:5])
        more = f"<li>and {len(prov) - 5} more (results.json provenance_checks)</li>" if len(prov) > 5 else ""
        out.append(f'<div class="wb-banner wb-warn"><b>Provenance.</b> A field disagrees with the '
                   f"file's path:<ul>{items}{more}</ul></div>")
    h = doc.get("harness") or {}
    figs = h.get("figures") or []
    if figs:
        out.append(_harness_pivot(h, figs))
    swaps = h.get("position_swap") or []
    if swaps:
        body = "".join(
            "<tr>" + "".join(f"<td>{esc(x)}</td>" for x in (
                p["variant"], p["judge"], p["items"], p["both_usable"], p["disagree"],
                _rate(p["disagreement_rate"], p["ci_low"], p["ci_high"]), p["one_missing"],
                p["both_missing"], p.get("reruns", "-"),
                "-" if p["absent_items"] is None else p["absent_items"])) + "</tr>"
            for p in swaps)
        out.append(
            '<div class="wb-banner"><b>Position swap.</b> The two games of each item, positions '
            "swapped: how often they name different winners, and the games that are missing. An "
            "item is one key however often it was judged: an identical re-judgment is the same game, "
            "one with another verdict is held out (a conflict), as in the scorecard."
            '<table class="wb-table"><thead><tr><th>variant</th><th>judge</th><th>items</th>'
            "<th>both games</th><th>disagree</th><th>rate [95% CI]</th><th>one missing</th>"
            "<th>both missing</th><th>judged again</th>"
            f"<th>absent items</th></tr></thead><tbody>{body}</tbody></table></div>")
    return "".join(out)


def _harness_pivot(h: dict, figs: list[dict]) -> str:
    """The harness's figures pivoted: one row per (variant, judge), a column per figure, the
    printed values and notes as numbered notes under the table."""
    names = list(dict.fromkeys(str(f["figure"]) for f in figs))
    keys = list(dict.fromkeys((f["variant"], f["judge"]) for f in figs))
    by = {(f["variant"], f["judge"], str(f["figure"])): f for f in figs}
    notes: list[str] = []
    rows = []
    for variant, judge in keys[:200]:
        cells: list[object] = [name_cell(variant), name_cell(judge)]
        for name in names:
            f = by.get((variant, judge, name))
            if f is None:
                cells.append("")
                continue
            text = _fig(f["value"])
            extra = []
            if f.get("note"):
                notes.append(f"{variant} {name}: {f['note']}")
                extra.append(str(len(notes)))
            if "printed" in f:
                notes.append(f"{variant} {name}: printed in the log {_printed(f)}")
                extra.append(str(len(notes)))
            cells.append(Html(esc(text) + (f"<sup>{esc(','.join(extra))}</sup>" if extra else "")))
        rows.append(cells)
    more = f" ({len(keys) - 200} more rows in results.json harness)" if len(keys) > 200 else ""
    foot = "".join(f"<li>{esc(n)}</li>" for n in notes[:40])
    if len(notes) > 40:
        foot += f"<li>and {len(notes) - 40} more notes (results.json harness.figures)</li>"
    return (f'<details class="wb-banner wb-harness"><summary><b>The harness\'s own figures '
            f"({esc(h.get('rule'))}).</b> What the harness itself prints, recomputed from every row "
            f"as read (re-runs included){esc(more)}.</summary>"
            + str(table(["variant", "judge", *names], rows, numeric=range(2, 2 + len(names))))
            + (f'<ol class="wb-notes">{foot}</ol>' if foot else "") + "</details>")


def _fig(v: object) -> str:
    if v is None:
        return "-"
    return str(v) if isinstance(v, int) else f"{v:.10g}"


def _printed(f: dict) -> str:
    if "printed" not in f:
        return ""
    return f"{f['printed']} ({'matches' if f.get('matches') else 'DIFFERS'})"


def _rate(x: float | None, lo: float | None, hi: float | None) -> str:
    if x is None:
        return "-"
    ci = "" if lo is None or hi is None else f" [{100 * lo:.1f}, {100 * hi:.1f}]"
    return f"{100 * x:.1f}%{ci}"
