"""Section headings and the report header (title, gate banner, key findings, contents).
"""

from __future__ import annotations

from pathlib import Path

from .assets import CSS
from .formats import _plural, interval, signed
from .markup import Html, badge, esc
from .model import SECTIONS, VERDICT_CLASS, Report


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
        f'<h1>{esc(title)}</h1><p class="wb-sub">{esc(sub)}</p>{banner}{notes}{verdicts}'
        f'<section class="wb-findings"><h2>Key findings</h2><ol>{"".join(items)}</ol></section>'
        f'<nav class="wb-toc">{toc}</nav></header>'
    )




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
            f'<div class="wb-banner wb-bad"><b>Absent rows.</b> {esc(absent)} of '
            f"{esc(plan.get('planned'))} planned judgments ({esc(src)}) have no row in any input. "
            "They count in every cell's rows, bounds and zero-filled figure below; no score is "
            "invented for them.</div>")
    prov = [p for p in doc.get("provenance_checks") or [] if p.get("message")]
    if prov:
        items = "".join(f"<li>{esc(p['message'])}</li>" for p in prov[:5])
        more = f"<li>and {len(prov) - 5} more (results.json provenance_checks)</li>" if len(prov) > 5 else ""
        out.append(f'<div class="wb-banner wb-bad"><b>Provenance.</b> A field disagrees with the '
                   f"file's path:<ul>{items}{more}</ul></div>")
    h = doc.get("harness") or {}
    figs = h.get("figures") or []
    if figs:
        body = "".join(
            "<tr>" + "".join(f"<td>{esc(x)}</td>" for x in (
                f["variant"], f["judge"], f["figure"], _fig(f["value"]), f["n"], _printed(f),
                f.get("note") or "")) + "</tr>"
            for f in figs[:30])
        out.append(
            f'<div class="wb-banner"><b>The harness\'s own rule ({esc(h.get("rule"))}).</b> What '
            "the harness itself prints, recomputed from every row as read (re-runs included), beside "
            "the workbench's valid-row figures below."
            '<table class="wb-table"><thead><tr><th>variant</th><th>judge</th><th>figure</th>'
            "<th>value</th><th>n</th><th>printed in the log</th><th>note</th></tr></thead>"
            f"<tbody>{body}</tbody></table></div>")
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
