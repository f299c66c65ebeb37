"""The report: rendered HTML is offline, escaped, reproducible; helpers escape by construction."""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench import report
from workbench.cli import main as cli

XSS = "<script>alert(1)</script>"
MARKUP_VARIANT = 'v<i>&"q'
FIGURES = ("missing_heatmap", "scorecard_forest", "offset_histograms", "contrasts")
FAST = ["--resamples", "200", "--quiet"]


def write_synthetic(folder: Path, seed: int = 7) -> dict[str, str]:
    """A small judge-row file (2 judges, 3 variants, 6 scenarios, 2 trials) and its config.

    judge-b drops ``overall`` on about a quarter of its rows; one verdict is a script tag and
    one variant name holds markup, so escaping shows; the last line is not JSON.
    """
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for s in range(6):
        for v in ("base", "tuned", MARKUP_VARIANT):
            for t in (1, 2):
                for j in ("judge-a", "judge-b"):
                    row = {
                        "scenario": f"s{s}",
                        "variant": v,
                        "trial": t,
                        "judge": j,
                        "correctness": rng.randint(4, 9),
                        "honesty": rng.randint(4, 9),
                        "overall": rng.randint(4, 10) + (1 if v == "tuned" else 0) // 2,
                        "fabrication_flags": [],
                        "verdict": "fine",
                    }
                    if j == "judge-b" and rng.random() < 0.25:
                        del row["overall"]
                    lines.append(row)
    lines[0]["verdict"] = XSS
    text = "\n".join(json.dumps(r) for r in lines) + "\n{not json\n"
    rows = folder / "rows.jsonl"
    rows.write_text(text, encoding="utf-8")
    cfg = folder / "config.yaml"
    cfg.write_text(
        "scores: {overall: overall, correctness: correctness, honesty: honesty}\n", encoding="utf-8"
    )
    return {"rows": str(rows), "config": str(cfg)}


def once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]
) -> Path:
    """A folder ``make`` fills exactly once per test run, even when xdist workers share the tests.

    Renders take seconds; a module fixture would run once per worker that gets a test of the
    module. Workers of one run share ``getbasetemp().parent``; a lock file serialises them.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".done").exists():
            folder.mkdir(parents=True, exist_ok=True)
            result = make(folder)
            (folder / ".done").write_text(json.dumps(result), encoding="utf-8")
    return folder


def _render_runs(base: Path) -> dict[str, int]:
    data = write_synthetic(base / "data")
    args = [data["rows"], "--config", data["config"], *FAST]
    return {
        "a": cli.main(["report", *args, "--out", str(base / "a")]),
        "b": cli.main(["report", *args, "--out", str(base / "b")]),
        "analyze": cli.main(["analyze", *args, "--out", str(base / "analyze")]),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Two report runs and one analyze run on the same inputs and parameters."""
    base = once(tmp_path_factory, "report-runs", _render_runs)
    codes = json.loads((base / ".done").read_text(encoding="utf-8"))
    html = (base / "a" / "report.html").read_text(encoding="utf-8")
    return {"base": base, "codes": codes, "html": html}


def test_exit_codes(runs: dict) -> None:
    assert runs["codes"] == {"a": 0, "b": 0, "analyze": 0}


def test_outputs_written(runs: dict) -> None:
    out = runs["base"] / "a"
    for name in ("report.html", "report.ipynb", "results.json", "rows.parquet", "run.json"):
        assert (out / name).is_file(), name
    for fig in FIGURES:
        for ext in ("png", "svg"):
            p = out / "figures" / f"{fig}.{ext}"
            assert p.is_file() and p.stat().st_size > 1000, p
    assert not (out / "figures" / "published_dumbbell.png").exists(), (
        "no --published, so no dumbbell"
    )


def test_no_outside_resources(runs: dict) -> None:
    html = runs["html"]
    assert report.external_references(html) == []
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"<link\b", html, re.IGNORECASE)
    assert not re.search(r"@import", html)
    assert "require.js" not in html and "MathJax" not in html and "cdn." not in html.lower()


def test_input_strings_escaped(runs: dict) -> None:
    html = runs["html"]
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # the exporter re-serialises the page, so a quote in text may come back unescaped (still text)
    assert re.search(r'v&lt;i&gt;&amp;(?:&quot;|")q', html)
    assert MARKUP_VARIANT not in html and "<i>&" not in html


def test_code_hidden_and_sections_present(runs: dict) -> None:
    html = runs["html"]
    assert "wr.build(" not in html and "import workbench" not in html
    for key, _ in report.SECTIONS:
        assert f'id="{key}"' in html, key
    assert "wb-vega-spec" in html and "window.vegaEmbed" in html, (
        "interactive charts and their inlined bundle"
    )


def test_results_json_same_as_analyze(runs: dict) -> None:
    base = runs["base"]
    assert (base / "a" / "results.json").read_bytes() == (
        base / "analyze" / "results.json"
    ).read_bytes()


def test_notebook_reproduces_results_json(runs: dict) -> None:
    assert 'wb-good">identical</span>' in runs["html"]
    assert "DIFFERS" not in runs["html"]


def test_two_runs_identical(runs: dict) -> None:
    a, b = runs["base"] / "a", runs["base"] / "b"
    assert (a / "results.json").read_bytes() == (b / "results.json").read_bytes()
    for fig in FIGURES:
        assert (a / "figures" / f"{fig}.svg").read_bytes() == (
            b / "figures" / f"{fig}.svg"
        ).read_bytes(), fig
        assert (a / "figures" / f"{fig}.png").read_bytes() == (
            b / "figures" / f"{fig}.png"
        ).read_bytes(), fig


def test_svg_has_no_date(runs: dict) -> None:
    svg = (runs["base"] / "a" / "figures" / "scorecard_forest.svg").read_text(encoding="utf-8")
    assert "<dc:date>" not in svg


def test_bad_input_exits_2_without_rendering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(
        ["report", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out"), "--quiet"]
    )
    assert code == cli.EXIT_INPUT
    assert "nope.jsonl" in capsys.readouterr().err
    assert not (tmp_path / "out" / "report.html").exists()


# --------------------------------------------------------------------------- helpers, no rendering


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> report.Report:
    base = tmp_path_factory.mktemp("built")
    data = write_synthetic(base)
    return report.build(
        [data["rows"]], config=data["config"], resamples=200, out=str(base / "out"), write_outputs=False
    )


def test_table_escapes_cells_but_not_trusted_html() -> None:
    html = report.table(["<h>"], [[XSS], [report.tag("b", XSS)]])
    assert XSS not in html
    assert html.count("&lt;script&gt;") == 2
    assert "<b>&lt;script&gt;" in html


def test_tag_escapes_attributes() -> None:
    html = report.tag("span", "x", cls='a"b', title="<t>")
    assert 'class="a&quot;b"' in html and 'title="&lt;t&gt;"' in html


def test_json_in_script_cannot_close_it() -> None:
    text = report._json_script({"v": "</script><script>alert(1)</script>", "a": "&"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["v"].startswith("</script>")


def test_external_references_detects_cdn() -> None:
    page = (
        '<script src="https://cdn.example.org/require.js"></script><link '
        'href="//fonts.example/x.css">'
        "<style>@import url('https://x/y.css');</style><img src=\"data:image/png;base64,AAAA\">"
    )
    found = report.external_references(page)
    assert len(found) == 3
    assert (
        report.external_references('<a href="#census">x</a><img src="data:image/png;base64,A">')
        == []
    )


def test_leads_say_what_was_found(built: report.Report) -> None:
    doc = built.doc
    total = next(m for m in doc["census_margins"] if m["judge"] is None and m["variant"] is None)
    assert built.leads["census"].startswith(f"{total['missing']} of {total['judgments']} judgments")
    assert "judge-b misses" in built.leads["census"]
    assert built.leads["ledger"].startswith(f"All {doc['ledger']['lines']} lines are accounted for")
    assert "no plan was given" in built.leads["ledger"]
    assert "No published scorecard" in built.leads["published"]
    assert "No claims file" in built.leads["claims"]
    assert set(built.leads) == {k for k, _ in report.SECTIONS}


def test_header_and_sections_escape_variant(built: report.Report) -> None:
    for part in (
        report.header(built),
        report.scorecard_tables(built),
        report.census_tables(built),
        report.contrasts_table(built),
        report.rows_appendix(built),
    ):
        assert MARKUP_VARIANT not in part
    assert "&lt;script&gt;" in report.rows_appendix(built)


def test_limits_are_generated(built: report.Report) -> None:
    items = report.limits(built)
    assert any("No plan was given" in i for i in items)
    assert any("200 resamples" in i for i in items)
    assert any("malformed" in i for i in items)


def test_contrast_verdicts() -> None:
    """The label reads the analysis' judgment (paired.contrast_call), computed here by hand."""
    from workbench.analysis.paired import contrast_call

    def verdict(c: dict) -> str:
        return report.contrast_verdict({**c, **contrast_call(c, 0.05, 0.5)})[0]

    c = {"a": "x", "b": "y", "ci_low": 0.2, "ci_high": 1.0, "p_holm": 0.01, "mde": 0.3}
    assert contrast_call(c, 0.05, 0.5) == {"higher": "x", "holm_significant": True, "underpowered": False}
    assert report.contrast_verdict({**c, **contrast_call(c, 0.05, 0.5)}) == ("x higher", "good")
    assert verdict({**c, "p_holm": 0.2}) == "x higher before Holm only"
    assert verdict({**c, "ci_low": -1.0, "ci_high": -0.1}) == "y higher"
    assert verdict({**c, "ci_low": -0.1, "mde": 0.9}) == "no clear difference (underpowered)"
    assert verdict({**c, "ci_low": -0.1}) == "no clear difference"
    assert verdict({**c, "ci_low": None}) == "no interval"
    # without the recorded judgment the report decides nothing: a bare interval is no clear difference
    assert report.contrast_verdict(c)[0] == "no clear difference"


def test_command_for_reproduces_flags() -> None:
    cmd = report.command_for(
        {
            "inputs": ["a b.jsonl"],
            "out_dir": "out",
            "config": "c.yaml",
            "preset": None,
            "plan": None,
            "published": None,
            "claims": None,
            "min_valid_n": 12,
            "min_clusters": None,
            "seed": 3,
            "resamples": None,
            "params": [["confidence", "0.9"]],
        }
    )
    assert cmd == (
        "workbench report 'a b.jsonl' --out out --config c.yaml --min-valid-n 12 --seed 3 "
        "-p confidence 0.9"
    )


def test_build_uses_cli_overrides(tmp_path: Path) -> None:
    over = report.overrides(
        [["confidence", "0.9"], ["bootstrap.seed", "5"]], min_valid_n=4, resamples=100
    )
    assert over == {"confidence": 0.9, "bootstrap": {"seed": 5, "resamples": 100}, "min_valid_n": 4}


def test_git_commit_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert report.git_commit(tmp_path) is None  # not a repository
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert report.git_commit() is None


def test_versions_listed() -> None:
    v = report.versions()
    assert v["python"] and v["workbench"] and v["matplotlib"]


def test_rates_print_with_the_precision_their_n_needs() -> None:
    assert report.pct(3 / 1024, 1024) == "0.3%"  # not "0%"
    assert report.pct(3 / 1024) == "0.3%"
    assert report.pct(1 / 5000, 5000) == "0.02%"
    assert report.pct(66 / 294, 294) == "22%"
    assert report.pct(0.0, 1024) == "0%" and report.pct(1.0, 10) == "100%"
    assert report.pct(1023 / 1024, 1024) == "99.9%"  # a rate below 1 never prints as 100%
    assert report.pct(None) == "-"


def test_intervals_never_silently_past_the_rubric() -> None:
    from workbench.report.formats import bounded_interval

    assert bounded_interval(8.96, 10.08, (1, 10)) == "[8.96, 10.00*]"
    assert bounded_interval(0.5, 3.0, (1, 10)) == "[1.00*, 3.00]"
    assert bounded_interval(2.0, 3.0, (1, 10)) == "[2.00, 3.00]"
    assert bounded_interval(None, 3.0, (1, 10)) == "[no interval]"


def test_methods_name_each_interval_with_reference_and_clusters(built: report.Report) -> None:
    html = report.methods_table(built)
    for ref in ("Cameron &amp; Miller (2015)", "Wilson (1927)", "Holm (1979)", "Field &amp; Welsh (2007)"):
        assert ref in html, ref
    cells = report.pooled_cells(built.doc)
    lo, hi = min(c["clusters"] for c in cells), max(c["clusters"] for c in cells)
    assert (f"on {lo} to {hi} scenarios" if lo != hi else f"on {lo} scenarios") in html
    assert f"{built.cfg.resamples} resamples" in html
    assert "methods" in dict(report.SECTIONS) and "methods" in built.leads


def test_rows_listing_takes_every_cell_in_turn_held_out_rows_first() -> None:
    """Above the listing limit each (judge, variant) cell gets its share, held-out rows first
    (checked against a plain round-robin written here), shown in file order; totals per
    drill-down target count every row, listed or not."""
    import polars as pl

    from workbench.report.tables import cell_totals, listed_rows

    rng = random.Random(3)
    recs = []
    for i in range(400):
        j, v = rng.choice(["j1", "j2", None]), rng.choice(["a", "b", "c", "rare"] if i % 50 == 0 else ["a", "b", "c"])
        recs.append({"judge": j, "variant": None if j is None else v,
                     "bucket": rng.choice(["valid"] * 6 + ["partial", "malformed", "conflict"]), "i": i})
    rows = pl.DataFrame(recs)
    got = listed_rows(rows, 50)["i"].to_list()
    # naive: per cell, held-out rows then valid rows, each in file order; take rank 0 of every
    # cell (in file order of ties), then rank 1, ... until 50
    cells: dict[tuple, list[dict]] = {}
    for r in recs:
        cells.setdefault((r["judge"], r["variant"]), []).append(r)
    queues = {k: [r["i"] for r in v if r["bucket"] != "valid"] + [r["i"] for r in v if r["bucket"] == "valid"]
              for k, v in cells.items()}
    ranked = sorted((k, i) for q in queues.values() for k, i in enumerate(q))
    want = sorted(i for _, i in ranked[:50])
    assert got == want
    listed = {(recs[i]["judge"], recs[i]["variant"]) for i in got}
    assert listed == set(cells), "every cell has a listed row"
    assert listed_rows(rows, 1000).height == 400
    totals = cell_totals(rows)
    assert totals["j1\x1fa"] == sum(1 for r in recs if (r["judge"], r["variant"]) == ("j1", "a"))
    assert totals["j2\x1f"] == sum(1 for r in recs if r["judge"] == "j2")
    assert totals["\x1fb"] == sum(1 for r in recs if r["variant"] == "b")


def test_rows_listing_says_why_a_partial_row_is_held_out(built: report.Report) -> None:
    """A row held out of the headline with no reason of its own (``partial``: the headline is
    absent, sub-scores present) says so in the reason column instead of a blank."""
    import polars as pl

    rows = built.analysis.rows
    hl = built.headline
    partial = rows.filter((pl.col("bucket") == "partial") & pl.col("reason").is_null())
    assert partial.height, "the fixture has partial rows without a reason"
    html = str(report.rows_appendix(built))
    status = partial[f"{hl}__status"][0]
    assert f"<td>{hl} {status}</td>" in html


def test_methods_name_the_sign_flip_form_each_offset_used() -> None:
    from workbench.report.tables import _sign_flip_on

    doc = {"judge_offsets": [
        {"sign_flip_method": "exact", "clusters": 12, "sign_flip_resamples": None},
        {"sign_flip_method": "monte_carlo", "clusters": 150, "sign_flip_resamples": 10000},
        {"sign_flip_method": "asymptotic", "clusters": 3123, "sign_flip_resamples": None},
        {"sign_flip_method": "asymptotic", "clusters": 3332, "sign_flip_resamples": None},
        {"sign_flip_method": None, "clusters": 1, "sign_flip_resamples": None},  # undefined test
    ]}
    assert _sign_flip_on(doc) == (
        "exact (all 2^G patterns): 1 of 4 records on 12 scenarios; "
        "Monte-Carlo: 1 of 4 records on 150 scenarios, 10000 patterns; "
        "large-sample normal form: 2 of 4 records on 3123 to 3332 scenarios")
    assert _sign_flip_on({"judge_offsets": []}) == "-"


def test_notebook_outputs_read_well_untrusted_and_the_page_uses_the_class_copy() -> None:
    """Issue 26: JupyterLab drops <style> from an untrusted notebook's outputs ("3Null census",
    centred notes, bare tables): the text/html output carries inline styles, the page is built
    from the class-based copy, and no text or tag changes between the two."""
    import re as _re

    from workbench.report.export import notebook_fragments
    from workbench.report.markup import FRAGMENT_MIME, Html, inline_styles, table

    frag = Html('<h2 id="census" class="wb-h2"><span class="wb-num">3</span>Null census</h2>'
                '<p class="wb-lead">note</p><script>var s = "<td>";</script>'
                + str(table(["variant", "n"], [["a<b", 3]], numeric=[1], caption="why")))
    bundle = frag._repr_mimebundle_()
    assert bundle[FRAGMENT_MIME] == str(frag)
    inline = bundle["text/html"]
    assert inline == inline_styles(str(frag))
    assert 'class="wb-num" style="display:inline-block;min-width:30px' in inline
    assert 'class="wb-lead" style="text-align:left' in inline
    assert _re.search(r"<caption style=\"caption-side:bottom;text-align:left", inline)
    outside = _re.sub(r"<script>.*?</script>", "", inline)
    assert all("style=" in t for t in _re.findall(r"<t[hd]\b[^>]*>", outside))
    assert '<script>var s = "<td>";</script>' in inline  # scripts untouched
    assert _re.sub(r' style="[^"]*"', "", inline) == str(frag)  # only style attributes added
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [
        {"output_type": "execute_result", "data": bundle}]}]}
    assert notebook_fragments(nb) == [str(frag)]
