"""Several input files with repeats across files, for the --jobs and --engine dask tests.

:func:`write_inputs` writes four JSONL files whose ledger is known by hand:

* ``a.jsonl``: scenarios s0..s9 of variant ``a`` (10 valid lines);
* ``b.jsonl``: s0..s9 of variant ``b``, then a copy of a.jsonl's first line (an identical
  re-run: ``duplicate``) and a truncated line (``malformed``): 12 lines;
* ``c.jsonl``: s0..s4 of variant ``c``, a re-run of a.jsonl's s1 with a different overall
  (both it and a.jsonl's s1 are ``conflict``) and a blank line: 7 lines;
* ``d.jsonl``: s5..s9 of variant ``c`` and a third identical copy of a.jsonl's first line
  (``duplicate``): 6 lines.

35 lines: 29 valid, 2 duplicate, 2 conflict, 1 malformed, 1 blank (:data:`EXPECTED`).
:func:`write_tricky` adds repeats whose sameness depends on how content is compared
(6 and 6.0 are one number; NaN and Infinity differ; true and "true" differ).
"""

from __future__ import annotations

import json
from pathlib import Path

EXPECTED = {"lines": 35, "valid": 29, "duplicate": 2, "conflict": 2, "malformed": 1, "blank": 1}


def _row(scenario: str, variant: str, overall: object, trial: int = 1, judge: str = "j1") -> str:
    return json.dumps({"scenario": scenario, "variant": variant, "trial": trial, "judge": judge,
                       "overall": overall, "correctness": 7, "fabrication_flags": []})


def _score(s: int, v: str) -> int:
    return 1 + (s * 3 + len(v) * 5) % 10


def write_inputs(root: Path) -> list[str]:
    """The four files above under ``root``; their paths in order."""
    root.mkdir(parents=True, exist_ok=True)
    a = [_row(f"s{s}", "a", _score(s, "a")) for s in range(10)]
    b = [_row(f"s{s}", "b", _score(s, "bb")) for s in range(10)] + [a[0], a[3][:25]]
    c = [_row(f"s{s}", "c", _score(s, "ccc")) for s in range(5)] + [_row("s1", "a", _score(1, "a") % 10 + 1), ""]
    d = [_row(f"s{s}", "c", _score(s, "ccc")) for s in range(5, 10)] + [a[0]]
    paths = []
    for name, lines in (("a", a), ("b", b), ("c", c), ("d", d)):
        p = root / f"{name}.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(p))
    return paths


def write_tricky(root: Path) -> list[str]:
    """Three files of repeats across files that only an exact content comparison gets right."""
    root.mkdir(parents=True, exist_ok=True)
    base = [_row(f"t{s}", "x", 5) for s in range(6)]
    one = [*base, _row("k1", "x", 6), _row("k2", "x", "NaN").replace('"NaN"', "NaN"),
           _row("k3", "x", True), _row("k4", "x", None), _row("k5", "x", -0.0)]
    two = [_row(f"t{s}", "y", 4) for s in range(6)] + [
        _row("k1", "x", 6.0),                                     # same number: duplicate
        _row("k2", "x", "Inf").replace('"Inf"', "Infinity"),      # NaN vs Infinity: conflict
        _row("k3", "x", "true"),                                  # true vs "true": conflict
        _row("k4", "x", None),                                    # null and null: duplicate
        _row("k5", "x", 0.0)]                                     # -0.0 and 0.0: one number
    three = [_row(f"t{s}", "z", 3) for s in range(6)] + [_row("k2", "x", "NaN").replace('"NaN"', "NaN")]
    paths = []
    for name, lines in (("one", one), ("two", two), ("three", three)):
        p = root / f"{name}.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(p))
    return paths
