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
        f'<h1>{esc(title)}</h1><p class="wb-sub">{esc(sub)}</p>{banner}{verdicts}'
        f'<section class="wb-findings"><h2>Key findings</h2><ol>{"".join(items)}</ol></section>'
        f'<nav class="wb-toc">{toc}</nav></header>'
    )


