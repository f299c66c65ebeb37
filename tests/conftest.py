"""Shared fixtures: raw-line file writer, default config, seeded random generators.

Kept generic on purpose: any test module may use them.

* ``write_jsonl(lines, name=..., newline=..., bom=..., gz=...)`` writes *raw* lines (``str`` is
  encoded as UTF-8, ``bytes`` are written as they are) into ``tmp_path`` and returns the path
  as ``str``. Nothing is validated or re-serialised, so damaged lines stay damaged.
* ``row_line(**fields)`` returns one default-format judge row as a JSON text line; pass
  ``None`` to write ``null`` and the module-level ``DROP`` to leave a field out.
* ``default_config``: ``workbench.load_config()`` (the documented defaults, no file).
* ``rng`` / ``py_rng``: a seeded ``numpy.random.Generator`` / ``random.Random``.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench import Config, load_config

SEED = 20260819

DROP = object()
"""Marker for :func:`make_row_line`: leave this field out of the row."""

DEFAULT_ROW: dict[str, Any] = {
    "scenario": "soc2_gap_analysis",
    "variant": "baseline",
    "trial": 1,
    "judge": "gpt-4o",
    "correctness": 7,
    "completeness": 6,
    "depth": 5,
    "citations": 8,
    "honesty": 9,
    "overall": 7,
    "fabrication_flags": [],
    "verdict": "fine",
}


def make_row_line(**fields: Any) -> str:
    """One default-format row as a JSON line; ``field=DROP`` omits a field."""
    row = dict(DEFAULT_ROW)
    for k, v in fields.items():
        if v is DROP:
            row.pop(k, None)
        else:
            row[k] = v
    return json.dumps(row)


def write_lines(
    path: Path,
    lines: Iterable[str | bytes],
    newline: str = "\n",
    bom: bool = False,
    gz: bool = False,
    trailing_newline: bool = True,
) -> str:
    """Write raw lines to ``path`` (see module docstring) and return it as ``str``."""
    sep = newline.encode()
    parts = [ln if isinstance(ln, bytes) else ln.encode("utf-8") for ln in lines]
    data = sep.join(parts) + (sep if trailing_newline and parts else b"")
    if bom:
        data = b"\xef\xbb\xbf" + data
    if gz:
        data = gzip.compress(data, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[..., str]:
    """``write_jsonl(lines, name="rows.jsonl", newline="\\n", bom=False, gz=False)`` -> path."""

    def write(lines: Iterable[str | bytes], name: str = "rows.jsonl", **kw: Any) -> str:
        return write_lines(tmp_path / name, lines, **kw)

    return write


@pytest.fixture
def row_line() -> Callable[..., str]:
    """``row_line(overall=None, depth=DROP, ...)`` -> one default-format JSON line."""
    return make_row_line


@pytest.fixture
def default_config() -> Config:
    """The documented defaults (no config file)."""
    return load_config()


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded numpy generator (same numbers on every run)."""
    return np.random.default_rng(SEED)


@pytest.fixture
def py_rng() -> random.Random:
    """A seeded stdlib generator (same numbers on every run)."""
    return random.Random(SEED)


def read_records(records: Iterable[dict[str, Any]], cfg: Config) -> Any:
    """The row table of ``records`` written as JSON lines to a temporary file and read with
    ``cfg`` (the ledger's own reader; the file is gone afterwards)."""
    import json
    import tempfile

    from workbench import read_rows

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "rows.jsonl"
        p.write_text("\n".join(json.dumps(x) for x in records) + "\n", encoding="utf-8")
        rows, _ = read_rows([str(p)], cfg)
    return rows
