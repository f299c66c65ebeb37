"""Headline check: audit a published scorecard and its claims against the raw rows.

Two questions a reviewer asks of numbers someone already printed:

* **How was this printed mean produced?** :func:`published_check` recomputes every published
  cell under each candidate aggregation rule (:data:`RULES`) and reports which ones reproduce
  the printed value at its printed precision. A card where every cell reproduces under
  ``zero_filled`` and none under ``valid_mean`` carries the silent-zero signature.
* **Does this claimed difference survive the rows?** :func:`check_claims` recomputes each
  claimed ``a - b`` as a difference of valid means with its clustered interval
  (:func:`workbench.analysis.paired.contrast_record`), the paired estimate, the valid n of each side,
  the missing-data bounds, the zero-filled difference and a verdict, and flags confounding by
  missingness.

The aggregation rules model what a reducer that knows nothing about the ledger would have
printed, so they see the rows *as read*: every line of a cell once (exact duplicate lines
counted once, blank and malformed lines not at all) and a conflicting re-judgment with the
value each of its lines carries (the scorecard holds both out). Means are computed exactly
(as fractions) from sums and counts; no score column is ever filled. Everything here is pure
except the two readers, :func:`read_published` and :func:`read_claims`.
"""

from __future__ import annotations

import csv
import math
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from workbench import stats
from workbench.analysis import census, paired
from workbench.analysis.scorecard import STATUS_MEASURED, cell_row_count, subset_filter, summarize_cell
from workbench.common import schemas, vocab
from workbench.common.config import KEY_FIELDS, Config
from workbench.common.errors import ConfigError, InputError
from workbench.common.vocab import Rule, Verdict
from workbench.ingest import clusters, selection
from workbench.reduce import codes as reduce_codes

if TYPE_CHECKING:
    from workbench.reduce.sufficient import JointBootstrap

RULES: tuple[str, ...] = vocab.names(Rule)
"""Candidate aggregation rules, in report order:

``valid_mean``: mean over rows with a valid value (scoreless rows dropped);
``zero_filled``: sum of valid values over all rows (a non-valid row counts as 0: the
silent-zero reducer, ``Number(x) || 0``, ``fillna(0)``);
``min_filled``: every non-valid row at the rubric minimum;
``item_mean``: valid values averaged per item (scenario, variant, trial) over judges first,
then items averaged;
``all_rows``: every valid value of every line as read, repeated keys included: an exact
duplicate counts again and each line of a conflicting re-judgment counts with its own value
(FastChat's and many hand-written reducers' rule: a re-run appended to a file counts twice);
``zero_filled_planned``: like ``zero_filled`` with planned-but-missing judgments also as 0
(only when the rows carry ``missing_planned`` rows, i.e. a plan was given);
``drop_sentinels_only``: mean of every finite number read (``NAME__raw``) except the
configured sentinels and declared failures (``missing_values``, ``missing_when``):
out-of-range values kept, sentinels dropped. This reproduces harness
rules such as FastChat's MT-Bench ``show_result.py`` (``df[df.score != -1]``, then the mean of
everything else, a parsed 0 or 100 included);
``raw_numeric_mean``: mean of every finite number read, sentinels and declared failures
included (a ``-1``, or a "No response" written as -2, averaged in as a score: what a reducer
that never heard of the sentinel prints, Inspect's own mean of such a scorer).
The two harness rules are undefined (None) for a pairwise-preference headline, whose raw
numbers are preference codes, not win credit;
``harness``: the preset's own harness figure for the cell (:mod:`workbench.analysis.harness`, the
figure :data:`workbench.analysis.board.HARNESS_FIGURE` names: FastChat's ``win_rate_adjusted``,
Arena-Hard's weighted ``score``...) in the unit the harness prints it;
``harness_rescaled``: the same figure in the other unit (a fraction as a percent, a percent
as a fraction), for harnesses whose figure is a rate. Both exist only for presets with a
harness rule, for the headline field, all scenarios, and one judge (a harness prints per judge).
"""

ZERO_RULES = ("zero_filled", "zero_filled_planned")
_NO_SCORE_CODES = (vocab.FieldStatus.SENTINEL, vocab.FieldStatus.DECLARED_MISSING)
"""Numbers written to mean "no score": a configured sentinel or a declared failure
(``missing_when``); the harness rules drop or keep them together."""
VALID_RULES = ("valid_mean", "item_mean")
HARNESS_RULES = ("drop_sentinels_only", "raw_numeric_mean")
OWN_HARNESS_RULES = ("harness", "harness_rescaled")
HARNESS_UNITS: dict[str, str | None] = {
    "fastchat_single": None, "wildbench": None,  # rubric points: no other unit
    "fastchat_pairwise": "fraction", "inspect": "fraction",
    "alpaca_eval": "percent", "arena_hard": "percent",
}
"""The unit each harness prints its lead figure in (None: the rubric's points). Inspect's is a
fraction only on a 0-1 scale (accuracy); on any other scale its mean is in rubric points
(:func:`harness_unit`)."""


def harness_unit(rule: str, cfg: Config) -> str | None:
    """The unit of ``rule``'s lead figure under ``cfg`` (see :data:`HARNESS_UNITS`)."""
    unit = HARNESS_UNITS.get(rule)
    if rule == "inspect" and cfg.value_range != (0.0, 1.0):
        return None
    return unit

VERDICTS: tuple[str, ...] = vocab.names(Verdict)

CLAIM_KEYS: tuple[str, ...] = ("name", "field", "subset", "judge", "a", "b", "claimed")

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_MODES = (ROUND_HALF_EVEN, ROUND_HALF_UP)


# --------------------------------------------------------------------------- readers


def read_published(path: str, cfg: Config | None = None) -> pl.DataFrame:
    """Read a published scorecard CSV, keeping every value as the string that was printed.

    Columns: ``variant`` (required), optional ``judge`` and ``subset``, and one column per
    rubric field. Returns a frame with ``line`` (the CSV line, header = 1), ``variant``,
    ``judge`` and ``subset`` (null = pooled / all scenarios) and one String column per field
    (null where the cell is empty, i.e. not published). With ``cfg``, every field column must
    be a rubric field of the config. Raises :class:`InputError` naming file, line and column.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(path, "published scorecard not found")
    try:
        text = p.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read published scorecard: {exc}") from exc
    try:
        records = list(_csv_records(text))
    except csv.Error as exc:
        raise InputError(path, f"not a readable CSV: {exc}") from exc
    if not records:
        raise InputError(path, "published scorecard is empty")
    header_line, header = records[0]
    header = [h.strip() for h in header]
    if "variant" not in header:
        raise InputError(path, f"no 'variant' column (columns: {', '.join(header) or 'none'})",
                         line=header_line)
    seen: set[str] = set()
    for h in header:
        if not h:
            raise InputError(path, "a column has an empty name", line=header_line)
        if h in seen:
            raise InputError(path, f"column '{h}' appears twice", line=header_line)
        seen.add(h)
    fields = [h for h in header if h not in ("variant", "judge", "subset")]
    if not fields:
        raise InputError(path, "no rubric field column besides variant/judge/subset",
                         line=header_line)
    if cfg is not None:
        for h in fields:
            if h not in cfg.score_names:
                raise InputError(path, f"column '{h}' is not a rubric field; the config's fields "
                                 f"are {', '.join(cfg.score_names)}", line=header_line)
    data: dict[str, list[Any]] = {c: [] for c in ("line", "variant", "judge", "subset", *fields)}
    for line, rec in records[1:]:
        if not any(c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            raise InputError(path, f"expected {len(header)} columns, got {len(rec)}", line=line)
        cells = {h: c.strip() for h, c in zip(header, rec, strict=True)}
        if not cells["variant"]:
            raise InputError(path, "empty variant", line=line, field="variant")
        data["line"].append(line)
        for k in ("variant", "judge", "subset"):
            data[k].append(cells.get(k) or None)
        for h in fields:
            v = cells[h]
            if v and not _NUMBER.match(v):
                raise InputError(path, f"expected a number as printed (e.g. 6.56), got {v!r}",
                                 line=line, field=h)
            data[h].append(v or None)
    if not data["line"]:
        raise InputError(path, "published scorecard has a header but no rows")
    df = pl.DataFrame({k: pl.Series(v, dtype=pl.Int64 if k == "line" else pl.String)
                       for k, v in data.items()})
    dup = df.group_by("variant", "judge", "subset").agg(pl.col("line")).filter(
        pl.col("line").list.len() > 1).sort(pl.col("line").list.get(1))  # the first repeat in the file
    if dup.height:
        r = dup.row(0, named=True)
        raise InputError(path, f"cell {_cell_label(r['variant'], r['judge'], r['subset'])} is "
                         f"published twice (lines {', '.join(map(str, r['line']))})",
                         line=int(r["line"][1]))
    return df


def _csv_records(text: str) -> Any:
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    start = 1
    for rec in reader:
        yield start, rec
        start = reader.line_num + 1


def read_claims(path: str) -> list[dict[str, Any]]:
    """Read a claims YAML file: a list of ``{name, field, subset, judge, a, b, claimed}``.

    ``a``, ``b`` and ``claimed`` are required (``claimed`` is the published ``a - b``); ``name``
    defaults to ``"a vs b"``; ``field`` (null here) defaults to the headline in
    :func:`check_claims`. Each returned dict also carries ``source`` (the path) and ``index``
    (1-based item number) for error messages. Raises :class:`InputError` naming the file and
    the item.
    """
    from workbench.common.config import read_text_file, safe_yaml

    try:
        data = safe_yaml(read_text_file(path, "claims"), path)
    except ConfigError as exc:  # the claims API raises InputError for any problem in the file
        text = str(exc)
        raise InputError(path, text[len(path) + 2:] if text.startswith(f"{path}: ") else text) from exc
    if data is None:
        raise InputError(path, "no claims (the file is empty)")
    if not isinstance(data, list):
        raise InputError(path, f"expected a YAML list of claims, got a {type(data).__name__}")
    if not data:
        raise InputError(path, "no claims (the list is empty)")
    out: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, item in enumerate(data, start=1):
        where = f"item {i}"
        if not isinstance(item, dict):
            raise InputError(path, f"{where}: expected a mapping with a, b and claimed, "
                             f"got a {type(item).__name__}")
        if isinstance(item.get("name"), str) and item["name"].strip():
            where = f"item {i} ({item['name'].strip()!r})"
        unknown = sorted(str(k) for k in set(item) - set(CLAIM_KEYS))
        if unknown:
            raise InputError(path, f"{where}: unknown key(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(CLAIM_KEYS)}")
        for k in ("a", "b", "claimed"):
            if item.get(k) is None:
                raise InputError(path, f"{where}: '{k}' is required")
        a = _key_text(item["a"], "a", where, path)
        b = _key_text(item["b"], "b", where, path)
        if a == b:
            raise InputError(path, f"{where}: a and b are the same variant {a!r}")
        claimed = _claimed_value(item["claimed"], where, path)
        name = item.get("name")
        if name is None:
            # unnamed: a vs b, qualified by whatever tells two claims on that pair apart
            quals = [str(item[k]) for k in ("field", "subset", "judge") if item.get(k) is not None]
            name = f"{a} vs {b}" + (f" ({', '.join(quals)})" if quals else "")
        elif not isinstance(name, str) or not name.strip():
            raise InputError(path, f"{where}: 'name' must be a non-empty string")
        name = name.strip()
        if name in names:
            raise InputError(path, f"{where}: another claim is already named {name!r}")
        names.add(name)
        field = item.get("field")
        if field is not None and (not isinstance(field, str) or not field):
            raise InputError(path, f"{where}: 'field' must be a rubric field name")
        subset = item.get("subset")
        if subset is not None and (not isinstance(subset, str) or not subset):
            raise InputError(path, f"{where}: 'subset' must be a subset name")
        judge = item.get("judge")
        judge = None if judge is None else _key_text(judge, "judge", where, path)
        out.append({"name": name, "field": field, "subset": subset, "judge": judge, "a": a,
                    "b": b, "claimed": claimed, "source": str(path), "index": i})
    return out


def _key_text(v: Any, key: str, where: str, path: str) -> str:
    if isinstance(v, bool) or not isinstance(v, str | int) or not str(v).strip():
        raise InputError(path, f"{where}: '{key}' must be a non-empty string, got {v!r}")
    return str(v).strip()


def _claimed_value(v: Any, where: str, path: str) -> float:
    if isinstance(v, str) and _NUMBER.match(v.strip()):
        return float(v.strip())
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise InputError(path, f"{where}: 'claimed' must be a number (the published a - b), "
                         f"got {v!r}")
    return float(v)


# --------------------------------------------------------------------------- rules


def _as_read(cfg: Config, fld: str) -> pl.Expr:
    """A field's value as a naive reducer reads it: the valid value, and for conflicting
    re-judgments (held out by the scorecard) the valid number each line carries."""
    restore = (pl.col("bucket") == "conflict") & (pl.col(f"{fld}__status") == "valid")
    if cfg.preference is not None and fld == cfg.headline:
        restore = pl.lit(False)  # the win-credit mapping is not re-applied to held-out lines
    return pl.when(restore).then(pl.col(f"{fld}__raw")).otherwise(pl.col(fld))


def _every_value(cfg: Config, fld: str) -> pl.Expr:
    """A valid line's value whatever its bucket (a duplicate's usable value is nulled at ingest):
    the raw number, or for a preference headline its win credit recomputed from the code."""
    raw = pl.col(f"{fld}__raw")
    if fld != cfg.headline or (cfg.preference is None and cfg.preference_scale is None):
        return pl.coalesce(pl.col(fld), raw)
    credit = pl.lit(None, dtype=pl.Float64)
    if cfg.preference:
        keys = list(cfg.preference)
        credit = raw.replace_strict(keys, [100.0 * cfg.preference[k] for k in keys], default=None,
                                    return_dtype=pl.Float64)
    if cfg.preference_scale is not None:
        lo, hi = cfg.preference_scale
        credit = pl.coalesce(credit, pl.when(raw.is_between(lo, hi)).then(100.0 * (raw - lo) / (hi - lo)))
    return pl.coalesce(pl.col(fld), credit)


def _scope(rows: pl.DataFrame, cfg: Config, variant: str, judge: str | None,
           subset: str | None) -> pl.Expr:
    expr = subset_filter(cfg, subset) & (pl.col("variant") == variant)
    if judge is not None:
        expr = expr & (pl.col("judge") == judge)
    return expr


def _narrow(rows: pl.DataFrame, cfg: Config, fields: list[str]) -> pl.DataFrame:
    """The columns of the row table the check reads for ``fields``: the keys, line, bucket,
    cluster, the subsets' columns and each field's value, raw number and status (a select:
    no column is copied).

    Every filter below copies the columns it keeps, so it runs on this and never on the row
    table itself, whose text columns (the file name, the verdict, the flags) are most of its
    bytes: the published card of the 5M-row benchmark held 4.5 GB of anonymous memory with
    filters of every column."""
    return selection.columns_read(rows, cfg, [*KEY_FIELDS, "line", "bucket", clusters.COLUMN,
                                              *(f"{f}{part}" for f in fields for part in ("", "__raw", "__status"))])


def _exact_sum(values: np.ndarray) -> Fraction:
    """Exact sum of values read from decimal text (``7.5`` is 15/2, ``0.1`` is 1/10)."""
    if not values.size:
        return Fraction(0)
    uniq, counts = np.unique(values, return_counts=True)
    return sum((Fraction(repr(float(u))) * int(c) for u, c in zip(uniq, counts, strict=True)),
               Fraction(0))


def _rule_fractions(rows: pl.DataFrame, cfg: Config, variant: str, judge: str | None,
                    subset: str | None, field: str) -> dict[str, Fraction | None]:
    return _rule_table(rows, cfg, variant, judge, subset, field)[0]


def _rule_table(rows: pl.DataFrame, cfg: Config, variant: str, judge: str | None,
                subset: str | None, field: str) -> tuple[dict[str, Fraction | None], dict[str, int]]:
    """Every rule's exact value and the number of values it averages over (its n)."""
    rows = _narrow(rows, cfg, [field])
    scope = _scope(rows, cfg, variant, judge, subset)
    cell = rows.filter(selection.in_cells() & scope).with_columns(_as_read(cfg, field).alias("__v"))
    valid = cell.filter(pl.col("__v").is_not_null())
    n_rows, n_valid = cell.height, valid.height
    total = _exact_sum(valid["__v"].to_numpy())
    lo = Fraction(repr(float(cfg.value_range[0])))
    out: dict[str, Fraction | None] = {
        "valid_mean": total / n_valid if n_valid else None,
        "zero_filled": total / n_rows if n_rows else None,
        "min_filled": (total + (n_rows - n_valid) * lo) / n_rows if n_rows else None,
        "item_mean": None,
    }
    ns: dict[str, int] = {"valid_mean": n_valid, "zero_filled": n_rows, "min_filled": n_rows}
    if n_valid:
        items = valid.group_by("scenario", "variant", "trial").agg(
            pl.col("__v").sum().alias("s"), pl.len().alias("k"))
        combos = items.group_by("s", "k").agg(pl.len().alias("m"))
        acc = Fraction(0)
        for s, k, m in combos.iter_rows():
            acc += Fraction(repr(float(s))) / int(k) * int(m)
        out["item_mean"] = acc / items.height
        ns["item_mean"] = items.height
    # all_rows: every line as read, duplicates and conflicting re-judgments included
    every = rows.filter(scope & pl.col("line").is_not_null()
                        & selection.keyed_read()
                        & (pl.col(f"{field}__status") == "valid"))
    every_v = every.select(_every_value(cfg, field).alias("__v")).drop_nulls()["__v"]
    out["all_rows"] = _exact_sum(every_v.to_numpy()) / every_v.len() if every_v.len() else None
    ns["all_rows"] = every_v.len()
    # Harness rules (see RULES): every finite number read, sentinels dropped or kept.
    out.update(dict.fromkeys(HARNESS_RULES))
    if (cfg.preference is None and cfg.preference_scale is None) or field != cfg.headline:
        read = cell.filter(pl.col(f"{field}__raw").is_not_null())
        kept = read.filter(~pl.col(f"{field}__status").is_in(list(_NO_SCORE_CODES)))
        for rule, part in (("drop_sentinels_only", kept), ("raw_numeric_mean", read)):
            ns[rule] = part.height
            if part.height:
                out[rule] = _exact_sum(part[f"{field}__raw"].to_numpy()) / part.height
    if selection.count_where(rows, pl.col("bucket") == "missing_planned"):
        planned = selection.count_where(rows, (pl.col("bucket") == "missing_planned") & scope)
        denom = n_rows + planned
        out["zero_filled_planned"] = total / denom if denom else None
        ns["zero_filled_planned"] = denom
    return out, ns


def _harness_records(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    if cfg.harness is None:
        return []
    from workbench.analysis.harness import harness_figures

    return harness_figures(rows, cfg)


def _harness_candidates(cfg: Config, figures: list[dict[str, Any]], variant: str, judge: str | None,
                        subset: str | None, field: str,
                        judges: set[str]) -> tuple[dict[str, Fraction | None], dict[str, int | None], str | None]:
    """The harness's own figure for one published cell as the ``harness`` and
    ``harness_rescaled`` candidates (see :data:`RULES`), their n, and a description of the
    figure (null when the cell has none: another field, a subset, judges pooled over several)."""
    if cfg.harness is None:
        return {}, {}, None
    from workbench.analysis.board import HARNESS_FIGURE, is_lead

    rule = str(cfg.harness["rule"])
    figure = HARNESS_FIGURE.get(rule)
    unit = harness_unit(rule, cfg)
    values: dict[str, Fraction | None] = {"harness": None}
    if unit is not None:
        values["harness_rescaled"] = None
    ns: dict[str, int | None] = dict.fromkeys(values)
    if field != cfg.headline or subset is not None or figure is None:
        return values, ns, None
    if judge is None and len(judges) != 1:
        return values, ns, None
    # the lead figure as the board reads it: Inspect marks the log's first metric (named as the
    # log names it: ``mean``, ``accuracy``), the other rules lead with HARNESS_FIGURE
    recs = [r for r in figures if r.get("variant") == variant and is_lead(r, figure)
            and (judge is None or r.get("judge") == judge)]
    if len(recs) != 1 or not isinstance(recs[0].get("value"), int | float):
        return values, ns, None
    v = Fraction(repr(float(recs[0]["value"])))
    values["harness"] = v
    ns["harness"] = recs[0].get("n")
    what = f"{rule} {recs[0].get('figure') or figure}"
    if unit is None:
        return values, ns, f"{what} (rubric points, as the harness prints it)"
    other = "percent" if unit == "fraction" else "fraction"
    values["harness_rescaled"] = v * 100 if unit == "fraction" else v / 100
    ns["harness_rescaled"] = recs[0].get("n")
    return values, ns, f"{what} (harness: a {unit}, as the harness prints it; harness_rescaled: as a {other})"


def aggregation_rules(rows: pl.DataFrame, cfg: Config, variant: str, judge: str | None,
                      subset: str | None, field: str) -> dict[str, float | None]:
    """Every candidate rule's value for one cell (see :data:`RULES`); None when undefined.

    ``judge`` None pools judges; ``subset`` None is all scenarios. ``zero_filled_planned`` is
    present only when ``rows`` has ``missing_planned`` rows. Values are exact means of the rows
    as read (see the module docstring), returned as floats.
    """
    return {k: (None if v is None else float(v))
            for k, v in _rule_fractions(rows, cfg, variant, judge, subset, field).items()}


def _decimals(printed: str) -> int:
    exp = Decimal(printed).as_tuple().exponent
    return max(0, -int(exp)) if isinstance(exp, int) else 0


def rounded(value: Fraction | float, decimals: int) -> set[Decimal]:
    """``value`` rounded at ``decimals`` every way a printed number may have been produced.

    Round-half-even and round-half-up (away from zero), each applied to the exact value and
    to its nearest double (what a float-based reducer such as ``toFixed`` or ``round`` sees).
    """
    exact = Fraction(value)
    unit = Decimal(1).scaleb(-decimals)
    out: set[Decimal] = set()
    with localcontext() as ctx:
        ctx.prec = 80
        candidates = [Decimal(exact.numerator) / Decimal(exact.denominator),
                      Decimal(float(exact))]
        for d in candidates:
            for mode in _MODES:
                out.add(d.quantize(unit, rounding=mode))
    return out


FULL_PRECISION_DIGITS = 12
"""Printed decimals from which a value is treated as a full-precision float, not a rounding."""


def printed_matches(value: Fraction | float | None, printed: str) -> bool:
    """Whether ``value`` reproduces the printed string at the string's own precision."""
    if value is None:
        return False
    try:
        target = Decimal(printed.strip())
    except InvalidOperation:
        return False
    decimals = _decimals(printed.strip())
    if decimals >= FULL_PRECISION_DIGITS:
        # A value printed at (near) full float precision came from a float reducer: accept
        # float summation noise, a few units in the last place, instead of exact equality.
        return abs(float(value) - float(target)) <= 1e-12 * max(1.0, abs(float(target)))
    return target in rounded(value, decimals)


def _cell_label(variant: str, judge: str | None, subset: str | None,
                field: str | None = None) -> str:
    label = variant
    if judge is not None:
        label += f"/{judge}"
    if subset is not None:
        label += f" [{subset}]"
    if field is not None:
        label += f" {field}"
    return label


def published_check(rows: pl.DataFrame, cfg: Config, published_df: pl.DataFrame,
                    source: str = "published scorecard") -> pl.DataFrame:
    """Recompute every published cell under every rule and say which reproduce it: the
    :data:`workbench.common.schemas.PUBLISHED_CHECK` table.

    One row per non-empty published value, in file order: ``variant``, ``judge``,
    ``subset``, ``field``, ``published`` (the printed number), ``decimals`` (its printed
    precision), ``reproduced_by`` (rule names, sorted), ``nearest_rule``/``nearest_value``/
    ``distance`` (the rule closest to the printed value, ties in :data:`RULES` order; null when
    the cell has no rows), and ``valid_mean`` (the scorecard's valid mean, conflicting
    re-judgments held out). A variant, judge or subset the rows do not have is an
    :class:`InputError` naming ``source`` and the line.
    """
    figures = _harness_records(rows, cfg)  # the harness's own rule reads the whole rows
    fields = [c for c in published_df.columns if c not in ("line", "variant", "judge", "subset")]
    rows = _narrow(rows, cfg, [f for f in fields if f in cfg.score_names])
    variants, judges = set(selection.cell_values(rows, "variant")), set(selection.cell_values(rows, "judge"))
    for f in fields:
        if f not in cfg.score_names:
            raise InputError(source, f"column '{f}' is not a rubric field; the config's fields are "
                             f"{', '.join(cfg.score_names)}")
    out: list[dict[str, Any]] = []
    for rec in published_df.iter_rows(named=True):
        line = rec.get("line")
        variant, judge, subset = rec["variant"], rec.get("judge"), rec.get("subset")
        finding = None
        if variant not in variants:
            finding = (f"{source} line {line}: variant {variant!r} has no rows in the inputs "
                       f"(variants: {_few(variants)})")
        elif judge is not None and judge not in judges:
            finding = (f"{source} line {line}: judge {judge!r} has no rows in the inputs "
                       f"(judges: {_few(judges)})")
        elif subset is not None and subset not in cfg.subsets:
            finding = (f"{source} line {line}: subset {subset!r} is not defined in the config "
                       f"(defined: {', '.join(sorted(cfg.subsets)) or 'none'})")
        elif selection.count_where(rows, selection.in_cells() & _scope(rows, cfg, variant, judge, subset)) == 0:
            finding = (f"{source} line {line}: {_cell_label(variant, judge, subset)} has no rows "
                       "(this variant, judge and subset never occur together)")
        for f in fields:
            printed = rec[f]
            if printed is None:
                continue
            if finding is not None:
                # a published cell the rows cannot speak to: a finding, not the end of the run
                out.append({
                    "variant": variant, "judge": judge, "subset": subset, "field": f,
                    "published": float(Fraction(Decimal(printed))), "decimals": _decimals(printed),
                    "reproduced_by": [], "nearest_rule": None, "nearest_value": None,
                    "distance": None, "valid_mean": None, "rules": {}, "ambiguous": None,
                    "finding": finding, "harness_figure": None})
                continue
            values, counts = _rule_table(rows, cfg, variant, judge, subset, f)
            own, own_n, own_what = _harness_candidates(cfg, figures, variant, judge, subset, f, judges)
            values = {**values, **own}
            counts = {**counts, **{k: n for k, n in own_n.items() if n is not None}}
            target = Fraction(Decimal(printed))
            reproduced = sorted(r for r, v in values.items() if printed_matches(v, printed))
            dist = {r: abs(float(v - target)) for r, v in values.items() if v is not None}
            pool = reproduced or [r for r in RULES if r in dist]
            nearest = min(pool, key=lambda r: (dist[r], RULES.index(r))) if pool else None
            vm = (rows.lazy().filter(selection.in_cells() & _scope(rows, cfg, variant, judge, subset))
                  .select(pl.col(f).drop_nulls()).collect()[f])
            out.append({
                "variant": variant, "judge": judge, "subset": subset, "field": f,
                "published": float(target), "decimals": _decimals(printed),
                "reproduced_by": reproduced,
                "nearest_rule": nearest,
                "nearest_value": None if nearest is None else float(values[nearest]),  # type: ignore[arg-type]
                "distance": None if nearest is None else dist[nearest],
                "valid_mean": float(vm.mean()) if vm.len() else None,  # type: ignore[arg-type]
                "rules": {r: {"value": None if v is None else float(v), "n": counts.get(r)}
                          for r, v in values.items()},
                # the harness's own rule beside the one rule it is on these rows (FastChat's
                # all_rows) names the same computation twice: no ambiguity
                "ambiguous": (None if len(set(reproduced) - set(OWN_HARNESS_RULES)) < 2 else
                              {"rules": reproduced,
                               "why": _ambiguity(rows, cfg, variant, judge, subset, f, reproduced)}),
                "finding": None, "harness_figure": own_what,
            })
    return schemas.frame(out, schemas.PUBLISHED_CHECK)


def _few(names: set[Any], k: int = 5) -> str:
    items = sorted(str(n) for n in names)
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "") or "none"


def _ambiguity(rows: pl.DataFrame, cfg: Config, variant: str, judge: str | None,
               subset: str | None, fld: str, rules: list[str]) -> str:
    """Why several rules give the printed value on these rows (which facts make them coincide)."""
    rows = _narrow(rows, cfg, [fld])
    scope = _scope(rows, cfg, variant, judge, subset)
    read = rows.filter(scope & pl.col("line").is_not_null()
                       & selection.keyed_read())
    cell = rows.filter(selection.in_cells() & scope)
    valid = cell.filter(pl.col(fld).is_not_null())
    absent = selection.count_where(rows, scope & (pl.col("bucket") == "missing_planned"))
    per_key = read.group_by("scenario", "variant", "trial", "judge").len()["len"]
    per_item = valid.group_by("scenario", "variant", "trial").len()["len"]
    sentinels = cell.filter(pl.col(f"{fld}__status").is_in(list(_NO_SCORE_CODES))).height
    oor = cell.filter(pl.col(f"{fld}__status") == "out_of_range").height
    r = set(rules)
    why: list[str] = []
    if r & {"valid_mean", "item_mean", "all_rows"} and r & {"zero_filled", "min_filled"}:
        text = f"every one of the {cell.height} rows present has a valid {fld}, so nothing is filled"
        if absent:
            text += (f" ({absent} planned judgments are absent: only zero_filled_planned counts "
                     "them)")
        why.append(text)
    if {"valid_mean", "item_mean"} <= r and per_item.len():
        k = int(per_item.max())  # type: ignore[arg-type]
        why.append(f"every item has {k} valid judgment{'s' if k != 1 else ''}, so item_mean equals "
                   "valid_mean" if per_item.n_unique() == 1 else
                   "the per-item judge averages happen to average to the valid mean")
    if "all_rows" in r and r & {"valid_mean", "item_mean", "drop_sentinels_only"} and per_key.len():
        k = int(per_key.max())  # type: ignore[arg-type]
        if k == 1:
            why.append("no key was judged twice, so all_rows counts each judgment once like the "
                       "rules that hold repeats out")
        elif per_key.n_unique() == 1:
            why.append(f"every key was judged {k} times, so item_mean and all_rows coincide "
                       "(each item weighs the same under both)")
        else:
            why.append("the repeated keys' values average to the same figure")
    if "drop_sentinels_only" in r and r & {"valid_mean", "all_rows", "item_mean"}:
        why.append("no sentinel and no out-of-range score in the cell" if not (sentinels or oor)
                   else f"the {oor} out-of-range score(s) do not move the mean at this precision")
    if "raw_numeric_mean" in r and "drop_sentinels_only" in r and not sentinels:
        why.append("no sentinel in the cell, so keeping or dropping sentinels gives the same mean")
    if r & set(OWN_HARNESS_RULES) and r - set(OWN_HARNESS_RULES):
        why.append("the harness's own figure equals " + ", ".join(sorted(r - set(OWN_HARNESS_RULES)))
                   + " on these rows")
    if not why:
        why.append("these rules give the same value on these rows")
    return f"ambiguous between {', '.join(rules)}: " + "; ".join(why)


def _category(rec: dict[str, Any]) -> str:
    if rec.get("finding"):
        return "finding"
    by = set(rec["reproduced_by"])
    if not by:
        return "none"
    if by <= set(OWN_HARNESS_RULES):
        return "harness"
    by -= set(OWN_HARNESS_RULES)
    zero, valid = bool(by & set(ZERO_RULES)), bool(by & set(VALID_RULES))
    if zero and valid:
        return "all"
    if zero:
        return "zero"
    if "valid_mean" in by:
        return "valid"
    if "item_mean" in by:
        return "item"
    if "all_rows" in by:
        return "all_rows"
    if "min_filled" in by:
        return "min"
    return "sentinel_dropped" if "drop_sentinels_only" in by else "sentinel_kept"


_PHRASES = {
    "zero": "only when missing scores count as 0",
    "valid": "from the valid scores (missing scores dropped)",
    "item": "only as a mean of per-item judge averages",
    "all_rows": ("only when every row is averaged as read, re-runs and conflicting re-judgments "
                 "included (FastChat's rule)"),
    "min": "only when missing scores count as the rubric minimum",
    "sentinel_dropped": ("only when every number read is averaged except the sentinels "
                         "(out-of-range scores kept: a harness rule such as FastChat's)"),
    "sentinel_kept": ("only when every number read is averaged, sentinels such as -1 (and declared "
                      "failures) included"),
    "harness": "by the harness's own rule (its printed figure)",
    "all": "under valid_mean and zero_filled alike (no missing scores to tell them apart)",
    "none": "under no rule",
    "finding": "",
}


#: the one-line summary's phrases (:func:`published_headline`): no rule names; the section has them
_SHORT = {
    "zero": "only when missing scores count as 0",
    "valid": "from the valid scores",
    "item": "only as a mean of per-item averages",
    "all_rows": "only with every row averaged as read, re-runs included",
    "min": "only with missing scores at the rubric minimum",
    "sentinel_dropped": "only with the sentinels dropped and out-of-range scores kept",
    "sentinel_kept": "only with sentinels such as -1 (or declared failures) averaged in",
    "harness": "by the harness's own rule",
    "all": "under more than one rule alike",
    "none": "under no rule",
}


def published_headline(checks: list[dict[str, Any]]) -> str:
    """The published check in one short sentence for a first screen (counts per kind of rule,
    how many cells cannot be tied to one rule); :func:`published_summary` has the detail."""
    total = len(checks)
    if not total:
        return "no published cells to check"
    groups: dict[str, int] = {}
    for rec in checks:
        cat = _category(rec)
        groups[cat] = groups.get(cat, 0) + 1
    parts: list[str] = []
    for cat in (*_SHORT, "finding"):
        n = groups.get(cat)
        if not n:
            continue
        subject = (f"{n} of {total} published {'cell' if total == 1 else 'cells'}" if not parts
                   else f"{n}")
        if cat == "finding":
            parts.append(f"{subject} cannot be checked")
        else:
            parts.append(f"{subject} {'reproduces' if n == 1 else 'reproduce'} {_SHORT[cat]}")
    # cells several rules reproduce alike are already said; the others that name no one rule
    amb = sum(1 for r in checks if r.get("ambiguous") and _category(r) != "all")
    if amb:
        parts.append(f"{amb} cannot be tied to one rule")
    return "; ".join(parts)


def published_summary(checks: list[dict[str, Any]]) -> str:
    """One sentence: how many published cells each kind of rule reproduces, from the records
    of the :func:`published_check` table (results.json ``published_check``).

    ``10 of 10 published cells reproduce only when missing scores count as 0``; cells no rule
    reproduces are named with their nearest rule, its value and its distance.
    """
    total = len(checks)
    if not total:
        return "no published cells to check"
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in checks:
        groups.setdefault(_category(rec), []).append(rec)
    parts: list[str] = []
    for cat in ("zero", "valid", "item", "all_rows", "min", "sentinel_dropped", "sentinel_kept",
                "harness", "all", "none", "finding"):
        recs = groups.get(cat)
        if not recs:
            continue
        n = len(recs)
        if cat == "finding":
            head = f"{n} of {total} published" if not parts else f"{n}"
            parts.append(f"{head} {'cell' if n == 1 else 'cells'} cannot be checked: "
                         + "; ".join(dict.fromkeys(r["finding"] for r in recs)))
            continue
        if not parts:
            subject = f"{n} of {total} published {'cell' if total == 1 else 'cells'}"
        else:
            subject = f"{n} {'cell' if n == 1 else 'cells'}"
        phrase = _PHRASES[cat]
        if cat == "all" and any(r.get("ambiguous") and "planned judgments are absent" in
                                r["ambiguous"]["why"] for r in recs):
            phrase = ("under valid_mean and zero_filled alike (every row present has a score; the "
                      "planned-but-absent judgments are counted only by zero_filled_planned, which "
                      "does not reproduce them)")
        if cat == "harness":
            whats = list(dict.fromkeys(_harness_what(r) for r in recs))
            phrase = f"by the harness's own rule ({'; '.join(whats)})"
        text = f"{subject} {'reproduces' if n == 1 else 'reproduce'} {phrase}"
        if cat == "none":
            near = []
            for r in recs:
                label = _cell_label(r["variant"], r["judge"], r["subset"], r["field"])
                if r["nearest_rule"] is None:
                    near.append(r.get("finding") or f"{label} has no rows")
                else:
                    nd = r["decimals"] + 2
                    near.append(f"{label} {_num(r['published'], r['decimals'])}: "
                                f"{r['nearest_rule']} {_num(r['nearest_value'], nd)} "
                                f"(distance {_num(r['distance'], nd)})")
            text += "; nearest: " + ", ".join(near)
        parts.append(text)
    amb = [r for r in checks if r.get("ambiguous")]
    if amb:
        first = amb[0]
        label = _cell_label(first["variant"], first["judge"], first["subset"], first["field"])
        more = f" (and {len(amb) - 1} more cell{'s' if len(amb) > 2 else ''})" if len(amb) > 1 else ""
        parts.append(f"{label}{more} cannot name one rule: {first['ambiguous']['why']}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- repeats


def conflict_kinds(rows: pl.DataFrame) -> dict[str, dict[str, int]]:
    """results.json ``conflict_kinds``: per :class:`~workbench.common.vocab.ConflictKind`, the
    conflicting ``rows`` and their distinct ``keys`` (every kind listed, zeros included)."""
    from workbench.ingest.reader import conflict_kind

    kinds = (rows.lazy().filter(pl.col("bucket") == "conflict")
             .select(conflict_kind().alias("kind"), pl.concat_str(list(KEY_FIELDS), separator="\x1f").alias("k"))
             .group_by("kind").agg(pl.len().alias("rows"), pl.col("k").n_unique().alias("keys")).collect())
    got = {r["kind"]: r for r in kinds.to_dicts()}
    zero = {"rows": 0, "keys": 0}
    return {k.value: {n: int(got.get(k.value, zero)[n]) for n in ("rows", "keys")} for k in vocab.ConflictKind}


def conflict_runs(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """results.json ``conflict_runs``: per cell (judge x variant) with ``different_answer``
    conflicts, what each run would give on the headline: the valid mean and n over the rows
    whose answer is their key's first-seen one (``first_answer``, file and line order) and
    over the rows with another answer (``other_answer``), with the cell's affected ``keys``.
    Every such row is held out of the scorecard; these figures only say how far the two runs
    are apart. A row without an answer is in neither. Sorted by judge, then variant."""
    from workbench.ingest.reader import ANSWER_COLUMN, conflict_kind

    if ANSWER_COLUMN not in rows.columns:
        return []
    hl = cfg.headline
    value = pl.when(pl.col(f"{hl}__status") == "valid").then(_every_value(cfg, hl))
    sub = (rows.lazy().filter(conflict_kind() == vocab.ConflictKind.DIFFERENT_ANSWER.value)
           .select(*KEY_FIELDS, pl.col(ANSWER_COLUMN).alias("a"), value.alias("v"))
           # the table is in file and line order: the first answer of a key is its first-seen run
           .with_columns(pl.col("a").drop_nulls().first().over(list(KEY_FIELDS)).alias("first"))
           .filter(pl.col("a").is_not_null())
           .with_columns((pl.col("a") == pl.col("first")).alias("is_first")))
    per = (sub.group_by("judge", "variant")
           .agg(pl.concat_str(list(KEY_FIELDS), separator="\x1f").n_unique().alias("keys"),
                pl.col("v").filter("is_first").mean().alias("m1"), pl.col("v").filter("is_first").count().alias("n1"),
                pl.col("v").filter(~pl.col("is_first")).mean().alias("m2"),
                pl.col("v").filter(~pl.col("is_first")).count().alias("n2"))
           .sort("judge", "variant", nulls_last=True).collect())
    return [{"judge": r["judge"], "variant": r["variant"], "field": hl, "keys": int(r["keys"]),
             "first_answer": {"mean": r["m1"] if r["n1"] else None, "n": int(r["n1"])},
             "other_answer": {"mean": r["m2"] if r["n2"] else None, "n": int(r["n2"])}}
            for r in per.to_dicts()]


# --------------------------------------------------------------------------- claims


def _harness_what(rec: dict[str, Any]) -> str:
    """Which harness figure reproduces a cell, in which unit (from ``harness_figure``)."""
    desc = rec.get("harness_figure") or "the harness figure"
    name = desc.split(" (")[0]
    m = re.search(r"harness: an? (\w+)", desc)
    unit = m.group(1) if m else None
    other = {"fraction": "percent", "percent": "fraction"}.get(unit or "")
    by = set(rec.get("reproduced_by") or [])
    if "harness_rescaled" in by and "harness" not in by and other:
        return f"{name}, as a {other}"
    return f"{name}, as a {unit}" if unit else f"{name}, as printed"


def _num(x: float | None, nd: int = 2) -> str:
    if x is None:
        return "-"
    text = f"{x:.{nd}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _claimed_text(x: float) -> str:
    """A claimed value as printed: two decimals unless it carries more."""
    d = _decimals(repr(float(x))) if "e" not in repr(float(x)) else 6
    return _num(x, max(2, d))


def _pct(x: float | None, n: int | None = None) -> str:
    """A rate with the precision its denominator ``n`` needs (the report's rule)."""
    from workbench.common.text import pct

    return pct(x, n)


def _p(p: float | None) -> str:
    if p is None:
        return "p undefined"
    return "Fisher p<0.001" if p < 0.001 else f"Fisher p={p:.2g}"


def _side(rows: pl.DataFrame, cfg: Config, variant: str, claim: dict[str, Any],
          fld: str, joint: JointBootstrap) -> dict[str, Any]:
    """One side of a claim. Its ``rows`` are its judgments, as in the census and the scorecard:
    planned judgments with no row are included, so ``rows - valid_n`` over ``rows`` is the
    census's missing rate (one definition everywhere) and the bounds match the scorecard's.
    ``rows``: :func:`_narrow`'s; ``joint``: the check's bootstrap over the run's clusters."""
    scope = _scope(rows, cfg, variant, claim["judge"], claim["subset"])
    cell = rows.filter(selection.in_cells() & scope)
    absent = selection.count_where(rows, (pl.col("bucket") == "missing_planned") & scope)
    valid = cell.filter(pl.col(fld).is_not_null())
    from workbench.ingest.clusters import column

    summ = summarize_cell(valid[fld].to_numpy(), valid[column(valid)].to_numpy(),
                          cell_row_count(cell) + absent, cfg,
                          key=("claim", variant, claim["judge"], claim["subset"], fld), joint=joint)
    joint.run()
    return {"summary": summ, "judges": sorted(set(cell["judge"].drop_nulls().to_list()))}


def _claim_error(claim: dict[str, Any], reason: str) -> InputError:
    where = f"item {claim.get('index', '?')} ({claim['name']!r})"
    return InputError(str(claim.get("source", "claims")), f"{where}: {reason}")


def _validate_claim(rows: pl.DataFrame, cfg: Config, claim: dict[str, Any]) -> str:
    fld = claim.get("field") or cfg.headline
    if fld not in cfg.score_names:
        raise _claim_error(claim, f"field {fld!r} is not a rubric field; the config's fields are "
                           f"{', '.join(cfg.score_names)}")
    if claim.get("subset") is not None and claim["subset"] not in cfg.subsets:
        raise _claim_error(claim, f"subset {claim['subset']!r} is not defined in the config "
                           f"(defined: {', '.join(sorted(cfg.subsets)) or 'none'})")
    variants = set(selection.cell_values(rows, "variant"))
    for side in ("a", "b"):
        if claim[side] not in variants:
            raise _claim_error(claim, f"variant {claim[side]!r} ({side}) has no rows in the inputs")
    if claim.get("judge") is not None and claim["judge"] not in selection.cell_values(rows, "judge"):
        raise _claim_error(claim, f"judge {claim['judge']!r} has no rows in the inputs")
    return fld


def _zero_reproduces(za: Fraction | None, zb: Fraction | None, claimed: float) -> str | None:
    """How the zero-filled means reproduce the claim (a note), or None when they do not.

    Tried at the claim's printed decimals and at 2: the exact difference rounded, then the
    difference of the two means each rounded first (a claim read off a printed card).
    """
    if za is None or zb is None:
        return None
    text = repr(float(claimed))
    if "e" in text:
        return None
    target = Decimal(text)
    d0 = _decimals(text)
    for d in range(d0, max(d0, 2) + 1):
        if target in rounded(za - zb, d):
            return f"the zero-filled difference {_num(float(za - zb), d)} reproduces the claim"
        for x in sorted(rounded(za, d)):
            for y in sorted(rounded(zb, d)):
                if x - y == target:
                    return (f"the zero-filled means reproduce the claim as printed: "
                            f"{x} - {y} = {_claimed_text(claimed)}")
    return None


def _verdict(claimed: float, lo: float | None, hi: float | None, status_a: str, status_b: str,
             reasons_gate: list[str], margin: float | None = None) -> tuple[str, str]:
    c = _claimed_text(claimed)
    if lo is None or hi is None:
        interval = "no interval (fewer than 2 scenarios)"
    elif lo <= 0 <= hi:
        interval = "the interval contains 0"
    elif (lo > 0) == (claimed > 0) and claimed != 0:
        interval = "the interval excludes 0"
    else:
        interval = "the interval excludes 0 with the opposite sign"
    if status_a != STATUS_MEASURED or status_b != STATUS_MEASURED:
        return "insufficient", "; ".join([*reasons_gate, interval])
    if lo is None or hi is None:
        return "insufficient", interval
    if lo <= 0 <= hi:
        excludes = claimed < lo or claimed > hi
        if margin is not None and -margin <= lo and hi <= margin:
            return "equivalent", (f"the interval lies within +-{margin:g} (the equivalence margin)"
                                  + (f" and excludes the claimed {c}" if excludes else ""))
        if excludes:
            return "refuted", f"the interval contains 0 and excludes the claimed {c}"
        return "inconclusive", f"the interval contains both 0 and the claimed {c}"
    if claimed == 0:
        return "refuted", "the claim is 0 but the interval excludes 0"
    sign = 1.0 if claimed > 0 else -1.0
    if (lo > 0) != (sign > 0):
        return "reverses", interval
    far = hi if sign > 0 else lo
    side = "above" if sign > 0 else "below"
    if sign * claimed > sign * far:
        return "shrinks", (f"the interval excludes 0 with the claim's sign, but the claimed {c} "
                           f"is {side} it")
    near = lo if sign > 0 else hi
    if sign * claimed >= sign * near:
        return "holds", ("the interval excludes 0 with the claim's sign and contains the "
                         f"claimed {c}")
    return "holds", (f"the interval excludes 0 with the claim's sign; the claimed {c} is nearer 0 "
                     "than all of it")


def _gate_reasons(summ: dict[str, Any], cfg: Config, fld: str) -> list[str]:
    if summ["status"] == STATUS_MEASURED:
        return []
    if summ["valid_n"] == 0:
        return [f"no valid {fld} in {summ['rows']} rows"]
    out = []
    if summ["valid_n"] < cfg.min_valid_n:
        out.append(f"{summ['valid_n']} valid < {cfg.min_valid_n} preregistered")
    if summ["clusters"] < cfg.min_clusters:
        out.append(f"{summ['clusters']} scenarios < {cfg.min_clusters} preregistered")
    return out


def _judge_confound(rows: pl.DataFrame, cfg: Config, claim: dict[str, Any], fld: str,
                    ja: list[str], jb: list[str]) -> tuple[bool, str | None, float | None]:
    """Different judge sets on the two sides whose own missing rates differ.

    Tested over the claim's scope (all variants) on the units of
    :func:`workbench.analysis.census.missingness_units` (``missingness.unit``), the two groups as the
    labels: when the two judge groups judged some (scenario, variant) blocks in common
    (items with ``unit: trial``), the groups' whole blocks are permuted within them (the
    judge test); when every block was judged by one group only, whole (scenario, variant)
    blocks (items) are permuted within scenarios, labelled by their group (the variant
    test's units): a failed render or a crashed variant is one event, not one per judge or
    trial.
    """
    if set(ja) == set(jb) or not ja or not jb:
        return False, None, None
    shared = set(ja) & set(jb)
    g1 = (set(ja) - set(jb)) or shared
    g2 = (set(jb) - set(ja)) or shared
    within = subset_filter(cfg, claim["subset"])

    def rate(group: set[str]) -> tuple[int, int]:
        """(missing, judgments) of the group's judges: the census's definition
        (:func:`workbench.analysis.scorecard.cell_row_count` of their cell rows, a conflicting key
        once, plus their planned judgments with no row), counted without copying the rows."""
        judges = within & pl.col("judge").is_in(sorted(group))
        cell = selection.in_cells() & judges
        conflict = cell & (pl.col("bucket") == "conflict")
        keys = rows.lazy().filter(conflict).select(KEY_FIELDS).unique().select(pl.len()).collect().item()
        n = (selection.count_where(rows, cell) - selection.count_where(rows, conflict) + int(keys)
             + selection.count_where(rows, judges & (pl.col("bucket") == "missing_planned")))
        return n - selection.count_where(rows, cell & pl.col(fld).is_not_null()), n

    m1, n1 = rate(g1)
    m2, n2 = rate(g2)
    units = _units(rows, cfg, claim, fld, None).filter(pl.col("judge").is_in(sorted(g1 | g2)))
    units = units.with_columns(pl.col("judge").is_in(sorted(g1)).cast(pl.String).alias("__group"))
    p = None
    seed = stats.derive_seed(cfg.seed, "confound_judge", claim["name"])
    if n1 and n2 and units.height:
        codes = [reduce_codes.label_codes(units[k], nulls="first")[0] for k in KEY_FIELDS]
        group = reduce_codes.label_codes(units["__group"], nulls="first")[0]
        missing = units["missing"].to_numpy()
        cl = units["cluster_code"].to_numpy() if "cluster_code" in units.columns else None
        arrays = census.missingness_units(missing, *codes[:3], group, "judge", cfg.missingness_unit, cluster=cl)
        blk, lab = arrays[3], arrays[2]
        if np.unique(blk * 2 + lab).size == np.unique(blk).size:
            # every block is judged by one group only: whole (scenario, variant) blocks (the
            # variant test's units; one group each) labelled by their group, within scenarios
            m_, t_, lab_, blk_ = census.missingness_units(missing, codes[0], codes[1] * 2 + group, codes[2],
                                                          codes[3], "variant", cfg.missingness_unit,
                                                          cluster=cl)
            arrays = (m_, t_, lab_ % 2, blk_)
        p = census.unit_test(*arrays, seed).p_value
    if p is None or p >= cfg.alpha:
        return False, None, p
    note = (f"different judges: a scored by {', '.join(ja)}, b by {', '.join(jb)}; "
            f"{', '.join(sorted(g1))} {'leaves' if len(g1) == 1 else 'leave'} {_pct(m1 / n1, n1)} of "
            f"{'its' if len(g1) == 1 else 'their'} {n1} judgments without a valid {fld} vs "
            f"{_pct(m2 / n2, n2)} of {n2} for {', '.join(sorted(g2))} (design permutation p{_pv(p)})")
    return True, note, p


def _unit_words(cfg: Config) -> str:
    """The variant test's unit in words (``missingness.unit``)."""
    return "whole scenario x variant blocks" if cfg.missingness_unit == "block" else "whole items"


def _pv(p: float) -> str:
    return "<0.001" if p < 0.001 else f"={p:.2g}"


def _units(rows: pl.DataFrame, cfg: Config, claim: dict[str, Any], fld: str,
           variants: list[str] | None) -> pl.DataFrame:
    """Judgment units (missing 0/1 for ``fld``) in the claim's scope."""
    where = subset_filter(cfg, claim["subset"]) & selection.keyed_once()
    if claim.get("judge") is not None:
        where = where & (pl.col("judge") == claim["judge"])
    if variants is not None:
        where = where & pl.col("variant").is_in(variants)
    units = (rows.lazy().filter(where).group_by(list(KEY_FIELDS))
             .agg((pl.col(fld).is_null().any() | (pl.len() > 1)).cast(pl.Float64).alias("missing"))
             .sort(list(KEY_FIELDS)).collect())
    return census.with_cluster_codes(units, rows)


def check_claims(rows: pl.DataFrame, cfg: Config,
                 claims: list[dict[str, Any]]) -> pl.DataFrame:
    """Recompute every claimed difference ``a - b`` on the valid rows and give a verdict: the
    :data:`workbench.common.schemas.CLAIMS` table, one row per claim (``claims``: :func:`read_claims`).

    Per claim: ``recomputed`` with ``ci_low``/``ci_high`` (difference of valid means, clustered
    t interval: :func:`workbench.analysis.paired.contrast_record`), ``paired`` with its interval (matched
    units), ``zero_filled`` (difference of the sides' zero-filled means, rows as read),
    ``valid_n_*``/``rows_*``/``status_*``/``missing_rate_*`` per side, ``bound_low``/
    ``bound_high`` (every missing row of a and of b anywhere in the rubric range: lowest and
    highest possible a - b), ``missingness_p`` (do the sides' missing rates differ? the
    census's variant test on the two sides, whole (scenario, variant) blocks permuted within
    scenarios by default, ``missingness_method``; ``missingness_min_p`` the smallest p it can
    reach on this design; ``fisher_p`` is the rows-as-independent
    Fisher test, beside it only), ``judge_missingness_p`` (different judge sets: design
    permutation test), ``confounded`` (either of ``confounded_missing``: ``missingness_p`` <
    ``alpha``; ``confounded_judges``: different judge sets whose own missing rates differ), with
    ``confounding_notes`` the sentences saying why (also in ``notes``), ``p`` (the clustered t
    p-value of the recomputed difference) with ``p_holm`` (Holm-adjusted across the claims of
    one file), ``verdict_ci_low``/``verdict_ci_high`` at ``verdict_confidence`` (the claim's
    interval at its Holm step-down level, ``verdict_ci_method`` ``holm_stepdown_cr2_bm``, in a
    family of ``verdict_family`` claims: :func:`_family_verdicts`), and ``verdict``, read off
    that family-adjusted interval (with one claim it is the ``confidence`` interval):

    * ``insufficient``: either side is not ``measured``, no interval exists, or the interval
      has zero width (no variation between clusters: a degenerate design);
    * ``holds``: the interval excludes 0 with the claim's sign and contains the claim, or the
      claim is nearer 0 than all of it;
    * ``shrinks``: same sign, but the claim is further from 0 than the whole interval;
    * ``reverses``: the interval excludes 0 with the opposite sign;
    * ``equivalent``: the interval lies within +-``equivalence_margin`` (config; unset: never);
    * ``refuted``: the interval contains 0 and excludes the claimed value (or the claim is 0
      and the interval excludes 0);
    * ``inconclusive``: the interval contains both 0 and the claimed value.

    ``notes`` are short sentences; ``notes[0]`` is always the reason for the verdict (what
    :func:`claim_line` prints in parentheses).
    """
    from workbench.reduce.sufficient import JointBootstrap as Joint

    out = []
    joint: JointBootstrap | None = None  # one for every claim: its weights drawn once
    for claim in claims:
        claim = {"subset": None, "judge": None, "field": None, **claim}
        fld = _validate_claim(rows, cfg, claim)
        sub = _narrow(rows, cfg, [fld])
        if joint is None:  # the run's cluster weights (a function of seed and cluster index)
            joint = Joint.for_rows(sub, cfg)
        a, b, claimed = claim["a"], claim["b"], float(claim["claimed"])
        rec = paired.contrast_record(sub, cfg, a, b, fld, claim["subset"], claim["judge"], joint=joint,
                                     where=pl.col("variant").is_in([a, b]))
        joint.run()
        sa, sb = _side(sub, cfg, a, claim, fld, joint), _side(sub, cfg, b, claim, fld, joint)
        ca, cb = sa["summary"], sb["summary"]
        za = _rule_fractions(rows, cfg, a, claim["judge"], claim["subset"], fld)["zero_filled"]
        zb = _rule_fractions(rows, cfg, b, claim["judge"], claim["subset"], fld)["zero_filled"]
        zero = None if za is None or zb is None else float(za - zb)
        lo_b = hi_b = None
        if ca["rows"] and cb["rows"]:
            lo_b = ca["lower_bound"] - cb["upper_bound"]
            hi_b = ca["upper_bound"] - cb["lower_bound"]
        miss_a, miss_b = ca["rows"] - ca["valid_n"], cb["rows"] - cb["valid_n"]
        rate_a = miss_a / ca["rows"] if ca["rows"] else None
        rate_b = miss_b / cb["rows"] if cb["rows"] else None
        fisher = (stats.fisher_exact_2x2(miss_a, ca["rows"], miss_b, cb["rows"])
                  if ca["rows"] and cb["rows"] else None)
        gate = _gate_reasons(ca, cfg, fld) + _gate_reasons(cb, cfg, fld)
        design, seen = census.design_missingness(_units(sub, cfg, claim, fld, [a, b]), "variant",
                                                 stats.derive_seed(cfg.seed, "confound_variant", claim["name"]),
                                                 cfg.missingness_unit)
        notes: list[str] = []  # the verdict's reason goes first, once the family is known
        for side, c, m in (("a", ca, miss_a), ("b", cb, miss_b)):
            if m:
                notes.append(f"{side}: {m} of {c['rows']} judgments have no valid {fld}")
        if zero is not None:
            how = _zero_reproduces(za, zb, claimed)
            notes.append(how or f"the zero-filled difference {_num(zero)} does not reproduce "
                         "the claim either")
        if lo_b is not None and (miss_a or miss_b):
            lo_v, hi_v = (f"{x:g}" for x in cfg.value_range)
            flip = "the sign can flip" if lo_b <= 0 <= hi_b else "the sign cannot flip"
            notes.append(f"with the missing rows anywhere in {lo_v}..{hi_v} the difference "
                         f"lies in [{_num(lo_b)}, {_num(hi_b)}]: {flip}")
        side_flag = design.p_value is not None and design.p_value < cfg.alpha
        confounding = []
        if side_flag:
            confounding.append(f"missing rates differ: {_pct(rate_a, ca['rows'])} of {ca['rows']} judgments vs "
                               f"{_pct(rate_b, cb['rows'])} of {cb['rows']} ({_unit_words(cfg)} permuted "
                               f"within scenarios, p{_pv(design.p_value)})")
        elif census.cannot_reject(seen["min_p"], cfg.alpha) and (miss_a or miss_b):
            notes.append(f"the missingness test cannot reject at {cfg.alpha:.0%} with {seen['blocks']} "
                         f"blocks (smallest attainable p {seen['min_p']:.2g}): not evidence of equal rates")
        judge_flag, judge_note, judge_p = _judge_confound(sub, cfg, claim, fld, sa["judges"], sb["judges"])
        if judge_note:
            confounding.append(judge_note)
        notes.extend(confounding)
        if rec["paired_diff"] is not None:
            unit = {"row": "matched rows", "scenario_judge": "matched scenario x judge means",
                    "scenario_mean": "matched scenario means"}[rec["paired_unit"]]
            ci = ("" if rec["paired_ci_low"] is None
                  else f" [{_num(rec['paired_ci_low'])}, {_num(rec['paired_ci_high'])}]")
            notes.append(f"paired on {rec['matched']} {unit}: {_num(rec['paired_diff'])}{ci}")
        out.append({
            "name": claim["name"], "field": fld, "subset": claim["subset"], "judge": claim["judge"],
            "a": a, "b": b, "claimed": claimed,
            "recomputed": rec["diff"], "ci_low": rec["ci_low"], "ci_high": rec["ci_high"],
            "paired": rec["paired_diff"], "paired_ci_low": rec["paired_ci_low"],
            "paired_ci_high": rec["paired_ci_high"],
            "zero_filled": zero,
            "valid_n_a": ca["valid_n"], "rows_a": ca["rows"], "valid_n_b": cb["valid_n"],
            "rows_b": cb["rows"], "status_a": ca["status"], "status_b": cb["status"],
            "missing_rate_a": rate_a, "missing_rate_b": rate_b,
            "bound_low": lo_b, "bound_high": hi_b, "fisher_p": fisher,
            "missingness_p": design.p_value,
            "missingness_method": census.method_name("variant", design, cfg.missingness_unit),
            "missingness_min_p": seen["min_p"],
            "judge_missingness_p": judge_p,
            "p": rec["p"], "p_holm": None,
            "verdict_ci_low": None, "verdict_ci_high": None, "verdict_confidence": None,
            "verdict_ci_method": None, "verdict_family": None,
            "equivalence_margin": cfg.equivalence_margin,
            "verdict": None, "confounded": bool(side_flag or judge_flag),
            "confounded_missing": bool(side_flag), "confounded_judges": bool(judge_flag),
            "confounding_notes": confounding, "notes": notes,
            "_se": rec["se"], "_df": rec["df"], "_gate": gate,
        })
    _family_verdicts(out, cfg)
    return schemas.frame(out, schemas.CLAIMS)


VERDICT_CI_METHOD = "holm_stepdown_cr2_bm"
"""``verdict_ci_method``: each claim's CR2 Bell-McCaffrey t interval at its Holm step-down
level (:func:`workbench.stats.holm_stepdown_levels`)."""


def _family_verdicts(out: list[dict[str, Any]], cfg: Config) -> None:
    """Verdicts on the family-adjusted interval, the same family as ``p_holm``.

    The claims of one file with a p-value are one Holm family at error rate 1 - confidence
    (so one claim keeps its ``confidence`` interval). Each claim's ``verdict_ci_*`` is its
    t interval at its step-down level: it excludes 0 exactly when ``p_holm`` < 1 -
    confidence, so a family of true-null claims is called ``holds`` (or ``reverses``) for
    any claim at most that often, however many claims the file has; the unadjusted
    ``ci_low``/``ci_high`` stay beside it. A claim whose interval has zero width (no
    variation between clusters: se 0, no p) is ``insufficient``: a zero-width interval is
    not a measurement of the uncertainty.
    """
    fam_alpha = 1.0 - cfg.confidence
    levels = stats.holm_stepdown_levels([r["p"] for r in out], fam_alpha)
    adjusted = stats.holm([r["p"] for r in out])
    family = sum(1 for r in out if r["p"] is not None)
    for r, level, adj in zip(out, levels, adjusted, strict=True):
        se, df, gate = r.pop("_se"), r.pop("_df"), r.pop("_gate")
        r["p_holm"] = adj
        if level is not None:
            lo, hi = stats.t_interval(r["recomputed"], se, df, level)
            r.update(verdict_ci_low=lo, verdict_ci_high=hi, verdict_confidence=level,
                     verdict_ci_method=VERDICT_CI_METHOD, verdict_family=family)
        claimed = r["claimed"]
        if level is None and r["ci_low"] is not None and r["ci_low"] == r["ci_high"]:
            verdict = "insufficient"
            why = "; ".join([*gate, f"the interval has zero width ({_num(r['recomputed'])}: no variation "
                             "between clusters), so it measures no uncertainty: a degenerate design, "
                             "not evidence"])
        else:
            verdict, why = _verdict(claimed, r["verdict_ci_low"], r["verdict_ci_high"], r["status_a"],
                                    r["status_b"], gate, cfg.equivalence_margin)
            if level is not None and family > 1:
                why = (f"on the {level:.2%} Holm interval [{_num(r['verdict_ci_low'])}, "
                       f"{_num(r['verdict_ci_high'])}] ({family} claims): {why}")
        r["verdict"] = verdict
        r["notes"].insert(0, why)
        if r["p"] is not None:
            r["notes"].append(f"CR2 cluster-robust t (Bell-McCaffrey df) p{_pv(r['p'])}; Holm-adjusted "
                              f"across the {family} claim{'s' if family != 1 else ''} of this file: "
                              f"p{_pv(adj)}")


def claim_supported(claim: dict[str, Any]) -> bool:
    """Whether the data support the claim as stated: it ``holds``, or it claims 0 (no
    difference) and the data are ``equivalent`` within the configured margin."""
    return claim["verdict"] == "holds" or (claim["claimed"] == 0 and claim["verdict"] == "equivalent")


def claim_line(claim: dict[str, Any]) -> str:
    """One line per claim, as the reviewer command prints it::

        NAME: claimed 3.25 -> recomputed -0.12 [-0.61, 0.38] (8/16 vs 16/18 valid): VERDICT (why)

    ``8/16 vs 16/18`` is valid/rows of a, then of b; ``why`` is ``notes[0]``.
    """
    ci = ("[no interval]" if claim["ci_low"] is None
          else f"[{_num(claim['ci_low'])}, {_num(claim['ci_high'])}]")
    why = claim["notes"][0] if claim.get("notes") else ""
    return (f"{claim['name']}: claimed {_claimed_text(claim['claimed'])} -> recomputed "
            f"{_num(claim['recomputed'])} {ci} ({claim['valid_n_a']}/{claim['rows_a']} vs "
            f"{claim['valid_n_b']}/{claim['rows_b']} valid): {claim['verdict'].upper()}"
            + (f" ({why})" if why else ""))


__all__ = [
    "RULES", "VERDICTS", "read_published", "read_claims", "aggregation_rules", "rounded",
    "printed_matches", "published_check", "published_summary", "check_claims", "claim_line",
    "claim_supported",
]
