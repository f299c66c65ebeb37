"""The rendered report in a real headless browser (Debian's chromium driven by playwright).

The page must load from file:// with every other request blocked, log no console error,
draw its charts, show the script-tag verdict as text, and leave a screenshot in
tests/artifacts/report.png. Without chromium the test skips, except in CI (env CI set),
where it fails: `.ci/run` installs chromium.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_report import FAST, XSS, write_synthetic

from workbench import cli

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
            assert scripts == 2, "only the inlined Vega bundle and the chart loader run"
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
