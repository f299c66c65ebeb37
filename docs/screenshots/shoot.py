"""First screens of `workbench report` on each native harness file, at 1366 x 900, light and dark.

    .venv/bin/python docs/screenshots/shoot.py [../shared/realdata/native]

Runs `workbench report` on one shared file per harness (the real logs are read from where they
are, never copied), then opens each report.html in headless Chromium (/usr/bin/chromium, via
playwright) and writes docs/screenshots/<harness>.png (light) and <harness>-dark.png.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: harness -> (preset, files relative to the native folder, extra arguments)
RUNS = {
    "mt-bench": ("mt-bench", ["wgm20__FastChat/fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4_single.jsonl"],
                 []),
    "mt-bench-pair": ("mt-bench-pair",
                      ["lesnikow__fast-chat/fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4-turbo_pair.jsonl"], []),
    "alpaca-eval": ("alpaca-eval", [f"tatsu-lab__alpaca_eval/results/{m}/weighted_alpaca_eval_gpt4_turbo/annotations.json"
                                    for m in ("minotaur-13b", "phi-2", "text_davinci_001")], ["--plan", "complete"]),
    "arena-hard": ("arena-hard", ["zeppombal__arena-hard-auto/data/arena-hard-v0.1/model_judgment/gpt-3.5-turbo-0125/"
                                  "Nexusflow__Athene-V2-Chat.jsonl"], []),
    "wildbench": ("wildbench", ["allenai__WildBench/eval_results/v2.0625/score.v2/eval=gpt-4o-2024-05-13"],
                  ["--plan", "complete"]),
    "inspect": ("inspect", ["tidyverse__vitals/vignettes/data/logs"], []),
}


def shoot(html: Path, out: Path, dark: bool) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1366, "height": 900}, color_scheme="dark" if dark else "light")
        page.goto(html.as_uri())
        page.wait_for_timeout(800)
        page.screenshot(path=str(out))
        browser.close()


def main(native: Path) -> int:
    for name, (preset, files, extra) in RUNS.items():
        paths = []
        for f in files:
            p = native / f
            paths += sorted(str(x) for x in p.glob("**/*.json")) if p.is_dir() else [str(p)]
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [str(ROOT / ".venv/bin/workbench"), "report", *paths, "--preset", preset, *extra,
                   "--resamples", "1000", "--no-gate", "-q", "--out", tmp]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"{name}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
                continue
            shoot(Path(tmp) / "report.html", HERE / f"{name}.png", dark=False)
            shoot(Path(tmp) / "report.html", HERE / f"{name}-dark.png", dark=True)
            print(f"{name}: {HERE / (name + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "realdata" / "native"))
