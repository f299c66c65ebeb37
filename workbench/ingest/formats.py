"""Native harness layouts: rows as a harness writes them -> one dict per judgment.

:mod:`workbench.ingest.reader` reads plain JSON lines and JSON arrays itself. A config that sets
``explode`` (one input row holding several judgments), ``aliases`` (a field that has another
name in some versions of a format) or ``reader: inspect`` (Inspect AI evaluation logs) sends
its files through :func:`read_native` instead, which turns each file into a list of plain
dicts, one per judgment, and tells ingest which physical line (JSON element, Inspect sample)
each came from. Ingest then extracts and classifies those dicts exactly as it does decoded
lines, so every bucket, reason and count means the same thing.

What each reader produces:

* **explode** (Arena-Hard ``games``, FastChat pairwise ``g1_winner``/``g2_winner``): a row
  with ``k`` judgments becomes ``k`` dicts holding the row's other fields, the judgment under
  ``explode.as`` (default ``game``) and its 1-based ``position`` ("1", "2"), which a preset maps
  to a key field (usually ``trial``) so the two position-swapped games of one item are two
  judgments of the same item. ``explode.positions`` fixes how many judgments a row should
  have: a missing one is still a row (bucket ``empty``, reason "position 2: no judgment in the
  row"), so a lost game is counted, never invisible. A null game is ``empty`` with its reason.
  A row whose list field is missing or not a list is one ``malformed`` row naming the field.
* **inspect** (Inspect AI logs, see :func:`inspect_log`): one dict per sample x scorer with
  ``sample_id``, ``epoch``, ``model``, ``task``, ``run_id``, ``log`` (the log's identity,
  :func:`inspect_identity`), ``scorer``, ``value``, ``writer``, ``output`` (a digest of the
  sample's output text, :func:`output_digest`: the judged answer, the preset's ``answer:``)
  (``inspect`` or ``vitals``: the R port writes the same schema), the score's ``answer``,
  ``explanation`` and ``metadata`` where it has them (for ``missing_when``, ``extra_fields``)
  and, where the sample has an output message, ``answer_chars`` (the completion's length in
  characters, an integer: the text itself is not kept, :func:`completion_chars`). A sample
  with an ``error`` is bucket ``errored``; a sample without a value from that scorer is ``unscored``; both keep
  their reason. The log's own printed metrics (``results.scores[].metrics``) are kept in
  :attr:`NativeRows.meta` for :mod:`workbench.analysis.harness` to compare with.

The Inspect reader is a small reader of the documented log format, standard library only
(``zipfile`` + ``json``), not ``inspect_ai`` itself (not a dependency: it pulls in a large tree
for what is two JSON layouts). A ``.eval`` file is a zip with ``header.json`` (``eval``,
``plan``, ``results``, ``stats``) and ``samples/<id>_epoch_<n>.json`` (one sample each); a
``.json`` log is one object with the same header fields and a ``samples`` list.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.common.config import Config
from workbench.common.errors import InputError

_MISSING = object()


@dataclass
class NativeRows:
    """One file read natively: a dict (or None where malformed) per judgment row."""

    objects: list[dict[str, Any] | None] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)  # row index -> malformed reason
    lines: list[int] = field(default_factory=list)  # physical line / element / sample number
    forced: dict[int, tuple[str, str]] = field(default_factory=dict)  # index -> (bucket, reason)
    physical: int = 0  # lines (JSON elements, samples) the file holds
    meta: dict[str, Any] = field(default_factory=dict)

    def add(self, obj: dict[str, Any] | None, line: int, error: str | None = None,
            forced: tuple[str, str] | None = None) -> None:
        i = len(self.objects)
        self.objects.append(obj)
        self.lines.append(line)
        if error is not None:
            self.errors[i] = error
        if forced is not None:
            self.forced[i] = forced


def _json_type(obj: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null", dict: "object"}.get(type(obj), type(obj).__name__)


def _loads(text: str) -> Any:
    from workbench.common.numbers import parse_float as _parse_float
    from workbench.common.numbers import parse_int as _parse_int

    def bad_constant(name: str) -> float:
        return float(name.replace("Infinity", "inf"))  # NaN/Infinity: classified as invalid_number
    # numbers past the float range: out_of_range with what they were (ingest.BeyondFloat)
    return json.loads(text, parse_constant=bad_constant, parse_int=_parse_int, parse_float=_parse_float)


def _tabular_rows(path: str, fmt: str, cfg: Config) -> list[tuple[int, Any, str | None]]:
    """(line, record dict or _MISSING for a blank record or None, error) of a CSV, TSV or
    Parquet file (:mod:`workbench.ingest.tabular`, every column kept)."""
    from workbench.ingest import tabular

    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            columns = list(pq.ParquetFile(path).schema_arrow.names)
        except Exception as exc:  # noqa: BLE001 (any unreadable file: the reader names it)
            raise InputError(path, f"not a readable Parquet file: {tabular._arrow_msg(exc)}") from exc
    else:
        columns = []
    out: list[tuple[int, Any, str | None]] = []
    for block in tabular.blocks(path, fmt, columns, tabular.Result(), text_cols=tabular.text_columns(cfg)):
        for i, (row, line, blank) in enumerate(zip(block.rows, block.lines, block.blank, strict=True)):
            if blank:
                out.append((line, _MISSING, None))
            elif i in block.errors:
                out.append((line, None, block.errors[i]))
            else:
                out.append((line, row, None))
    return out


def _base_rows(path: str, cfg: Config) -> list[tuple[int, Any, str | None]]:
    """(line, decoded object or None, error) per physical line / array element (CSV, TSV,
    Parquet: per record)."""
    from workbench.ingest.tabular import file_format

    fmt = file_format(path, cfg.format)
    if fmt in ("csv", "tsv", "parquet"):
        return _tabular_rows(path, fmt, cfg)
    from workbench.common.files import check_lines, max_input_bytes
    from workbench.common.files import gunzip as _gunzip
    from workbench.common.files import read_raw as _read_raw

    if fmt != "json-array":
        check_lines(path, max_input_bytes())  # a JSON-lines file: each line is a row
    data = _read_raw(path)  # the input-size limit
    if path.endswith(".gz"):
        data = _gunzip(data, path)  # every member counted against the same limit
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise InputError(path, "file is empty")
    out: list[tuple[int, Any, str | None]] = []
    if fmt == "json-array":
        try:
            items = _loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not valid UTF-8 (byte {exc.start})") from exc
        except RecursionError as exc:
            raise InputError(path, "not a JSON array the workbench reads: nested too deeply") from exc
        except (json.JSONDecodeError, ValueError) as exc:
            raise InputError(path, f"not a JSON array: {exc}") from exc
        if not isinstance(items, list):
            raise InputError(path, f"expected a JSON array of row objects, got a JSON {_json_type(items)}")
        for i, obj in enumerate(items, start=1):
            out.append((i, obj, None))
        return out
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, raw in enumerate(lines, start=1):
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        if not raw.strip():
            out.append((i, _MISSING, None))  # blank
            continue
        try:
            out.append((i, _loads(raw.decode("utf-8")), None))
        except UnicodeDecodeError as exc:
            out.append((i, None, f"not valid UTF-8 (byte {exc.start})"))
        except json.JSONDecodeError as exc:
            out.append((i, None, f"not JSON: {exc.msg} (column {exc.colno})"))
        except RecursionError:
            out.append((i, None, "not JSON: nested too deeply"))
        except ValueError as exc:
            out.append((i, None, f"not JSON: {exc}"))
    return out


def _apply_aliases(obj: dict[str, Any], cfg: Config) -> dict[str, Any]:
    if not cfg.aliases:
        return obj
    for name, alts in cfg.aliases.items():
        if name not in obj:
            for alt in alts:
                if alt in obj:
                    obj = {**obj, name: obj[alt]}
                    break
    return obj


def _explode(obj: dict[str, Any], cfg: Config, line: int, out: NativeRows) -> None:
    ex = cfg.explode
    assert ex is not None
    name = ex["as"]
    if ex["field"] is not None:
        items = obj.get(ex["field"], _MISSING)
        if items is _MISSING or not isinstance(items, list):
            got = "missing" if items is _MISSING else f"a JSON {_json_type(items)}"
            out.add(None, line, error=f"field '{ex['field']}' is {got}; expected a list of judgments")
            return
        rest = {k: v for k, v in obj.items() if k != ex["field"]}
        label = ex["field"]
    else:
        items = [obj.get(f, _MISSING) for f in ex["fields"]]
        rest = {k: v for k, v in obj.items() if k not in ex["fields"]}
        label = "/".join(ex["fields"])
    k = ex["positions"] or len(items)
    if not items and not ex["positions"]:
        out.add(None, line, error=f"field '{label}' holds no judgment")
        return
    for i in range(max(k, len(items))):
        pos = str(i + 1)
        row = {**rest, "position": pos}
        item = items[i] if i < len(items) else _MISSING
        if item is _MISSING:
            what = (f"field '{ex['fields'][i]}' is missing" if ex["fields"] is not None and i < len(ex["fields"])
                    else f"no judgment in the row (the list has {len(items)})")
            out.add(row, line, forced=("empty", f"position {pos}: {what}"))
            continue
        row[name] = item
        if item is None:
            out.add(row, line, forced=("empty", f"position {pos}: the judgment is null"))
        else:
            out.add(row, line)


def read_native(path: str, cfg: Config) -> NativeRows:
    """Read one file into judgment dicts (see the module docstring)."""
    if cfg.reader == "inspect":
        return inspect_log(path, cfg)
    out = NativeRows()
    base = _base_rows(path, cfg)
    out.physical = len(base)
    for line, obj, err in base:
        if obj is _MISSING:
            out.add(None, line, forced=("blank", ""))
        elif err is not None:
            out.add(None, line, error=err)
        elif not isinstance(obj, dict):
            out.add(None, line, error=f"not a JSON object (a JSON {_json_type(obj)})")
        else:
            obj = _apply_aliases(obj, cfg)
            if cfg.explode is not None:
                _explode(obj, cfg, line, out)
            else:
                out.add(obj, line)
    return out


# --------------------------------------------------------------------------- Inspect AI logs


def _inspect_json(path: str, data: bytes | bytearray, what: str) -> Any:
    """One JSON document of an Inspect log (``what``: the entry, for the message)."""
    try:
        return json.loads(data.decode("utf-8-sig") if isinstance(data, bytes | bytearray) else data)
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InputError(path, f"{what} is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise InputError(path, f"{what} is not JSON the workbench reads: nested too deeply") from exc
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(path, f"{what} is not JSON the workbench reads: {exc}") from exc


def _inspect_parts(path: str) -> tuple[dict[str, Any], list[Any]]:
    """(header, samples) of an Inspect log: a ``.eval`` zip or a ``.json`` log; the header's
    fields the readers use are checked for type (:func:`_check_header`) before any is used."""
    from workbench.common.files import max_input_bytes, read_member, zip_members
    from workbench.common.files import too_big as _too_big

    limit = max_input_bytes()
    if path.endswith(".eval"):
        try:
            with zipfile.ZipFile(path) as z:
                members = zip_members(path, z, limit)
                names = list(members)
                if "header.json" not in members:
                    raise InputError(path, "not an Inspect .eval log: the zip has no header.json "
                                     f"(entries: {', '.join(map(repr, names[:5])) or 'none'})")
                header = _inspect_json(path, read_member(path, z, members["header.json"], limit),
                                       "header.json")
                if not isinstance(header, dict):
                    raise InputError(path, f"header.json is a JSON {_json_type(header)}, expected an object")
                _check_header(path, header)
                sample_names = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")),
                                      key=_sample_order)
                samples = [_inspect_json(path, read_member(path, z, members[n], limit), f"member {n!r}"[:120])
                           for n in sample_names]
        except zipfile.BadZipFile as exc:
            raise InputError(path, f"not an Inspect .eval log: not a zip file ({exc})") from exc
        except (RuntimeError, NotImplementedError, ValueError) as exc:  # zipfile's other refusals
            raise InputError(path, f"not a readable Inspect .eval log: {exc}") from exc
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
        return header, samples
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise _too_big(path, size, limit)
            raw = fh.read()
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        d = _inspect_json(path, raw, "the log")
    except InputError as exc:
        raise InputError(path, f"not an Inspect JSON log: {exc.reason}") from exc
    if not isinstance(d, dict) or "eval" not in d:
        raise InputError(path, "not an Inspect log: expected a JSON object with 'eval' and 'samples'")
    _check_header(path, d)
    samples = d.get("samples")
    if samples is None:
        samples = []
    if not isinstance(samples, list):
        raise InputError(path, f"Inspect log: field 'samples' is a JSON {_json_type(samples)}, expected a list")
    return d, samples


def _check_header(path: str, header: dict[str, Any]) -> None:
    """Refuse (one line naming the field) an Inspect header whose fields the readers use
    have the wrong JSON type: ``eval``, ``eval.dataset``, ``results`` objects; ``eval.scorers``
    and ``results.scores`` lists of objects, each ``metrics`` an object of objects (a list of
    objects for ``eval.scorers``)."""
    def need(v: Any, kind: type, where: str) -> None:
        if v is not None and not isinstance(v, kind):
            want = {dict: "an object", list: "a list", str: "a string"}[kind]
            raise InputError(path, f"Inspect log: field '{where}' is a JSON {_json_type(v)}, expected {want}")

    ev, res = header.get("eval"), header.get("results")
    need(ev, dict, "eval")
    need(res, dict, "results")
    ev, res = ev or {}, res or {}
    need(ev.get("dataset"), dict, "eval.dataset")
    for where, lst in (("eval.scorers", ev.get("scorers")), ("results.scores", res.get("scores"))):
        need(lst, list, where)
        for k, sc in enumerate(lst or []):
            need(sc, dict, f"{where}[{k}]")
            if sc is None:
                raise InputError(path, f"Inspect log: field '{where}[{k}]' is null, expected an object")
            need(sc.get("name"), str, f"{where}[{k}].name")
            metrics = sc.get("metrics")
            if where == "results.scores":
                need(metrics, dict, f"{where}[{k}].metrics")
                for name, m in (metrics or {}).items():
                    need(m, dict, f"{where}[{k}].metrics.{name}"[:120])
            else:
                need(metrics, list, f"{where}[{k}].metrics")


def _sample_order(name: str) -> tuple[Any, ...]:
    """Numeric order of ``samples/<id>_epoch_<n>.json`` (ids compared as numbers without
    converting them: a 5,000-digit id is past what ``int()`` converts), other names after."""
    stem = name.rsplit("/", 1)[-1].removesuffix(".json")
    sid, _, ep = stem.rpartition("_epoch_")
    if sid.isdigit() and ep.isdigit() and sid.isascii() and ep.isascii():
        a, b = sid.lstrip("0"), ep.lstrip("0")
        return (0, len(a), a, len(b), b)
    return (1, 0, stem, 0, "")


def _sample_scores(s: Any) -> dict[str, Any]:
    """A sample's ``scores`` object ({} when the sample or its scores are not objects: that
    sample is a malformed row)."""
    scores = s.get("scores") if isinstance(s, dict) else None
    return scores if isinstance(scores, dict) else {}


def inspect_writer(header: dict[str, Any]) -> str:
    """``vitals`` for logs written by the R port (task file in R, percent accuracy), else ``inspect``."""
    ev = header.get("eval") or {}
    if str(ev.get("task_file") or "").endswith(".R"):
        return "vitals"
    for sc in (header.get("results") or {}).get("scores") or []:
        acc = (sc.get("metrics") or {}).get("accuracy") or {}
        if acc.get("params") == {"1": "numeric_scores"}:
            return "vitals"
    return "inspect"


def inspect_identity(header: dict[str, Any], path: str) -> str:
    """The log's identity (one evaluation: a task x model run), the ``log`` field of its rows.

    ``eval.eval_id`` where the log has it (Inspect >= 0.3.5x writes a unique id per log);
    otherwise ``run_id/task_id@created`` (an older log or vitals: ``run_id`` is shared by every
    log of one ``eval()`` call, ``task_id`` by the logs of one task, ``created`` tells the
    runs of one task apart); the file name when the header has none of these. Two logs of
    the same model and task are two runs (two trials of each sample), never duplicates; the
    same log read twice is the same identity (its rows are duplicates, as they should be)."""
    ev = header.get("eval") or {}
    if ev.get("eval_id"):
        return str(ev["eval_id"])
    parts = [str(ev[k]) for k in ("run_id", "task_id") if ev.get(k)]
    if parts:
        return "/".join(parts) + (f"@{ev['created']}" if ev.get("created") else "")
    return Path(path).name


def completion_chars(output: Any) -> int | None:
    """The length in characters of a sample's completion, as Inspect's ``ModelOutput.completion``
    reads it: ``output.completion`` where the log writes it, else the first choice's message text
    (its content when a string; its text parts joined by newlines when a list, as
    ``ChatMessage.text`` joins them); None when the sample has no output message."""
    if not isinstance(output, dict):
        return None
    if isinstance(output.get("completion"), str):
        return len(output["completion"])
    choices = output.get("choices")
    msg = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        texts = [c["text"] for c in content
                 if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)]
        return len("\n".join(texts))
    return None


def output_digest(sample: dict[str, Any]) -> str | None:
    """The sample's judged answer as a fixed-size digest (BLAKE2b, 128 bits, hex): the text of
    ``output.completion`` where the log stores it, else of the first choice's message content
    (a string, or the ``text`` of its content parts; any other content as its JSON text).
    None when the sample has no output. A digest, not the text: a completion can be many
    kilobytes and every scorer's row would hold it; equality is all the repeat check needs."""
    out = sample.get("output")
    if not isinstance(out, dict):
        return None
    text = out.get("completion")
    if not isinstance(text, str):
        choices = out.get("choices")
        msg = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
            else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if content is None:
            return None
        if isinstance(content, list) and all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in content):
            text = "".join(c["text"] for c in content)
        else:
            text = content if isinstance(content, str) else json.dumps(content, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def inspect_log(path: str, cfg: Config) -> NativeRows:
    """One row per sample x scorer of an Inspect log (see the module docstring)."""
    header, samples = _inspect_parts(path)
    ev = header.get("eval") or {}
    results = header.get("results") or {}
    scorers = [s["name"] for s in results.get("scores") or [] if isinstance(s.get("name"), str) and s["name"]]
    if not scorers:
        scorers = [s["name"] for s in ev.get("scorers") or [] if isinstance(s.get("name"), str) and s["name"]]
    for s in samples:
        for name in _sample_scores(s):
            if name not in scorers:
                scorers.append(name)
    writer = inspect_writer(header)
    log = inspect_identity(header, path)
    out = NativeRows()
    out.physical = len(samples)
    ds = ev.get("dataset") or {}
    out.meta = {"writer": writer, "status": header.get("status"), "model": ev.get("model"),
                "task": ev.get("task"), "run_id": ev.get("run_id"), "log": log,
                "dataset_samples": ds.get("samples"), "sample_ids": ds.get("sample_ids"),
                "printed": {sc.get("name"): {k: (m or {}).get("value") for k, m in (sc.get("metrics") or {}).items()}
                            for sc in results.get("scores") or [] if isinstance(sc.get("name"), str)}}
    if not samples:
        raise InputError(path, f"Inspect log has no samples (status {header.get('status')!r})")
    out.meta["scales"] = _check_scales(path, header, samples, scorers, cfg)
    for i, s in enumerate(samples, start=1):
        if not isinstance(s, dict):
            out.add(None, i, error=f"sample {i} is not a JSON object (a JSON {_json_type(s)})")
            continue
        if s.get("scores") is not None and not isinstance(s.get("scores"), dict):
            out.add(None, i, error=f"sample {i}: field 'scores' is a JSON {_json_type(s['scores'])}, "
                                   "expected an object of scorer results")
            continue
        base = {"sample_id": s.get("id"), "epoch": s.get("epoch", 1), "model": ev.get("model"),
                "task": ev.get("task"), "run_id": ev.get("run_id"), "log": log, "writer": writer,
                "output": output_digest(s)}
        chars = completion_chars(s.get("output"))
        if chars is not None:  # the length, not the text: a log's completions stay out of memory
            base["answer_chars"] = chars
        err = s.get("error")
        scores = s.get("scores") or {}
        for name in scorers:
            row = {**base, "scorer": name}
            sc = scores.get(name)
            if err:
                msg = err.get("message") if isinstance(err, dict) else err
                out.add(row, i, forced=("errored", f"sample error: {_short(msg)}"))
                continue
            if not isinstance(sc, dict) or "value" not in sc:
                out.add(row, i, forced=("unscored", f"no value from scorer {name!r}"))
                continue
            value = sc.get("value")
            reason = ((sc.get("metadata") or {}) if isinstance(sc.get("metadata"), dict) else {}).get("unscored_reason")
            if value is None or reason or (isinstance(value, float) and math.isnan(value)):
                out.add({**row, "value": None}, i,
                        forced=("unscored", f"scorer {name!r} left the sample unscored"
                                + (f" ({reason})" if reason else "")))
                continue
            row["value"] = value
            # the score's own words, for missing_when (a failure written as a score: "No
            # response" as -2): references into the log already in memory, not copies; ingest
            # extracts a field only when the config reads it
            for k in ("answer", "explanation", "metadata"):
                if k in sc:
                    row[k] = sc[k]
            out.add(row, i)
    return out


_SCALE_KEYS = (("min", "max"), ("scale_min", "scale_max"), ("min_score", "max_score"), ("lower", "upper"))


def _scale_in(d: Any) -> tuple[float, float] | None:
    """A scale a scorer records in a mapping (params, metadata): ``min``/``max`` (or
    ``scale_min``/``scale_max``...), or ``scale``/``range`` as ``[lo, hi]`` or ``{min, max}``."""
    if not isinstance(d, dict):
        return None
    for a, b in _SCALE_KEYS:
        lo, hi = d.get(a), d.get(b)
        if _is_num(lo) and _is_num(hi) and lo < hi:
            return float(lo), float(hi)
    for k in ("scale", "range", "score_range"):
        v = d.get(k)
        if isinstance(v, list | tuple) and len(v) == 2 and all(map(_is_num, v)) and v[0] < v[1]:
            return float(v[0]), float(v[1])
        if isinstance(v, dict):
            got = _scale_in(v)
            if got:
                return got
    return None


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _check_scales(path: str, header: dict[str, Any], samples: list[Any], scorers: list[str],
                  cfg: Config) -> dict[str, Any]:
    """Each scorer's scale, from the log or the user, never assumed.

    Labels (C/P/I/N) and booleans are on Inspect's ``value_to_float`` scale, 0..1. A scorer
    that writes numbers needs their scale: one the log records (the scorer's ``params`` or
    ``metadata`` in ``results.scores``/``eval.scorers``, or each score's ``metadata``: ``min``/
    ``max``, ``scale: [lo, hi]``...), or 0/1 values under the log's own ``accuracy`` metric
    (a proportion), or the user's ``rubric``. Without one, or with a recorded scale the
    config's rubric does not match, the file is refused with a message saying what to set.
    Returns ``{scorer: {"scale": [lo, hi] or None, "from": where, "numbers": [min, max]}}``."""
    results = {sc.get("name"): sc for sc in (header.get("results") or {}).get("scores") or [] if isinstance(sc, dict)}
    specs = {sc.get("name"): sc for sc in (header.get("eval") or {}).get("scorers") or [] if isinstance(sc, dict)}
    out: dict[str, Any] = {}
    rubric = (float(cfg.rubric_min), float(cfg.rubric_max))
    for name in scorers:
        nums: list[float] = []
        recorded: tuple[float, float] | None = None
        where = ""
        for src, d in (("results.scores params", (results.get(name) or {}).get("params")),
                       ("results.scores metadata", (results.get(name) or {}).get("metadata")),
                       ("eval.scorers metadata", (specs.get(name) or {}).get("metadata")),
                       ("eval.scorers options", (specs.get(name) or {}).get("options"))):
            got = _scale_in(d)
            if got:
                recorded, where = got, src
                break
        for s in samples:
            sc = _sample_scores(s).get(name)
            if not isinstance(sc, dict):
                continue
            v = sc.get("value")
            if _is_num(v):
                nums.append(float(v))
            if recorded is None:
                got = _scale_in(sc.get("metadata"))
                if got:
                    recorded, where = got, "the scores' metadata"
        if not nums:
            out[name] = {"scale": [0.0, 1.0], "from": "labels (Inspect's C 1, P 0.5, I 0)", "numbers": None}
            continue
        seen = [min(nums), max(nums)]
        metrics = set((results.get(name) or {}).get("metrics") or {})
        if recorded is None and set(nums) <= {0.0, 1.0} and "accuracy" in metrics:
            recorded, where = (0.0, 1.0), "0/1 values under the log's accuracy metric"
        if cfg.rubric_given:
            out[name] = {"scale": list(rubric), "from": "the config's rubric", "numbers": seen,
                         "recorded": list(recorded) if recorded else None}
            continue
        hint = "give it as rubric: {min: LO, max: HI} in a --config file with extends: inspect"
        if recorded is None:
            raise InputError(path, f"scorer {name!r} writes numbers ({seen[0]:g} to {seen[1]:g} in this log) and "
                             "the log records no scale for them; the workbench does not assume one (the "
                             f"preset's {rubric[0]:g}..{rubric[1]:g} is the scale of Inspect's C/P/I labels): "
                             + hint.replace("LO", f"{seen[0]:g}").replace("HI", f"{seen[1]:g}")
                             + " if that range is the scorer's scale")
        if recorded != rubric:
            raise InputError(path, f"scorer {name!r} writes numbers on {recorded[0]:g}..{recorded[1]:g} "
                             f"(recorded in {where}), not the config's rubric {rubric[0]:g}..{rubric[1]:g}: "
                             + hint.replace("LO", f"{recorded[0]:g}").replace("HI", f"{recorded[1]:g}"))
        out[name] = {"scale": list(recorded), "from": where, "numbers": seen}
    return out


def _short(text: Any, n: int = 80) -> str:
    try:
        t = " ".join(str(text).split())
    except (RecursionError, ValueError):
        t = f"(a JSON {_json_type(text)} too deep to show)"
    return t if len(t) <= n else t[: n - 3] + "..."


def inspect_header(path: str) -> dict[str, Any]:
    """The log's header (``eval``, ``results``...) without its samples, for the harness check."""
    header, _ = _inspect_parts(path)
    return header


# --------------------------------------------------------------------------- task lists


def _task_objects(path: str) -> list[tuple[int, Any]]:
    """The rows of a harness's question file (JSON lines or a JSON array) with their line numbers.
    Raises :class:`InputError` naming the line (size over the input limit, not UTF-8, not JSON,
    nested too deeply)."""
    from workbench.common.files import max_input_bytes
    from workbench.common.files import too_big as _too_big

    limit = max_input_bytes()
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise _too_big(path, size, limit)
            data = fh.read().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(path, f"cannot read task list: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(path, f"task list is not valid UTF-8 (byte {exc.start})") from exc
    stripped = data.lstrip()
    objs: list[tuple[int, Any]] = []
    if stripped.startswith("["):
        try:
            items = json.loads(data)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"task list is not a JSON array: {exc.msg}", line=exc.lineno) from exc
        except RecursionError as exc:
            raise InputError(path, "task list is not a JSON array the workbench reads: nested too deeply") from exc
        except ValueError as exc:
            raise InputError(path, f"task list is not a JSON array the workbench reads: {exc}") from exc
        if not isinstance(items, list):
            raise InputError(path, f"task list is a JSON {_json_type(items)}, expected an array of tasks")
        objs = list(enumerate(items, start=1))
    else:
        for i, line in enumerate(data.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                objs.append((i, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InputError(path, f"task list line is not JSON: {exc.msg}", line=i) from exc
            except RecursionError as exc:
                raise InputError(path, "task list line is not JSON the workbench reads: nested too deeply",
                                 line=i) from exc
            except ValueError as exc:
                raise InputError(path, f"task list line is not JSON the workbench reads: {exc}", line=i) from exc
    return objs


def _task_id(path: str, obj: Any, keys: list[str] | tuple[str, ...], line: int) -> str:
    tid = None
    if isinstance(obj, dict):
        tid = next((obj[k] for k in keys if isinstance(obj.get(k), str | int) and str(obj[k]).strip()), None)
    if tid is None:
        raise InputError(path, f"task has none of the id fields {', '.join(keys)}", line=line)
    return str(tid)


def read_task_ids(path: str, keys: list[str] | tuple[str, ...]) -> list[str]:
    """Task ids of a harness's question file (JSON lines or a JSON array), the first of ``keys``
    each row has (``question_id``, else ``uid``). Raises :class:`InputError` naming the line."""
    out: list[str] = []
    seen: set[str] = set()
    for i, obj in _task_objects(path):
        tid = _task_id(path, obj, keys, i)
        if tid not in seen:
            seen.add(tid)
            out.append(tid)
    if not out:
        raise InputError(path, "task list is empty")
    return out


def _part_values(obj: dict[str, Any], name: str, tid: str, id_fields: set[str]) -> list[str] | None:
    """One part of a composite scenario key from a task row: the task id for an id field, the
    row's own scalar value, one value per element of its plural list (``turn`` from
    ``turns``: 1..len), or None when the row does not say."""
    if name in id_fields:
        return [tid]
    v = obj.get(name)
    if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
        return [str(v)]
    many = obj.get(name + "s")
    if isinstance(many, list) and many:
        return [str(i) for i in range(1, len(many) + 1)]
    return None


def read_task_keys(path: str, keys: list[str] | tuple[str, ...], cfg: Config) -> tuple[list[str], str | None]:
    """Scenario keys a question file plans, in the rows' key structure: ``(keys, note)``.

    A single-field scenario is the task id (:func:`read_task_ids`). A composite scenario
    (MT-Bench's ``[question_id, turn]``) is built part by part from each task row (see
    :func:`_part_values`): a question with two ``turns`` plans ``81:1`` and ``81:2``, the
    rows' own spelling (:func:`workbench.ingest.engine.composite_key`). When a part cannot be read
    from the task rows the ids alone are returned with a note saying which part is missing
    (the caller's key check then refuses the plan, showing both key sets).
    """
    from itertools import product

    from workbench.common.text import composite_key

    parts = (cfg.keys or {}).get("scenario")
    if not parts or len(parts) < 2:
        return read_task_ids(path, keys), None
    id_fields = set(keys)
    for name, alts in (cfg.aliases or {}).items():
        if name in id_fields or id_fields.intersection(alts):
            id_fields.add(name)
            id_fields.update(alts)
    names = [".".join(map(str, p)) for p in parts]
    out: list[str] = []
    seen: set[str] = set()
    lacking: list[str] = []
    for i, obj in _task_objects(path):
        tid = _task_id(path, obj, keys, i)
        vals = [_part_values(obj, n, tid, id_fields) for n in names]
        if any(v is None for v in vals):
            lacking.extend(n for n, v in zip(names, vals, strict=True) if v is None and n not in lacking)
            combos = [tid]
        else:
            combos = [composite_key(list(c)) for c in product(*vals)]  # type: ignore[arg-type]
        for k in combos:
            if k not in seen:
                seen.add(k)
                out.append(k)
    if not out:
        raise InputError(path, "task list is empty")
    note = None
    if lacking:
        note = ("the task list gives no "
                + " or ".join(f"{n!r} (no {n!r} field, no {n + 's'!r} list)" for n in lacking)
                + ", so it plans task ids only")
    return out, note


def task_file_for(input_path: str, cfg: Config) -> str | None:
    """The preset's task list for an input (``tasks.file`` relative to the input's folder), if it exists."""
    if cfg.tasks is None:
        return None
    cand = (Path(input_path).resolve().parent / cfg.tasks["file"]).resolve()
    return str(cand) if cand.is_file() else None
