"""CSV, TSV and Parquet inputs: each record (row) one ledger line, typed as JSON would type it.

:mod:`workbench.ingest.reader` sends a file here when its format (:func:`file_format`) is ``csv``,
``tsv`` or ``parquet``. Each record becomes the dict a JSON line with the same fields would
decode to, and from there it goes through exactly the extraction and classification of a JSON
line (``ingest._assemble`` and the same polars expressions), so buckets and reasons mean the
same in every format (``tests/test_tabular_inputs.py`` reads one hazard file written as JSONL,
CSV and Parquet and compares the ledgers line by line).

**Formats** (:func:`file_format`). ``format: csv|tsv|parquet`` in the config wins;
``format: jsonl|json-array`` (what most presets say) chooses between the two JSON layouts, so a
file whose extension or content says CSV, TSV or Parquet is still read as that (a preset's rows
converted to CSV read with the preset); with ``format: auto`` the extension decides
(``.csv``, ``.tsv``/``.tab``, ``.parquet``/``.pq``, ``.json``, anything else JSON lines; a
``.gz`` suffix is looked through), except that the file's first bytes decide for binary
content: Parquet's ``PAR1`` magic is Parquet whatever the name, and a format the workbench does
not read (an Excel workbook, an OpenDocument spreadsheet, Arrow/Feather, Avro, ORC, SQLite,
HDF5, pickle, zip, bzip2/xz/zstd/7z archives) is refused by name, as is such an extension.
A text file with another extension (``.txt``, none) is read as CSV when its first line is not
JSON (does not start with ``{`` or ``[``) and splits into two or more comma (tab) separated
header names; otherwise it is JSON lines, as before.

**CSV typing rule.** Every cell is read as text (the CSV module; no sniffer guesses types), and
the workbench then types it as the JSON value its text spells:

* an empty cell (``,,`` or ``""``; quoting never changes a cell's type) is an **absent** field,
  as if a JSON row did not have the key: a rubric field is missing (``partial``/``empty``), a
  key field is "missing" (``malformed``);
* a JSON number (``7``, ``-1``, ``7.5``, ``1e3``; the whole cell, no spaces, no ``+``, no
  leading zeros) is a number; ``1e400`` is infinite, as in JSON;
* ``NaN``, ``inf``, ``-inf``, ``Infinity``, ``-Infinity`` (any case, optional sign) are the
  non-finite floats Python's ``json`` reads ``NaN``/``Infinity`` as: ``invalid_number``;
* ``true``/``false`` (any case) are booleans (so ``pass:`` fields work; a boolean score is
  ``non_numeric`` as in JSON);
* a cell starting with ``[`` or ``{`` that is valid JSON is that array or object (a flags list
  ``["a", "b"]``, a nested ``{"judge": "x"}`` for a dotted path ``meta.judge``);
* anything else is a string: ``8/10``, ``seven``, `` 7`` (with a space), ``07``, ``+7``,
  ``null``, ``NA`` (``non_numeric``, or a number with ``numeric_strings: accept``; a string in
  ``missing_values`` such as ``"NA"`` is a sentinel).

A column the config reads only as text (a key field, ``verdict``, an ``extra_fields`` entry,
each named by a one-name path and not also read as a score, flags or pass field) keeps its cells
as written: trial ``1.0`` is the key ``"1.0"`` and a verdict ``1.50`` stays ``1.50`` (an empty
cell is still absent). Key values are compared as text anyway, so ``1`` in CSV and ``1`` or
``"1"`` in JSON are one key.

Records are numbered as the file's records, the header being line 1 (so the first data record is
line 2, and in a file without quoted newlines the number is the editor's line number); a record
spanning several physical lines (a quoted field with a newline) is one ledger line, numbered by
its record. An empty line (or one of only spaces) is ``blank``. Header names are stripped of
surrounding spaces; an empty header name is a column nobody reads; a repeated one is refused.
``lines`` counts the data records, not the header. What makes the whole file unusable is an
:class:`~workbench.common.errors.InputError` naming file, line and field (exit 2): a record with more or
fewer fields than the header (ragged), bad quoting (a quote inside a quoted field not doubled,
a quoted field never closed), a file with only a header. Bytes that are not UTF-8 make that
record ``malformed`` (as a JSON line), naming the field.

**Parquet.** Each row is one ledger line, numbered 1..N. Typed columns keep their Parquet types
the way JSON would hold them: integers and floats are numbers (NaN is ``invalid_number``),
booleans booleans, lists lists, structs objects (nested columns are read by dotted paths),
decimals numbers, dates and times ISO text; a null is an absent field (Parquet cannot tell a
missing field from a null one). A **string** column holds text cells and is typed by the CSV
rule above (an empty string is absent, ``"7"`` is 7, ``"8/10"`` non_numeric, ``"NaN"``
invalid_number): a Parquet column has one type, so a score column that holds ``8/10`` beside
``7`` can only be a string column, and its numbers must still count. (So a string ``"7"`` is a
number in CSV and Parquet but ``non_numeric`` in JSON, where the writer chose a string over a
number.) A string column read only as text (see above) keeps its strings, ``""`` included.
Only the top-level columns the config reads are decoded, a batch of rows at a time. A file that
is not readable Parquet, or a row group that cannot be decoded, is an InputError naming the
file (and the first row of the batch).

Memory: both readers go a block of records at a time (:data:`BLOCK_RECORDS`); only the block's
classified frame is kept, as for JSON lines.
"""

from __future__ import annotations

import codecs
import csv
import datetime
import decimal
import gzip
import hashlib
import io
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.common.errors import InputError

BLOCK_RECORDS = 65536
"""Records (Parquet rows) read, typed and classified at a time."""

TEXT_FORMATS = ("jsonl", "json-array")
TABULAR_FORMATS = ("csv", "tsv", "parquet")
FORMATS = (*TEXT_FORMATS, *TABULAR_FORMATS)
"""What ``format:`` may name (besides ``auto``)."""

_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
               ".parq": "parquet", ".json": "json-array", ".jsonl": "jsonl", ".ndjson": "jsonl",
               ".jsonlines": "jsonl"}

_UNSUPPORTED_EXT = {
    ".xlsx": "an Excel workbook (.xlsx)", ".xlsm": "an Excel workbook (.xlsm)",
    ".xlsb": "an Excel binary workbook (.xlsb)", ".xls": "a legacy Excel workbook (.xls)",
    ".ods": "an OpenDocument spreadsheet (.ods)", ".numbers": "an Apple Numbers spreadsheet",
    ".feather": "an Arrow/Feather file", ".arrow": "an Arrow IPC file", ".ipc": "an Arrow IPC file",
    ".avro": "an Avro file", ".orc": "an ORC file", ".sqlite": "an SQLite database",
    ".sqlite3": "an SQLite database", ".db": "a database file", ".h5": "an HDF5 file",
    ".hdf5": "an HDF5 file", ".pkl": "a Python pickle", ".pickle": "a Python pickle",
    ".zip": "a zip archive", ".bz2": "a bzip2-compressed file", ".xz": "an xz-compressed file",
    ".zst": "a zstd-compressed file", ".7z": "a 7z archive", ".tar": "a tar archive",
    ".dta": "a Stata file", ".sav": "an SPSS file", ".sas7bdat": "a SAS file",
}

_MAGIC = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office file (an .xls workbook?)"),
    (b"ARROW1", "an Arrow IPC / Feather v2 file"),
    (b"FEA1", "a Feather v1 file"),
    (b"Obj\x01", "an Avro file"),
    (b"ORC", "an ORC file"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x89HDF", "an HDF5 file"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
)


def _unsupported(path: str, what: str) -> InputError:
    return InputError(path, f"is {what}, a format the workbench does not read; it reads JSON lines, "
                            "JSON arrays, CSV, TSV and Parquet (export it as CSV or Parquet)")


def _head(path: str, n: int = 4096) -> bytes:
    """The first ``n`` bytes (decompressed for a gzip file); empty when unreadable (the reader
    then says why)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(n)
            if head[:2] == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    return gz.read(n)
            return head
    except (OSError, EOFError):
        return b""


def _zip_kind(path: str) -> str:
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError):
        return "a zip archive"
    if "header.json" in names or path.endswith(".eval"):
        return "an Inspect .eval log"
    if "xl/workbook.xml" in names or any(n.startswith("xl/") for n in names):
        return "an Excel workbook (.xlsx)"
    if "content.xml" in names and "mimetype" in names:
        return "an OpenDocument file (.ods?)"
    return "a zip archive"


def file_format(path: str, fmt: str = "auto") -> str:
    """The format to read ``path`` as (one of :data:`FORMATS`), or :class:`InputError` naming a
    format the workbench does not read (see the module docstring for the rule)."""
    name = path[:-3] if path.endswith(".gz") else path
    ext = os.path.splitext(name)[1].lower()
    head = _head(path, 4096)
    if head.startswith(b"PK\x03\x04"):
        kind = _zip_kind(path)
        if kind == "an Inspect .eval log":
            raise InputError(path, "is an Inspect .eval log (a zip): read it with --preset inspect")
        raise _unsupported(path, kind)
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise _unsupported(path, what)
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise _unsupported(path, "a Python pickle")
    if fmt in TABULAR_FORMATS:
        return fmt
    tabular = "parquet" if head.startswith(b"PAR1") else _EXTENSIONS.get(ext)
    if fmt != "auto":  # jsonl | json-array picks the JSON layout; a CSV or Parquet file stays one
        return tabular if tabular in TABULAR_FORMATS else fmt
    if tabular is not None:
        return tabular
    if ext in _UNSUPPORTED_EXT:
        raise _unsupported(path, _UNSUPPORTED_EXT[ext])
    return _sniff_text(head)


def _sniff_text(head: bytes) -> str:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if not first or first.lstrip()[:1] in ("{", "["):
        return "jsonl"
    for delim, fmt in (("\t", "tsv"), (",", "csv")):
        try:
            names = next(csv.reader([first], delimiter=delim))
        except (csv.Error, StopIteration):
            continue
        if len(names) >= 2 and all(n.strip() for n in names):
            return fmt
    return "jsonl"


# --------------------------------------------------------------------------- cell typing

_UNSET = object()  # an absent field (an empty cell, a Parquet null)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_NONFINITE = {s + w: float(s + ("inf" if w != "nan" else "nan"))
              for s in ("", "+", "-") for w in ("nan", "inf", "infinity")}
_BOOLS = {"true": True, "false": False}


def _json_cell(text: str) -> Any:
    def constant(name: str) -> float:
        return float(name.replace("Infinity", "inf"))
    return json.loads(text, parse_constant=constant)


def cell_value(cell: str) -> Any:
    """A CSV cell typed by the rule in the module docstring (``_UNSET``: absent)."""
    if not cell:
        return _UNSET
    c = cell[0]
    if (c == "-" or "0" <= c <= "9") and _NUMBER.match(cell):
        if "." in cell or "e" in cell or "E" in cell:
            return float(cell)
        return int(cell)
    if len(cell) <= 9:
        low = cell.lower()
        if low in _NONFINITE:
            return _NONFINITE[low]
        if low in _BOOLS:
            return _BOOLS[low]
    if c in "[{":
        try:
            v = _json_cell(cell)
        except (ValueError, RecursionError):
            return cell
        if isinstance(v, list | dict):
            return v
    return cell


# --------------------------------------------------------------------------- blocks


@dataclass
class Block:
    """Records read: a dict per record (None: blank or malformed), with line numbers."""

    rows: list[dict[str, Any] | None] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    blank: list[bool] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class Result:
    """Filled in once every block has been read: sha256 of the bytes on disk, records read."""

    sha256: str = ""
    records: int = 0


class _Hashing(io.RawIOBase):
    """A binary file read through: sha256 of every byte, and a byte limit (gzip bombs too)."""

    def __init__(self, fh: Any, path: str, limit: int | None,
                 too_big: Callable[[str, int | str, int], InputError] | None, digest: Any):
        self.fh, self.path, self.limit, self.too_big, self.digest = fh, path, limit, too_big, digest
        self.n = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self.fh.read(len(b))
        if self.digest is not None:
            self.digest.update(data)
        self.n += len(data)
        if self.limit is not None and self.n > self.limit and self.too_big is not None:
            raise self.too_big(self.path, f"more than {self.limit}", self.limit)
        b[: len(data)] = data
        return len(data)


_BAD_UTF8 = re.compile("[\udc80-\udcff]")
_field_limit_set = False


def _allow_long_fields() -> None:
    global _field_limit_set
    if not _field_limit_set:
        csv.field_size_limit(max(csv.field_size_limit(), 64 * 1024 * 1024))
        _field_limit_set = True


def _short(text: str, n: int = 40) -> str:
    t = text if len(text) <= n else text[: n - 3] + "..."
    return repr(t.encode("utf-8", "backslashreplace").decode("utf-8"))


def read_csv_blocks(path: str, delimiter: str, result: Result, limit: int | None = None,
                    too_big: Callable[[str, int | str, int], InputError] | None = None,
                    block_records: int | None = None,
                    text_cols: frozenset[str] = frozenset()) -> Iterator[Block]:
    """The records of a CSV (TSV) file, a block at a time (see the module docstring).
    ``result`` gets the file's sha256 and the number of data records once the last block is
    out. Raises :class:`InputError` naming file, line and field for a file that is not CSV."""
    _allow_long_fields()
    block_records = block_records or BLOCK_RECORDS
    digest = hashlib.sha256()
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed in finally)
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        size = os.fstat(raw.fileno()).st_size
        gz = path.endswith(".gz")
        if limit is not None and too_big is not None and not gz and size > limit:
            raise too_big(path, size, limit)
        if limit is not None and too_big is not None and gz:
            from workbench.common.files import gzip_over

            if gzip_over(path, limit):  # every member counted before a record is read
                raise too_big(path, f"more than {limit}", limit)
        if limit is not None:
            from workbench.common.files import check_lines

            check_lines(path, limit)  # lines bound the records: refused before one is read
        hashed = io.BufferedReader(_Hashing(raw, path, None, None, digest), 1 << 20)
        binary: Any = hashed
        if gz:
            binary = io.BufferedReader(_Hashing(gzip.GzipFile(fileobj=hashed), path, limit, too_big, None),
                                       1 << 20)
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline="")
        yield from _csv_records(path, text, delimiter, block_records, result, text_cols)
        while hashed.read(1 << 20):  # the rest of a gzip file's bytes, for the digest
            pass
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from exc
    finally:
        raw.close()
    result.sha256 = digest.hexdigest()


def _csv_error(path: str, exc: csv.Error, start: int, end: int, record: int) -> InputError:
    msg = str(exc)
    if "field larger than field limit" in msg:
        why = "a field longer than 64 MiB (a quote never closed?)"
    elif "unexpected end of data" in msg or "EOF" in msg:
        why = f"a quoted field opened in record {record} is never closed (bad quoting)"
    elif "expected after" in msg:
        why = f"bad quoting in record {record}: {msg} (a quote inside a quoted field must be doubled)"
    else:
        why = f"not readable as CSV in record {record}: {msg}"
    return InputError(path, why + (f" (lines {start}-{end})" if start != end else ""), line=start)


def _quote_field(text: str) -> int | None:
    """The 1-based field where the first bad quote of a record's text sits (best effort)."""
    i, n, k = 0, len(text), 1
    while i < n:
        if text[i] == '"':
            i += 1
            while i < n:
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        i += 2
                        continue
                    break
                i += 1
            if i >= n:
                return k
            i += 1
            if i < n and text[i] not in ",\t\r\n":
                return k
        while i < n and text[i] not in ",\t":
            i += 1
        i += 1
        k += 1
    return None


def _csv_records(path: str, text: Any, delimiter: str, block_records: int, result: Result,
                 text_cols: frozenset[str]) -> Iterator[Block]:
    lines_seen: list[str] = []

    class _Tee:  # the physical lines of the record being read (for error messages only)
        def __iter__(self) -> _Tee:
            return self

        def __next__(self) -> str:
            ln = next(text)
            lines_seen.append(ln)
            return ln

    reader = csv.reader(_Tee(), delimiter=delimiter, strict=True)
    prev = 0
    record = 0

    def next_record() -> list[str] | None:
        nonlocal prev, record
        lines_seen.clear()
        try:
            rec = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            field_no = _quote_field("".join(lines_seen))
            err = _csv_error(path, exc, prev + 1, reader.line_num, record + 1)
            if field_no is not None:
                name = header[field_no - 1] if header and field_no <= len(header) else None
                err = InputError(path, err.reason, line=err.line,
                                 field=name or f"#{field_no}")
            raise err from exc
        record += 1
        return rec

    header: list[str] = []
    try:
        first = next_record()
    except UnicodeDecodeError as exc:  # not reachable with surrogateescape; kept for safety
        raise InputError(path, f"not valid UTF-8 (byte {exc.start})") from exc
    if first is None:
        raise InputError(path, "file is empty")
    prev = reader.line_num
    header = [h.strip() for h in first]
    if not any(header):
        raise InputError(path, "the first line (the CSV header) is empty: the header names the columns",
                         line=1)
    seen: dict[str, int] = {}
    for i, h in enumerate(header, start=1):
        if _BAD_UTF8.search(h):
            raise InputError(path, f"header field {i} is not valid UTF-8", line=1)
        if h and h in seen:
            raise InputError(path, f"the header names column '{h}' twice (fields {seen[h]} and {i})", line=1)
        seen.setdefault(h, i)
    ncols = len(header)
    cols = [(i, h) for i, h in enumerate(header) if h]
    typed = [(i, h, h not in text_cols) for i, h in cols]
    block = Block()
    n = 0
    while True:
        rec = next_record()
        if rec is None:
            break
        start, end = prev + 1, reader.line_num
        prev = end
        line = record  # header = record 1
        n += 1
        if not rec or (len(rec) == 1 and not rec[0].strip()):
            block.rows.append(None)
            block.blank.append(True)
        elif len(rec) != ncols:
            where = f" (lines {start}-{end})" if end != start else ""
            if len(rec) < ncols:
                raise InputError(path, f"record {line}{where} has {len(rec)} fields, the header has {ncols} "
                                 f"(ragged: this and the following fields are missing)", line=start,
                                 field=header[len(rec)] or f"#{len(rec) + 1}")
            raise InputError(path, f"record {line}{where} has {len(rec)} fields, the header has {ncols} "
                             f"(ragged: field {ncols + 1} = {_short(rec[ncols])} has no column; "
                             "a comma inside a value must be quoted)", line=start, field=f"#{ncols + 1}")
        else:
            row = {}
            for i, h, t in typed:
                cell = rec[i]
                if cell:
                    v = cell_value(cell) if t else cell
                    if v is not _UNSET:
                        row[h] = v
            bad = next((h for i, h in cols if _BAD_UTF8.search(rec[i])), None) \
                if _BAD_UTF8.search("".join(rec)) else None
            if bad is not None:
                block.errors[len(block.rows)] = f"not valid UTF-8 (field '{bad}')"
                block.rows.append(None)
            else:
                block.rows.append(row)
            block.blank.append(False)
        block.lines.append(line)
        if len(block) >= block_records:
            yield block
            block = Block()
    if n == 0:
        raise InputError(path, f"holds only a CSV header ({ncols} columns) and no record")
    result.records = n
    if len(block):
        yield block


# --------------------------------------------------------------------------- Parquet


def _plain(v: Any) -> Any:
    """A Parquet value as JSON would hold it (see the module docstring); nulls kept inside."""
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # a map column
            return {str(k): _plain(x) for k, x in v}
        return [_plain(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, datetime.datetime | datetime.date | datetime.time):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="surrogateescape")
    return str(v)


def _is_string(t: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_string(t) or pa.types.is_large_string(t)
            or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)))


def _simple(t: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)
            or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)))


def read_parquet_blocks(path: str, columns: list[str], result: Result, limit: int | None = None,
                        too_big: Callable[[str, int | str, int], InputError] | None = None,
                        block_records: int | None = None,
                        text_cols: frozenset[str] = frozenset()) -> Iterator[Block]:
    """The rows of a Parquet file, a batch at a time, only the top-level ``columns`` the config
    reads (those the file has). ``result`` gets the sha256 and the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    block_records = block_records or BLOCK_RECORDS
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    if limit is not None and too_big is not None and size > limit:
        raise too_big(path, size, limit)
    try:
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, f"not a readable Parquet file: {_arrow_msg(exc)}") from exc
    n_rows = pf.metadata.num_rows
    if n_rows == 0:
        raise InputError(path, "Parquet file holds no row")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise InputError(path, f"Parquet file has two columns named '{dupes[0]}'")
    want = [c for c in names if c in set(columns)]
    simple = {c: _simple(pf.schema_arrow.field(c).type) for c in want}
    # a string column is text cells, typed as CSV cells are, unless it is read as text only
    cells = {c for c in want if _is_string(pf.schema_arrow.field(c).type) and c not in text_cols}
    line = 1
    try:
        if not want:  # nothing the config reads: every row an empty record
            while line <= n_rows:
                k = min(block_records, n_rows - line + 1)
                yield Block(rows=[{} for _ in range(k)], lines=list(range(line, line + k)), blank=[False] * k)
                line += k
        else:
            for batch in pf.iter_batches(batch_size=block_records, columns=want, use_threads=False):
                cols = {c: batch.column(c).to_pylist() for c in want}
                k = batch.num_rows
                rows: list[dict[str, Any] | None] = [{} for _ in range(k)]
                for c, vals in cols.items():
                    plain = simple[c]
                    if c in cells:
                        for r, v in zip(rows, vals, strict=True):
                            if v:
                                r[c] = cell_value(v)  # type: ignore[index]
                        continue
                    for r, v in zip(rows, vals, strict=True):
                        if v is not None:
                            r[c] = v if plain else _plain(v)  # type: ignore[index]
                block = Block(rows=rows, lines=list(range(line, line + k)), blank=[False] * k)
                for i, r in enumerate(rows):
                    bad = next((c for c, v in (r or {}).items() if isinstance(v, str) and _BAD_UTF8.search(v)), None)
                    if bad is not None:
                        rows[i] = None
                        block.errors[i] = f"not valid UTF-8 (field '{bad}')"
                line += k
                yield block
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, f"Parquet file cannot be decoded from row {line} on: {_arrow_msg(exc)}",
                         line=line) from exc
    result.records = line - 1
    result.sha256 = sha256_file(path)


def _arrow_msg(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


def sha256_file(path: str) -> str:
    """sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    return h.hexdigest()


def blocks(path: str, fmt: str, columns: list[str], result: Result, limit: int | None = None,
           too_big: Callable[[str, int | str, int], InputError] | None = None,
           block_records: int | None = None,
           text_cols: frozenset[str] = frozenset()) -> Iterator[Block]:
    """The blocks of a CSV, TSV or Parquet file (``fmt``), see the readers above."""
    if fmt == "parquet":
        return read_parquet_blocks(path, columns, result, limit, too_big, block_records, text_cols)
    return read_csv_blocks(path, "\t" if fmt == "tsv" else ",", result, limit, too_big, block_records,
                           text_cols)


def text_columns(cfg: Any) -> frozenset[str]:
    """Top-level columns the config reads only as text (key fields, ``verdict``,
    ``extra_fields``, ``cluster``, each a one-name path): their cells are kept as written."""
    from workbench.common.config import KEY_FIELDS

    text: set[str] = set()
    typed: set[str] = set()
    for k in KEY_FIELDS:
        for p in cfg.keys[k] or ():
            (text if len(p) == 1 else typed).add(str(p[0]))
    for p in [cfg.verdict, *cfg.extra_fields.values()]:
        if p is not None:
            (text if len(p) == 1 else typed).add(str(p[0]))
    for p in [*(q for _, q in cfg.scores), cfg.flags, cfg.pass_field]:
        if p is not None:
            typed.add(str(p[0]))
    return frozenset(text - typed)


def first_row(path: str, fmt: str) -> dict[str, Any] | None:
    """The first non-blank record of a CSV/TSV/Parquet file as a dict (for ``--preset auto``),
    every column kept; raises :class:`InputError` when the file is not readable."""
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=16):
                for r in batch.to_pylist():
                    return {k: _plain(v) for k, v in r.items() if v is not None}
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(path, f"not a readable Parquet file: {_arrow_msg(exc)}") from exc
        return None
    from workbench.common.files import max_input_bytes
    from workbench.common.files import too_big as _too_big

    # the input-size limit here too: a gzip bomb is refused before the look, not read through
    gen = read_csv_blocks(path, "\t" if fmt == "tsv" else ",", Result(), block_records=64,
                          limit=max_input_bytes(), too_big=_too_big)
    try:
        for block in gen:
            for r in block.rows:
                if r is not None:
                    return r
    finally:
        gen.close()
    return None


codecs.lookup("utf-8-sig")  # imported eagerly: a worker thread need not import it mid-read
