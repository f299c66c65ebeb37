"""The section tables: provenance, ledger, census, scorecard, published, offsets, contrasts,
claims, limits and the rows appendix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from workbench.analysis.length import slope_lines
from workbench.analysis.ranks import LIST_LIMIT, basis_text, by_variant, rank_label
from workbench.common import methods
from workbench.common.text import cell_text
from workbench.report import plots
from workbench.report.formats import bounded_interval, interval, num, pct, pval, signed, truncated
from workbench.report.markup import Html, badge, details, drill, esc, join, name_cell, para, table, tag
from workbench.report.model import BUCKET_MEANING, ROWS_LISTED, STATUS_CLASS, VERDICT_CLASS, Report
from workbench.report.prose import human_sentences, limits, self_preference_sentences
from workbench.report.provenance import git_commit, results_sha256, versions
from workbench.report.queries import (
    _cell_key,
    _cell_label,
    _margin,
    contrast_verdict,
    headline_contrasts,
    pooled_cells,
    pooled_offsets,
)


def provenance_tables(r: Report) -> Html:
    """Command line, inputs with sha256 and lines, parameters, versions and git commit."""
    doc, cfg = r.doc, r.cfg
    parts = [tag("h3", "Command"), tag("pre", r.command_line, cls="wb-cmd")]
    parts.append(
        table(
            ["input", "lines", "sha256"],
            [[name_cell(i["path"]), i["lines"], tag("code", i["sha256"])]
             for i in doc["inputs"]],
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
        ("bootstrap", f"{_resamples_text(doc, cfg)}, seed {cfg.seed}"),
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
        rows.append([b, n, pct(n / lines, lines), meaning])
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
    parts.extend(name_warning_tables(doc))
    return join(parts)


def name_warning_tables(doc: Mapping[str, Any]) -> list[Html]:
    """Names that print alike (kept apart) and key values read as both number and string
    (one key), from ``name_warnings``; plus the run's config warnings (a contrast cap)."""
    parts: list[Html] = []
    warns = doc.get("name_warnings") or []
    if warns:
        rows = []
        for w in warns:
            if w["kind"] == "json_type":
                spellings = "; ".join(f"JSON {v['json_type']}: {v['rows']} rows" for v in w["variants"])
            else:
                spellings = "; ".join(f"{ascii(v['text'])}: {v['rows']} rows" for v in w["variants"])
            what = w.get("why") or "JSON number and string"
            rows.append([w["field"], w["value"], what, spellings, w["rule"]])
        parts.append(tag("h3", f"Names that print alike ({len(warns)})"))
        parts.append(table(["field", "name", "differs by", "spellings seen", "rule"], rows))
    cw = doc.get("config_warnings") or []
    if cw:
        parts.append(tag("h3", "Warnings"))
        parts.append(tag("ul", join([tag("li", w) for w in cw])))
    return parts


def _rate_cell(m: Mapping[str, Any]) -> Html:
    if m.get("missing_rate") is None:
        return Html("-")
    return join(
        [
            tag("b", pct(m["missing_rate"], m["judgments"])),
            " ",
            tag(
                "span",
                f"[{pct(m['missing_rate_ci_low'], m['judgments'])}, "
                f"{pct(m['missing_rate_ci_high'], m['judgments'])}]",
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
        "missing / judgments [95% CI]",
    ]

    def row(m: Mapping[str, Any], judge: Any, variant: Any) -> list[Any]:
        return [
            name_cell(judge),
            name_cell(variant),
            m["judgments"],
            m["valid"],
            m["partial"],
            m["empty"],
            m["non_numeric"] + m["out_of_range"] + m["invalid_number"],
            m["missing_planned"],
            m["conflict"],
            _rate_cell(m),
        ]

    margins, m_classes, m_drill = [], [], []
    for m in _margin(doc, kind="judge"):
        margins.append(row(m, m["judge"], tag("i", "all variants")))
        m_classes.append(None)
        m_drill.append(drill(judge=m["judge"]))
    for m in _margin(doc, kind="variant"):
        margins.append(row(m, tag("i", "all judges"), m["variant"]))
        m_classes.append(None)
        m_drill.append(drill(variant=m["variant"]))
    for m in _margin(doc):
        margins.append(row(m, tag("b", "all"), tag("b", "all")))
        m_classes.append("wb-total")
        m_drill.append(None)
    caption = (
        "unusable value = non-numeric, out of range or NaN; held out = conflicting rows; no row = "
        "planned "
        "judgment with no line; missing rate = (judgments - valid) / judgments, planned "
        "judgments with no row included (the one definition every section uses); interval: "
        + (", ".join(sorted({str(c["missing_rate_ci_method"]) for c in doc.get("census", [])
                             if c.get("missing_rate_ci_method")})) or "none")
        + " (Methods)"
    )
    caption += "; click a row for the rows behind it"
    parts = [table(head, margins, numeric=range(2, 10), row_classes=m_classes, caption=caption,
                   row_attrs=m_drill)]
    cells = [row(c, c["judge"], c["variant"]) for c in doc.get("census", [])]
    drills = [drill(judge=c["judge"], variant=c["variant"]) for c in doc.get("census", [])]
    parts.append(
        details(
            f"Every judge x variant cell ({len(cells)})",
            table(head, cells, numeric=range(2, 10), row_attrs=drills, cls="wb-census-cells"),
        )
    )
    tests = doc.get("missingness_tests") or []
    if tests:
        parts.append(tag("h3", "Does the missing rate depend on the judge or the variant?"))
        parts.append(
            table(
                ["factor", "levels", "test", "blocks", "statistic", "p", "missing / judgments by level"],
                [
                    [
                        t["factor"],
                        t["levels"],
                        t["method"].replace("_", " "),
                        _blocks_text(t, r.cfg.alpha),
                        num(t["statistic"]),
                        pval(t["p_value"]),
                        ", ".join(f"{k} {pct(v)}" for k, v in sorted(t["missing_rates"].items())),
                    ]
                    for t in tests
                ],
                numeric=[1, 4, 5],
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


def tip(text: Any, title: str) -> Html:
    """``text`` with its explanation in a ``title`` (shown on hover; dotted underline)."""
    return tag("span", text, cls="wb-tip", title=title)


def _estimate(figure: str, ci: str, split_ci: bool = False) -> Html:
    """An estimate and its interval in one cell: two unbreakable parts that wrap between them
    (``split_ci``: both may also wrap at their spaces, for grids of many columns)."""
    mono = None if split_ci else "wb-mono"
    return join([tag("span", figure, cls=mono), " ", tag("span", ci, cls=mono)])


def _status_badge(status: str) -> Html:
    return badge(status.replace("_", " "), STATUS_CLASS.get(status, "neutral"))


def _rank_cell(rk: Mapping[str, Any] | None) -> Any:
    """The rank (a single rank when the contrasts separate the cell from every other) or its
    interval, marked "not distinguishable"; "-" for a cell that is not measured."""
    if rk is None or rk.get("rank_low") is None:
        return "-"
    if rk["rank_distinguishable"]:
        return rank_label(rk)
    return join([rank_label(rk, "\u2013"), " ", tag("span", "not distinguishable", cls="wb-dim")])


def _tied_cell(rk: Mapping[str, Any] | None) -> Any:
    if rk is None or rk.get("rank_low") is None:
        return ""
    tied = rk.get("tied_with")
    # unlisted past ranks.LIST_LIMIT measured cells; their number is the interval's width
    k = len(tied) if tied is not None else rk["rank_high"] - rk["rank_low"]
    if not k:
        return "separated from every other measured cell"
    if not rk["above"] and not rk["below"] and k > 2:
        return f"every other measured cell ({k}): no contrast separates it"
    if tied is None:
        return f"{k} measured cells (not named: over {LIST_LIMIT} measured cells)"
    text = join([name_cell(x) for x in rk["tied_with"]], ", ")
    missing = rk.get("not_compared") or []
    if not missing:
        return text
    return join([text, " (no contrast computed: ", join([name_cell(x) for x in missing], ", "), ")"])


def scorecard_tables(r: Report) -> Html:
    """The pooled headline table (ranked measured cells, then the rest), then the breakdowns."""
    doc, cfg = r.doc, r.cfg
    hl = r.headline
    conf = f"{cfg.confidence:.0%}"
    cells = plots.scorecard_order(pooled_cells(doc))
    lo, hi = cfg.value_range
    rank_of = by_variant(doc.get("ranks"))
    head = [
        tip("rank", "the interval of ranks the Holm-adjusted contrasts allow"),
        "variant",
        tip(f"{hl} mean (valid/rows) [{conf} CI]", f"mean over valid rows, {conf} interval "
            + (", ".join(sorted({str(c["ci_method"]) for c in doc.get("scorecard") or [] if c.get("ci_method")}))
               or "none") + " (see Methods), clusters: "
            + ("scenarios" if cfg.cluster is None else str(cfg.cluster_name))),
        tip("bootstrap", f"{conf} cluster bootstrap interval"),
        tip("zero-filled (shift)", "zero-filled mean (missing scores as 0) and, in brackets, the shift: "
            "zero-filled minus valid mean"),
        tip(f"if missing were {lo:g}..{hi:g}", "the mean if every missing score were anywhere in the rubric"),
        "scenarios",
        "status",
        "not separated from",
    ]
    body, classes = [], []
    cut = False
    for c in cells:
        measured = c["status"] == "measured"
        rk = rank_of.get(str(c["variant"])) if measured else None
        cut |= truncated(c["ci_low"], c["ci_high"], cfg.value_range)
        mean = (tag("span", f"- (0/{c['rows']})", cls="wb-mono") if c["mean"] is None else
                _estimate(f"{num(c['mean'], cfg.decimals)} ({c['valid_n']}/{c['rows']})",
                          bounded_interval(c['ci_low'], c['ci_high'], cfg.value_range, cfg.decimals)))
        body.append(
            [
                _rank_cell(rk),
                name_cell(c["variant"]),
                mean,
                tag("span", bounded_interval(c.get("boot_low"), c.get("boot_high"), cfg.value_range,
                                             cfg.decimals), cls="wb-mono"),
                tag("span", f"{num(c['zero_filled_mean'], cfg.decimals)} "
                    f"({signed(c['zero_filled_diff'], cfg.decimals)})", cls="wb-mono"),
                tag("span", interval(c["lower_bound"], c["upper_bound"], cfg.decimals), cls="wb-mono"),
                c["clusters"],
                _status_badge(c["status"]),
                _tied_cell(rk),
            ]
        )
        classes.append(None if measured else "wb-unmeasured")
    parts = [
        table(
            head,
            body,
            numeric=[0, 4, 5, 6],
            row_classes=classes,
            cls="wb-scorecard",
            row_attrs=[drill(variant=c["variant"]) for c in cells],
            caption="Means over valid rows only, judges pooled. Zero-filled = what averaging "
            "every judgment in rows (planned-but-absent ones included) with missing scores "
            "as 0 prints (the forensics' zero_filled_planned; its zero_filled divides by the rows "
            f"present only); shift = zero-filled minus valid mean. Cells below {cfg.min_valid_n} "
            "valid or "
            f"{cfg.min_clusters} scenarios are greyed and not ranked. Rank: the "
            + basis_text(doc.get("ranks"))
            + "; a range such as 1\u20133 means the data do not tell which of those ranks the cell "
            "holds (not distinguishable from the cells named in the last column)."
            + (f" * a t bound past the rubric ({lo:g} to {hi:g}), shown at the rubric's end: "
               "the bootstrap interval beside it stays inside." if cut else ""),
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
                    text = cell_text(c, r.cfg.decimals, r.cfg.value_range)
                    figure, _, ci = text.partition(" [")
                    row_cells.append(
                        tag("span", _estimate(figure, "[" + ci, split_ci=True) if ci else text,
                            cls="" if c["status"] == "measured" else "wb-dim")
                    )
            rows_.append(row_cells)
            cls_.append(None)
        return table([first, *col_keys], [[name_cell(x[0]), *x[1:]] for x in rows_],
                     numeric=range(1, 1 + len(col_keys)), cls="wb-wrapnum")

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
                    ["variant", "flagged / rows with flags", f"rate [{conf} CI, scenario-clustered]",
                     "plain Wilson (ignores clustering)"],
                    [
                        [
                            f["variant"],
                            f"{f['flagged']}/{f['n']}",
                            f"{pct(f['rate'])} [{pct(f['ci_low'])}, {pct(f['ci_high'])}]",
                            f"[{pct(f['wilson_low'])}, {pct(f['wilson_high'])}]",
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
                    ["variant", "passes / n", f"rate [{conf} CI, scenario-clustered]",
                     "pass^k [scenario-clustered CI] (items with k outcomes; fewer: listed)", "gate"],
                    [
                        [
                            p["variant"],
                            f"{p['passes']}/{p['n']}",
                            f"{pct(p['rate'])} [{pct(p['ci_low'])}, {pct(p['ci_high'])}]",
                            ("not computed (set pass.k)" if p["k"] is None else
                             f"{num(p['pass_hat_k'])} {interval(p['pass_hat_k_ci_low'], p['pass_hat_k_ci_high'])}"
                             f" (k={p['k']}; {p['units_with_k']} items"
                             + (f"; {p['units_short']} with fewer outcomes: "
                                f"{', '.join(p['units_short_list'][:10])}"
                                + (" ..." if p['units_short'] > 10 else "") if p["units_short"] else "")
                             + ")"),
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
                "ambiguous": p.get("ambiguous"),
                "finding": p.get("finding"),
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
        if c.get("finding"):  # a cell the rows cannot speak to
            near = c["finding"]
        elif c.get("ambiguous"):  # several rules print this value: say why, name none
            near = c["ambiguous"]["why"]
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
            "nearest rule / why ambiguous",
            "valid mean (valid/rows) [CI]",
            "valid - published",
        ],
        rows,
        numeric=[2, 6],
        caption="Rules: valid mean (missing dropped), zero filled (missing = 0), min filled "
        "(missing = "
        "rubric minimum), item mean (judges averaged per item first), all rows (every line as "
        "read, re-runs included: FastChat's rule), zero filled planned "
        "(planned-but-absent judgments also 0), drop sentinels only (every number read except "
        "sentinels, out-of-range kept: FastChat's rule), raw numeric mean (every number read, "
        "sentinels included), harness (the preset's harness figure as the harness prints it) and "
        "harness rescaled (the same figure as a percent or a fraction). Matched at the printed precision.",
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
               "drop_sentinels_only", "raw_numeric_mean", "harness", "harness_rescaled")


def offsets_tables(r: Report) -> Html:
    """Judge offsets on shared items with agreement statistics: pooled, then per variant/subset.
    The intervals and tests kept beside (CR1, bootstrap, and two that ignore clustering) are in
    their own table under a details, so the main one fits the page."""
    offs = r.doc.get("judge_offsets") or []
    selfp = [para(text) for text in [*human_sentences(r), *self_preference_sentences(r),
                                      *slope_lines(r.doc.get("length"), r.doc.get("value_unit"))]]
    if not offs:
        return join(selfp) if selfp else Html("")
    head = [
        "judges a - b",
        "scope",
        tip("shared items (only a / b)", "items both judges scored validly; in brackets the items "
            "just one judge scored validly (only a / only b), left out of the offset"),
        "mean a - b [CR2 clustered t CI]",
        tip("p / sign-flip p", "p of the CR2 clustered t test / of the sign-flip test"),
        "exact / within 1",
        tip("kappa", "quadratic-weighted Cohen's kappa"),
        tip("alpha", "Krippendorff's alpha (interval)"),
        "Spearman",
    ]
    beside_head = [
        "judges a - b",
        "scope",
        "CR1 clustered t CI",
        "cluster bootstrap CI",
        "paired t CI (ignores clustering)",
        "Wilcoxon p (ignores clustering)",
    ]

    def scope(o: Mapping[str, Any]) -> str:
        return (
            "all variants"
            if o["variant"] is None and o["subset"] is None
            else (f"{o['variant']}" if o["variant"] is not None else f"{o['subset']} subset")
        )

    def judges(o: Mapping[str, Any]) -> Html:
        return join([name_cell(o["judge_a"]), Html("<br>- "), name_cell(o["judge_b"])])

    def row(o: Mapping[str, Any]) -> list[Any]:
        return [
            judges(o),
            name_cell(scope(o)),
            f"{o['pairs']} ({o['only_a']} / {o['only_b']})",
            _estimate(signed(o["mean_diff"]), interval(o["ci_low"], o["ci_high"], sign=True)),
            f"{pval(o.get('p'))} / {pval(o.get('p_sign_flip'))}",
            f"{pct(o['exact_agreement'])} / {pct(o['within_one'])}",
            num(o["kappa_quadratic"]),
            num(o["krippendorff_alpha"]),
            num(o["spearman"]),
        ]

    def beside(o: Mapping[str, Any]) -> list[Any]:
        return [
            judges(o),
            name_cell(scope(o)),
            interval(o.get("cr1_ci_low", o.get("clustered_ci_low")),
                     o.get("cr1_ci_high", o.get("clustered_ci_high")), sign=True),
            interval(o.get("boot_low"), o.get("boot_high"), sign=True),
            interval(o["t_ci_low"], o["t_ci_high"], sign=True),
            pval(o["wilcoxon_p"]),
        ]

    pooled = pooled_offsets(r.doc)
    rest = [o for o in offs if not (o["variant"] is None and o["subset"] is None)]
    parts = [
        table(
            head,
            [row(o) for o in pooled],
            numeric=[2, 4, 5, 6, 7, 8],
            caption="shared items: items both judges scored validly (in brackets: only a / only b, "
            "items just one judge scored validly, left out of the offset); kappa = quadratic-weighted "
            "Cohen's kappa; alpha = Krippendorff's alpha (interval). The CR1 and bootstrap intervals "
            "and the tests that ignore clustering are beside, below.",
        )
    ]
    if rest:
        parts.append(
            details(
                "Per variant and per subset",
                table(head, [row(o) for o in rest], numeric=[2, 4, 5, 6, 7, 8]),
            )
        )
    parts.append(
        details(
            "Beside: CR1 and bootstrap intervals, paired t and Wilcoxon (ignore clustering)",
            table(beside_head, [beside(o) for o in [*pooled, *rest]], numeric=[2, 3, 4, 5]),
        )
    )
    return join([*parts, *selfp])


def contrasts_table(r: Report) -> Html:
    """Variant contrasts on the headline: intervals, paired, leave-one-out, MDE, verdict."""
    cfg = r.cfg
    conf = f"{cfg.confidence:.0%}"
    head = [
        tip("a - b (valid n)", "the contrast, and under it the valid rows of a vs b"),
        f"difference [{conf} CI]",
        tip("paired [CI] (matched)", "the difference on matched units, its interval, and in "
            "brackets the number of matched units"),
        tip("leave one scenario out", "the range of the difference with any one scenario left out"),
        "p (Holm)",
        tip("MDE", f"minimum detectable effect at {cfg.power:.0%} power, alpha {cfg.alpha:g}"),
        tip("n needed per side", f"valid rows per side for the target effect {cfg.target_effect:g}, "
            "if the extra rows were as independent as new scenarios"),
        tip("scenarios needed", "the unit that limits power; hover a number for the statement "
            "(more trials on the same scenarios cannot exceed its ceiling)"),
        "verdict",
    ]

    def power_cell(c: Mapping[str, Any]) -> Any:
        if c.get("power_statement") is None:
            return "-"
        sn = c.get("scenarios_needed")
        return tip("-" if sn is None else str(sn), c["power_statement"])

    def row(c: Mapping[str, Any]) -> list[Any]:
        label, kind = contrast_verdict(c, cfg.alpha, cfg.target_effect)
        return [
            join([name_cell(c["a"]), Html("<br>- "), name_cell(c["b"]), " ",
                  tag("span", f"{c['valid_n_a']} vs {c['valid_n_b']} valid", cls="wb-sub")]),
            tag("span", f"{signed(c['diff'])} {interval(c['ci_low'], c['ci_high'], sign=True)}",
                cls="wb-mono"),
            join([tag("span", f"{signed(c['paired_diff'])} "
                      f"{interval(c['paired_ci_low'], c['paired_ci_high'], sign=True)}", cls="wb-mono"),
                  " ", tag("span", f"({c['matched']})", cls="wb-mono")]),
            tag("span", interval(c["loo_min"], c["loo_max"], sign=True), cls="wb-mono"),
            pval(c.get("p_holm")),
            num(c["mde"]),
            "-" if c.get("n_needed") is None else c["n_needed"],
            power_cell(c),
            tag("span", name_cell(label), cls=f"wb-badge wb-{kind} wb-wrap"),
        ]

    cs = headline_contrasts(r.doc)
    if not cs:
        return Html("")
    parts = [
        table(
            head,
            [row(c) for c in cs],
            numeric=range(1, 8),
            cls="wb-wrapnum wb-contrasts",
            caption="Difference of valid means with a clustered interval (scenarios as clusters: CR2 "
            "standard error, t with Bell-McCaffrey degrees of freedom; the CR1 t(G - 1) interval is "
            "in results.json as cr1_ci_low/cr1_ci_high); paired on "
            + ("matched (scenario, trial, judge) rows (trials declared matched)" if cfg.trials_matched
               else "matched (scenario, judge) units, trials averaged")
            + f". MDE = the difference detectable with "
            f"{cfg.power:.0%} power at alpha {cfg.alpha:g}; n needed = valid rows per side for the "
            f"target effect {cfg.target_effect:g} if the extra rows were as independent as new "
            "scenarios; scenarios needed = the unit that limits power (more trials on the same "
            "scenarios cannot exceed the ceiling its hover text states: the scenarios and the "
            "trials per scenario the stated power needs).",
        )
    ]
    for subset in cfg.subsets:
        sub = headline_contrasts(r.doc, subset)
        if sub:
            parts.append(
                details(
                    f"{subset} subset",
                    table(head, [row(c) for c in sub], numeric=range(1, 8), cls="wb-wrapnum wb-contrasts"),
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
                    "verdict read on"
                    + (f" [{c['verdict_confidence']:.2%} Holm, {c['verdict_family']} claims]"
                       if c.get("verdict_confidence") is not None else ""),
                    interval(c.get("verdict_ci_low"), c.get("verdict_ci_high"), sign=True),
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
            f"{hl}__status",
            "reason",
            "verdict",
        )
        if c in rows.columns
    ]
    head = listed_rows(rows, limit).select(cols)
    body, classes = [], []
    for rec in head.iter_rows(named=True):
        where = (
            "-" if rec.get("file") is None else f"{Path(str(rec['file'])).name}:{rec.get('line')}"
        )
        raw = rec.get(f"{hl}__raw")
        reason = rec.get("reason")
        status = rec.get(f"{hl}__status")
        if reason is None and rec.get("bucket") != "valid" and status not in (None, "valid"):
            reason = f"{hl} {status}"  # e.g. a partial row: why it is held out of the headline
        verdict = rec.get("verdict")
        if verdict is not None and len(str(verdict)) > 240:
            verdict = str(verdict)[:239] + "\u2026"
        body.append(
            [
                name_cell(where),
                rec.get("bucket"),
                name_cell(rec.get("scenario")),
                name_cell(rec.get("variant")),
                rec.get("trial"),
                name_cell(rec.get("judge")),
                "-" if raw is None else f"{raw:g}",
                reason,
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
        table_attrs={"data-total": rows.height, "data-cell-totals": json.dumps(cell_totals(rows), sort_keys=True)},
    )
    summary = f"Show {len(body)} of {rows.height} rows"
    if len(body) < rows.height:
        summary += " (every judge x variant cell listed, its held-out rows first; rows.parquet has every row)"
    return details(summary, tbl)


def listed_rows(rows: pl.DataFrame, limit: int = ROWS_LISTED) -> pl.DataFrame:
    """The rows the appendix lists when there are more than ``limit``: an equal share per
    (judge, variant) cell, taken in turn (the k-th row of every cell before the k+1-th of
    any), within a cell its held-out rows (any bucket but ``valid``) first, then in file
    order; shown in file order. So a drill-down into any census cell finds that cell's rows,
    and the rows a reader most needs to see (what was held out, and why) come first. All
    rows when there are at most ``limit``."""
    if rows.height <= limit:
        return rows
    idx = pl.int_range(pl.len(), dtype=pl.Int64)
    held_last = (pl.col("bucket") == "valid").fill_null(False).cast(pl.Int64) * rows.height
    ranked = rows.with_columns(idx.alias("__i"))
    ranked = ranked.with_columns((held_last + pl.col("__i")).rank("ordinal").over(["judge", "variant"]).alias("__k"))
    keep = ranked.sort(["__k", "__i"]).head(limit).sort("__i")
    return keep.drop("__i", "__k")


def cell_totals(rows: pl.DataFrame) -> dict[str, int]:
    """Rows per drill-down target, for the drill-down note ("shown 40 of 3,000"): keys
    ``judge\x1fvariant``, ``judge\x1f`` (a judge, all variants) and ``\x1fvariant``; a null
    judge or variant is the empty string."""
    out: dict[str, int] = {}
    for by, key in ((["judge", "variant"], lambda j, v: f"{j}\x1f{v}"), (["judge"], lambda j: f"{j}\x1f"),
                    (["variant"], lambda v: f"\x1f{v}")):
        for *k, n in rows.group_by(by).len().iter_rows():
            out[key(*("" if x is None else str(x) for x in k))] = int(n)
    return out




def _span(values: Sequence[int]) -> str:
    vals = sorted(set(values))
    if not vals:
        return "-"
    return str(vals[0]) if len(vals) == 1 else f"{vals[0]} to {vals[-1]}"


def _blocks_text(t: Mapping[str, Any], alpha: float) -> str:
    """The exchangeable units a missingness test permuted, and whether it could reject at all."""
    if t.get("blocks") is None:
        return "-"
    unit = str(t.get("unit") or "unit").replace("_", " ")
    text = f"{t['blocks']} {unit}s ({t.get('informative_blocks')} informative)"
    if t.get("cannot_reject"):
        text += f"; cannot reject at {alpha:.0%} (smallest attainable p {t['min_p']:.2g})"
    return text


def _df_span(dfs: Sequence[Any]) -> str:
    vals = sorted(float(d) for d in dfs if d is not None)
    if not vals:
        return "-"
    return f"{vals[0]:.1f}" if vals[0] == vals[-1] else f"{vals[0]:.1f} to {vals[-1]:.1f}"


def _ranks_on(ranks: Mapping[str, Any] | None) -> str:
    if not ranks:
        return "-"
    single = sum(1 for c in ranks["cells"] if c.get("rank_distinguishable"))
    return (f"{ranks['measured']} measured cells, {ranks['pairs_compared']} of {ranks['pairs_possible']} "
            f"pairs with a contrast; {single} with a single rank")


def _resamples_text(doc: Mapping[str, Any], cfg: Any) -> str:
    """The resamples the joint bootstrap used, and why when fewer than asked (its budget)."""
    boot = doc.get("bootstrap") or {}
    used = boot.get("resamples", cfg.resamples)
    if used == cfg.resamples:
        return f"{used} resamples"
    return (f"{used} resamples ({cfg.resamples} asked; bootstrap.budget {boot.get('budget')} resamples x "
            f"scenarios over {boot.get('scenarios')} scenarios)")


_SIGN_FLIP_FORMS = {"exact": "exact (all 2^G patterns)", "monte_carlo": "Monte-Carlo",
                    "asymptotic": "large-sample normal form"}


def _sign_flip_on(doc: Mapping[str, Any]) -> str:
    """How many judge-offset records used each form of the sign-flip test (and its draws)."""
    recs = [o for o in doc.get("judge_offsets") or [] if o.get("sign_flip_method")]
    parts = []
    for method, label in _SIGN_FLIP_FORMS.items():
        mine = [o for o in recs if o["sign_flip_method"] == method]
        if not mine:
            continue
        text = f"{label}: {len(mine)} of {len(recs)} records on {_span([o['clusters'] for o in mine])} scenarios"
        if method == "monte_carlo":
            text += f", {_span([o['sign_flip_resamples'] for o in mine if o.get('sign_flip_resamples')])} patterns"
        parts.append(text)
    return "; ".join(parts) or "-"


def _computed_on(r: Report) -> dict[str, str]:
    """What each method (by its recorded name) was computed on in this run, where the run's
    records say more than the number of records (:func:`methods_rows`)."""
    doc, cfg = r.doc, r.cfg
    conf = f"{cfg.confidence:.0%}"
    cells = pooled_cells(doc)
    offsets = pooled_offsets(doc)
    cs = headline_contrasts(doc)
    unit = "scenarios" if cfg.cluster is None else f"clusters ({cfg.cluster_name})"
    on = {
        "cluster_t": f"{conf}; beside each scorecard cell, offset and contrast",
        "cluster_cr2_bm": f"{conf}; pooled {r.headline} cells on {_span([c['clusters'] for c in cells])} "
        f"{unit} (Bell-McCaffrey df {_df_span([c.get('df') for c in cells])}); {len(offsets)} pooled "
        f"offsets, {len(cs)} contrasts on {_span([int(c['cr1_df']) + 1 for c in cs if c.get('cr1_df')])} "
        f"{unit}; Bell-McCaffrey df {_df_span([c.get('df') for c in cs] + [o.get('df') for o in offsets])}",
        "joint_cluster_bootstrap_multinomial": f"{conf}; {_resamples_text(doc, cfg)}, seed {cfg.seed}; "
        f"offsets on {_span([o['clusters'] for o in offsets])} {unit}",
        "wilson_design_effect_t": f"{conf}; per judge x variant cell (denominator: judgments, planned "
        "ones with no row included), per variant for flag and pass rates" + _pooled_deff_text(doc),
        "holm": f"alpha {cfg.alpha:g}; {len(cs)} contrasts in the all-scenario family",
        "ranks_holm_contrasts": _ranks_on(doc.get("ranks")),
        "mde": f"power {cfg.power:g}, alpha {cfg.alpha:g}; target effect {cfg.target_effect:g}",
        "kappa_quadratic": f"{len(offsets)} judge pairs",
        "fisher_exact": f"alpha {cfg.alpha:g}",
    }
    paired = [c for c in cs if c.get("paired_diff") is not None]
    if paired:
        units = sorted({str(c["paired_unit"]).replace("_", " x ") for c in paired if c.get("paired_unit")})
        on["cluster_cr2_bm"] += (f"; {len(paired)} of {len(cs)} contrasts also paired on matched "
                                 f"({', '.join(units)}) units")
    for form in _SIGN_FLIP_FORMS:
        text = _sign_flip_on({"judge_offsets": [o for o in doc.get("judge_offsets") or []
                                                if o.get("sign_flip_method") == form]})
        if text != "-":
            on[f"sign_flip_{form}"] = text
    for t in doc.get("missingness_tests", []):
        text = f"{t['factor']}: {t['levels']} levels over judgments"
        if t.get("blocks") is not None:
            text += f", {_blocks_text(t, cfg.alpha)}"
        on[t["method"]] = f"{on[t['method']]}; {text}" if t["method"] in on else text
    for pk_method in sorted({p["pass_hat_k_ci_method"] for p in doc.get("pass_rates") or []
                             if p.get("pass_hat_k_ci_method")}):
        pk = [p for p in doc.get("pass_rates") or [] if p.get("pass_hat_k_ci_method") == pk_method]
        text = f"{conf}; k = {pk[0]['k']}; {len(pk)} pass^k intervals"
        on[pk_method] = f"{on[pk_method]}; {text}" if pk_method in on else text
    verdicts = [c for c in doc.get("claims") or [] if c.get("verdict_ci_method")]
    if verdicts:
        levels = sorted({c["verdict_confidence"] for c in verdicts})
        on["holm_stepdown_cr2_bm"] = (f"family error rate {1 - cfg.confidence:.2g}; {len(verdicts)} claims "
                                      f"with a p in one family; levels {levels[0]:.2%}"
                                      + (f" to {levels[-1]:.2%}" if len(levels) > 1 else ""))
    return on


def _pooled_deff_text(doc: Mapping[str, Any]) -> str:
    pooled = [c for c in [*(doc.get("census") or []), *(doc.get("census_margins") or [])]
              if c.get("missing_rate_design_effect_from") == "pooled"]
    if not pooled:
        return ""
    return f"; {len(pooled)} missing rates at 0 or 1 took the pooled design effect of their table"


def methods_rows(r: Report) -> list[tuple[str, list[str]]]:
    """The Methods table's rows: (recorded method name, [what, method, computed on, reference]),
    one per method the run recorded (:func:`workbench.common.methods.recorded`), none other."""
    on = _computed_on(r)
    rows = []
    for name, places in methods.recorded(r.doc).items():
        m = methods.VOCABULARY.get(name) or methods.Method("not described (a defect of the workbench: report it)", "-")
        what = "; ".join(dict.fromkeys(methods.place_label(p) for p in places))
        counts = ", ".join(f"{methods.place_label(p)}: {n}" for p, n in places.items())
        rows.append((name, [what, m.description, on.get(name, f"{counts} record(s)"), m.reference]))
    return rows


def methods_table(r: Report) -> Html:
    """Each interval and test the run used, with its reference and what it was computed on:
    built from the method names results.json records, so it names every method the numbers
    come from and no other."""
    cfg = r.cfg
    rows = methods_rows(r)
    return table(["what", "method", "computed on", "reference"], [row for _, row in rows],
                 row_attrs=[{"data-method": name} for name, _ in rows],
                 caption="Every interval and test respects the design: judges rate the same "
                 "items and trials repeat scenarios, so scenarios are the clusters."
                 if cfg.cluster is None else
                 "Every interval and test respects the design: judges rate the same items, trials "
                 f"repeat scenarios and scenarios share a {cfg.cluster_name}, so each "
                 f"{cfg.cluster_name} is one cluster (config cluster:).")
