"""The report: display tables, generated sentences, provenance and the papermill render.

The notebook (``notebooks/reanalysis.ipynb``) only calls the functions here and displays
what they return; this module never computes a statistic either: every number comes from
the results document of :func:`workbench.pipeline.run` (``Analysis.doc``), and the one test
this module calls (Fisher's exact test for confounded contrasts) lives in
:mod:`workbench.stats`.

Safety by construction: every display function returns :class:`Html`, and the only way text
enters it is through :func:`esc` (``html.escape``), so a verdict, variant, judge, file name
or reason such as ``<script>alert(1)</script>`` is shown as text. Offline by construction:
figures are embedded as ``data:`` PNGs, Vega-Lite specs are inlined as JSON, the Vega
bundle comes from ``vl-convert-python`` and is inlined once, and the page template has no
``<script src>``, ``<link>`` or ``@import``; :func:`external_references` checks the page
after export and :func:`render` refuses to write one that has any.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import html
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from . import config as config_mod
from . import plots, results, stats
from .errors import WorkbenchError
from .terminal import cell_text

#: Sections in report order: (anchor, title).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("provenance", "Provenance"),
    ("ledger", "Ledger: every line accounted for"),
    ("census", "Null census"),
    ("scorecard", "Scorecard"),
    ("published", "Published vs recomputed"),
    ("offsets", "Judge offsets"),
    ("contrasts", "Variant contrasts"),
    ("claims", "Claims"),
    ("limits", "Limits"),
    ("rows", "Appendix: the rows"),
)

#: Packages whose versions the provenance section lists.
VERSIONED = (
    "workbench",
    "polars",
    "numpy",
    "scipy",
    "statsmodels",
    "krippendorff",
    "pandas",
    "pyarrow",
    "msgspec",
    "matplotlib",
    "altair",
    "vl-convert-python",
    "papermill",
    "nbconvert",
    "ipykernel",
)

BUCKET_MEANING = {
    "blank": "empty line; not a judgment",
    "valid": "headline score present and usable: the only rows that enter a mean",
    "partial": "row present, headline score absent or null (other fields present)",
    "empty": "only the key fields: no score at all",
    "non_numeric": "headline is text that is not a number (e.g. '8/10')",
    "out_of_range": "headline is a number outside the rubric",
    "invalid_number": "headline is NaN or Infinity",
    "malformed": "not a usable JSON object (truncated, not JSON, keys missing); keys untrusted",
    "duplicate": "exact repeat of an earlier row; counted once",
    "conflict": "same key as another row with different content; every copy held out",
    "missing_planned": "planned judgment with no row in any input (beside the lines)",
}

VERDICT_CLASS = {
    "holds": "good",
    "shrinks": "warn",
    "tie": "bad",
    "reverses": "bad",
    "insufficient": "muted",
}
STATUS_CLASS = {"measured": "good", "insufficient": "warn", "not_measured": "muted"}
ROWS_LISTED = 1000


# --------------------------------------------------------------------------- HTML primitives


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
) -> Html:
    """An HTML table; cells escaped unless :class:`Html`; ``numeric`` columns right-aligned."""
    num = set(numeric)
    head = "".join(
        f"<th{' class=num' if i in num else ''}>{_c(h)}</th>" for i, h in enumerate(headers)
    )
    body = []
    for r_i, row in enumerate(rows):
        rc = row_classes[r_i] if row_classes else None
        cells = "".join(
            f"<td{' class=num' if i in num else ''}>{_c(v)}</td>" for i, v in enumerate(row)
        )
        body.append(f"<tr{f' class={chr(34)}{esc(rc)}{chr(34)}' if rc else ''}>{cells}</tr>")
    cap = f"<caption>{_c(caption)}</caption>" if caption is not None else ""
    return Html(
        f'<div class="wb-table-wrap"><table class="wb-table {esc(cls)}">{cap}<thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def details(summary: Any, content: Any, open_: bool = False) -> Html:
    """A collapsible block."""
    return Html(
        f'<details class="wb-details"{" open" if open_ else ""}><summary>{_c(summary)}</summary>'
        f"{_c(content)}</details>"
    )


def para(text: Any, cls: str | None = None) -> Html:
    return tag("p", text, cls=cls)


# --------------------------------------------------------------------------- number formats


def num(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def signed(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:+.{nd}f}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def pval(p: float | None) -> str:
    if p is None:
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.2g}"


def p_is(p: float | None) -> str:
    """``p = 0.02`` or ``p < 0.001``."""
    text = pval(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def interval(lo: float | None, hi: float | None, nd: int = 2, sign: bool = False) -> str:
    if lo is None or hi is None:
        return "[no interval]"
    f = signed if sign else num
    return f"[{f(lo, nd)}, {f(hi, nd)}]"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _series(items: Sequence[str], limit: int = 4) -> str:
    items = list(items)
    if len(items) > limit:
        items = items[:limit] + [f"{len(items) - limit} more"]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --------------------------------------------------------------------------- the report object


@dataclass
class Report:
    """One analysis with what the report needs beside it (parameters, output folder, command)."""

    analysis: Any
    parameters: dict[str, Any]
    out_dir: Path
    command_line: str
    leads: dict[str, str] = field(default_factory=dict)

    @property
    def doc(self) -> dict[str, Any]:
        return self.analysis.doc  # type: ignore[no-any-return]

    @property
    def cfg(self) -> config_mod.Config:
        return self.analysis.config  # type: ignore[no-any-return]

    @property
    def headline(self) -> str:
        return str(self.doc["config"]["headline"])

    @property
    def figures_dir(self) -> Path:
        return self.out_dir / "figures"


def overrides(
    params: Sequence[Sequence[str]] = (),
    min_valid_n: int | None = None,
    min_clusters: int | None = None,
    seed: int | None = None,
    resamples: int | None = None,
    confidence: float | None = None,
    subsets: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Config overrides exactly as the CLI builds them (``-p NAME VALUE`` pairs, then flags)."""
    from . import cli

    ns = argparse.Namespace(
        param=[(str(p[0]), str(p[1])) for p in params],
        min_valid_n=min_valid_n,
        min_clusters=min_clusters,
        seed=seed,
        resamples=resamples,
    )
    over = cli.overrides_from_args(ns)
    if confidence is not None:
        over["confidence"] = confidence
    if subsets is not None:
        over["subsets"] = dict(subsets)
    return over


def build(
    inputs: Sequence[str] | str,
    config: str | None = None,
    preset: str | None = None,
    plan: str | None = None,
    published: str | None = None,
    claims: str | None = None,
    params: Sequence[Sequence[str]] = (),
    min_valid_n: int | None = None,
    min_clusters: int | None = None,
    confidence: float | None = None,
    resamples: int | None = None,
    seed: int | None = None,
    subsets: Mapping[str, Any] | None = None,
    out_dir: str = "report",
    command_line: str | None = None,
) -> Report:
    """Run the analysis (:func:`workbench.pipeline.run`) the way ``workbench report`` does.

    The parameters are the notebook's ``parameters`` cell; the config is built by the same
    code as the CLI's, so a notebook run and ``workbench analyze`` with the same flags write the
    same results document.
    """
    from . import pipeline

    paths = [inputs] if isinstance(inputs, str) else [str(p) for p in inputs]
    if not paths:
        raise WorkbenchError("no inputs given: set `inputs` in the parameters cell")
    over = overrides(params, min_valid_n, min_clusters, seed, resamples, confidence, subsets)
    cfg = config_mod.load_config(config, preset, over or None)
    analysis = pipeline.run(paths, cfg, plan=plan, published=published, claims=claims)
    given = {
        "inputs": paths,
        "config": config,
        "preset": preset,
        "plan": plan,
        "published": published,
        "claims": claims,
        "params": [list(p) for p in params],
        "min_valid_n": min_valid_n,
        "min_clusters": min_clusters,
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "subsets": dict(subsets) if subsets is not None else None,
        "out_dir": out_dir,
    }
    cmd = command_line or command_for(given)
    rep = Report(analysis=analysis, parameters=given, out_dir=Path(out_dir), command_line=cmd)
    rep.leads = leads(rep)
    return rep


def command_for(p: Mapping[str, Any]) -> str:
    """The ``workbench report`` command that reproduces a parameter set."""
    argv = ["workbench", "report", *p["inputs"], "--out", str(p.get("out_dir") or "report")]
    for flag in ("config", "preset", "plan", "published", "claims"):
        if p.get(flag) is not None:
            argv += [f"--{flag}", str(p[flag])]
    for flag, key in (
        ("--min-valid-n", "min_valid_n"),
        ("--min-clusters", "min_clusters"),
        ("--seed", "seed"),
        ("--resamples", "resamples"),
    ):
        if p.get(key) is not None:
            argv += [flag, str(p[key])]
    for name, value in p.get("params") or ():
        argv += ["-p", str(name), str(value)]
    if p.get("confidence") is not None:
        argv += ["-p", "confidence", str(p["confidence"])]
    if p.get("subsets") is not None:
        argv += ["-p", "subsets", json.dumps(p["subsets"], sort_keys=True)]
    return shlex.join(argv)


# --------------------------------------------------------------------------- selections


def pooled_cells(
    doc: Mapping[str, Any], fld: str | None = None, subset: str | None = None
) -> list[dict[str, Any]]:
    """Scorecard cells with judges pooled, for one field (the headline by default) and subset."""
    f = fld or doc["config"]["headline"]
    return [
        c
        for c in doc.get("scorecard", [])
        if c["judge"] is None and c["subset"] == subset and c["field"] == f
    ]


def _margin(
    doc: Mapping[str, Any], judge: Any = None, variant: Any = None, kind: str = "total"
) -> list[dict[str, Any]]:
    out = []
    for m in doc.get("census_margins", []):
        if kind == "total" and m["judge"] is None and m["variant"] is None:
            out.append(m)
        elif kind == "judge" and m["judge"] is not None and m["variant"] is None:
            out.append(m)
        elif kind == "variant" and m["variant"] is not None and m["judge"] is None:
            out.append(m)
    return out


def _cell_key(c: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    return (c["variant"], c.get("judge"), c.get("subset"), c["field"])


def _cell_label(c: Mapping[str, Any]) -> str:
    parts = [str(c["variant"])]
    if c.get("judge") is not None:
        parts.append(f"judge {c['judge']}")
    if c.get("subset") is not None:
        parts.append(f"{c['subset']} subset")
    return ", ".join(parts)


def headline_contrasts(doc: Mapping[str, Any], subset: str | None = None) -> list[dict[str, Any]]:
    hl = doc["config"]["headline"]
    return [
        c
        for c in doc.get("contrasts", [])
        if c["field"] == hl and c["subset"] == subset and c.get("judge") is None
    ]


def pooled_offsets(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [o for o in doc.get("judge_offsets", []) if o["variant"] is None and o["subset"] is None]


def contrast_verdict(c: Mapping[str, Any], alpha: float, target: float | None) -> tuple[str, str]:
    """``(label, kind)`` for a contrast: which side is higher, or a tie (underpowered or not).

    A side is called higher when the clustered interval excludes 0 and the Holm-adjusted p is
    below ``alpha``; an interval that excludes 0 without surviving Holm is said so.
    """
    lo, hi = c.get("ci_low"), c.get("ci_high")
    if lo is None or hi is None:
        return "no interval", "muted"
    if lo > 0 or hi < 0:
        winner = c["a"] if lo > 0 else c["b"]
        p = c.get("p_holm")
        if p is not None and p < alpha:
            return f"{winner} higher", "good"
        return f"{winner} higher before Holm only", "warn"
    mde = c.get("mde")
    if target is not None and mde is not None and mde > target:
        return "tie (underpowered)", "neutral"
    return "tie", "neutral"


# --------------------------------------------------------------------------- lead sentences


def leads(r: Report) -> dict[str, str]:
    """One generated sentence per section saying what it found."""
    return {
        "provenance": _lead_provenance(r),
        "ledger": _lead_ledger(r),
        "census": _lead_census(r),
        "scorecard": _lead_scorecard(r),
        "published": _lead_published(r),
        "offsets": _lead_offsets(r),
        "contrasts": _lead_contrasts(r),
        "claims": _lead_claims(r),
        "limits": _lead_limits(r),
        "rows": _lead_rows(r),
    }


def _points(r: Report) -> str:
    return "percentage points" if r.doc.get("value_unit") == "percent" else "points"


def _lead_provenance(r: Report) -> str:
    ins = r.doc["inputs"]
    lines = sum(i["lines"] for i in ins)
    first = ins[0]["sha256"][:12] if ins else "-"
    files = (
        f"{Path(ins[0]['path']).name} ({lines} lines, sha256 {first}...)"
        if len(ins) == 1
        else f"{len(ins)} input files ({lines} lines)"
    )
    extra = [
        name
        for name, flag in (
            ("a plan", "plan"),
            ("a published card", "published"),
            ("claims", "claims"),
        )
        if r.parameters.get(flag) is not None
    ]
    given = f" with {_series(extra)}" if extra else ""
    return (
        f"Computed by workbench {r.doc.get('workbench_version', '?')} from {files}{given}; "
        f"the command below reruns it; results.json has sha256 {results_sha256(r)[:12]}..."
    )


def _lead_ledger(r: Report) -> str:
    led = r.doc["ledger"]
    parts = [
        f"{led[b]} {b.replace('_', ' ')}"
        for b in BUCKET_MEANING
        if b != "missing_planned" and led.get(b)
    ]
    text = f"All {led['lines']} lines are accounted for: {', '.join(parts)}"
    if led.get("missing_planned") is None:
        text += "; no plan was given, so judgments that never produced a row cannot be counted"
    elif led["missing_planned"]:
        text += (
            f"; beside them, {_plural(led['missing_planned'], 'planned judgment')} "
            f"{'has' if led['missing_planned'] == 1 else 'have'} no row at all"
        )
    return text + "."


def _lead_census(r: Report) -> str:
    hl = r.headline
    total = _margin(r.doc)
    if not total or not total[0]["judgments"]:
        return "There are no judgments to count."
    t = total[0]
    rate = pct(t["missing_rate"])
    text = f"{t['missing']} of {t['judgments']} judgments ({rate}) have no valid {hl}"
    if not t["missing"]:
        return f"All {t['judgments']} judgments have a valid {hl}: nothing is missing."
    tests = {m["factor"]: m for m in r.doc.get("missingness_tests", [])}
    alpha = r.cfg.alpha
    for kind in ("judge", "variant"):
        ms = sorted(
            (m for m in _margin(r.doc, kind=kind) if m["missing_rate"] is not None),
            key=lambda m: (m["missing_rate"], str(m[kind])),
        )
        if len(ms) < 2:
            continue
        lo, hi = ms[0], ms[-1]
        test = tests.get(kind)
        p = test["p_value"] if test else None
        ptxt = f" ({test['method'].replace('_', ' ')} {p_is(p)})" if test and p is not None else ""
        if kind == "judge" and len(ms) == 2:
            core = (
                f"judge {hi[kind]} misses {pct(hi['missing_rate'])} vs {pct(lo['missing_rate'])} "
                f"for {lo[kind]}"
            )
        else:
            core = (
                f"by {kind} the rate runs from {pct(lo['missing_rate'])} ({lo[kind]}) to "
                f"{pct(hi['missing_rate'])} ({hi[kind]})"
            )
        if p is not None and p >= alpha:
            core += f", a spread the test does not distinguish from chance{ptxt}"
        else:
            core += ptxt
        text += "; " + core
    return text + "."


def _lead_scorecard(r: Report) -> str:
    hl = r.headline
    cells = pooled_cells(r.doc)
    if not cells:
        return "No scorecard cells: no variant has rows."
    order = plots.scorecard_order(cells)
    measured = [c for c in order if c["status"] == "measured"]
    if measured:
        top, bottom = measured[0], measured[-1]
        text = (
            f"On valid rows only, {hl} runs from {num(bottom['mean'])} ({bottom['variant']}, "
            f"{bottom['valid_n']}/{bottom['rows']} valid) to {num(top['mean'])} ({top['variant']}, "
            f"{top['valid_n']}/{top['rows']})"
        )
        if len(measured) == 1:
            text = f"On valid rows only, {hl} is {num(top['mean'])} for {top['variant']}"
    else:
        text = f"No pooled {hl} cell reaches the preregistered minimum"
    text += (
        f"; {len(measured)} of {len(cells)} pooled cells are measured (at least "
        f"{r.cfg.min_valid_n} valid "
        f"and {r.cfg.min_clusters} scenarios)"
    )
    others = [c for c in order if c["status"] != "measured"]
    if others:
        text += (
            "; "
            + _series([f"{c['variant']} ({c['valid_n']}/{c['rows']} valid)" for c in others])
            + (" is" if len(others) == 1 else " are")
            + " not ranked"
        )
    diffs = [c["zero_filled_diff"] for c in cells if c.get("zero_filled_diff") is not None]
    if diffs and max(abs(d) for d in diffs) > 0:
        text += (
            f". Averaging missing scores as 0 would lower the means by up to "
            f"{num(max(-d for d in diffs))} {_points(r)}"
        )
    return text + "."


def _lead_published(r: Report) -> str:
    checks = r.doc.get("published_check")
    if checks is None:
        return "No published scorecard was given (--published), so no published number was audited."
    summary = r.doc.get("published_summary")
    if isinstance(summary, Mapping):
        summary = summary.get("text") or summary.get("sentence")
    if summary:
        s = str(summary)
        return s[:1].upper() + s[1:] + ("" if s.endswith(".") else ".")
    return f"{_plural(len(checks), 'published cell')} checked against every aggregation rule."


def _lead_offsets(r: Report) -> str:
    pooled = pooled_offsets(r.doc)
    if not pooled:
        return "Only one judge scored these rows, so there is no judge offset to measure."
    o = max(pooled, key=lambda x: (x["pairs"], str(x["judge_a"]), str(x["judge_b"])))
    if not o["pairs"]:
        return (
            f"No item was scored validly by both {o['judge_a']} and {o['judge_b']}: "
            "their offset is unknown."
        )
    d = o["mean_diff"]
    direction = "lower" if d < 0 else "higher"
    text = (
        f"On {o['pairs']} items both judges scored validly, {o['judge_a']} scores {num(abs(d))} "
        f"{_points(r)} "
        f"{direction} than {o['judge_b']} {interval(o['ci_low'], o['ci_high'], sign=True)}"
    )
    if o.get("exact_agreement") is not None:
        text += (
            f"; they agree exactly on {pct(o['exact_agreement'])} and within one point on "
            f"{pct(o['within_one'])} (quadratic kappa {num(o['kappa_quadratic'])})"
        )
    if o["only_a"] or o["only_b"]:
        text += (
            f"; {o['only_a']} items only {o['judge_a']} scored and {o['only_b']} only "
            f"{o['judge_b']} "
            "are not in the offset"
        )
    if len(pooled) > 1:
        text += f" ({len(pooled)} judge pairs in the table)"
    return text + "."


def _lead_contrasts(r: Report) -> str:
    cs = headline_contrasts(r.doc)
    if not cs:
        return "There is only one variant, so there is nothing to contrast."
    verdicts = [(c, *contrast_verdict(c, r.cfg.alpha, r.cfg.target_effect)) for c in cs]
    differ = [f"{c['a']} - {c['b']} = {signed(c['diff'])}" for c, _, k in verdicts if k == "good"]
    under = sum(1 for _, v, _ in verdicts if v == "tie (underpowered)")
    hl = r.headline
    if differ:
        text = (
            f"{len(differ)} of {len(cs)} variant contrasts on {hl} differ after Holm adjustment "
            f"({_series(differ, 3)})"
        )
    else:
        text = f"None of the {len(cs)} variant contrasts on {hl} differs after Holm adjustment"
    mdes = [c["mde"] for c in cs if c.get("mde") is not None]
    if mdes:
        text += (
            f"; with this many valid rows the design could only detect differences of "
            f"{num(min(mdes))} to {num(max(mdes))} {_points(r)} (target {r.cfg.target_effect:g})"
        )
    if under:
        verb = "is" if under == 1 else "are"
        ties = _plural(under, "tie")
        text += f", so {ties} {verb} underpowered rather than evidence of no effect"
    return text + "."


def _lead_claims(r: Report) -> str:
    claims = r.doc.get("claims")
    if claims is None:
        return "No claims file was given (--claims), so no headline claim was checked."
    if not claims:
        return "The claims file lists no claim."
    holds = [c for c in claims if c["verdict"] == "holds"]
    text = f"{len(holds)} of {len(claims)} headline claims hold on the valid rows"
    bad = [c for c in claims if c["verdict"] != "holds"]
    if bad:
        text += ": " + "; ".join(
            f"\u201c{c['name']}\u201d claimed {signed(c['claimed'])}, recomputed "
            f"{signed(c['recomputed'])} "
            f"{interval(c['ci_low'], c['ci_high'], sign=True)}: {c['verdict'].upper()}"
            for c in bad[:3]
        )
        if len(bad) > 3:
            text += f"; and {len(bad) - 3} more"
    return text + "."


def _lead_limits(r: Report) -> str:
    items = limits(r)
    if not items:
        return "Nothing in the data limits these results beyond what each section states."
    return (
        f"{_plural(len(items), 'limit')} follow{'s' if len(items) == 1 else ''} from the data, "
        "most "
        f"importantly: {items[0]}"
    )


def _lead_rows(r: Report) -> str:
    n = r.analysis.rows.height
    shown = min(n, ROWS_LISTED)
    more = "" if shown == n else f" (the first {shown} listed; rows.parquet has every one)"
    return (
        f"{n} rows: one per line read plus one per planned judgment with no row{more}, with their "
        "bucket, reason and verdict, exactly as read."
    )


# --------------------------------------------------------------------------- limits


def limits(r: Report) -> list[str]:
    """The caveats the data imposes, most important first, each one sentence."""
    doc, cfg = r.doc, r.cfg
    hl = r.headline
    out: list[str] = []
    gate = doc.get("gate") or {}
    if gate.get("failing"):
        out.append(
            "The preregistered gate fails: "
            + "; ".join(f"{f['variant']} ({f['why']})" for f in gate["failing"])
            + "."
        )
    for t in doc.get("missingness_tests", []):
        if t["p_value"] is not None and t["p_value"] < cfg.alpha:
            out.append(
                f"Missing scores depend on the {t['factor']} ({t['method'].replace('_', ' ')} "
                f"{p_is(t['p_value'])}): valid means of different {t['factor']}s rest on "
                "differently "
                "selected rows, and a missing-not-at-random pattern would bias them."
            )
    out += _confounded_contrasts(r)
    for c in doc.get("claims") or []:
        if c.get("confounded"):
            out.append(
                f"Claim \u201c{c['name']}\u201d is confounded: "
                + "; ".join(
                    n for n in c.get("notes", [])[1:] if "missing rates" in n or "judge" in n
                ).rstrip()
                + "."
            )
    below = [c for c in doc.get("scorecard", []) if c["status"] != "measured" and c["field"] == hl]
    if below:
        named = [
            f"{_cell_label(c)} ({c['valid_n']} valid, {c['clusters']} scenarios)" for c in below
        ]
        out.append(
            f"{_plural(len(below), 'scorecard cell')} on {hl} "
            f"{'is' if len(below) == 1 else 'are'} below "
            f"the preregistered minimum ({cfg.min_valid_n} valid, {cfg.min_clusters} scenarios) "
            "and "
            f"never ranked: {_series(named, 5)}."
        )
    few = [
        c
        for c in doc.get("scorecard", [])
        if c["field"] == hl and c.get("ci_low") is not None and c["clusters"] < 5
    ]
    if few:
        named = [f"{_cell_label(c)} ({c['clusters']})" for c in few]
        out.append(
            f"{_plural(len(few), 'interval')} on {hl} rest{'s' if len(few) == 1 else ''} on fewer "
            "than "
            f"5 scenarios, where cluster-robust intervals are unreliable: {_series(named, 4)}."
        )
    cs = headline_contrasts(doc)
    under = [c for c in cs if c.get("mde") is not None and c["mde"] > cfg.target_effect]
    if under:
        out.append(
            f"{len(under)} of {len(cs)} contrasts could not reliably detect the target effect of "
            f"{cfg.target_effect:g} (minimum detectable {num(min(c['mde'] for c in under))} to "
            f"{num(max(c['mde'] for c in under))}): their ties are not evidence of equality."
        )
    for c in doc.get("claims") or []:
        if c["verdict"] == "insufficient":
            out.append(
                f"Claim \u201c{c['name']}\u201d cannot be judged: "
                f"{c['notes'][0] if c.get('notes') else 'a side is not measured'}."
            )
    for p in doc.get("published_check") or []:
        if not p.get("reproduced_by"):
            out.append(
                f"Published {p['field']} for {_cell_label(p)} ({p['published']}) is reproduced by "
                "no "
                f"aggregation rule; the nearest is {p.get('nearest_rule')} "
                f"({num(p.get('nearest_value'), 3)})."
            )
    rep = doc.get("repetition") or {}
    if rep.get("inversions"):
        out.append(
            "Rankings from a single trial differ from the all-trial ranking in "
            f"{rep['inversions']} of "
            f"{rep['n_slices']} trials: one run of this evaluation would not reproduce its order."
        )
    for o in pooled_offsets(doc):
        if o["only_a"] + o["only_b"] > 0.2 * max(o["pairs"], 1):
            out.append(
                f"{o['only_a'] + o['only_b']} items were scored validly by only one of "
                f"{o['judge_a']} and "
                f"{o['judge_b']} (vs {o['pairs']} shared): the offset describes the shared items "
                "only."
            )
    for s in doc.get("scale_checks", []):
        if s.get("scale_mismatch"):
            out.append(str(s["message"]))
    led = doc["ledger"]
    if led.get("malformed"):
        out.append(
            f"{_plural(led['malformed'], 'line')} could not be read (malformed); their keys are "
            "unknown, "
            "so they are in no cell."
        )
    if led.get("conflict"):
        out.append(
            f"{_plural(led['conflict'], 'row')} conflict with another row for the same key and "
            "are held "
            "out of every mean."
        )
    if led.get("missing_planned") is None:
        out.append(
            "No plan was given: judgments that produced no row at all are invisible here (use "
            "--plan)."
        )
    notes = doc.get("ledger_notes") or {}
    if notes.get("unplanned"):
        out.append(
            f"{_plural(notes['unplanned'], 'row')} {'is' if notes['unplanned'] == 1 else 'are'} "
            "not in the plan."
        )
    if notes.get("from_string"):
        out.append(
            f"{notes['from_string']} valid scores were read from numeric strings "
            "(numeric_strings: accept)."
        )
    if cfg.resamples < 1000:
        out.append(
            f"The bootstrap used only {cfg.resamples} resamples: its interval ends carry Monte "
            "Carlo "
            "noise in the second decimal."
        )
    return out


def _confounded_contrasts(r: Report) -> list[str]:
    """Contrasts whose sides differ in missing rate (Fisher exact) or in the judges that scored."""
    doc, cfg = r.doc, r.cfg
    per_variant = {m["variant"]: m for m in _margin(doc, kind="variant")}
    judges: dict[str, set[str]] = {}
    for c in doc.get("census", []):
        if c["judgments"]:
            judges.setdefault(str(c["variant"]), set()).add(str(c["judge"]))
    rate_flags, judge_flags = [], []
    for c in headline_contrasts(doc):
        ma, mb = per_variant.get(c["a"]), per_variant.get(c["b"])
        if ma and mb and ma["judgments"] and mb["judgments"]:
            p = stats.fisher_exact_2x2(
                int(ma["missing"]), int(ma["judgments"]), int(mb["missing"]), int(mb["judgments"])
            )
            if p is not None and p < cfg.alpha:
                rate_flags.append(
                    f"{c['a']} vs {c['b']} ({pct(ma['missing_rate'])} vs "
                    f"{pct(mb['missing_rate'])} missing, Fisher {p_is(p)})"
                )
        ja, jb = judges.get(str(c["a"]), set()), judges.get(str(c["b"]), set())
        if ja != jb:
            judge_flags.append(
                f"{c['a']} ({', '.join(sorted(ja))}) vs {c['b']} ({', '.join(sorted(jb))})"
            )
    out = []
    if rate_flags:
        out.append(
            f"{_plural(len(rate_flags), 'contrast')} compare{'s' if len(rate_flags) == 1 else ''} "
            "variants "
            "whose missing rates differ, so the valid rows may not be comparable: "
            f"{_series(rate_flags, 4)}."
        )
    if judge_flags:
        out.append(
            f"{_plural(len(judge_flags), 'contrast')} "
            f"compare{'s' if len(judge_flags) == 1 else ''} "
            "variants scored by different judges, so judge severity is confounded with the "
            "variant: "
            f"{_series(judge_flags, 3)}."
        )
    return out


# --------------------------------------------------------------------------- provenance


def results_sha256(r: Report) -> str:
    """sha256 of the canonical results document (what results.json holds)."""
    return hashlib.sha256(results.dumps(r.doc).encode("utf-8")).hexdigest()


def versions() -> dict[str, str]:
    """Python and the versions of the packages that computed and drew the report."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_commit(path: str | Path | None = None) -> str | None:
    """The git commit of the workbench source tree (``+dirty`` with local edits), or None.

    Never raises: no git, no repository or a slow git all give None.
    """
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if head.returncode != 0:
            return None
        commit = head.stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return commit + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


# --------------------------------------------------------------------------- header and headings


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


# --------------------------------------------------------------------------- section tables


def provenance_tables(r: Report) -> Html:
    """Command line, inputs with sha256 and lines, parameters, versions and git commit."""
    doc, cfg = r.doc, r.cfg
    parts = [tag("h3", "Command"), tag("pre", r.command_line, cls="wb-cmd")]
    parts.append(
        table(
            ["input", "lines", "sha256"],
            [[i["path"], i["lines"], tag("code", i["sha256"])] for i in doc["inputs"]],
            numeric=[1],
        )
    )
    written = r.out_dir / "results.json"
    mine = results_sha256(r)
    if written.is_file():
        theirs = hashlib.sha256(written.read_bytes()).hexdigest()
        same = badge("identical", "good") if theirs == mine else badge("DIFFERS", "bad")
        check = join(
            [
                "results.json in ",
                tag("code", str(r.out_dir)),
                ": ",
                same,
                " to the document this notebook computed",
            ]
        )
    else:
        check = join(
            [
                "no results.json in ",
                tag("code", str(r.out_dir)),
                " to compare with (run ",
                tag("code", "workbench report"),
                " to write one)",
            ]
        )
    parts.append(
        para(join(["results sha256 ", tag("code", mine), " \u00b7 ", check]), cls="wb-note")
    )
    plan = doc.get("plan") or {}
    subsets = (
        "; ".join(
            f"{name}: " + ", ".join(f"{k} in {list(v)}" for k, v in spec.items())
            for name, spec in cfg.subsets.items()
        )
        or "none"
    )
    prm = [
        ("headline field", r.headline),
        ("rubric", f"{cfg.rubric_min:g} to {cfg.rubric_max:g}"),
        ("value unit", doc.get("value_unit")),
        (
            "preregistered minimum",
            f"{cfg.min_valid_n} valid judgments and {cfg.min_clusters} scenarios per cell",
        ),
        ("confidence", f"{cfg.confidence:g}"),
        ("bootstrap", f"{cfg.resamples} resamples, seed {cfg.seed}"),
        ("alpha / power / target effect", f"{cfg.alpha:g} / {cfg.power:g} / {cfg.target_effect:g}"),
        ("subsets", subsets),
        (
            "plan",
            f"{r.parameters.get('plan')} ({plan.get('planned')} planned judgments)"
            if r.parameters.get("plan")
            else "none",
        ),
        ("published card", r.parameters.get("published") or "none"),
        ("claims", r.parameters.get("claims") or "none"),
        ("config sources", ", ".join(map(str, doc.get("config_sources") or [])) or "defaults"),
    ]
    parts.append(table(["parameter", "value"], prm, cls="wb-kv"))
    vers = versions()
    commit = git_commit()
    vers_rows = [(k, v) for k, v in vers.items()] + [("git commit", commit or "not available")]
    parts.append(
        details(
            "Package versions and git commit", table(["package", "version"], vers_rows, cls="wb-kv")
        )
    )
    parts.append(
        details(
            "Effective configuration (config in results.json)",
            tag(
                "pre",
                json.dumps(doc["config"], indent=2, sort_keys=True, ensure_ascii=False),
                cls="wb-json",
            ),
        )
    )
    return join(parts)


def ledger_tables(r: Report) -> Html:
    """Every bucket with its count, share of lines and meaning; malformed lines listed."""
    doc = r.doc
    led = doc["ledger"]
    lines = led["lines"] or 1
    rows, classes = [], []
    for b, meaning in BUCKET_MEANING.items():
        if b == "missing_planned":
            continue
        n = led[b]
        rows.append([b, n, pct(n / lines), meaning])
        classes.append(None if n else "wb-zero")
    rows.append(
        [tag("b", "lines"), tag("b", str(led["lines"])), "100%", "the sum of the buckets above"]
    )
    classes.append("wb-total")
    if led.get("missing_planned") is not None:
        rows.append(
            ["missing_planned", led["missing_planned"], "", BUCKET_MEANING["missing_planned"]]
        )
        classes.append("wb-beside")
    parts = [
        table(
            ["bucket", "lines", "share", "what it means"], rows, numeric=[1, 2], row_classes=classes
        )
    ]
    notes = doc.get("ledger_notes") or {}
    extra = [f"{k.replace('_', ' ')} {v}" for k, v in notes.items() if v]
    if extra:
        parts.append(
            para("Beside the ledger (not buckets): " + ", ".join(extra) + ".", cls="wb-note")
        )
    bad = doc.get("malformed_lines") or []
    if bad:
        parts.append(tag("h3", f"Malformed lines ({len(bad)})"))
        parts.append(
            table(
                ["file", "line", "reason"],
                [[Path(str(m["file"])).name, m["line"], m["reason"]] for m in bad[:50]],
                numeric=[1],
            )
        )
        if len(bad) > 50:
            parts.append(
                para(f"... and {len(bad) - 50} more; rows.parquet has every one.", cls="wb-note")
            )
    return join(parts)


def _rate_cell(m: Mapping[str, Any]) -> Html:
    if m.get("missing_rate") is None:
        return Html("-")
    return join(
        [
            tag("b", pct(m["missing_rate"])),
            " ",
            tag(
                "span",
                f"[{pct(m['missing_rate_ci_low'])}, {pct(m['missing_rate_ci_high'])}]",
                cls="wb-ci",
            ),
        ]
    )


def census_tables(r: Report) -> Html:
    """Judge x variant counts with the missing rate, margins, missingness tests, scale checks."""
    doc = r.doc
    head = [
        "judge",
        "variant",
        "judgments",
        "valid",
        "partial",
        "empty",
        "unusable value",
        "no row",
        "held out",
        "missing [95% CI]",
    ]

    def row(m: Mapping[str, Any], judge: str, variant: str) -> list[Any]:
        return [
            judge,
            variant,
            m["judgments"],
            m["valid"],
            m["partial"],
            m["empty"],
            m["non_numeric"] + m["out_of_range"] + m["invalid_number"],
            m["missing_planned"],
            m["conflict"],
            _rate_cell(m),
        ]

    margins, m_classes = [], []
    for m in _margin(doc, kind="judge"):
        margins.append(row(m, m["judge"], tag("i", "all variants")))
        m_classes.append(None)
    for m in _margin(doc, kind="variant"):
        margins.append(row(m, tag("i", "all judges"), m["variant"]))
        m_classes.append(None)
    for m in _margin(doc):
        margins.append(row(m, tag("b", "all"), tag("b", "all")))
        m_classes.append("wb-total")
    caption = (
        "unusable value = non-numeric, out of range or NaN; held out = conflicting rows; no row = "
        "planned "
        "judgment with no line; interval: Wilson"
    )
    parts = [table(head, margins, numeric=range(2, 10), row_classes=m_classes, caption=caption)]
    cells = [row(c, c["judge"], c["variant"]) for c in doc.get("census", [])]
    parts.append(
        details(
            f"Every judge x variant cell ({len(cells)})", table(head, cells, numeric=range(2, 10))
        )
    )
    tests = doc.get("missingness_tests") or []
    if tests:
        parts.append(tag("h3", "Does the missing rate depend on the judge or the variant?"))
        parts.append(
            table(
                ["factor", "levels", "test", "statistic", "p", "missing rate by level"],
                [
                    [
                        t["factor"],
                        t["levels"],
                        t["method"].replace("_", " "),
                        num(t["statistic"]),
                        pval(t["p_value"]),
                        ", ".join(f"{k} {pct(v)}" for k, v in sorted(t["missing_rates"].items())),
                    ]
                    for t in tests
                ],
                numeric=[1, 3, 4],
            )
        )
    msgs = [s["message"] for s in doc.get("scale_checks", []) if s.get("message")]
    if msgs:
        parts.append(tag("h3", "Scale checks"))
        parts.append(Html("<ul>" + "".join(f"<li>{esc(m)}</li>" for m in msgs) + "</ul>"))
    names = list(r.cfg.score_names)
    nulls = [
        [c["judge"], c["variant"], *[c["field_nulls"].get(n, 0) for n in names]]
        for c in doc.get("census", [])
    ]
    parts.append(
        details(
            "Missing values per rubric field (absent, null or sentinel)",
            table(["judge", "variant", *names], nulls, numeric=range(2, 2 + len(names))),
        )
    )
    return join(parts)


def _status_badge(status: str) -> Html:
    return badge(status.replace("_", " "), STATUS_CLASS.get(status, "neutral"))


def scorecard_tables(r: Report) -> Html:
    """The pooled headline table (ranked measured cells, then the rest), then the breakdowns."""
    doc, cfg = r.doc, r.cfg
    hl = r.headline
    conf = f"{cfg.confidence:.0%}"
    cells = plots.scorecard_order(pooled_cells(doc))
    lo, hi = cfg.value_range
    head = [
        "rank",
        "variant",
        f"{hl}: mean (valid/rows) [{conf} CI]",
        "zero-filled",
        "shift",
        f"if missing were {lo:g}..{hi:g}",
        "scenarios",
        "status",
    ]
    body, classes = [], []
    rank = 0
    for c in cells:
        measured = c["status"] == "measured"
        rank += measured
        body.append(
            [
                rank if measured else "-",
                c["variant"],
                tag("span", cell_text(c), cls="wb-mono"),
                num(c["zero_filled_mean"]),
                signed(c["zero_filled_diff"]),
                interval(c["lower_bound"], c["upper_bound"]),
                c["clusters"],
                _status_badge(c["status"]),
            ]
        )
        classes.append(None if measured else "wb-unmeasured")
    parts = [
        table(
            head,
            body,
            numeric=[0, 3, 4, 5, 6],
            row_classes=classes,
            caption="Means over valid rows only, judges pooled. Zero-filled = what averaging "
            "missing scores "
            f"as 0 prints; shift = zero-filled minus valid mean. Cells below {cfg.min_valid_n} "
            "valid or "
            f"{cfg.min_clusters} scenarios are greyed and not ranked.",
        )
    ]
    fields = list(cfg.score_names)
    variants = [c["variant"] for c in cells]
    index = {_cell_key(c): c for c in doc.get("scorecard", [])}

    def grid(row_keys: Sequence[Any], col_keys: Sequence[Any], key: Any, first: str) -> Html:
        rows_, cls_ = [], []
        for rk in row_keys:
            row_cells: list[Any] = [rk]
            for ck in col_keys:
                c = index.get(key(rk, ck))
                if c is None:
                    row_cells.append("")
                else:
                    row_cells.append(
                        tag(
                            "span",
                            cell_text(c),
                            cls="wb-mono" + ("" if c["status"] == "measured" else " wb-dim"),
                        )
                    )
            rows_.append(row_cells)
            cls_.append(None)
        return table([first, *col_keys], rows_, numeric=range(1, 1 + len(col_keys)))

    parts.append(
        details(
            "Every rubric field, judges pooled (greyed: not measured)",
            grid(variants, fields, lambda v, f: (v, None, None, f), "variant"),
        )
    )
    judges = sorted({str(c["judge"]) for c in doc.get("scorecard", []) if c["judge"] is not None})
    if judges:
        parts.append(
            details(
                f"{hl} per judge", grid(variants, judges, lambda v, j: (v, j, None, hl), "variant")
            )
        )
    if cfg.subsets:
        parts.append(
            details(
                f"{hl} per subset",
                grid(variants, list(cfg.subsets), lambda v, s: (v, None, s, hl), "variant"),
            )
        )
    flags = [f for f in doc.get("flag_rates", []) if f["subset"] is None]
    if flags:
        parts.append(
            details(
                "Fabrication flags per variant",
                table(
                    ["variant", "flagged / rows with flags", f"rate [{conf} Wilson]"],
                    [
                        [
                            f["variant"],
                            f"{f['flagged']}/{f['n']}",
                            f"{pct(f['rate'])} [{pct(f['wilson_low'])}, {pct(f['wilson_high'])}]",
                        ]
                        for f in flags
                    ],
                    numeric=[1, 2],
                ),
            )
        )
    passes = [p for p in doc.get("pass_rates", []) if p["subset"] is None]
    if passes:
        parts.append(
            details(
                "Pass rates per variant",
                table(
                    ["variant", "passes / n", f"rate [{conf} Wilson]", "pass^k", "gate"],
                    [
                        [
                            p["variant"],
                            f"{p['passes']}/{p['n']}",
                            f"{pct(p['rate'])} [{pct(p['wilson_low'])}, {pct(p['wilson_high'])}]",
                            f"{num(p['pass_hat_k'])} (k={p['k']})",
                            "-" if p["gate_pass"] is None else str(p["gate_pass"]),
                        ]
                        for p in passes
                    ],
                    numeric=[1, 2, 3],
                ),
            )
        )
    cons = doc.get("consistency") or []
    if cons:
        keys = [k for k in cons[0] if k not in ("judge", "variant")]
        parts.append(
            details(
                "Rows that disagree with themselves",
                table(
                    ["judge", "variant", *[k.replace("_", " ") for k in keys]],
                    [[c["judge"], c["variant"], *[c[k] for k in keys]] for c in cons],
                    numeric=range(2, 2 + len(keys)),
                ),
            )
        )
    rep = doc.get("repetition") or {}
    if rep.get("per_variant"):
        reps = [[p["variant"], p["trials"], num(p["icc_trials"])] for p in rep["per_variant"]]
        slices = [
            [s["trial"], " > ".join(map(str, s["ranking"])), "differs" if s["differs"] else "same"]
            for s in rep.get("slices", [])
        ]
        block = [table(["variant", "trials", "ICC of trials"], reps, numeric=[1, 2])]
        if slices:
            block.append(
                para(
                    "Ranking on all trials: "
                    + " > ".join(map(str, rep.get("reference_ranking") or [])),
                    cls="wb-note",
                )
            )
            block.append(table(["trial", "ranking on this trial alone", "vs all trials"], slices))
        parts.append(details("Repeated trials", join(block)))
    return join(parts)


def published_cells(r: Report) -> list[dict[str, Any]]:
    """Published cells joined with their scorecard cell: label, published, valid mean, interval."""
    index = {_cell_key(c): c for c in r.doc.get("scorecard", [])}
    out = []
    for p in r.doc.get("published_check") or []:
        c = index.get(_cell_key(p), {})
        out.append(
            {
                "label": _cell_label(p),
                "field": p["field"],
                "published": p["published"],
                "valid_mean": p.get("valid_mean", c.get("mean")),
                "ci_low": c.get("ci_low"),
                "ci_high": c.get("ci_high"),
                "status": c.get("status", "measured"),
                "valid_n": c.get("valid_n"),
                "rows": c.get("rows"),
                "reproduced_by": p.get("reproduced_by") or [],
                "nearest_rule": p.get("nearest_rule"),
                "nearest_value": p.get("nearest_value"),
                "decimals": p.get("decimals", 2),
            }
        )
    return out


def published_table(r: Report) -> Html:
    """Each published cell: the printed value, which rules reproduce it, and the valid mean."""
    cells = published_cells(r)
    if r.doc.get("published_check") is None:
        return Html("")
    rows = []
    for c in cells:
        rules = (
            join(
                [
                    badge(
                        x.replace("_", " "),
                        "bad"
                        if x.startswith("zero")
                        else ("good" if x == "valid_mean" else "neutral"),
                    )
                    for x in c["reproduced_by"]
                ],
                " ",
            )
            if c["reproduced_by"]
            else badge("no rule", "warn")
        )
        nd = int(c["decimals"] or 2)
        near = (
            "-"
            if c["reproduced_by"] or c["nearest_rule"] is None
            else f"{c['nearest_rule']} {num(c['nearest_value'], nd + 2)}"
        )
        valid = (
            "-"
            if c["valid_mean"] is None
            else f"{num(c['valid_mean'])} ({c['valid_n']}/{c['rows']}) "
            f"{interval(c['ci_low'], c['ci_high'])}"
        )
        rows.append(
            [
                c["label"],
                c["field"],
                num(c["published"], nd),
                rules,
                near,
                tag("span", valid, cls="wb-mono"),
                signed(None if c["valid_mean"] is None else c["valid_mean"] - c["published"]),
            ]
        )
    main = table(
        [
            "cell",
            "field",
            "published",
            "reproduced by",
            "nearest rule",
            "valid mean (valid/rows) [CI]",
            "valid - published",
        ],
        rows,
        numeric=[2, 6],
        caption="Rules: valid mean (missing dropped), zero filled (missing = 0), min filled "
        "(missing = "
        "rubric minimum), item mean (judges averaged per item first), zero filled planned "
        "(planned-but-absent judgments also 0), drop sentinels only (every number read except "
        "sentinels, out-of-range kept: FastChat's rule), raw numeric mean (every number read, "
        "sentinels included). Matched at the printed precision.",
    )
    return join([main, details("Every rule's value for every published cell (value over n)",
                               published_rules_table(r))])


def published_rules_table(r: Report) -> Html:
    """Each published cell under every aggregation rule: the value it gives and over how many."""
    checks = r.doc.get("published_check") or []
    names = [n for n in _RULE_ORDER if any(n in (p.get("rules") or {}) for p in checks)]
    rows = []
    for p in checks:
        rules = p.get("rules") or {}
        nd = int(p.get("decimals") or 2)
        cells = []
        for n in names:
            v = rules.get(n, {})
            if v.get("value") is None:
                cells.append("-")
            else:
                mark = " *" if n in (p.get("reproduced_by") or []) else ""
                cells.append(f"{num(v['value'], nd)} ({v.get('n')}){mark}")
        rows.append([_cell_label(p), p["field"], num(p["published"], nd), *cells])
    return table(["cell", "field", "published", *[n.replace("_", " ") for n in names]], rows,
                 numeric=list(range(2, 3 + len(names))),
                 caption="value (n): the cell under each rule and the number of values it averages; "
                 "* = reproduces the printed value.")


_RULE_ORDER = ("valid_mean", "zero_filled", "min_filled", "item_mean", "zero_filled_planned",
               "drop_sentinels_only", "raw_numeric_mean")


def offsets_tables(r: Report) -> Html:
    """Judge offsets on shared items with agreement statistics: pooled, then per variant/subset."""
    offs = r.doc.get("judge_offsets") or []
    if not offs:
        return Html("")
    head = [
        "judges a - b",
        "scope",
        "shared items",
        "only a / only b",
        "mean a - b [bootstrap CI]",
        "paired t CI",
        "Wilcoxon p",
        "exact / within 1",
        "kappa",
        "alpha",
        "Spearman",
    ]

    def row(o: Mapping[str, Any]) -> list[Any]:
        scope = (
            "all variants"
            if o["variant"] is None and o["subset"] is None
            else (f"{o['variant']}" if o["variant"] is not None else f"{o['subset']} subset")
        )
        return [
            join([o["judge_a"], Html("<br>- "), o["judge_b"]]),
            tag("span", scope, cls="wb-nowrap"),
            o["pairs"],
            f"{o['only_a']} / {o['only_b']}",
            tag(
                "span",
                f"{signed(o['mean_diff'])} {interval(o['ci_low'], o['ci_high'], sign=True)}",
                cls="wb-mono",
            ),
            interval(o["t_ci_low"], o["t_ci_high"], sign=True),
            pval(o["wilcoxon_p"]),
            f"{pct(o['exact_agreement'])} / {pct(o['within_one'])}",
            num(o["kappa_quadratic"]),
            num(o["krippendorff_alpha"]),
            num(o["spearman"]),
        ]

    pooled = pooled_offsets(r.doc)
    rest = [o for o in offs if not (o["variant"] is None and o["subset"] is None)]
    parts = [
        table(
            head,
            [row(o) for o in pooled],
            numeric=range(2, 11),
            caption="kappa = quadratic-weighted Cohen's kappa; alpha = Krippendorff's alpha "
            "(interval); only a / "
            "only b = items just one judge scored validly, left out of the offset.",
        )
    ]
    if rest:
        parts.append(
            details(
                "Per variant and per subset",
                table(head, [row(o) for o in rest], numeric=range(2, 11)),
            )
        )
    return join(parts)


def contrasts_table(r: Report) -> Html:
    """Variant contrasts on the headline: intervals, paired, leave-one-out, MDE, verdict."""
    cfg = r.cfg
    conf = f"{cfg.confidence:.0%}"
    head = [
        "a - b",
        f"difference [{conf} CI]",
        "valid n (a vs b)",
        "paired [CI] (matched)",
        "leave one scenario out",
        "p (Holm)",
        "MDE",
        "n needed per side",
        "verdict",
    ]

    def row(c: Mapping[str, Any]) -> list[Any]:
        label, kind = contrast_verdict(c, cfg.alpha, cfg.target_effect)
        return [
            f"{c['a']} - {c['b']}",
            tag(
                "span",
                f"{signed(c['diff'])} {interval(c['ci_low'], c['ci_high'], sign=True)}",
                cls="wb-mono",
            ),
            f"{c['valid_n_a']} vs {c['valid_n_b']}",
            f"{signed(c['paired_diff'])} "
            f"{interval(c['paired_ci_low'], c['paired_ci_high'], sign=True)} "
            f"({c['matched']})",
            interval(c["loo_min"], c["loo_max"], sign=True),
            pval(c.get("p_holm")),
            num(c["mde"]),
            "-" if c.get("n_needed") is None else c["n_needed"],
            badge(label, kind),
        ]

    cs = headline_contrasts(r.doc)
    if not cs:
        return Html("")
    parts = [
        table(
            head,
            [row(c) for c in cs],
            numeric=[1, 3, 4, 5, 6, 7],
            caption="Difference of valid means with a clustered interval (scenarios as clusters); "
            "paired on "
            f"matched (scenario, trial, judge) rows. MDE = the difference detectable with "
            f"{cfg.power:.0%} power at alpha {cfg.alpha:g}; n needed = valid rows per side for the "
            f"target effect {cfg.target_effect:g}.",
        )
    ]
    for subset in cfg.subsets:
        sub = headline_contrasts(r.doc, subset)
        if sub:
            parts.append(
                details(
                    f"{subset} subset",
                    table(head, [row(c) for c in sub], numeric=[1, 3, 4, 5, 6, 7]),
                )
            )
    return join(parts)


def claims_table(r: Report) -> Html:
    """One card per claim: claimed vs recomputed with its interval, the numbers, the notes."""
    claims = r.doc.get("claims")
    if claims is None:
        return Html("")
    lo, hi = r.cfg.value_range
    cards = []
    for c in claims:
        scope = (
            c["field"]
            + (f", {c['subset']} subset" if c.get("subset") else "")
            + (f", judge {c['judge']}" if c.get("judge") else "")
        )
        kind = VERDICT_CLASS.get(c["verdict"], "neutral")
        flags = [badge(c["verdict"].upper(), kind)] + (
            [badge("confounded", "warn")] if c.get("confounded") else []
        )
        facts = table(
            ["", ""],
            [
                ["claimed (a - b)", tag("b", signed(c["claimed"]))],
                [
                    f"recomputed on valid rows [{r.cfg.confidence:.0%} CI]",
                    tag(
                        "b",
                        f"{signed(c['recomputed'])} "
                        f"{interval(c['ci_low'], c['ci_high'], sign=True)}",
                    ),
                ],
                [
                    "paired on matched rows",
                    f"{signed(c.get('paired'))} "
                    f"{interval(c.get('paired_ci_low'), c.get('paired_ci_high'), sign=True)}",
                ],
                [
                    "valid/rows, a vs b",
                    f"{c['valid_n_a']}/{c['rows_a']} vs {c['valid_n_b']}/{c['rows_b']}",
                ],
                ["zero-filled difference", signed(c.get("zero_filled"))],
                [
                    f"if missing anywhere in {lo:g}..{hi:g}",
                    interval(c.get("bound_low"), c.get("bound_high"), sign=True),
                ],
            ],
            cls="wb-kv wb-facts",
        )
        notes = Html(
            '<ul class="wb-notes">'
            + "".join(f"<li>{esc(n)}</li>" for n in c.get("notes") or [])
            + "</ul>"
        )
        cards.append(
            Html(
                f'<div class="wb-claim wb-claim-{esc(kind)}"><div '
                f'class="wb-claim-head"><b>{esc(c["name"])}</b>'
                f'<span class="wb-dim"> {esc(c["a"])} - {esc(c["b"])} ({esc(scope)})</span> '
                f"{join(flags, ' ')}</div>"
                f'<div class="wb-claim-body">{facts}{notes}</div></div>'
            )
        )
    return join(cards)


def limits_list(r: Report) -> Html:
    """The generated limits as a list."""
    items = limits(r)
    if not items:
        return Html("")
    return Html('<ul class="wb-limits">' + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>")


def rows_appendix(r: Report, limit: int = ROWS_LISTED) -> Html:
    """The row table as read (file:line, bucket, keys, headline, reason, verdict), collapsed."""
    rows = r.analysis.rows
    hl = r.headline
    cols = [
        c
        for c in (
            "file",
            "line",
            "bucket",
            "scenario",
            "variant",
            "trial",
            "judge",
            f"{hl}__raw",
            "reason",
            "verdict",
        )
        if c in rows.columns
    ]
    head = rows.head(limit).select(cols)
    body, classes = [], []
    for rec in head.iter_rows(named=True):
        where = (
            "-" if rec.get("file") is None else f"{Path(str(rec['file'])).name}:{rec.get('line')}"
        )
        raw = rec.get(f"{hl}__raw")
        verdict = rec.get("verdict")
        if verdict is not None and len(str(verdict)) > 240:
            verdict = str(verdict)[:239] + "\u2026"
        body.append(
            [
                where,
                rec.get("bucket"),
                rec.get("scenario"),
                rec.get("variant"),
                rec.get("trial"),
                rec.get("judge"),
                "-" if raw is None else f"{raw:g}",
                rec.get("reason"),
                verdict,
            ]
        )
        classes.append(None if rec.get("bucket") == "valid" else "wb-heldout")
    tbl = table(
        [
            "file:line",
            "bucket",
            "scenario",
            "variant",
            "trial",
            "judge",
            f"{hl} as read",
            "reason",
            "verdict",
        ],
        body,
        numeric=[6],
        row_classes=classes,
        cls="wb-rows",
    )
    return details(f"Show {len(body)} of {rows.height} rows", tbl)


# --------------------------------------------------------------------------- figures


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
        return plots.scorecard_forest(pooled_cells(doc), hl, cfg.confidence, cfg.value_range)
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
        chart = plots.altair_scorecard(pooled_cells(doc), r.headline, cfg.confidence)
    else:
        raise WorkbenchError(
            f"no interactive chart {name!r}; known: missing_heatmap, scorecard_forest"
        )
    spec: dict[str, Any] = chart.to_dict()
    spec.pop("$schema", None)
    return spec


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


# --------------------------------------------------------------------------- rendering


def notebook_path() -> Path:
    """The report notebook: the source tree's ``notebooks/reanalysis.ipynb`` when running from a
    checkout, else the copy shipped in the package."""
    here = Path(__file__).resolve().parent
    tree = here.parent / "notebooks" / "reanalysis.ipynb"
    return tree if tree.is_file() else here / "notebooks" / "reanalysis.ipynb"


def _kernel_manager_class() -> type:
    """A kernel manager that starts ipykernel in *this* interpreter (the venv), whatever
    kernelspecs the machine has: a fresh machine needs no ``ipykernel install``."""
    import tempfile
    import uuid

    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec
    from traitlets import CaselessStrEnum, default

    class VenvKernelManager(AsyncKernelManager):  # type: ignore[misc]
        # Unix sockets: no TCP port to open (or to leave unencrypted) for a local batch run.
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        @default("ip")
        def _unique_ipc_path(self) -> str:
            # jupyter_client's default is the relative "kernel-ipc": two reports running in one
            # folder (a batch) would share sockets. One absolute path per kernel instead.
            return os.path.join(tempfile.gettempdir(), f"workbench-kernel-{uuid.uuid4().hex}")

        @property
        def kernel_spec(self) -> KernelSpec:
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(
                    argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    display_name=f"Python {platform.python_version()} ({sys.prefix})",
                    language="python",
                    metadata={},
                    env={},
                    resource_dir="",
                )
            return self._kernel_spec

    return VenvKernelManager


def execute(
    out_dir: str | Path,
    parameters: Mapping[str, Any],
    notebook: str | Path | None = None,
    progress: bool = False,
    cwd: str | Path | None = None,
) -> Path:
    """Execute the report notebook with papermill into ``out_dir/report.ipynb``.

    Raises :class:`WorkbenchError` naming the failing cell when a cell raises (the executed
    notebook is still written, with the traceback in it).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "report.ipynb"
    env_before = os.environ.get("PYDEVD_DISABLE_FILE_VALIDATION")
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = (
        "1"  # silences a debugger warning in the kernel's stderr
    )
    try:
        papermill.execute_notebook(
            str(notebook or notebook_path()),
            str(target),
            parameters=dict(parameters),
            kernel_name="python3",
            progress_bar=progress,
            cwd=str(cwd or os.getcwd()),
            kernel_manager_class=_kernel_manager_class(),
            log_output=False,
        )
    except PapermillExecutionError as exc:
        raise WorkbenchError(
            f"report notebook failed in cell {exc.cell_index + 1}: {exc.ename}: {exc.evalue} "
            f"(see {target})"
        ) from exc
    except (RuntimeError, OSError, TimeoutError) as exc:  # the kernel did not start or died
        raise WorkbenchError(f"report notebook could not run: {type(exc).__name__}: {exc}") from exc
    finally:
        if env_before is None:
            os.environ.pop("PYDEVD_DISABLE_FILE_VALIDATION", None)
        else:
            os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = env_before
    return target


_TEMPLATE = r"""{%- extends 'lab/base.html.j2' -%}
{%- block header -%}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta name="generator" content="workbench report">
<title>{{ resources.wb.title }}</title>
<style>{{ resources.wb.css }}</style>
</head>
{%- endblock header -%}
{%- block body_header -%}
<body class="wb-body"><main class="wb-page">
{%- endblock body_header -%}
{%- block body_footer -%}
</main>
{{ resources.wb.scripts }}
</body>
{%- endblock body_footer -%}
{%- block footer -%}
{{ super() }}
</html>
{%- endblock footer -%}
"""

_EMBED_JS = """
(function () {
  var charts = document.querySelectorAll('.wb-vega');
  if (typeof vegaEmbed !== 'function') { return; }
  Array.prototype.forEach.call(charts, function (el) {
    var spec = JSON.parse(el.querySelector('script.wb-vega-spec').textContent);
    var target = el.querySelector('.wb-vega-target');
    vegaEmbed(target, spec, {actions: false, renderer: 'svg', mode: 'vega-lite'})
      .then(function () { el.classList.add('wb-vega-ready'); })
      .catch(function (err) {
        el.classList.add('wb-vega-failed');
        target.textContent = 'interactive chart unavailable: ' + err;
      });
  });
})();
"""


def _inline_script(code: str) -> str:
    return (
        "<script>" + code.replace("</script", "<\\/script").replace("<!--", "<\\!--") + "</script>"
    )


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert-python (no network).

    Building it takes seconds, so it is kept in ``$XDG_CACHE_HOME/workbench`` (default
    ``~/.cache/workbench``) per vl-convert version; an unwritable cache only costs the time.
    """
    import vl_convert

    version = metadata.version("vl-convert-python")
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "workbench"
    cached = folder / f"vega-bundle-{version}.js"
    try:
        text = cached.read_text(encoding="utf-8")
        if "window.vegaEmbed" in text:
            return text
    except OSError:
        pass
    text = str(vl_convert.javascript_bundle())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(cached)
    except OSError:
        pass
    return text


_EXTERNAL = re.compile(
    r"""<(?:script|img|iframe|link|source|audio|video|embed|object)\b[^>]*?"""
    r"""\b(?:src|href|data)\s*=\s*["']?\s*(?:https?:)?//[^"'\s>]+"""
    r"""|@import\s+(?:url\()?\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""",
    re.IGNORECASE,
)


def external_references(page: str) -> list[str]:
    """Every reference in ``page`` that a browser would fetch from the network (should be none)."""
    return [m.group(0)[:120] for m in _EXTERNAL.finditer(page)]


def export_html(executed: str | Path, title: str = "workbench report") -> str:
    """The reviewer's page from an executed notebook: code hidden, nothing fetched from anywhere."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = nbformat.read(str(executed), as_version=4)
    exporter = HTMLExporter(
        template_name="lab",
        template_file="workbench_report.html.j2",
        extra_loaders=[DictLoader({"workbench_report.html.j2": _TEMPLATE})],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        anchor_link_text="",
    )
    exporter.register_preprocessor(
        TagRemovePreprocessor(
            remove_cell_tags={"parameters", "injected-parameters", "notebook-only"}
        ),
        enabled=True,
    )
    body_probe = json.dumps([c.get("outputs", []) for c in nb.cells])
    scripts = ""
    if "wb-vega-spec" in body_probe:
        scripts = _inline_script(vega_bundle()) + _inline_script(_EMBED_JS)
    resources = {"wb": {"title": esc(title), "css": CSS, "scripts": scripts}}
    page, _ = exporter.from_notebook_node(nb, resources=resources)
    return str(page)


def render(
    out_dir: str | Path,
    parameters: Mapping[str, Any],
    notebook: str | Path | None = None,
    progress: bool = False,
    cwd: str | Path | None = None,
) -> dict[str, Path]:
    """Execute the notebook (papermill) and export ``report.html``; returns both paths.

    Raises :class:`WorkbenchError` when a cell fails or when the page would reference anything
    outside itself.
    """
    out = Path(out_dir)
    nb_path = execute(out, parameters, notebook, progress=progress, cwd=cwd)
    inputs = parameters.get("inputs") or []
    names = [Path(str(p)).name for p in inputs]
    title = "Reanalysis: " + (names[0] if len(names) == 1 else f"{len(names)} input files")
    page = export_html(nb_path, title)
    outside = external_references(page)
    if outside:
        raise WorkbenchError(
            f"report.html would load {len(outside)} outside resource(s), e.g. {outside[0]!r}"
        )
    html_path = out / "report.html"
    html_path.write_text(page, encoding="utf-8")
    return {"notebook": nb_path, "html": html_path}


# --------------------------------------------------------------------------- style

CSS = """
:root { --ink:#1d232b; --muted:#6b7480; --line:#e3e7ec; --bg:#fbfcfd; --accent:#1f5fa8;
  --good:#1e7d46; --good-bg:#e6f4ec; --warn:#8a5a00; --warn-bg:#fdf1d8; --bad:#a4281b;
  --bad-bg:#fbe6e3;
  --neutral:#41556b; --neutral-bg:#e9eef4; }
.wb-body { margin:0; background:var(--bg); color:var(--ink);
  font:15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans",
  "Liberation Sans", sans-serif; }
.wb-page { max-width:1180px; margin:0 auto; padding:28px 36px 80px; }
.wb-page .jp-Cell, .wb-page .jp-OutputArea-output { margin:0; padding:0; }
.wb-page .jp-OutputPrompt, .wb-page .jp-InputPrompt, .wb-page .jp-Collapser { display:none; }
.wb-header { padding-bottom:4px; }
.wb-kicker { text-transform:uppercase; letter-spacing:.08em; font-size:12px; color:var(--muted); }
.wb-header h1 { font-size:30px; margin:2px 0 2px; font-weight:650; word-break:break-all; }
.wb-sub { color:var(--muted); margin:0 0 14px; }
.wb-banner { border-radius:6px; padding:10px 14px; margin:10px 0; border:1px solid transparent; }
.wb-banner.wb-good { background:var(--good-bg); color:var(--good); border-color:#bfe3cd; }
.wb-banner.wb-bad { background:var(--bad-bg); color:var(--bad); border-color:#f1c1ba; }
.wb-verdicts { display:grid; grid-template-columns:repeat(auto-fill, minmax(300px, 1fr));
  gap:10px; margin:12px 0; }
.wb-verdict-card { background:#fff; border:1px solid var(--line); border-radius:8px;
  padding:10px 12px; }
.wb-vname { font-weight:600; margin-bottom:4px; }
.wb-vnums { font-variant-numeric:tabular-nums; color:#333; margin-bottom:6px; font-size:14px; }
.wb-findings { background:#fff; border:1px solid var(--line); border-left:4px solid var(--accent);
  border-radius:6px; padding:6px 18px 8px; margin:14px 0; }
.wb-findings h2 { font-size:16px; margin:8px 0 4px; }
.wb-findings ol { margin:4px 0 6px; padding-left:20px; }
.wb-findings li { margin:5px 0; }
.wb-findings li a { font-weight:600; margin-right:4px; color:var(--accent); text-decoration:none; }
.wb-toc { display:flex; flex-wrap:wrap; gap:6px 14px; font-size:13.5px; margin-top:10px; }
.wb-toc a { color:var(--accent); text-decoration:none; }
.wb-toc a span { color:var(--muted); }
.wb-h2 { font-size:22px; margin:40px 0 4px; padding-top:10px; border-top:1px solid var(--line);
  font-weight:650; }
.wb-num { display:inline-block; min-width:30px; color:var(--muted); font-weight:500; }
.wb-lead { font-size:16.5px; margin:4px 0 14px; max-width:980px; }
h3 { font-size:15.5px; margin:18px 0 6px; }
.wb-table-wrap { overflow-x:auto; margin:8px 0 14px; }
.wb-table { border-collapse:collapse; font-size:13.5px; background:#fff; }
.wb-table caption { caption-side:bottom; text-align:left; color:var(--muted); font-size:12.5px;
  padding-top:6px;
  max-width:1000px; }
.wb-table th { text-align:left; font-weight:600; color:#39424d; border-bottom:2px solid #cfd6de;
  padding:6px 10px; white-space:nowrap; background:#f4f6f9; }
.wb-table td { padding:5px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
.wb-table .num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.wb-table tbody tr:hover { background:#f7f9fc; }
.wb-table tr.wb-unmeasured td { color:#8b929b; font-style:italic;
  background:repeating-linear-gradient(135deg,
  #fafafa, #fafafa 6px, #f2f2f2 6px, #f2f2f2 12px); }
.wb-table tr.wb-margin td { background:#f7f8fa; }
.wb-table tr.wb-total td { background:#eef1f5; font-weight:600; }
.wb-table tr.wb-beside td { color:var(--muted); font-style:italic; }
.wb-table tr.wb-zero td { color:#a5acb4; }
.wb-table tr.wb-heldout td { background:#fff8ec; }
.wb-kv td:first-child { color:#4b5560; white-space:nowrap; }
.wb-mono { font-variant-numeric:tabular-nums; white-space:nowrap; }
.wb-dim { color:#8b929b; }
.wb-nowrap { white-space:nowrap; }
.wb-ci { color:var(--muted); font-size:12.5px; }
.wb-badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px;
  font-weight:600;
  white-space:nowrap; letter-spacing:.02em; }
.wb-badge.wb-good { background:var(--good-bg); color:var(--good); }
.wb-badge.wb-warn { background:var(--warn-bg); color:var(--warn); }
.wb-badge.wb-bad { background:var(--bad-bg); color:var(--bad); }
.wb-badge.wb-neutral { background:var(--neutral-bg); color:var(--neutral); }
.wb-badge.wb-muted { background:#eeeeee; color:#777; }
.wb-note { color:var(--muted); font-size:13.5px; }
.wb-cmd, .wb-json { background:#20262e; color:#e8edf2; padding:10px 14px; border-radius:6px;
  overflow-x:auto;
  font:13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  white-space:pre-wrap; overflow-wrap:anywhere; }
.wb-json { max-height:420px; }
code { font:12.5px ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; }
.wb-details { margin:8px 0; }
.wb-details > summary { cursor:pointer; color:var(--accent); font-weight:600; padding:4px 0; }
.wb-figure { margin:10px 0 18px; }
.wb-figure figcaption { color:var(--muted); font-size:12.5px; }
.wb-img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:6px;
  background:#fff; }
.wb-vega-target { background:#fff; border:1px solid var(--line); border-radius:6px; padding:10px;
  display:none; }
.wb-vega-ready .wb-vega-target { display:inline-block; }
.wb-vega-ready .wb-fallback { display:none; }
.wb-vega-failed .wb-vega-target { display:block; color:var(--bad); }
.wb-limits li { margin:6px 0; max-width:1000px; }
.wb-notes { margin:0; padding-left:16px; font-size:12.5px; color:#4b5560; min-width:280px; }
.wb-claim { background:#fff; border:1px solid var(--line); border-left:4px solid var(--neutral);
  border-radius:6px; padding:10px 14px; margin:10px 0; }
.wb-claim-good { border-left-color:var(--good); } .wb-claim-warn { border-left-color:#d49a1c; }
.wb-claim-bad { border-left-color:var(--bad); } .wb-claim-muted { border-left-color:#aaa; }
.wb-claim-head { margin-bottom:6px; }
.wb-claim-body { display:flex; flex-wrap:wrap; gap:6px 24px; align-items:flex-start; }
.wb-claim-body .wb-table-wrap { margin:0; }
.wb-facts thead { display:none; }
.wb-claim .wb-notes { flex:1 1 360px; font-size:13.5px; padding-left:18px; }
.wb-claim .wb-notes li { margin:2px 0; }
.wb-rows td { font-size:12.5px; }
.wb-rows td:last-child { min-width:320px; }
#vg-tooltip-element { font:12.5px -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
@media print { .wb-details { display:block; } .wb-page { padding:0; } }
"""
