"""Ingest: raw files -> one row per physical line, each in exactly one ledger bucket.

JSONL (plain or gzip) is streamed block by block through the columnar engine
(:mod:`workbench.ingest.engine`): DuckDB's JSON functions decode each line and extract the configured
fields on DuckDB's threads, and only the lines where DuckDB's reading could differ from
Python's (listed in that module) are decoded here, one by one, with the standard library's
``json`` (:func:`_python_line`: ``NaN``/``Infinity`` read so they can be classified as
``invalid_number``, repeated keys, lone surrogates, depth). A JSON array file is decoded at once
with ``msgspec`` (the standard library for the lines it rejects). Either way the per-line
columns (``NAME__kind/__num/__str``, keys, flags, verdict, ...) are the same, and
classification into buckets and repeat marking across all files is vectorised in polars
(:func:`rows_from_frames`).

Buckets (see :data:`BUCKETS`) partition the lines read: ``blank`` + every other bucket
== lines. ``missing_planned`` rows (planned judgments with no line) are appended by
:func:`workbench.ingest.ledger.apply_plan` and carry no file or line.
"""

from __future__ import annotations

import gc
import glob
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import polars as pl

from workbench.common import vocab
from workbench.common.config import ANSWER_FIELD_PREFIX, KEY_FIELDS, WHEN_FIELD_PREFIX, Config, FieldPath
from workbench.common.errors import InputError
from workbench.common.files import (  # noqa: F401 - re-exported (the limits live in files)
    MAX_INPUT_BYTES,
    check_distinct,
    check_regular_file,
    copy_reason,
    max_input_bytes,
    name_problem,
    path_match,
    path_regex_groups,
)
from workbench.common.files import gunzip as _gunzip
from workbench.common.files import read_raw as _read_raw
from workbench.common.files import too_big as _too_big
from workbench.common.numbers import BeyondFloat, beyond_int  # noqa: F401 - re-exported
from workbench.common.numbers import parse_float as _parse_float
from workbench.common.numbers import parse_int as _parse_int
from workbench.ingest import spill as ingest_spill
from workbench.ingest.engine import composite_key  # noqa: F401  (re-exported: ingest.composite_key as before)

BUCKETS: tuple[str, ...] = vocab.names(vocab.Bucket)
"""Ledger buckets; every physical line lands in exactly one (:class:`workbench.common.vocab.Bucket`)."""

FIELD_STATUSES: tuple[str, ...] = vocab.names(vocab.FieldStatus)
"""Per-field status of a rubric value (:class:`workbench.common.vocab.FieldStatus`); only ``valid`` enters a mean."""

_UNSET = msgspec.UNSET

# value kinds, assigned per value in one pass
_ABSENT, _NULL, _NUMBER, _STRING, _BOOL, _OTHER = range(6)


_KIND = {type(None): _NULL, int: _NUMBER, float: _NUMBER, str: _STRING, bool: _BOOL,
         type(_UNSET): _ABSENT, BeyondFloat: _NUMBER}


@dataclass(frozen=True)
class SourceFile:
    """One input file as read: its path, sha256 of the bytes on disk and its line count."""

    path: str
    sha256: str
    lines: int


# --------------------------------------------------------------------------- files


def expand_inputs(patterns: Sequence[str], allow_copies: bool = False,
                  skipped: list[tuple[str, str]] | None = None) -> list[str]:
    """Return the files named by paths or globs, in the order given (globs sorted).

    A glob skips copies of runs (:func:`workbench.common.files.copy_reason`: notebook checkpoints,
    editor backups), appending ``(path, why)`` to ``skipped``; a copy named explicitly is an
    :class:`InputError` saying why. ``allow_copies`` (``--allow-copies``) reads them as inputs.
    Raises :class:`InputError` for a path that does not exist or a glob that matches nothing,
    and for one file named twice (:func:`workbench.common.files.check_distinct`: a repeated path, a
    symlink and its target, two hard links: refused by both names, never read twice).
    """
    out: list[str] = []
    for pat in patterns:
        problem = name_problem(pat)
        if problem:
            raise InputError(pat, problem)
        if any(ch in pat for ch in "*?[") and not os.path.lexists(pat):
            hits = sorted(p for p in glob.glob(pat, recursive=True) if os.path.isfile(p))
            if not hits:
                raise InputError(pat, "no file matches this pattern")
            if not allow_copies:
                copies = [(h, why) for h in hits if (why := copy_reason(h)) is not None]
                if skipped is not None:
                    skipped.extend(copies)
                hits = [h for h in hits if copy_reason(h) is None]
                if not hits:
                    raise InputError(pat, f"matches only copies of runs ({len(copies)}: "
                                     f"{copies[0][0]}: {copies[0][1]}); add --allow-copies to read them")
            for hit in hits:
                check_regular_file(hit)
            out.extend(hits)
        else:
            check_regular_file(pat)
            why = None if allow_copies else copy_reason(pat)
            if why is not None:
                raise InputError(pat, f"looks like a copy of a run, not the run: {why}; it is not "
                                 "read as an input (a partial checkpoint would pass for the run): "
                                 "give the original file, or add --allow-copies to read it")
            out.append(pat)
    check_distinct(out)
    if not out:
        raise InputError("<inputs>", "no input files given")
    return out


def _check_encoding(head: bytes, path: str) -> None:
    """Refuse UTF-16/UTF-32 text by name (it would read as every line malformed)."""
    boms = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
            (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
    name = next((n for bom, n in boms if head.startswith(bom)), None)
    if name is None:
        sample = head[:4096]
        if len(sample) < 8 or sample.count(b"\x00") < len(sample) // 4:
            return
        name = "UTF-16" if sample.count(b"\x00") < len(sample) * 5 // 8 else "UTF-32"
    raise InputError(path, f"looks like {name} text; the workbench reads UTF-8 (convert it, e.g. "
                           f"iconv -f {name} -t UTF-8 FILE > FILE.utf8)")


_BOM = b"\xef\xbb\xbf"


def _file_format(path: str, cfg: Config) -> str:
    """jsonl, json-array, csv, tsv or parquet (:func:`workbench.ingest.tabular.file_format`: the
    config's ``format``, else extension and content); :class:`InputError` naming a format the
    workbench does not read."""
    from workbench.ingest.tabular import file_format

    return file_format(path, cfg.format)


# --------------------------------------------------------------------------- decoding


class _Spec:
    """The struct type that keeps only the top-level fields the config reads."""

    def __init__(self, cfg: Config):
        paths: list[FieldPath] = []
        for k in KEY_FIELDS:
            paths.extend(cfg.keys[k] or ())
        paths.extend(p for _, p in cfg.scores)
        paths.extend(p for p in (cfg.flags, cfg.verdict, cfg.pass_field) if p is not None)
        paths.extend(cfg.extra_fields.values())
        tops: list[str] = []
        for p in paths:
            if p[0] not in tops:
                tops.append(str(p[0]))
        self.attr = {name: f"f{i}" for i, name in enumerate(tops)}
        self.Row = msgspec.defstruct(
            "Row",
            [(a, Any, _UNSET) for a in self.attr.values()],
            rename={a: name for name, a in self.attr.items()},
        )
        self.lines_decoder = msgspec.json.Decoder(self.Row)
        self.array_decoder = msgspec.json.Decoder(list[self.Row])
        # each object key on a configured path, as it appears in JSON text, with the path
        # prefixes ending in it (for the duplicate-key check, :func:`_duplicate_keys`)
        tokens: dict[bytes, list[FieldPath]] = {}
        for p in paths:
            for i, tok in enumerate(p):
                if isinstance(tok, str):
                    prefix = tuple(p[: i + 1])
                    lst = tokens.setdefault(json.dumps(tok, ensure_ascii=False).encode(), [])
                    if prefix not in lst:
                        lst.append(prefix)
        self.key_tokens = list(tokens.items())

    def from_dict(self, d: dict[str, Any]) -> Any:
        return self.Row(**{a: d.get(name, _UNSET) for name, a in self.attr.items()})

    def getter(self, path: FieldPath) -> Callable[[list[Any]], list[Any]]:
        """Return a function mapping decoded rows to the values at ``path`` (UNSET if absent)."""
        top = attrgetter(self.attr[str(path[0])])
        rest = path[1:]
        if not rest:
            return lambda rows: list(map(top, rows))

        def walk(v: Any) -> Any:
            for tok in rest:
                if isinstance(tok, int):
                    if isinstance(v, list) and -len(v) <= tok < len(v):
                        v = v[tok]
                    else:
                        return _UNSET
                elif isinstance(v, dict):
                    v = v.get(tok, _UNSET)
                else:
                    return _UNSET
            return v

        return lambda rows: [walk(v) for v in map(top, rows)]


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
LONE_SURROGATE = "not valid Unicode: a lone surrogate escape in a string"


def _has_lone_surrogate(text: str, obj: Any) -> bool:
    """True if ``obj`` (decoded from ``text``) holds a string that cannot be UTF-8 encoded."""
    if not _SURROGATE_ESCAPE.search(text):
        return False
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (RecursionError, ValueError):
        return False
    return False


def _slow_decode(line: bytes, spec: _Spec) -> tuple[Any, str | None]:
    """Decode one line the fast path rejected: (row, None) or (None, reason it is malformed)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start})"
    try:
        obj = json.loads(text, parse_int=_parse_int, parse_float=_parse_float)
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, "not JSON: nested too deeply"
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(obj, dict):
        return None, f"not a JSON object (a JSON {_json_type(obj)})"
    if _has_lone_surrogate(text, obj):
        return None, LONE_SURROGATE
    return spec.from_dict(obj), None


def _json_type(obj: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(obj), type(obj).__name__)


def _decode_array(data: bytes, path: str, spec: _Spec) -> tuple[list[Any], dict[int, str], int]:
    """Decode a JSON array file: (rows, errors by element index, element count)."""
    try:
        rows = list(spec.array_decoder.decode(data))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        rows = None
    if rows is not None:
        if not spec.key_tokens or not _suspect_duplicates(data, rows, spec):
            return rows, {}, len(rows)
        try:
            items = json.loads(data, object_pairs_hook=_pairs_hook, parse_int=_parse_int, parse_float=_parse_float)
        except (ValueError, RecursionError):
            return rows, {}, len(rows)
        errors = {}
        for i, item in enumerate(items):
            d = _inner_dup(item)
            if d is not None:
                rows[i] = None
                errors[i] = _dup_reason(d)
        return rows, errors, len(rows)
    try:
        text = data.decode("utf-8")
        items = json.loads(text, parse_int=_parse_int, parse_float=_parse_float)
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not a JSON array: {exc.msg}", line=exc.lineno) from exc
    except RecursionError as exc:
        raise InputError(path, "not a JSON array: nested too deeply") from exc
    except ValueError as exc:
        raise InputError(path, f"not a JSON array: {exc}") from exc
    if not isinstance(items, list):
        raise InputError(path, "expected a JSON array of row objects, "
                               f"got a JSON {_json_type(items)}")
    out: list[Any] = []
    errors: dict[int, str] = {}
    for i, obj in enumerate(items):
        if isinstance(obj, dict) and _has_lone_surrogate(text, obj):
            out.append(None)
            errors[i] = LONE_SURROGATE
        elif isinstance(obj, dict):
            out.append(spec.from_dict(obj))
        else:
            out.append(None)
            errors[i] = f"not a JSON object (a JSON {_json_type(obj)})"
    return out, errors, len(items)


# --------------------------------------------------------------------------- extraction


_KEY_TYPES = frozenset((str, int))


def _key_strings(values: list[Any]) -> tuple[list[str | None], list[str | None] | None]:
    """Key values as strings; (strings, problems) with a problem text where a value is unusable.

    ``problems`` is None when every value is usable (the common case, checked in C).
    """
    types = set(map(type, values))
    if types <= _KEY_TYPES:
        # keys repeat a lot: convert and check each distinct value once (a str never equals
        # an int, so the set cannot merge values of different types)
        uniq: Iterable[str] = set(values)
        strs_fast: list[Any] = values
        if int in types:
            text = {v: v if type(v) is str else str(v) for v in uniq}
            strs_fast = list(map(text.__getitem__, values))
            uniq = text.values()
        if "" not in set(map(str.strip, uniq)):
            return strs_fast, None
    strs: list[str | None] = []
    probs: list[str | None] = []
    for v in values:
        t = type(v)
        if t is str:
            if v.strip():
                strs.append(v)
                probs.append(None)
            else:
                strs.append(None)
                probs.append("is an empty string")
        elif t is int:
            strs.append(str(v))
            probs.append(None)
        else:
            strs.append(None)
            probs.append("is missing" if v is _UNSET else "is null" if v is None
                         else f"is a {t.__name__}, not a string or integer")
    return strs, probs


def _path_text(p: FieldPath) -> str:
    return "".join(f"[{t}]" if isinstance(t, int) else (f".{t}" if i else t) for i, t in enumerate(p))


def _to_float(v: Any) -> float:
    try:
        return float(v)
    except OverflowError:  # an integer beyond the float range: out of every rubric
        try:
            text = str(v)
        except ValueError:  # past what str() converts (4,300 digits)
            text = ("-" if v < 0 else "") + "9" * int(abs(v).bit_length() * 0.30103)
        return BeyondFloat(v < 0, beyond_int(text))


def _score_columns(values: list[Any], name: str) -> dict[str, pl.Series]:
    n = len(values)
    kinds = list(map(_KIND.get, map(type, values), repeat(_OTHER)))
    kind_set = set(kinds)
    numbers = values if kind_set <= {_NUMBER} else [
        v if k == _NUMBER else None for v, k in zip(values, kinds, strict=True)]
    nums = pl.Series(numbers, dtype=pl.Float64, strict=False)
    if nums.null_count() != n - kinds.count(_NUMBER):  # ints too large for a float
        nums = pl.Series([_to_float(v) if k == _NUMBER else None
                          for v, k in zip(values, kinds, strict=True)], dtype=pl.Float64)
    beyond = nums.is_infinite().any() and any(isinstance(v, BeyondFloat) or (type(v) is int and abs(v) > _FMAX)
                                              for v in values)
    if kind_set & {_STRING, _BOOL, _OTHER} or beyond:  # a number past the float range: what it was
        strs = pl.Series([v if k == _STRING else (_short_repr(v) if k >= _BOOL else _beyond_text(v))
                          for v, k in zip(values, kinds, strict=True)], dtype=pl.String)
    else:
        strs = pl.repeat(None, n, dtype=pl.String, eager=True)
    kind = pl.Series(kinds, dtype=pl.Int8)
    return {f"{name}__kind": kind, f"{name}__num": nums, f"{name}__str": strs}


_FMAX = 1.7976931348623157e308


def _beyond_text(v: Any) -> str | None:
    """What a number past the float range was (the ``__str`` of a number: None for the others)."""
    if isinstance(v, BeyondFloat):
        return v.what
    if type(v) is int and abs(v) > _FMAX:
        return _to_float(v).what  # type: ignore[attr-defined]
    return None


def _short_repr(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _flags_columns(values: list[Any]) -> tuple[pl.Series, pl.Series]:
    """Flags as a List(String) column (non-strings shown as JSON text) and flags_present."""
    lists = values if set(map(type, values)) <= {list} else [
        v if type(v) is list else None for v in values]
    # built by polars, not pa.array: pyarrow imports pandas on its first pa.array (0.4 s of
    # CPU in a process that never needs it); a null element is shown as "null" text
    if not all(type(x) is str for v in lists if v is not None for x in v):
        lists = [None if v is None else [x if isinstance(x, str) else _short_repr(x) for x in v]
                 for v in lists]
    flags = pl.Series("flags", lists, dtype=pl.List(pl.String))
    return flags, flags.is_not_null().alias("flags_present")


def _text_column(values: list[Any]) -> list[str | None]:
    types = set(map(type, values))
    if types <= {str}:
        return values
    if types <= {str, type(None), type(_UNSET)}:
        return [None if v is _UNSET else v for v in values]
    return [v if type(v) is str else (None if v is _UNSET or v is None else _short_repr(v)) for v in values]


def _answer_column(values: list[Any]) -> list[str | None]:
    """An ``answer:`` field as text: a string as it is, any other value as its whole JSON text
    (keys sorted; not shortened as other extra fields are: two answers that differ late must
    differ), null where absent or null. :func:`_answer_digest` hashes it at once."""
    if set(map(type, values)) <= {str}:
        return values
    return [v if type(v) is str else None if v is _UNSET or v is None
            else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str) for v in values]


def _extract(rows: list[Any], spec: _Spec, cfg: Config, path: str,
             complete: bool = False) -> dict[str, Any]:
    """Columns for decoded rows (``None`` entries are blank or malformed lines; ``complete``
    says there are none)."""
    present = rows if complete else [r for r in rows if r is not None]
    cols: dict[str, list[Any]] = {}
    problems: list[str | None] = [None] * len(present)
    path_groups: dict[str, str] = {}
    if cfg.path_fields:
        groups = path_match(cfg.path_fields, Path(path).resolve().as_posix())
        if groups is None:
            names = path_regex_groups(cfg.path_fields)
            if set(names) & set(KEY_FIELDS):  # the path is where a key comes from
                raise InputError(path, f"file path does not match path_fields regex {cfg.path_fields!r}"
                                 f" (it gives {', '.join(sorted(set(names) & set(KEY_FIELDS)))})")
            # groups used only for provenance checks: null columns, the check says so
            path_groups = {}
            for g in names:
                cols[f"path_{g}"] = [None] * len(present)
        else:
            path_groups = {k: v for k, v in groups.items() if v is not None}
    for k in KEY_FIELDS:
        if k in cfg.constants:
            cols[k] = [cfg.constants[k]] * len(present)
            continue
        if k in path_groups:
            cols[k] = [path_groups[k]] * len(present)
            continue
        spec_paths = cfg.keys[k]
        if spec_paths is None:
            cols[k] = ["1" if k == "trial" else ""] * len(present)
            continue
        parts: list[list[str | None]] = []
        from_number: list[bool] | None = None
        for p in spec_paths:
            vals = spec.getter(p)(present)
            s, probs = _key_strings(vals)
            parts.append(s)
            if int in set(map(type, vals)):
                flags = [type(v) is int for v in vals]
                from_number = flags if from_number is None else [
                    a or b for a, b in zip(from_number, flags, strict=True)]
            if from_number is not None:
                cols[f"__num_{k}"] = from_number
            if probs is None:
                continue
            label = _path_text(p)
            label = "" if label == k else f" ({label})"
            for i, pr in enumerate(probs):
                if pr is not None and problems[i] is None:
                    problems[i] = f"key field '{k}'{label} {pr}"
        if len(parts) == 1:
            cols[k] = parts[0]
        else:
            cols[k] = [None if any(x is None for x in xs) else composite_key(xs)  # type: ignore[arg-type]
                       for xs in zip(*parts, strict=True)]
    for g, v in path_groups.items():
        if g not in KEY_FIELDS:
            cols[f"path_{g}"] = [v] * len(present)
    for name, p in cfg.scores:
        cols.update(_score_columns(spec.getter(p)(present), name))
    if cfg.flags is not None:
        cols["flags"], cols["flags_present"] = _flags_columns(spec.getter(cfg.flags)(present))
    else:
        cols["flags"] = pl.repeat(None, len(present), dtype=pl.List(pl.String), eager=True)
        cols["flags_present"] = pl.repeat(False, len(present), dtype=pl.Boolean, eager=True)
    cols["verdict"] = _text_column(spec.getter(cfg.verdict)(present)) if cfg.verdict else [None] * len(present)
    if cfg.pass_field is not None:
        vals = spec.getter(cfg.pass_field)(present)
        cols["pass_value"] = [v if type(v) is bool else None for v in vals]
    for name, p in cfg.extra_fields.items():
        text = _answer_column if name.startswith(ANSWER_FIELD_PREFIX) else _text_column
        cols[f"x_{name}"] = text(spec.getter(p)(present))
    cols["__problem"] = problems
    return cols


# --------------------------------------------------------------------------- classification


def _number_expr(name: str, cfg: Config) -> pl.Expr:
    """The numeric value read for a field: a JSON number, or a numeric string if accepted.

    With a categorical mapping (``values:``, headline only) a label (string, or a boolean read
    as ``true``/``false``) is its mapped value; positions named in ``explode.flip`` take the
    mirrored value (the variant sat on the other side of that game).
    """
    num = pl.col(f"{name}__num")
    if cfg.values is not None and name == cfg.headline:
        labels = list(cfg.values)
        mapped = (pl.when(pl.col(f"{name}__kind").is_in([_STRING, _BOOL]))
                  .then(pl.col(f"{name}__str").replace_strict(
                      labels, [cfg.values[k][0] for k in labels], default=None, return_dtype=pl.Float64)))
        value = pl.coalesce(num, mapped)
        if cfg.explode is not None and cfg.explode["flip"]:
            lo, hi = cfg.rubric_min, cfg.rubric_max
            value = (pl.when(pl.col(cfg.explode["position"]).is_in(list(cfg.explode["flip"])))
                     .then(lo + hi - value).otherwise(value))
        return value
    if cfg.numeric_strings:
        as_str = (
            pl.when(pl.col(f"{name}__kind") == _STRING)
            .then(pl.col(f"{name}__str").str.strip_chars().cast(pl.Float64, strict=False))
        )
        return pl.coalesce(num, as_str)
    return num


def _numeric_string(name: str, cfg: Config) -> pl.Expr:
    """A string read as a number (not a mapped label): what ``from_string`` counts."""
    if not cfg.numeric_strings:
        return pl.lit(False)
    return ((pl.col(f"{name}__kind") == _STRING)
            & pl.col(f"{name}__str").str.strip_chars().cast(pl.Float64, strict=False).is_not_null())


def _condition_expr(cond: dict[str, Any]) -> pl.Expr:
    """True where one ``missing_when`` condition holds (never null). The field is read as text
    (``x___whenN``: a string as written, another JSON value as its JSON text); ``equals`` a
    number compares numbers (2 and 2.0 alike), a boolean ``true``/``false``, a string the text
    exactly; ``matches`` searches the text with polars' regex (no backtracking). An absent or
    null field holds no condition."""
    col = pl.col(f"x_{cond['column']}")
    value = cond["value"]
    if cond["op"] == "matches":
        hit = col.str.contains(value)
    elif isinstance(value, bool):
        hit = col == ("true" if value else "false")
    elif isinstance(value, int | float):
        hit = col.str.strip_chars().cast(pl.Float64, strict=False) == float(value)
    else:
        hit = col == str(value)
    return hit.fill_null(False)


def declared_text(cond: dict[str, Any]) -> str:
    """A ``missing_when`` condition in words, as the reason of a row it made missing:
    ``explanation matches 'No response|Parse error' (declared_failure)`` (the label in
    parentheses only when the condition has one)."""
    value = cond["value"]
    shown = json.dumps(value) if isinstance(value, bool) else repr(value)
    label = f" ({cond['reason']})" if cond["reason"] else ""
    return f"{cond['field']} {cond['op']} {shown}{label}"


def _declared_expr(name: str, cfg: Config) -> pl.Expr:
    """True where a ``missing_when`` condition of score ``name`` holds (False without any)."""
    conds = cfg.missing_when.get(name, ())
    return pl.any_horizontal([_condition_expr(c) for c in conds]) if conds else pl.lit(False)


def _status_exprs(name: str, cfg: Config) -> list[pl.Expr]:
    kind = pl.col(f"{name}__kind")
    sval = pl.col(f"{name}__str")
    num = _number_expr(name, cfg)
    num_sent = [float(v) for v in cfg.missing_values if isinstance(v, int | float) and not isinstance(v, bool)]
    str_sent = [v for v in cfg.missing_values if isinstance(v, str)]
    sentinel = (num.is_in(num_sent) if num_sent else pl.lit(False)) | (
        (kind == _STRING) & sval.is_in(str_sent) if str_sent else pl.lit(False)
    )
    in_range = num.is_between(cfg.rubric_min, cfg.rubric_max)
    status = (
        pl.when(kind == _ABSENT).then(pl.lit("absent"))
        .when(kind == _NULL).then(pl.lit("null"))
        # a declared failure encoding (missing_when) is missing whatever number it was written as
        .when(_declared_expr(name, cfg)).then(pl.lit("declared_missing"))
        .when(sentinel.fill_null(False)).then(pl.lit("sentinel"))
        .when(num.is_null()).then(pl.lit("non_numeric"))
        # +-inf from a number literal past the float range (its text in __str) is out_of_range
        .when(num.is_nan() | (num.is_infinite() & ~((kind == _NUMBER) & sval.is_not_null())))
        .then(pl.lit("invalid_number"))
        .when(~in_range).then(pl.lit("out_of_range"))
        .otherwise(pl.lit("valid"))
    )
    finite = pl.when(num.is_finite()).then(num)
    scale = float(cfg.unit.get("scale", 1))
    if scale != 1 and cfg.preference is None and cfg.preference_scale is None and name == cfg.headline:
        finite = finite * scale
    return [
        status.alias(f"{name}__status"),
        finite.alias(f"{name}__raw"),
        (_numeric_string(name, cfg) if cfg.values is not None and name == cfg.headline
         else (kind == _STRING) & num.is_not_null()).alias(f"{name}__from_string"),
    ]


def _classify(df: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Add per-field status/value columns and the bucket (duplicates/conflicts not yet)."""
    names = cfg.score_names
    df = df.with_columns([e for n in names for e in _status_exprs(n, cfg)])
    df = df.with_columns(
        [pl.when(pl.col(f"{n}__status") == "valid").then(pl.col(f"{n}__raw")).alias(n) for n in names]
    )
    pref_reason = None
    if cfg.preference is not None:
        # Pairwise preference: the usable headline value is the win credit in percent
        # (1 -> 0, 2 -> 100, 1.5 -> 50 with the AlpacaEval mapping; with a continuous scale
        # [lo, hi] any value in it is linear credit, 1.73 -> 73); a number neither the codes
        # nor the scale name is out_of_range, never guessed.
        hl = cfg.headline
        keys = list(cfg.preference)
        raw = pl.col(f"{hl}__raw")
        credit = raw.replace_strict(
            keys, [100.0 * cfg.preference[k] for k in keys], default=None, return_dtype=pl.Float64) if keys \
            else pl.lit(None, dtype=pl.Float64)
        known = raw.is_in(keys) if keys else pl.lit(False)
        if cfg.preference_scale is not None:
            plo, phi = cfg.preference_scale
            in_scale = raw.is_between(plo, phi)
            credit = pl.coalesce(credit, pl.when(in_scale).then(100.0 * (raw - plo) / (phi - plo)))
            known = known | in_scale
        is_bad = (pl.col(f"{hl}__status") == "valid") & ~known
        df = df.with_columns(
            is_bad.alias("__pref_bad"),
            pl.when(is_bad).then(pl.lit("out_of_range"))
            .otherwise(pl.col(f"{hl}__status")).alias(f"{hl}__status"),
            pl.when((pl.col(f"{hl}__status") == "valid") & known).then(credit).alias(hl),
        )
        codes = ", ".join(_fmt_num(k) for k in keys)
        if cfg.preference_scale is not None:
            what = f"not a preference in [{_fmt_num(plo)}, {_fmt_num(phi)}]" + (
                f" nor one of the codes {codes}" if keys else "")
        else:
            what = f"not one of the mapped preference values {codes}"
        pref_reason = (pl.col("__pref_bad"), f"field '{hl}': {what}, got ")
    h = pl.col(f"{cfg.headline}__status")
    sub_present = pl.any_horizontal(
        [~pl.col(f"{n}__status").is_in(list(vocab.NULL_STATUSES)) for n in cfg.subscores]
    ) if cfg.subscores else pl.lit(False)
    bucket = (
        pl.when(pl.col("__problem").is_not_null()).then(pl.lit("malformed"))
        .when(pl.col("__forced_bucket").is_not_null()).then(pl.col("__forced_bucket"))
        .when(h.is_in(["valid", "non_numeric", "out_of_range", "invalid_number"])).then(h)
        .when(sub_present).then(pl.lit("partial"))
        .otherwise(pl.lit("empty"))
    )
    hl = cfg.headline
    lo, hi = _fmt_num(cfg.rubric_min), _fmt_num(cfg.rubric_max)
    raw = pl.col(f"{hl}__raw")
    value_text = pl.coalesce(
        pl.when(pl.col(f"{hl}__kind") == _NUMBER).then(pl.col(f"{hl}__str")),  # past the float range
        pl.concat_str(pl.lit("'"), pl.col(f"{hl}__str"), pl.lit("'")),
        # an integral value reads 85, not 85.0 (beyond Int64 it falls through to the float text)
        pl.when(raw == raw.round()).then(raw.cast(pl.Int64, strict=False).cast(pl.String)),
        raw.cast(pl.String),
        pl.col(f"{hl}__num").cast(pl.String),
    )
    if cfg.values is not None:
        labels = ", ".join(cfg.values)
        nn_text = pl.concat_str(pl.lit(f"field '{hl}': "), value_text,
                                pl.lit(f" is not in the value mapping ({labels})"))
    else:
        nn_text = pl.concat_str(pl.lit(f"field '{hl}': expected a number in [{lo}, {hi}], got "), value_text)
    oor_text = pl.concat_str(pl.lit(f"field '{hl}': outside the rubric [{lo}, {hi}], got "),
                             value_text, pl.lit(" (not rescaled)"))
    if pref_reason is not None:
        oor_text = pl.when(pref_reason[0]).then(
            pl.concat_str(pl.lit(pref_reason[1]), value_text)).otherwise(oor_text)
    reason = (
        pl.when(pl.col("__problem").is_not_null()).then(pl.col("__problem"))
        .when(pl.col("__forced_reason").is_not_null()).then(pl.col("__forced_reason"))
        .when(h == "non_numeric").then(nn_text)
        .when(h == "out_of_range").then(oor_text)
        .when(h == "invalid_number").then(
            pl.concat_str(pl.lit(f"field '{hl}': not a finite number, got "), value_text))
        .when(h == "sentinel").then(
            pl.concat_str(pl.lit(f"field '{hl}': sentinel "), value_text, pl.lit(" means no score")))
    )
    for cond in cfg.missing_when.get(hl, ()):  # the first condition that holds names the reason
        reason = reason.when((h == "declared_missing") & _condition_expr(cond)).then(
            pl.concat_str(pl.lit(f"field '{hl}': declared missing, "), value_text,
                          pl.lit(f" written where {declared_text(cond)}")))
    return df.with_columns(bucket.alias("bucket"), reason.alias("reason"))


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def content_columns(cfg: Config) -> list[str]:
    """The columns whose values decide whether two rows with one key are the same row: what
    was read (kind, number, text) for every rubric field, so true and "true", or NaN and
    Infinity, differ; 6 and 6.0 are the same number. With ``missing_when``, the status of each
    declared field too: a -2 that is "No response" and a -2 that is a grade are not one judgment."""
    names = cfg.score_names
    return ([f"{n}__kind" for n in names] + [f"{n}__num" for n in names] + [f"{n}__str" for n in names]
            + ["flags", "flags_present", "verdict"] + [f"{n}__status" for n in cfg.missing_when])


KEYED = pl.col("bucket").is_in(["malformed", "blank"]).not_()
"""Rows that carry a key (a malformed or blank line has no trustworthy one)."""


def _mark_repeats(df: pl.DataFrame, cfg: Config, spill: ingest_spill.Spill | None = None) -> pl.DataFrame:
    """Same key as an earlier row: identical content and answer -> ``duplicate``; a differing
    answer or content -> ``conflict`` (:func:`repeat_marks`)."""
    key = list(KEY_FIELDS)
    # only keys seen more than once need their content compared (usually a small subset):
    # found on a 64-bit hash of the key first (a row whose hash is unique has a unique key;
    # a collision only adds a candidate, which the exact count on the key columns drops), then
    # the content of those rows only. The hash is the XOR of one hash per key column (each
    # with its own seed), computed on whole columns and masked to the keyed rows: a filter or
    # a struct of the key columns first would copy the key texts of every row (0.3 GB at 5M
    # rows); the XOR's extra collisions only add candidates (:func:`repeated_hash_rows`)
    candidates = pl.Series("__order", repeated_hash_rows(df, key), dtype=pl.Int64)
    answer = [pl.col(ANSWER_COLUMN).alias("__answer")] if ANSWER_COLUMN in df.columns else []
    sub = df.select("__order", *key, *content_exprs(df.columns, cfg), *answer)[candidates]
    sub = sub.filter(pl.len().over(key) > 1).select(
        "__order", *key, pl.struct(content_columns(cfg)).alias("__content"), *(["__answer"] if answer else []))
    return apply_repeat_marks(df, repeat_marks(sub, key), cfg, spill)


HASH_SLICE = 1 << 20
"""Rows whose key hashes are computed at a time (:func:`repeated_hash_rows`)."""

HASH_PARTS = 16
"""Partitions of the key hashes (by their top bits) searched for repeats one at a time."""


def repeated_hash_rows(df: pl.DataFrame, key: Sequence[str]) -> np.ndarray:
    """Positions (ascending) of the keyed rows whose key hash another keyed row shares: the
    candidates of :func:`_mark_repeats`. The hash of a row is the XOR of one 64-bit hash per
    key column (each with its own seed: ``pl.Series.hash`` is a function of the value alone,
    so a slice's hashes are the whole column's), computed :data:`HASH_SLICE` rows at a time
    into one array; the repeats are then found in :data:`HASH_PARTS` partitions by the
    hash's top bits, each sorted on its own. Memory: 9 bytes a row (the hashes, their
    partition) and one partition's sort, instead of a hash table of every row's hash
    (polars' ``is_duplicated``; the check's peak anonymous memory at 20M rows was 1.65 GB
    with it, 0.61 GB without)."""
    n = df.height
    bits = max(1, (HASH_PARTS - 1).bit_length())
    h = np.zeros(n, dtype=np.uint64)
    top = np.empty(n, dtype=np.uint8)
    for start in range(0, n, HASH_SLICE):
        part = df.slice(start, HASH_SLICE)
        acc = h[start:start + part.height]
        for i, k in enumerate(key):
            acc ^= part[k].hash(seed=i).to_numpy()
        top[start:start + part.height] = acc >> np.uint64(64 - bits)
    keyed = df.select(KEYED.fill_null(False)).to_series().to_numpy()
    found = []
    for p in range(1 << bits):
        at = np.flatnonzero((top == p) & keyed)
        if at.size < 2:
            continue
        vals = h[at]
        order = np.argsort(vals, kind="stable")
        sv = vals[order]
        same = sv[1:] == sv[:-1]
        if not same.any():
            continue
        rep = np.zeros(sv.size, dtype=bool)
        rep[1:] |= same
        rep[:-1] |= same
        found.append(at[order[rep]])
    if not found:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate(found)).astype(np.int64)


ANSWER_COLUMN = "x___answer"
"""The row table's digest of the judged answer (``answer:``; UInt64, null where the row has
none): :func:`classify_frame` makes it from the ``__answer*`` extra fields."""

DIFFERENT_ANSWER_REASON = "judged a different answer than "
"""How a ``different_answer`` conflict's reason starts (:func:`conflict_kind` reads it back)."""


def repeat_marks(sub: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """For rows of repeated keys (``__order``, the ``key`` columns, ``__content`` and, when the
    config names an ``answer:``, ``__answer``): the ``__repeat`` bucket and ``__repeat_reason``
    of each (null for the first of identical rows). All rows of a key are ``conflict`` when
    they carry two or more different answers (kind ``different_answer``: a stale or
    overwritten run, whatever the scores; a row without an answer does not tell, so it
    differs from none) or when their content differs (kind ``different_content``); of
    identical ones, the first in ``__order`` is kept and the others are ``duplicate``. The
    rows of one key must all be in ``sub`` (the Dask engine calls this on each partition of
    a shuffle by key)."""
    has_answer = "__answer" in sub.columns
    sub = sub.with_columns(
        pl.len().over(key).alias("__n"),
        pl.col("__content").n_unique().over(key).alias("__variants"),
        pl.col("__order").rank("ordinal").over(key).alias("__rank"),
        *([pl.col("__answer").drop_nulls().n_unique().over(key).alias("__answers"),
           # the answer of the key's first row that has one (the first-seen run)
           pl.col("__answer").sort_by("__order").drop_nulls().first().over(key).alias("__first_answer")]
          if has_answer else []),
    )
    other = (pl.col("__n") - 1).cast(pl.String)
    different = pl.col("__answers") > 1 if has_answer else pl.lit(False)
    which = (pl.when(pl.col("__answer") == pl.col("__first_answer")).then(pl.lit("the first-seen answer"))
             .when(pl.col("__answer").is_not_null()).then(pl.lit("a later answer"))
             .otherwise(pl.lit("no answer recorded"))) if has_answer else pl.lit("")
    return sub.select(
        "__order",
        pl.when(different | (pl.col("__variants") > 1)).then(pl.lit("conflict"))
        .when(pl.col("__rank") > 1).then(pl.lit("duplicate"))
        .alias("__repeat"),
        pl.when(different).then(
            pl.concat_str(pl.lit(DIFFERENT_ANSWER_REASON), other,
                          pl.lit(" other row(s) with the same key (a stale or overwritten run; this row: "),
                          which, pl.lit("); all held out")))
        .when(pl.col("__variants") > 1).then(
            pl.concat_str(pl.lit("same key as "), other,
                          pl.lit(" other row(s) with different content; all held out")))
        .when(pl.col("__rank") > 1).then(pl.lit("identical to an earlier row with the same key; counted once"))
        .alias("__repeat_reason"),
    )


def conflict_kind() -> pl.Expr:
    """The :class:`~workbench.common.vocab.ConflictKind` of a row table's ``conflict`` row (null on
    every other row), read from the reason :func:`repeat_marks` gave it."""
    return (pl.when(pl.col("bucket") != "conflict").then(pl.lit(None, dtype=pl.String))
            .when(pl.col("reason").str.starts_with(DIFFERENT_ANSWER_REASON))
            .then(pl.lit(vocab.ConflictKind.DIFFERENT_ANSWER.value))
            .otherwise(pl.lit(vocab.ConflictKind.DIFFERENT_CONTENT.value)))


def apply_repeat_marks(df: pl.DataFrame, repeat: pl.DataFrame, cfg: Config,
                       spill: ingest_spill.Spill | None = None) -> pl.DataFrame:
    """Apply :func:`repeat_marks` to the row table, whose ``__order`` is the row's position
    (as :func:`merge_parts` numbers it): the marked rows' bucket and reason are set in place,
    the table keeps its order and no other column is copied. ``spill``: each marked column
    (a whole copy: ``scatter`` makes the column one chunk) goes to disk before the next is
    made (the two held together were 0.7 GB of anonymous memory at 20M rows)."""
    marks = repeat.filter(pl.col("__repeat").is_not_null()).sort("__order")
    if marks.height:
        at = marks["__order"].cast(pl.Int64)
        # a mark always has its reason (repeat_marks gives both or neither)
        for col, value in (("bucket", "__repeat"), ("reason", "__repeat_reason")):
            marked = df[col].scatter(at, marks[value])
            df = df.with_columns(marked if spill is None else spill.series(marked))
            del marked
    return df


HELD_OUT_BUCKETS = ("duplicate", "conflict", "malformed")
"""Buckets whose values never reach a mean: a repeated row is counted once (duplicate) or not
at all (conflict), and a malformed line has no trustworthy key. The merge (:func:`_one_chunk`)
nulls their usable-value columns ``NAME``, once, for every stage (``NAME__raw`` keeps what
was read)."""


# --------------------------------------------------------------------------- public


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of acyclic row objects are built.

    Decoded JSON cannot form reference cycles, but every allocation counts towards the
    collector's thresholds and each full collection walks all live rows: on 1M rows that
    is most of the decode time. Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


MAX_LINE_BYTES = 64 * 1024 * 1024
"""A JSONL line longer than this is ``malformed`` (reason says so) without being decoded."""

DUPLICATE_KEY = "duplicate key"


def _present(spec: _Spec, prefix: FieldPath, rows: list[Any]) -> int:
    vals = spec.getter(prefix)(rows)
    return len(vals) - vals.count(_UNSET)


def _suspect_duplicates(text: bytes, rows: list[Any], spec: _Spec) -> bool:
    """False when no object on a configured path can hold a duplicated key (checked in C).

    Each decoded row where a path is present holds its key at least once; so when a key's
    quoted text occurs no more often in the bytes than the paths ending in it are present,
    no row repeats it. More occurrences (a repeat, or the same text as a string value) send
    the lines to :func:`_duplicate_key`.
    """
    present_rows = [r for r in rows if r is not None]
    for tok, prefixes in spec.key_tokens:
        total = text.count(tok)
        if total and total > sum(_present(spec, p, present_rows) for p in prefixes):
            return True
    return False


class _Pairs(dict):  # type: ignore[type-arg]
    """A decoded object that remembers a repeated key in it or in an object inside it."""

    dup: tuple[str, Any, Any] | None = None


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs()
    for k, v in pairs:
        if k in obj and obj.dup is None:
            obj.dup = (k, obj[k], v)
        obj[k] = v
        if obj.dup is None:
            obj.dup = _inner_dup(v)
    return obj


def _inner_dup(v: Any) -> tuple[str, Any, Any] | None:
    if isinstance(v, _Pairs):
        return v.dup
    if isinstance(v, list):
        for x in v:
            d = _inner_dup(x)
            if d is not None:
                return d
    return None


def _dup_reason(dup: tuple[str, Any, Any]) -> str:
    k, a, b = dup
    text = (f"{DUPLICATE_KEY} {k!r} in one JSON object (values {_short_repr(a)} and "
            f"{_short_repr(b)}); the line is not read with either value")
    # a value may hold a lone surrogate escape (not UTF-8): shown as its escape, not a crash
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _duplicate_key(line: bytes) -> str | None:
    """The reason a line holds an object with a repeated key, or None."""
    try:
        obj = json.loads(line, object_pairs_hook=_pairs_hook, parse_int=_parse_int, parse_float=_parse_float)
    except (ValueError, RecursionError):
        return None
    d = _inner_dup(obj)
    return None if d is None else _dup_reason(d)


def _assemble(rows: list[Any], errors: dict[int, str], blank: list[bool] | None,
              line_no: Sequence[int], path: str, spec: _Spec, cfg: Config) -> pl.DataFrame:
    """The frame for decoded rows: one row per line, in line order."""
    n = len(rows)
    any_blank = blank is not None
    complete = not errors and not any_blank
    cols = _extract(rows, spec, cfg, path, complete=complete)
    present_mask = [True] * n
    reasons_all: list[str | None] = [None] * n
    for i, reason in errors.items():
        present_mask[i] = False
        reasons_all[i] = reason
    if blank is not None:
        for i, b in enumerate(blank):
            if b:
                present_mask[i] = False
    base = pl.DataFrame(
        {
            "file": pl.repeat(path, n, dtype=pl.String, eager=True),
            "line": pl.Series(line_no, dtype=pl.Int64),
            "__present": pl.Series(present_mask, dtype=pl.Boolean),
            "__blank": (pl.Series(blank, dtype=pl.Boolean) if blank is not None
                        else pl.repeat(False, n, dtype=pl.Boolean, eager=True)),
            "__error": pl.Series(reasons_all, dtype=pl.String),
        }
    )
    present = pl.DataFrame(_frame_schema_cast(cols, cfg))
    if complete:  # every line decoded: already in line order
        return base.hstack(present)
    parsed = base.filter(pl.col("__present")).hstack(present) if present.height else None
    rest = base.filter(~pl.col("__present"))
    frame = pl.concat([parsed, rest], how="diagonal_relaxed") if parsed is not None else rest
    return frame.sort("line")


def _python_line(line: bytes, spec: _Spec) -> tuple[Any, str | None]:
    """One line read by Python's ``json`` (the engine's fallback, see :mod:`workbench.ingest.engine`):
    (row, None) or (None, why it is malformed), a repeated key included."""
    row, reason = _slow_decode(line, spec)
    if reason is None and any(line.count(t) > 1 for t, _ in spec.key_tokens):
        dup = _duplicate_key(line)
        if dup is not None:
            return None, dup
    return row, reason


def read_file(path: str, cfg: Config, file_index: int = 0,
              progress: Callable[[int], None] | None = None,
              each_block: Callable[[pl.DataFrame], pl.DataFrame] | None = None) -> tuple[pl.DataFrame, SourceFile]:
    """Read one file into a per-line frame (not yet deduplicated). See :func:`read_rows`.

    JSONL (plain or gzip) is streamed block by block through the DuckDB engine
    (:mod:`workbench.ingest.engine`); a JSON array file is decoded at once; native formats go
    through :func:`workbench.ingest.formats.read_native`. ``each_block`` (a per-row function of a
    frame, such as classification) is applied to each block's frame as it is read (JSONL), or
    to the whole frame (the other formats), so a block's intermediate columns need not be held
    for the whole file.
    """
    if cfg.native:
        frame, n = _native_frame(path, cfg)
        if progress is not None:
            progress(frame.height)  # judgments: what the ledger counts
        if each_block is not None:
            frame = each_block(frame)
        frame = frame.with_columns(pl.lit(file_index, dtype=pl.Int32).alias("__file_index"))
        return frame, SourceFile(path=path, sha256=_sha256_file(path), lines=n)
    fmt = _file_format(path, cfg)
    spec = _Spec(cfg)
    if fmt in ("csv", "tsv", "parquet"):
        frame, n, digest = _tabular_frame(path, fmt, cfg, spec, progress, each_block)
    elif fmt == "json-array":
        data = _read_raw(path)
        digest = hashlib.sha256(data).hexdigest()
        if path.endswith(".gz"):
            data = _gunzip(data, path)
        _check_encoding(data[:4096], path)
        if data.startswith(_BOM):
            data = data[len(_BOM):]
        if not data.strip():
            raise InputError(path, "file is empty")
        rows, errors, n = _decode_array(data, path, spec)
        del data
        frame = _assemble(rows, errors, None, range(1, n + 1), path, spec, cfg)
        del rows
        if progress is not None:
            progress(n)
        if each_block is not None:
            frame = each_block(frame)
    else:
        from workbench.ingest.engine import read_jsonl

        frame, n, digest = read_jsonl(path, cfg, spec, progress, max_input_bytes(), _too_big,
                                      _check_encoding, _assemble, _python_line, MAX_LINE_BYTES,
                                      each_block)
    frame = frame.with_columns(pl.lit(file_index, dtype=pl.Int32).alias("__file_index"))
    return frame, SourceFile(path=path, sha256=digest, lines=n)


def _tabular_frame(path: str, fmt: str, cfg: Config, spec: _Spec,
                   progress: Callable[[int], None] | None,
                   each_block: Callable[[pl.DataFrame], pl.DataFrame] | None) -> tuple[pl.DataFrame, int, str]:
    """(frame, records, sha256) of a CSV, TSV or Parquet file (:mod:`workbench.ingest.tabular`): each
    block of records typed as JSON values and assembled exactly as decoded JSON lines are."""
    from workbench.ingest import tabular

    result = tabular.Result()
    if fmt != "parquet":
        _check_encoding(tabular._head(path), path)
    frames: list[pl.DataFrame] = []
    for block in tabular.blocks(path, fmt, list(spec.attr), result, max_input_bytes(), _too_big,
                                text_cols=tabular.text_columns(cfg)):
        rows = [None if r is None else spec.from_dict(r) for r in block.rows]
        frame = _assemble(rows, block.errors, block.blank if any(block.blank) else None, block.lines,
                          path, spec, cfg)
        del rows
        if progress is not None:
            progress(len(block))
        if each_block is not None:
            frame = each_block(frame)
        frames.append(frame)
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed",
                                                         rechunk=each_block is None)
    return frame, result.records, result.sha256


def _sha256_file(path: str) -> str:
    return hashlib.sha256(_read_raw(path)).hexdigest()


def _native_frame(path: str, cfg: Config) -> tuple[pl.DataFrame, int]:
    """A file read by :func:`workbench.ingest.formats.read_native` (explode, aliases, Inspect logs):
    one frame row per judgment, ``line`` the physical line (element, sample) it came from."""
    from workbench.ingest.formats import read_native

    nat = read_native(path, cfg)
    spec = _Spec(cfg)
    n = len(nat.objects)
    if not n:
        raise InputError(path, "file holds no row")
    rows = [None if o is None else spec.from_dict(o) for o in nat.objects]
    blank = [nat.forced.get(i, ("",))[0] == "blank" for i in range(n)]
    frame = _assemble(rows, dict(nat.errors), blank if any(blank) else None, range(1, n + 1),
                      path, spec, cfg)
    idx = (frame["line"] - 1).to_list()
    forced = [nat.forced.get(i) for i in idx]
    frame = frame.with_columns(
        pl.Series("line", [nat.lines[i] for i in idx], dtype=pl.Int64),
        pl.Series("__forced_bucket", [f[0] if f and f[0] != "blank" else None for f in forced],
                  dtype=pl.String),
        pl.Series("__forced_reason", [f[1] if f and f[0] != "blank" else None for f in forced],
                  dtype=pl.String),
    )
    return frame, nat.physical


def _frame_schema_cast(cols: dict[str, Any], cfg: Config) -> dict[str, pl.Series]:
    out: dict[str, pl.Series] = {}
    for name, values in cols.items():
        if isinstance(values, pl.Series):
            out[name] = values.alias(name)
        elif name.endswith("__kind"):
            out[name] = pl.Series(values, dtype=pl.Int8)
        elif name.endswith("__num"):
            out[name] = pl.Series(values, dtype=pl.Float64)
        elif name == "flags":
            out[name] = pl.Series(values, dtype=pl.List(pl.String))
        elif name in ("flags_present",):
            out[name] = pl.Series(values, dtype=pl.Boolean)
        elif name == "pass_value" or name.startswith("__num_"):
            out[name] = pl.Series(values, dtype=pl.Boolean)
        else:
            out[name] = pl.Series(values, dtype=pl.String)
    return out


def read_rows(paths: Iterable[str], cfg: Config,
              progress: Callable[[int], None] | None = None,
              notes: dict[str, Any] | None = None) -> tuple[pl.DataFrame, list[SourceFile]]:
    """Read every line of every input into a row table with its ledger bucket.

    Returns ``(rows, sources)``. ``rows`` has one row per physical line (JSON arrays: per
    element) with ``file``, ``line``, ``bucket``, ``reason``, the four key fields, and per
    rubric field ``NAME`` (the value when valid, else null), ``NAME__raw`` (any finite number
    read, including sentinels and out-of-range values; for counterfactuals only),
    ``NAME__status`` (see :data:`FIELD_STATUSES`) and ``NAME__from_string``; plus ``flags``,
    ``flags_present``, ``verdict``. Raises :class:`InputError` for a missing or empty file, or
    one with no valid row at all.

    ``progress`` is called with the number of lines read (blank ones included; JSON arrays:
    elements; exploding presets: judgments), per block of a JSONL file and per file for arrays
    and native formats: the sum is the ledger's ``lines``.
    """
    files = expand_inputs(list(paths), allow_copies=cfg.allow_copies)
    parts: list[tuple[pl.DataFrame, SourceFile] | InputError] = []
    # a large input's classified blocks go to disk as they are read (workbench.ingest.spill)
    spilled = ingest_spill.Spill() if ingest_spill.wanted(files) else nullcontext()
    with _gc_paused(), spilled as spill:
        for i, path in enumerate(files):
            try:  # read every file: all unusable ones in one message
                parts.append(read_classified(path, cfg, i, progress, spill=spill))
            except InputError as exc:
                parts.append(exc)
        from workbench.ingest.engine import release

        release()
        return merge_parts(parts, cfg, notes, spill=spill)


# The seam between the per-file work and the cross-file merge (workbench.ingest.execute runs the
# first on threads, processes or Dask workers; the second sees every file in file order).


def read_classified(path: str, cfg: Config, file_index: int = 0,
                    progress: Callable[[int], None] | None = None,
                    spill: ingest_spill.Spill | None = None) -> tuple[pl.DataFrame, SourceFile]:
    """One file read and every row classified: all that depends on a row alone (status,
    value, bucket before duplicates). No state crosses files, so files can be read on any
    executor; :func:`merge_parts` then joins them in file order. ``spill``: each block's
    classified frame is written to it and memory-mapped back (:mod:`workbench.ingest.spill`)."""
    def each_block(frame: pl.DataFrame) -> pl.DataFrame:
        out = classified_columns(classify_frame(frame, cfg), cfg)
        return out if spill is None else spill.frame(out)

    return read_file(path, cfg, file_index, progress, each_block=each_block)


def classified_columns(df: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """A classified frame (:func:`classify_frame`) cut to what :func:`merge_parts` and the
    repeat marking use: the row table's columns, the content columns
    (:func:`content_columns`), the key-type flags ``__num_*`` and ``__file_index``. A
    content text column (``NAME__str``) that is null in every row is dropped: a missing one
    reads as null wherever it is used (:func:`content_exprs`), so a file of numeric scores does
    not hold a 16-byte null view per row and field for the repeat check."""
    names = set(row_columns(df.columns, cfg)) | set(content_columns(cfg)) | {"__file_index"}
    names |= {c for c in df.columns if c.startswith("__num_")}
    nulls = [c for c in _text_content(cfg) if c in df.columns and df[c].null_count() == df.height]
    df = df.select([c for c in df.columns if c in names and c not in nulls])
    texts = [c for c in (*KEY_FIELDS, "verdict", *(f"x_{n}" for n in cfg.extra_fields))
             if c in df.columns and df.schema[c] == pl.String]
    return df.with_columns([_stored_once(df[c]) for c in texts]) if texts else df


def _stored_once(s: pl.Series) -> pl.Series:
    """A text column with each distinct value stored once (its rows' 16-byte views point into
    one small buffer of the distinct values, as a gather from them gives) when the values
    repeat: judge names, variants, templated verdicts. Strings of up to 12 bytes live in the
    view itself, and a column of mostly distinct values is left as it is."""
    longest = s.str.len_bytes().max()  # None: every value is null
    if s.len() < 64 or longest is None or longest <= 12:
        return s
    distinct = s.unique().drop_nulls()  # the distinct values first: no null-free copy of the block
    if 2 * distinct.len() > s.len():
        return s
    codes = s.replace_strict(distinct, pl.int_range(distinct.len(), eager=True, dtype=pl.UInt32),
                             default=None, return_dtype=pl.UInt32)
    return distinct.gather(codes).alias(s.name)


def _text_content(cfg: Config) -> list[str]:
    """The text columns of :func:`content_columns` (``NAME__str``)."""
    return [f"{n}__str" for n in cfg.score_names]


def content_exprs(columns: Sequence[str], cfg: Config) -> list[pl.Expr]:
    """:func:`content_columns` as expressions over a frame with ``columns``: a text column
    that :func:`classified_columns` dropped (null in every row) is a null literal."""
    return [pl.col(c) if c in columns else pl.lit(None, dtype=pl.String).alias(c)
            for c in content_columns(cfg)]


def classify_frame(frame: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """Per-row classification of one file's frame (see :func:`read_classified`)."""
    df = _ensure_columns(frame, cfg)
    df = df.with_columns(
        pl.when(pl.col("__blank")).then(pl.lit(None, dtype=pl.String))
        .otherwise(pl.coalesce("__error", "__problem")).alias("__problem")
    )
    df = _classify(df, cfg)
    df = _answer_digest(df, cfg)
    return df.with_columns(pl.when(pl.col("__blank")).then(pl.lit("blank")).otherwise("bucket").alias("bucket"))


def _answer_digest(df: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    """The ``answer:`` fields (extra fields ``__answer0``...) folded into :data:`ANSWER_COLUMN`,
    a 64-bit hash of their texts (null where every one is absent or null), and the texts
    dropped: a long answer costs 8 bytes a row past the block being read. Two different answers
    sharing a hash (about 2**-64 for a pair) would read as one answer; equality is all the hash
    is for (it is never written out, and polars keeps it stable within a version, so every
    process of one run agrees)."""
    cols = [f"x_{n}" for n in cfg.extra_fields if n.startswith(ANSWER_FIELD_PREFIX)]
    if not cols:
        return df
    present = pl.any_horizontal([pl.col(c).is_not_null() for c in cols])
    digest = pl.when(present).then(pl.struct(cols).hash(seed=25)).alias(ANSWER_COLUMN)
    return df.with_columns(digest).drop(cols)


RepeatMarker = Callable[[pl.DataFrame, Config], pl.DataFrame]


def rows_from_frames(frames: list[pl.DataFrame], sources: list[SourceFile], problems: list[InputError],
                     n_files: int, cfg: Config,
                     notes: dict[str, Any] | None = None) -> tuple[pl.DataFrame, list[SourceFile]]:
    """The row table from per-file frames of :func:`read_file` (or of another reader of the
    same frames, such as the tests' per-line reference): each classified, then merged by
    :func:`merge_parts`. ``problems``: files that could not be read (``n_files`` in all)."""
    parts: list[tuple[pl.DataFrame, SourceFile] | InputError] = [
        (classify_frame(f, cfg), src) for f, src in zip(frames, sources, strict=True)]
    parts += problems
    if len(parts) != n_files:
        raise ValueError(f"{len(parts)} frames and problems for {n_files} files")
    return merge_parts(parts, cfg, notes)


def merge_parts(parts: Sequence[tuple[pl.DataFrame, SourceFile] | InputError], cfg: Config,
                notes: dict[str, Any] | None = None,
                mark_repeats: RepeatMarker | None = None,
                spill: ingest_spill.Spill | None = None) -> tuple[pl.DataFrame, list[SourceFile]]:
    """The cross-file merge of :func:`read_classified` results given in file order (an
    :class:`InputError` in place of a file that could not be read): concatenation in file
    order, duplicates and conflicts across the whole input, each file's "no valid row"
    problem, key-type notes. Every unusable file is named in one error.

    ``mark_repeats(df, cfg)``: the duplicate/conflict marking (default :func:`_mark_repeats`;
    the Dask engine passes one that computes the same buckets by a shuffle on the cluster).
    ``parts``, when a list, is emptied: the merge holds the only reference to each file's frame,
    so the columns it replaces (bucket, reason, values, the one-chunk copy) are freed as it goes.

    Memory: the per-file frames (the row table's columns plus the repeat check's content
    columns) and, at the peak, one column copied or the rows of repeated keys; no join or
    sort of the whole table (``__order`` is the row's position, the marks are set in place).
    ``spill`` (or, when None, one made here when :func:`workbench.ingest.spill.wanted` says
    so for the merged table's rows): the row table's columns are written to disk one at a
    time and memory-mapped back, so the table is in no anonymous memory.
    """
    frames = [p[0] for p in parts if not isinstance(p, InputError)]
    sources = [p[1] for p in parts if not isinstance(p, InputError)]
    problems = [p for p in parts if isinstance(p, InputError)]
    if isinstance(parts, list):
        # the caller's list let go of: each file's columns are freed as the merge replaces them
        # (held there, the final one-chunk copy would sit beside every block's chunks)
        parts.clear()
    if not frames:
        raise _all_problems(problems, len(sources) + len(problems))
    n_parts = len(sources) + len(problems)
    df = pl.concat(frames, how="diagonal_relaxed")  # chunks: no copy
    del frames
    # __order is the row's position in the concatenation (file order, then line order), kept
    # by every step below: the marks are put in place by position, no join or sort
    df = df.with_row_index("__order")
    df = mark_repeats(df, cfg) if mark_repeats is not None else _mark_repeats(df, cfg, spill)
    with_valid = set(df.select(pl.col("file").filter(pl.col("bucket") == "valid").unique())["file"].to_list())
    for src in sources:
        if src.path not in with_valid:
            counts = _bucket_summary(df.filter(pl.col("file") == src.path))
            problems.append(InputError(src.path, f"no valid row at all ({counts}){_line_end_hint(src.path)}"
                                                 f"{_fit_hint(src.path, cfg, df)}"))
    if problems:  # the files that could not be read (in file order), then those without a valid row
        raise _all_problems(problems, n_parts)
    if notes is not None:
        notes["key_types"] = _key_type_mixes(df)
    keep: list[Any] = list(row_columns(df.columns, cfg))
    if cfg.values is not None:
        # the label as read (A>>B, model_2, C): harness rules and weights need it
        label = f"{cfg.headline}__str"
        keep.append((pl.col(label) if label in df.columns else pl.lit(None, dtype=pl.String))
                    .alias(f"{cfg.headline}__label"))
    out = df.select(keep)
    del df
    from workbench.ingest import clusters

    if spill is None and ingest_spill.wanted(rows=out.height):
        with ingest_spill.Spill() as own:
            return clusters.assign(_one_chunk(out, cfg, own), cfg), sources
    return clusters.assign(_one_chunk(out, cfg, spill), cfg), sources


def row_columns(columns: Sequence[str], cfg: Config) -> list[str]:
    """The row table's columns, in order (without the ``__label`` of a value mapping), for a
    frame with ``columns``."""
    keep = ["file", "line", "bucket", "reason", *KEY_FIELDS]
    keep += sorted(c for c in columns if c.startswith("path_"))
    for n in cfg.score_names:
        keep += [n, f"{n}__raw", f"{n}__status", f"{n}__from_string"]
    keep += ["flags", "flags_present", "verdict"]
    if "pass_value" in columns:
        keep.append("pass_value")
    # a missing_when condition's field is read to classify, not kept (an explanation per row);
    # the answer's fields are folded into one digest column
    keep += [f"x_{n}" for n in cfg.extra_fields if not n.startswith((WHEN_FIELD_PREFIX, ANSWER_FIELD_PREFIX))]
    if cfg.answer:
        keep.append(ANSWER_COLUMN)
    return keep


def _one_chunk(df: pl.DataFrame, cfg: Config, spill: ingest_spill.Spill | None = None) -> pl.DataFrame:
    """``df`` in one chunk per column, rechunked a column at a time (each column's old chunks
    are freed before the next is copied: the copy costs one column, not the table), with the
    usable values ``NAME`` nulled on the :data:`HELD_OUT_BUCKETS` rows on the way (a column at
    a time too: all at once they were 8 bytes a row and field in memory together).

    ``spill``: each column, once in one chunk, is written to disk and memory-mapped back.
    Without one, a usable value column ``NAME`` that is ``NAME__raw`` where it is set (the
    usual case) is made to share ``NAME__raw``'s values (its own validity only), as
    classification made it share them block by block: 8 bytes a row and field not held twice.
    """
    # the mask from the bucket Series alone: a select on the frame, whose columns are in one
    # chunk per block while bucket is in one, made copies of other columns (1.2 GB at 5M rows)
    usable = ~df["bucket"].is_in(list(HELD_OUT_BUCKETS))

    def take(name: str) -> pl.Series:
        s = df.drop_in_place(name)
        if name not in cfg.score_names:
            return s
        return pl.select(pl.when(pl.lit(usable)).then(pl.lit(s)).alias(name)).to_series()

    order = df.columns
    if spill is not None:
        return pl.DataFrame([spill.series(take(name)) for name in order])
    raw_of = {n: f"{n}__raw" for n in cfg.score_names}
    cols: dict[str, pl.Series] = {}
    for name in order:
        if name in cols:
            continue
        s = take(name)
        if name in raw_of and raw_of[name] in df.columns and s.dtype == pl.Float64:
            raw = df.drop_in_place(raw_of[name]).rechunk()
            cols[raw_of[name]] = raw
            cols[name] = _masked(s, raw)
        else:
            cols[name] = s.rechunk()
        del s
    return pl.DataFrame([cols[c] for c in order])


def _masked(value: pl.Series, raw: pl.Series) -> pl.Series:
    """``value`` in one chunk: ``raw`` (one chunk) masked to where ``value`` is set when the two
    hold the same bits there (sharing ``raw``'s buffer), else a copy of ``value``."""
    if raw.dtype != pl.Float64:
        return value.rechunk()
    set_ = value.is_not_null().rechunk()
    mask = set_.to_numpy()
    a = value.to_numpy()[mask]
    b = raw.to_numpy()[mask]
    if not np.array_equal(a.view(np.uint64), b.view(np.uint64)):
        return value.rechunk()
    return pl.select(pl.when(pl.lit(set_)).then(pl.lit(raw)).alias(value.name)).to_series()


def _key_type_mixes(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Key values read both as JSON numbers and as JSON strings (trial ``1`` and ``"1"``):
    they print alike and are one key (compared as text); reported, never silent."""
    out = []
    for k in KEY_FIELDS:
        col = f"__num_{k}"
        keyed = df.lazy().filter(KEYED).select(k, col).collect()  # three columns, not the table
        if not keyed[col].any():
            continue
        mixed = (keyed.filter(pl.col(k).is_not_null())
                 .group_by(k).agg(pl.col(col).sum().alias("n_number"), pl.len().alias("n"))
                 .filter((pl.col("n_number") > 0) & (pl.col("n_number") < pl.col("n")))
                 .sort(k))
        for value, n_number, n in mixed.iter_rows():
            out.append({"field": k, "kind": "json_type", "value": value,
                        "variants": [{"json_type": "number", "rows": int(n_number)},
                                     {"json_type": "string", "rows": int(n - n_number)}],
                        "rule": "one key: key values are compared as text, so the number and "
                                "the string are the same key"})
    return out


def _ensure_columns(df: pl.DataFrame, cfg: Config) -> pl.DataFrame:
    need: dict[str, pl.DataType] = {k: pl.String() for k in KEY_FIELDS}
    need.update({f"__num_{k}": pl.Boolean() for k in KEY_FIELDS})
    need.update({"__problem": pl.String(), "flags": pl.List(pl.String), "flags_present": pl.Boolean(),
                 "verdict": pl.String(), "__forced_bucket": pl.String(), "__forced_reason": pl.String()})
    need.update({f"x_{n}": pl.String() for n in cfg.extra_fields})
    for n in cfg.score_names:
        need.update({f"{n}__kind": pl.Int8(), f"{n}__num": pl.Float64(), f"{n}__str": pl.String()})
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in need.items() if c not in df.columns]
    df = df.with_columns(missing) if missing else df
    return df.with_columns(
        [pl.col(f"{n}__kind").fill_null(_ABSENT) for n in cfg.score_names]
        + [pl.col("flags_present").fill_null(False)]
        + [pl.col(f"__num_{k}").fill_null(False) for k in KEY_FIELDS]
    )


def _all_problems(problems: list[InputError], n_files: int) -> InputError:
    """One error naming every unusable input (the first one's own error when there is one)."""
    if len(problems) == 1:
        return problems[0]
    text = " | ".join(str(p) for p in problems)
    return InputError(f"{len(problems)} of {n_files} inputs", f"unusable: {text}")


def _line_end_hint(path: str) -> str:
    """For "no valid row at all": a file whose lines end in CR only (classic Mac OS line ends:
    no LF in its first 64 KiB, a CR in them) says so, since JSON lines are split at LF."""
    from workbench.ingest.tabular import _head

    head = _head(path, 1 << 16)
    if b"\n" in head or b"\r" not in head:
        return ""
    return ("; the file has CR line ends and no LF (its CR-separated records read as one line): "
            "convert them, e.g. tr '\\r' '\\n' < FILE > FILE.jsonl")


def _fit_hint(path: str, cfg: Config, df: pl.DataFrame) -> str:
    """What the rows hold and which shipped preset might read them (for "no valid row at all").

    A file that is not rows as this config reads them (an Inspect log under a row preset, a
    header object) is named for the format it looks like, with the key fields it lacks; a
    file read by a native reader names the fields of the rows the reader made (not the log
    header's), and, when every row repeats a key read before, says so with the keys. The
    preset already in use is never suggested."""
    from workbench.ingest.detect import _first_row, classify

    in_use = {s.split(":", 1)[1] for s in cfg.sources if s.startswith("preset:")}
    if cfg.reader:
        in_use.add(cfg.reader)
    preset, why = classify(path)
    looks = why.split(": ", 1)[-1]
    hl = cfg.headline
    sub = df.filter(pl.col("file") == path)
    buckets = dict(sub.group_by("bucket").len().iter_rows()) if sub.height else {}
    text = ""
    declared = (sub.filter(pl.col(f"{hl}__status") == "declared_missing").height
                if cfg.missing_when and f"{hl}__status" in sub.columns else 0)
    if declared:
        text += f"; {declared} headline score(s) declared missing by missing_when"
    if cfg.reader == "inspect" and preset == "inspect":
        text += (f"; the file is {looks}, read as one row per sample x scorer with fields "
                 "sample_id, epoch, model, task, run_id, log, scorer, value (and the score's answer, "
                 "explanation, metadata)")
        repeats = buckets.get("conflict", 0) + buckets.get("duplicate", 0)
        if sub.height and repeats == sub.height:
            keys = ", ".join(f"{k} <- {_key_text(cfg.key_text.get(k))}" for k in KEY_FIELDS)
            text += (f"; every row repeats the key of a row read before ({keys}): the same log "
                     "given twice, or logs whose identity (eval_id, run_id/task_id@created) is the same")
        return text
    row, _ = _first_row(path)
    if (preset != "inspect" and isinstance(row, dict) and isinstance(row.get("eval"), dict)
            and {"results", "samples", "plan"} & set(row)):
        preset, looks = "inspect", ("an Inspect log's header (eval, plan, results) inside a row file: "
                                    "give the .eval or .json log itself")
    keys_top = {k: [str(p[0]) for p in (cfg.keys.get(k) or ()) if p] for k in KEY_FIELDS}
    if isinstance(row, dict):
        lacks = [f"{k} ({', '.join(t for t in tops if t not in row)})" for k, tops in keys_top.items()
                 if tops and any(t not in row for t in tops) and k not in cfg.constants]
        if preset == "inspect":
            text += f"; it is {looks}, not rows"
        if lacks:
            text += f"; it lacks the key field(s) {', '.join(lacks)}"
    fields = sorted(row)[:10] if isinstance(row, dict) else []
    statuses = dict(sub.group_by(f"{hl}__status").len().iter_rows()) if f"{hl}__status" in sub.columns else {}
    if statuses.get("absent") == sub.height and sub.height:
        text += f"; the headline field '{hl}' is in no row"
    if fields:
        text += f"; {'its top level has' if preset == 'inspect' else 'the rows have'} fields {', '.join(fields)}"
    from workbench.ingest import tabular

    try:
        fmt = _file_format(path, cfg)
    except InputError:
        fmt = None
    if fmt in ("jsonl", "json-array"):
        sniffed = tabular._sniff_text(tabular._head(path))
        if sniffed in ("csv", "tsv"):
            text += (f"; its first line looks like a {sniffed.upper()} header: name the file "
                     f".{sniffed} or set format: {sniffed}")
    if preset not in ("?", None) and preset not in in_use:
        text += f"; --preset {preset} might fit ({looks})"
    elif preset is None:
        text += "; they look like the default format"
    return text


def _key_text(text: Any) -> str:
    return "+".join(map(str, text)) if isinstance(text, list) else str(text)


def _bucket_summary(df: pl.DataFrame) -> str:
    counts = df.group_by("bucket").len().sort("bucket")
    return ", ".join(f"{b} {n}" for b, n in counts.iter_rows())
