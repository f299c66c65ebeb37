"""results.json: one canonical document per run (sorted keys, fixed rounding, no timestamps).

Identical inputs and parameters give a byte-identical file; run time, host and durations
go to ``run.json`` instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SIGNIFICANT = 12


def canonical(obj: Any) -> Any:
    """Plain JSON data: floats rounded to 12 significant digits, non-finite floats as null."""
    if isinstance(obj, float):
        if not math.isfinite(obj):
            return None
        return float(f"{obj:.{SIGNIFICANT}g}")
    if isinstance(obj, bool) or obj is None or isinstance(obj, int | str):
        return obj
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [canonical(v) for v in obj]
    import polars as pl  # here, not at the top: the CLI's --help must not load polars

    if isinstance(obj, pl.DataFrame):
        return [canonical(r) for r in obj.to_dicts()]
    if hasattr(obj, "item"):  # numpy scalar
        return canonical(obj.item())
    raise TypeError(f"cannot serialise {type(obj).__name__} into results.json")


def dumps(doc: dict[str, Any]) -> str:
    """The canonical text of a results document."""
    return json.dumps(canonical(doc), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write(path: str | Path, doc: dict[str, Any]) -> Path:
    """Write ``doc`` canonically to ``path`` and return the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dumps(doc), encoding="utf-8")
    return p
