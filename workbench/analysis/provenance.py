"""Provenance cross-check: a field of the rows must agree with what the file's path says.

A preset declares ``cross_check: [{field, path, compare}]`` (AlpacaEval: ``annotator`` with the
``results/<model>/<annotator>/`` folder; WildBench: ``model_test`` with the file's ``<model>``;
FastChat: ``judge[0]`` with ``<judge>_single.jsonl``). Both sides are row-table columns: a key
field, ``path_<group>`` (a ``path_fields`` group) or ``x_<name>`` (an ``extra_fields`` value).
``compare: equal`` needs the same text; ``suffix`` accepts a field that ends with the path's
value after a ``/`` (``reka/reka-core-20240501`` in ``reka-core-20240501.json``).

A disagreement is a census finding with counts, per file: it is not an error (the rows are
still read as their fields say), but a file filed under the wrong annotator or model is
exactly the kind of mix-up that moves a published number without anyone noticing.
"""

from __future__ import annotations

import polars as pl

from workbench.common import schemas
from workbench.common.config import Config
from workbench.ingest import selection


def _agrees(a: str, b: str, compare: str) -> bool:
    if compare == "suffix":
        return a == b or a.endswith("/" + b)
    return a == b


def provenance_checks(rows: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """The :data:`workbench.common.schemas.PROVENANCE_CHECKS` table, one row per file x check:
    ``agree``, ``disagree``, ``unknown`` (either side null or the path did not match), up to 3
    ``examples`` of disagreeing (field, path) values, and a ``message`` when there is a finding."""
    if not cfg.cross_check:
        return schemas.PROVENANCE_CHECKS.empty()
    read = rows.filter(pl.col("line").is_not_null()
                       & selection.keyed())
    out = []
    for chk in cfg.cross_check:
        fld, pth, cmp = chk["field"], chk["path"], chk["compare"]
        for col in (fld, pth):
            if col not in read.columns:
                read = read.with_columns(pl.lit(None, dtype=pl.String).alias(col))
        for (file,), g in sorted(read.partition_by(["file"], as_dict=True).items()):
            agree = disagree = unknown = 0
            examples: dict[tuple[str, str], int] = {}
            for a, b in g.select(fld, pth).iter_rows():
                if a is None or b is None:
                    unknown += 1
                elif _agrees(a, b, cmp):
                    agree += 1
                else:
                    disagree += 1
                    examples[(a, b)] = examples.get((a, b), 0) + 1
            msg = None
            if disagree:
                ex = ", ".join(f"{a!r} vs {b!r} ({n})" for (a, b), n in
                               sorted(examples.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
                msg = (f"{file}: {disagree} of {g.height} rows have {fld} disagreeing with the path's "
                       f"{pth.removeprefix('path_')}: {ex}")
            elif unknown == g.height:
                msg = (f"{file}: {fld} could not be compared with the path's {pth.removeprefix('path_')} "
                       "(the path does not have the expected layout, or the field is missing)")
            out.append({"file": file, "field": fld, "path": pth, "compare": cmp, "rows": g.height,
                        "agree": agree, "disagree": disagree, "unknown": unknown,
                        "examples": [{"field": a, "path": b, "rows": n} for (a, b), n in
                                     sorted(examples.items(), key=lambda kv: (-kv[1], kv[0]))[:3]],
                        "finding": bool(disagree), "message": msg})
    return schemas.frame(out, schemas.PROVENANCE_CHECKS)
