"""A plain per-line reference reader for JSONL: the ledger's definition, written as a loop.

Every line is decoded on its own with the standard library's ``json`` and every configured
value is extracted with ordinary Python, one line at a time; nothing is vectorised and DuckDB
is not involved. The per-line columns it produces are the ones :func:`workbench.ingest.reader.read_file`
gives, and the shared tail (:func:`workbench.ingest.reader.rows_from_frames`: classification into
buckets and the repeats across files) turns them into the row table, so a test can compare the
engine's row table with this one column for column (tests/test_engine_identity.py).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import polars as pl

from workbench.common.config import KEY_FIELDS, Config
from workbench.common.errors import InputError
from workbench.common.files import path_match, path_regex_groups
from workbench.ingest.reader import (
    DUPLICATE_KEY,
    LONE_SURROGATE,
    MAX_LINE_BYTES,
    SourceFile,
    composite_key,
    expand_inputs,
    rows_from_frames,
)

ABSENT = object()
KIND_ABSENT, KIND_NULL, KIND_NUMBER, KIND_STRING, KIND_BOOL, KIND_OTHER = range(6)


def short_repr(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class Beyond(float):
    """A number literal past the float range: +-inf, with what it was (out_of_range, issue 28)."""

    what: str

    def __new__(cls, negative: bool, what: str) -> Beyond:
        obj = super().__new__(cls, -math.inf if negative else math.inf)
        obj.what = what
        return obj


def beyond_int(text: str) -> str:
    sign = "a negative" if text.startswith("-") else "an"
    return f"{sign} integer of {len(text.lstrip('+-'))} digits (beyond the float range)"


def parse_int(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return Beyond(text.startswith("-"), beyond_int(text))


def parse_float(text: str) -> float:
    f = float(text)
    if math.isinf(f):
        return Beyond(f < 0, f"{text if len(text) <= 24 else text[:21] + '...'} (beyond the float range)")
    return f


def json_type(obj: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(obj), type(obj).__name__)


def walk(obj: Any, path: tuple) -> Any:
    v = obj
    for tok in path:
        if isinstance(tok, int):
            if isinstance(v, list) and -len(v) <= tok < len(v):
                v = v[tok]
            else:
                return ABSENT
        elif isinstance(v, dict):
            v = v.get(tok, ABSENT)
        else:
            return ABSENT
    return v


def first_duplicate(line: bytes) -> tuple[str, Any, Any] | None:
    """The first repeated key in any object of the line, as json builds them (inner first)."""
    found: list[tuple[str, Any, Any]] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict:
        obj: dict = {}
        for k, v in pairs:
            if k in obj and not found:
                found.append((k, obj[k], v))
            obj[k] = v
        return obj

    try:
        json.loads(line, object_pairs_hook=hook, parse_int=parse_int, parse_float=parse_float)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


def decode(line: bytes, tokens: list[bytes]) -> tuple[dict | None, str | None]:
    if len(line) > MAX_LINE_BYTES:
        return None, f"line is {len(line)} bytes, over the limit of {MAX_LINE_BYTES} bytes per line"
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start})"
    try:
        obj = json.loads(text, parse_int=parse_int, parse_float=parse_float)
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, "not JSON: nested too deeply"
    except ValueError as exc:
        return None, f"not JSON: {exc}"
    if not isinstance(obj, dict):
        return None, f"not a JSON object (a JSON {json_type(obj)})"
    if re.search(r"\\u[dD][89a-fA-F]", text):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return None, LONE_SURROGATE
        except (RecursionError, ValueError):
            pass
    # the duplicate-key rule: a configured key's quoted text twice in the line, and some
    # object in it repeats a key
    if any(line.count(t) > 1 for t in tokens):
        dup = first_duplicate(line)
        if dup is not None:
            k, a, b = dup
            text = (f"{DUPLICATE_KEY} {k!r} in one JSON object (values {short_repr(a)} and "
                    f"{short_repr(b)}); the line is not read with either value")
            return None, text.encode("utf-8", "backslashreplace").decode("utf-8")
    return obj, None


def path_text(p: tuple) -> str:
    return "".join(f"[{t}]" if isinstance(t, int) else (f".{t}" if i else t) for i, t in enumerate(p))


def tokens_of(cfg: Config) -> list[bytes]:
    paths = []
    for k in KEY_FIELDS:
        paths.extend(cfg.keys[k] or ())
    paths.extend(p for _, p in cfg.scores)
    paths.extend(p for p in (cfg.flags, cfg.verdict, cfg.pass_field) if p is not None)
    paths.extend(cfg.extra_fields.values())
    out: list[bytes] = []
    for p in paths:
        for tok in p:
            if isinstance(tok, str):
                t = json.dumps(tok, ensure_ascii=False).encode()
                if t not in out:
                    out.append(t)
    return out


def text_value(v: Any) -> str | None:
    if v is ABSENT or v is None:
        return None
    return v if isinstance(v, str) else short_repr(v)


def extract(obj: dict, cfg: Config, groups: dict[str, str], null_groups: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    problem = None
    for g in null_groups:
        row[f"path_{g}"] = None
    for k in KEY_FIELDS:
        if k in cfg.constants:
            row[k] = cfg.constants[k]
            continue
        if k in groups:
            row[k] = groups[k]
            continue
        if cfg.keys[k] is None:
            row[k] = "1" if k == "trial" else ""
            continue
        parts: list[str | None] = []
        number = False
        for p in cfg.keys[k]:
            v = walk(obj, tuple(p))
            label = path_text(tuple(p))
            label = "" if label == k else f" ({label})"
            pr = None
            if type(v) is str:
                if v.strip():
                    parts.append(v)
                else:
                    parts.append(None)
                    pr = "is an empty string"
            elif type(v) is int:
                parts.append(str(v))
                number = True
            else:
                parts.append(None)
                pr = ("is missing" if v is ABSENT else "is null" if v is None
                      else f"is a {type(v).__name__}, not a string or integer")
            if pr is not None and problem is None:
                problem = f"key field '{k}'{label} {pr}"
        row[k] = None if any(x is None for x in parts) else (
            parts[0] if len(parts) == 1 else composite_key(parts))  # type: ignore[arg-type]
        row[f"__num_{k}"] = number
    for g, v in groups.items():
        if g not in KEY_FIELDS:
            row[f"path_{g}"] = v
    for name, p in cfg.scores:
        v = walk(obj, tuple(p))
        if v is ABSENT:
            kind, num, s = KIND_ABSENT, None, None
        elif v is None:
            kind, num, s = KIND_NULL, None, None
        elif type(v) is bool:
            kind, num, s = KIND_BOOL, None, short_repr(v)
        elif type(v) in (int, float, Beyond):
            s = v.what if type(v) is Beyond else None
            try:
                num = float(v)
            except OverflowError:
                num = -math.inf if v < 0 else math.inf
                s = beyond_int(str(v))
            kind = KIND_NUMBER
        elif type(v) is str:
            kind, num, s = KIND_STRING, None, v
        else:
            kind, num, s = KIND_OTHER, None, short_repr(v)
        row[f"{name}__kind"], row[f"{name}__num"], row[f"{name}__str"] = kind, num, s
    if cfg.flags is not None:
        v = walk(obj, tuple(cfg.flags))
        row["flags"] = [x if isinstance(x, str) else short_repr(x) for x in v] if type(v) is list else None
        row["flags_present"] = type(v) is list
    else:
        row["flags"], row["flags_present"] = None, False
    row["verdict"] = text_value(walk(obj, tuple(cfg.verdict))) if cfg.verdict else None
    if cfg.pass_field is not None:
        v = walk(obj, tuple(cfg.pass_field))
        row["pass_value"] = v if type(v) is bool else None
    for name, p in cfg.extra_fields.items():
        row[f"x_{name}"] = text_value(walk(obj, tuple(p)))
    row["__problem"] = problem
    return row


def schema(cfg: Config, columns: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in columns:
        if c.endswith("__kind"):
            out[c] = pl.Int8
        elif c.endswith("__num"):
            out[c] = pl.Float64
        elif c == "flags":
            out[c] = pl.List(pl.String)
        elif c in ("flags_present", "pass_value", "__present", "__blank") or c.startswith("__num_"):
            out[c] = pl.Boolean
        elif c == "line":
            out[c] = pl.Int64
        else:
            out[c] = pl.String
    return out


def read_file(path: str, cfg: Config, index: int) -> tuple[pl.DataFrame, SourceFile]:
    raw = Path(path).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    data = gzip.decompress(raw) if path.endswith(".gz") else raw
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data:
        raise InputError(path, "file is empty")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
    groups: dict[str, str] = {}
    null_groups: list[str] = []
    if cfg.path_fields:
        m = path_match(cfg.path_fields, Path(path).resolve().as_posix())
        if m is None:
            null_groups = list(path_regex_groups(cfg.path_fields))
        else:
            groups = {k: v for k, v in m.items() if v is not None}
    tokens = tokens_of(cfg)
    records = []
    limit = sys.getrecursionlimit()
    try:
        for no, line in enumerate(lines, 1):
            rec: dict[str, Any] = {"file": path, "line": no, "__present": False, "__blank": False, "__error": None}
            if not line.strip():
                rec["__blank"] = True
            else:
                obj, reason = decode(line, tokens)
                if reason is not None:
                    rec["__error"] = reason
                else:
                    rec["__present"] = True
                    rec.update(extract(obj, cfg, groups, null_groups))  # type: ignore[arg-type]
            records.append(rec)
    finally:
        sys.setrecursionlimit(limit)
    columns: list[str] = []
    for r in records:
        for c in r:
            if c not in columns:
                columns.append(c)
    frame = pl.DataFrame(records, schema=schema(cfg, columns), orient="row") if records else pl.DataFrame()
    frame = frame.with_columns(pl.lit(index, dtype=pl.Int32).alias("__file_index"))
    return frame, SourceFile(path=path, sha256=digest, lines=len(lines))


def reference_rows(paths: list[str], cfg: Config,
                   notes: dict[str, Any] | None = None) -> tuple[pl.DataFrame, list[SourceFile]]:
    files = expand_inputs(paths)
    frames, sources, problems = [], [], []
    for i, path in enumerate(files):
        try:
            f, s = read_file(path, cfg, i)
        except InputError as exc:
            problems.append(exc)
            continue
        frames.append(f)
        sources.append(s)
    return rows_from_frames(frames, sources, problems, len(files), cfg, notes)
