"""``--preset auto``: tell the harness format from a file's path and rows sampled through it.

:func:`detect` looks at each input (its extension, path and first row: the first non-blank
line of JSON lines, the first element of a JSON array, the top-level object of an Inspect
log, the first record of a CSV/TSV file or row of a Parquet file, typed as ingest types it)
and names the shipped preset whose format it is, with the evidence; a JSON-lines file is also
sampled through (:func:`_sample_lines`) and refused when its rows fit different formats, with
the counts. When every input
agrees it returns that preset; when an input fits none, or inputs fit different presets, it
refuses (:class:`~workbench.common.errors.ConfigError`, exit 2) naming each file's candidates, so a
wrong guess never silently reads rows with the wrong meaning. ``--preset auto`` is also the
default when neither ``--preset`` nor ``--config`` is given and the first input's first row
does not have the default format's key fields (:func:`default_fits`).
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any

from workbench.common.config import KEY_FIELDS
from workbench.common.errors import ConfigError, InputError

_PEEK_BYTES = 1 << 20
_MAX_ARRAY_BYTES = 256 << 20


def _loads(data: bytes | bytearray) -> Any:
    return json.loads(data.decode("utf-8-sig"))


def _first_row(path: str) -> tuple[Any, str]:
    """(first row or top-level object, what it is) of a file; (None, why) when unreadable."""
    if path.endswith(".eval"):
        from workbench.common.files import max_input_bytes, read_member, zip_members

        try:
            with zipfile.ZipFile(path) as z:
                members = zip_members(path, z, max_input_bytes())
                if "header.json" in members:
                    return _loads(read_member(path, z, members["header.json"], _MAX_ARRAY_BYTES)), "inspect-eval"
                return None, "a zip without header.json"
        except InputError as exc:
            return None, exc.reason
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, NotImplementedError) as exc:
            return None, f"not a readable zip ({exc})"
        except RecursionError:
            return None, "its header.json is nested too deeply to read"
    from workbench.ingest import tabular

    try:
        fmt = tabular.file_format(path)
    except InputError as exc:
        return None, exc.reason
    if fmt in tabular.TABULAR_FORMATS:
        try:
            row = tabular.first_row(path, fmt)
        except InputError as exc:
            return None, exc.reason
        return (row, fmt) if row is not None else (None, f"a {fmt.upper()} file without a record")
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(_PEEK_BYTES)
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    if text.startswith("["):
        if size > _MAX_ARRAY_BYTES:
            return None, "a JSON array too large to peek at"
        try:
            with open(path, encoding="utf-8-sig") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            return None, f"not a readable JSON array ({exc})"
        except RecursionError:
            return None, "a JSON array nested too deeply to read"
        first = next((x for x in data if isinstance(x, dict)), None) if isinstance(data, list) else None
        return first, "array"
    if text.startswith("{") and path.endswith(".json"):
        try:
            with open(path, encoding="utf-8-sig") as fh:
                obj = json.load(fh) if size <= _MAX_ARRAY_BYTES else None
        except (OSError, ValueError):
            obj = None
        except RecursionError:
            return None, "a JSON object nested too deeply to read"
        if isinstance(obj, dict):
            return obj, "object"
    for line in text.split("\n"):
        if line.strip():
            try:
                return json.loads(line), "line"
            except ValueError:
                return None, "its first line is not JSON"
            except RecursionError:
                return None, "its first line is JSON nested too deeply to read"
    return None, "empty"


#: rows :func:`classify` reads from a JSON-lines file: the first ones and some spread through it
SAMPLE_HEAD, SAMPLE_SPREAD = 32, 32


def _sample_lines(path: str) -> list[Any]:
    """Rows parsed from a plain JSON-lines file: the first :data:`SAMPLE_HEAD` non-blank lines
    and one line after each of :data:`SAMPLE_SPREAD` offsets spread evenly through the file
    (a file whose first row is of one format and the rest of another is then seen as mixed).
    Lines that are not JSON objects are left out (ingest counts them); a .gz file gives []."""
    if path.endswith(".gz"):
        return []
    rows: list[Any] = []
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(_PEEK_BYTES)
            lines = [ln for ln in head.split(b"\n")[:-1] if ln.strip()][:SAMPLE_HEAD]
            if size > len(head):
                for k in range(1, SAMPLE_SPREAD + 1):
                    fh.seek(size * k // (SAMPLE_SPREAD + 1))
                    fh.readline()  # the rest of a line cut by the offset
                    line = fh.readline(_PEEK_BYTES)
                    if line.strip():
                        lines.append(line)
    except OSError:
        return []
    for ln in lines:
        try:
            obj = json.loads(ln.decode("utf-8-sig", errors="replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            rows.append(obj)
    return rows


def classify(path: str) -> tuple[str | None, str]:
    """(preset or None for the default format, evidence) for one file; ("?", why) when no
    shipped format fits, or when rows sampled through a JSON-lines file fit different ones."""
    row, kind = _first_row(path)
    name = os.path.basename(path)
    posix = os.path.abspath(path).replace(os.sep, "/")
    if row is None:
        return "?", f"{name}: {kind}"
    if not isinstance(row, dict):
        return "?", f"{name}: the first row is not a JSON object"
    first = _classify_row(row, kind, name, posix)
    if kind == "line":
        counts: dict[str | None, int] = {}
        sample = _sample_lines(path)
        for r in sample:
            c = _classify_row(r, kind, name, posix)[0]
            if c != "?":  # a row no format fits is ingest's to count (malformed), not a second format
                counts[c] = counts.get(c, 0) + 1
        if len(counts) > 1:
            shown = ", ".join(f"{c or 'default'} {n}"
                              for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))))
            return "?", (f"{name}: the {len(sample)} rows sampled through the file fit different formats "
                         f"({shown}): a mixed file")
    return first


def _classify_row(row: dict[str, Any], kind: str, name: str, posix: str) -> tuple[str | None, str]:
    """:func:`classify` for one row (a JSON object) of a file of ``kind``."""
    keys = set(row)
    if kind == "inspect-eval" or (kind == "object" and "eval" in keys and ({"samples", "results"} & keys)):
        ev = row.get("eval") if isinstance(row.get("eval"), dict) else {}
        writer = "vitals (R)" if str(ev.get("task_file", "")).endswith(".R") else "Inspect"
        shape = "zip with header.json" if kind == "inspect-eval" else "eval/results/samples object"
        return "inspect", f"{name}: an Inspect evaluation log ({shape}, written by {writer})"
    if "games" in keys and isinstance(row.get("games"), list):
        ver = "v2.0" if "uid" in keys else "v0.1"
        return "arena-hard", f"{name}: rows with a 'games' list of position-swapped verdicts (Arena-Hard-Auto {ver})"
    if {"g1_winner", "g2_winner"} <= keys:
        return "mt-bench-pair", f"{name}: rows with g1_winner/g2_winner (FastChat MT-Bench pairwise)"
    if {"preference", "generator_2"} <= keys or ("preference" in keys and "/annotations.json" in posix):
        return "alpaca-eval", f"{name}: array elements with preference and generator_2 (AlpacaEval annotations)"
    if "session_id" in keys and ("parsed_result" in keys or "/eval=" in posix):
        where = " under eval=<judge>/" if "/eval=" in posix else " with parsed_result"
        return "wildbench", f"{name}: session_id rows{where} (WildBench scores)"
    if {"question_id", "score", "turn"} <= keys and isinstance(row.get("judge"), list):
        return "mt-bench", f"{name}: rows with question_id, turn, score and a judge list (FastChat MT-Bench single)"
    if {"question_id", "model", "score", "judgment"} <= keys:
        return "arena-hard-v1", (f"{name}: rows with question_id, model, judgment and a numeric score "
                                 "(arena-bench-v1 single grading)")
    if set(KEY_FIELDS) <= keys:
        return None, f"{name}: rows with {', '.join(KEY_FIELDS)} (the default format)"
    return "?", f"{name}: fields {', '.join(sorted(keys)[:8])}{'...' if len(keys) > 8 else ''} fit no shipped preset"


def default_fits(paths: list[str]) -> bool:
    """Whether the first input's first row has the default format's key fields."""
    if not paths:
        return True
    row, _ = _first_row(paths[0])
    return isinstance(row, dict) and set(KEY_FIELDS) <= set(row)


def detect(paths: list[str]) -> tuple[str | None, str]:
    """(preset, why) for the inputs, preset None meaning the default format; raises
    :class:`ConfigError` listing every file's candidates when they cannot be told apart."""
    found = [(p, *classify(p)) for p in paths]
    names = {c for _, c, _ in found}
    if len(names) == 1 and "?" not in names:
        preset = next(iter(names))
        why = found[0][2] + (f" (and {len(found) - 1} more file(s) alike)" if len(found) > 1 else "")
        return preset, why
    lines = "; ".join(f"{why} -> {c if c != '?' else 'no preset'}" for _, c, why in found[:8])
    cands = sorted(c or "default" for c in names if c != "?")
    raise ConfigError("--preset auto cannot tell the format: " + lines
                      + (f"; candidates: {', '.join(cands)}" if cands else "")
                      + "; give --preset NAME (workbench preset list) or --config FILE")
