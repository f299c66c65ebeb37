"""The columnar JSONL reader: lines decoded and their fields extracted by DuckDB's JSON functions.

A file is streamed in blocks of :data:`BLOCK_BYTES` (decompressed); each block of whole lines
becomes one zero-copy Arrow ``large_string`` array (the line offsets found with numpy over the
block's bytes, handed over in record batches of :data:`BATCH_LINES` lines) that DuckDB
scans with its own threads (:data:`IN_FLIGHT` blocks at once, each on a thread of its own):
``json_valid`` and the first byte (``{``)
classify the line, and one ``json_extract`` of every configured path (one parse) gives each
value's JSON text, from which numpy reads its type (as ``json_type`` names it), string
(unescaped) and number (:func:`_decode_texts`); the per-line
columns of :func:`workbench.ingest.reader._extract` (``NAME__kind/__num/__str``, key strings, flags,
verdict, ``pass_value``, extras, ``__problem``) are built from typed DuckDB columns, so
classification and repeat marking in :mod:`workbench.ingest.reader` are unchanged. Peak memory is the
row table plus about one block.

DuckDB's JSON reader is more lenient than Python's in places, and Python's reading is the
ledger's definition. Every line where the two could differ goes, alone, to the per-line Python
decoder (:func:`workbench.ingest.reader._slow_decode` and the duplicate-key check), and only those:

* not valid UTF-8 (checked here with Python's decoder, byte exact), or longer than
  ``MAX_LINE_BYTES``: handed to DuckDB as null;
* anything ``json_valid`` rejects, or whose first byte is not ``{`` (the top level is not an
  object, or whitespace comes first; Python names the reason);
* a bare ``nan``/``inf``/``infinity`` in any letter case after ``:``, ``,`` or ``[`` (DuckDB
  reads them; Python reads only ``NaN``/``Infinity``/``-Infinity``, as ``invalid_number``) and
  a comma before ``]`` or ``}`` (DuckDB allows trailing commas, Python does not); matched by
  a regular expression in the query (:data:`SUSPECT_RE`, on DuckDB's threads), as is the next;
* a ``\\uD800``-``\\uDFFF`` escape (a lone surrogate is malformed in Python's reading) and
  ``\\u0000`` (a NUL inside a string);
* 256 or more opening brackets in a line of 512 bytes or more (Python's decoder stops at its
  recursion limit: "nested too deeply"; DuckDB has no such limit; a shorter line that DuckDB
  reads cannot be nested that deep), counted with numpy (:func:`scan`);
* a configured key's quoted text occurring twice in the line (:func:`repeated_keys`: every
  key's occurrences counted per line at once by polars' regex, against the keys present in
  the line; or a ``bytes.count`` over the block first, per line only when it exceeds the lines
  holding the key): a duplicated key, where DuckDB keeps the first value and Python the last, and the workbench
  rejects the line; Python applies the rule. On a line with a backslash (a key may be spelled
  with escapes), a repeated key in any object on a configured path (``json_keys``);
* a value that Python shows as JSON text (a rubric value that is an array or object, a
  non-string flag, a verdict or extra field that is not a string), a rubric number at or past
  2**63 (an integer beyond 64 bits stays exact in Python), or a key that is a float (or an
  integer beyond 64 bits, which DuckDB reads as a float).

A configured field name with a quote, backslash or control character (not spelled in a JSON
path here) sends the whole file to the Python path, as do blocks of fewer than
:data:`ENGINE_MIN_LINES` lines. The rows are the same either way; tests/test_engine_identity.py
checks the engine against a plain per-line reader on every hazard file, the example, the real
logs, generated files and hypothesis-made lines.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from workbench.common.config import KEY_FIELDS, Config, FieldPath
from workbench.common.errors import InputError
from workbench.common.files import check_lines, gzip_isize, gzip_over, path_match, path_regex_groups
from workbench.common.text import composite_key  # noqa: F401 - re-exported: the key spelling lives in text

BLOCK_BYTES = 16 * 1024 * 1024
"""Decompressed bytes read at a time; a block's lines are decoded together. 16 MB, not 32:
with two blocks in flight the read's working set is about 6 x the block (measured at 1M
generated rows: 0.63 GB of anonymous memory at 32 MB, 0.42 GB at 16 MB, 0.38 GB at 8 MB),
and 16 MB was no slower (ingest 5.1 s wall, 8.0-8.3 s CPU, against 5.5 s and 8.3-8.6 s; 8 MB
took 6.3 s and 9.9 s)."""

IN_FLIGHT = 2
"""Blocks of a file processed at once, each on its own thread and DuckDB cursor: one block's
query (DuckDB's threads, the GIL released) and polars/numpy work run beside the other's
Python-level steps. Frames are kept in file order, whatever order the blocks finish in."""

BATCH_LINES = 8192
"""Lines per Arrow record batch handed to DuckDB (its threads take a batch each)."""

ENGINE_MIN_LINES = 2000
"""A block with fewer lines is read line by line in Python (the engine's fallback for every
line): DuckDB's fixed cost per query (about 0.1 s) is more than those lines take. The rows
are the same either way (tests/test_engine_identity.py sets it to 0)."""

_PY_WS = np.zeros(256, dtype=bool)  # what bytes.strip() strips: a line of only these is blank
_PY_WS[[0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C]] = True
_DEEP = 256
_SAFE_NAME = re.compile(r'^[^"\\\x00-\x1f]*$')
# JSON types as DuckDB's json_type names them, as small codes (absent: no value at the path)
_ABSENT_T, _NULL_T, _STR_T, _BOOL_T, _INT_T, _UINT_T, _DOUBLE_T, _ARRAY_T, _OBJECT_T = range(9)
_NUM_TYPES = (_INT_T, _UINT_T, _DOUBLE_T)
_INT_TYPES = (_INT_T, _UINT_T)
_BIG = 2.0 ** 63


class Unsupported(Exception):
    """The configuration names a path the engine does not spell (read per line instead)."""


def _jsonpath(p: FieldPath) -> str:
    out = "$"
    for tok in p:
        if isinstance(tok, int):
            out += f"[{tok}]" if tok >= 0 else f"[#{tok}]"
        else:
            if not _SAFE_NAME.match(tok):
                raise Unsupported(tok)
            out += f'."{tok}"'
    return out


_AFTER_STRING = {bytes([c]) for c in b' \t\n\r:,]}'}
"""What may follow a string's closing quote in JSON (whitespace, or ``:`` ``,`` ``]`` ``}``)."""
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def _regex_literal(text: str) -> str:
    """``text`` as a literal in a Rust regex (polars): its metacharacters escaped."""
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class Plan:
    """The SQL for one configuration: which paths are read, and how."""

    def __init__(self, cfg: Config, key_tokens: list[tuple[bytes, list[FieldPath]]]):
        paths: list[FieldPath] = []
        for k in KEY_FIELDS:
            if k in cfg.constants:
                continue
            paths.extend(cfg.keys[k] or ())
        paths.extend(p for _, p in cfg.scores)
        paths.extend(p for p in (cfg.flags, cfg.verdict, cfg.pass_field) if p is not None)
        paths.extend(cfg.extra_fields.values())
        self.paths: list[FieldPath] = []
        for p in paths:
            if tuple(p) not in self.paths:
                self.paths.append(tuple(p))
        self.index = {p: j for j, p in enumerate(self.paths)}
        # the typed columns each path needs (_per_path): a number for a rubric field, an
        # integer's text for a key, a boolean for a rubric field or the pass field
        self.numbers = {self.index[tuple(p)] for _, p in cfg.scores}
        self.integers = {self.index[tuple(p)] for k in KEY_FIELDS if k not in cfg.constants
                         for p in (cfg.keys[k] or ())}
        self.booleans = self.numbers | ({self.index[tuple(cfg.pass_field)]} if cfg.pass_field is not None else set())
        self.tokens = [t for t, _ in key_tokens]
        # every key token at once, as a regex of literals (None: a key name that could match
        # from a string's closing quote, or none at all: counted token by token)
        self.token_regex: str | None = None
        if self.tokens and all(len(t) == 2 or t[1:2] not in _AFTER_STRING for t in self.tokens):
            self.token_regex = "|".join(_regex_literal(t.decode("utf-8")) for t in self.tokens)
        # each key token with the type columns of the paths ending in it (presence counts)
        extra: list[FieldPath] = []
        self.token_paths: list[tuple[bytes, list[str]]] = []
        for tok, prefixes in key_tokens:
            names = []
            for pre in prefixes:
                pre = tuple(pre)
                if pre in self.index:
                    names.append(f"t{self.index[pre]}")
                else:
                    if pre not in extra:
                        extra.append(pre)
                    names.append(f"q{extra.index(pre)}")
            self.token_paths.append((tok, names))
        jp = [_jsonpath(p) for p in self.paths]
        jq = [_jsonpath(p) for p in extra]
        # objects on a configured path: where a key could be repeated under an escaped spelling
        objects: list[str] = []
        for p in self.paths:
            for i, tok in enumerate(p):
                if isinstance(tok, str):
                    o = _jsonpath(p[:i])
                    if o not in objects:
                        objects.append(o)
        dup_escaped = " AND ".join(
            f"coalesce(len(json_keys(line, {_sql_str(o)})) = len(list_distinct(json_keys(line, {_sql_str(o)}))), true)"
            for o in objects) or "true"
        texts = "[" + ", ".join(_sql_str(x) for x in [*jp, *jq]) + "]"
        flags = ""
        if cfg.flags is not None:
            j = self.index[tuple(cfg.flags)]
            s = f"J[{j + 1}]"
            arr = f"starts_with({s}, '[')"
            flags = (f", CASE WHEN {arr} THEN list_has_all(['VARCHAR'], json_type({s}, '$[*]')) END AS la"
                     f", CASE WHEN {arr} THEN json_extract_string({s}, '$[*]') END AS l")
        # one parse for the JSON text of every path (as DuckDB writes it; its type, string and
        # number are read from that text in _per_path); lines DuckDB cannot read, or whose
        # first byte is not "{" (the root is not an object, or whitespace comes before it),
        # are not returned
        self.n = len(jp)
        self.extra = len(jq)
        self.sql = (
            f"SELECT i, nodup, J{flags} FROM ("
            f" SELECT i, json_extract(line, {texts}) AS J,"
            f"  CASE WHEN contains(line, chr(92)) THEN {dup_escaped} ELSE true END AS nodup FROM lines"
            f"  WHERE line IS NOT NULL AND starts_with(line, '{{') AND json_valid(line)"
            f"  AND NOT ({' OR '.join(f'regexp_matches(line, {_sql_str(r)})' for r in SUSPECT_PARTS)}))")




def repeated_tokens(lines: Lines, tokens: list[bytes]) -> np.ndarray:
    """Lines where a configured key's quoted text occurs more than once (as ``bytes.count``
    in :func:`workbench.ingest.reader._python_line` would say; overlapping occurrences count too),
    found with numpy over the block: the 8 bytes at each quote compared with each token's."""
    arr = np.frombuffer(lines.buf, dtype=np.uint8)
    size = len(arr)
    out = np.zeros(len(lines), dtype=bool)
    if size < 8 or not tokens:
        for i in range(len(lines)):
            out[i] = any(lines.line(i).count(t) > 1 for t in tokens)
        return out
    quotes = np.flatnonzero(arr == ord('"'))
    tail = quotes[quotes > size - 8]
    quotes = quotes[quotes <= size - 8]
    # the 8 bytes starting at every byte offset, as one little-endian integer (a strided view)
    windows = np.ndarray(shape=(size - 7,), dtype="<u8", buffer=lines.buf, offset=0, strides=(1,))
    heads = windows[quotes]
    for tok in tokens:
        head = tok[:8]
        mask = np.uint64((1 << (8 * len(head))) - 1)
        value = np.uint64(int.from_bytes(head, "little"))
        cand = quotes[(heads & mask) == value]
        cand = cand[cand + len(tok) <= size]
        for i, ch in enumerate(tok[8:], 8):
            cand = cand[arr[cand + i] == ch]
        extra = [int(p) for p in tail.tolist() if lines.buf[p:p + len(tok)] == tok]
        if extra:
            cand = np.concatenate([cand, np.asarray(extra, dtype=np.int64)])
        if len(cand) > 1:
            out |= np.bincount(_line_of(lines, cand), minlength=len(lines)) > 1
    return out


def _repeated_keys_counted(lines: Lines, plan: Plan, res: pl.DataFrame) -> np.ndarray:
    """:func:`repeated_tokens` for the lines DuckDB read (``res``, with the type columns),
    with a shortcut per token: a key's quoted text is in every line that holds it unescaped,
    so when ``bytes.count`` over the block, less its count in the other lines (those not in
    ``res`` or with a backslash, counted line by line), equals the number of those lines where
    the key's path is present, no line has it twice. Only the tokens where the counts differ
    (or that end more than one path) are looked for line by line, with numpy."""
    n = len(lines)
    out = np.zeros(n, dtype=bool)
    ids = res["i"].to_numpy()
    exact = np.zeros(n, dtype=bool)
    exact[ids] = True
    if lines.buf.find(b"\\") >= 0:  # memchr; a 32 MB comparison and its fresh pages when not
        arr = np.frombuffer(lines.buf, dtype=np.uint8)
        exact[np.unique(_line_of(lines, np.flatnonzero(arr == 0x5C)))] = False
    other = np.flatnonzero(~exact)
    if len(other) > max(64, n // 50):
        return repeated_tokens(lines, plan.tokens)
    in_res = np.zeros(n, dtype=bool)
    in_res[ids] = True
    other_lines = [lines.line(i) for i in other.tolist()]
    exact_rows = exact[ids]
    slow: list[bytes] = []
    for tok, names in plan.token_paths:
        if len(names) != 1:
            slow.append(tok)
            continue
        elsewhere = 0
        for i, text in zip(other.tolist(), other_lines, strict=True):
            c = text.count(tok)
            elsewhere += c
            if c > 1 and in_res[i]:
                out[i] = True
        present = int(((res[names[0]].to_numpy() != _ABSENT_T) & exact_rows).sum())
        if lines.buf.count(tok) - elsewhere != present:
            slow.append(tok)
    if slow:
        out |= repeated_tokens(lines, slow)
    return out


def repeated_keys(lines: Lines, plan: Plan, res: pl.DataFrame, text: pl.Series | None = None) -> np.ndarray:
    """Lines of ``res`` (the lines DuckDB read, with the type columns) where a configured key's
    quoted text may occur more than once: every line where ``bytes.count`` in
    :func:`workbench.ingest.reader._python_line` would say so (a line flagged here is read by
    Python, which decides; so more lines may be flagged, never fewer).

    With the block's lines as text (``text``, null where not valid UTF-8) and key names that
    cannot start right after a string (:attr:`Plan.token_regex`): one count per line of every
    key token at once (polars' regex, a literal alternation, GIL released). In a line DuckDB
    read as JSON with no backslash every quote opens or closes a string, and a token can only
    match at an opening one (after a closing quote JSON allows only whitespace or ``:,]}``, which
    no key name here starts with), so the count is the number of strings in the line equal to a
    key name; each key whose path is present in the line is one of them, so when the count is
    not above the number of present keys no key occurs twice. Lines with a backslash are
    counted key by key with ``bytes.count``. Otherwise :func:`_repeated_keys_counted`."""
    if plan.token_regex is None or text is None:
        return _repeated_keys_counted(lines, plan, res)
    n = len(lines)
    out = np.zeros(n, dtype=bool)
    if not res.height:
        return out
    ids = res["i"].to_numpy()
    present = res.select(pl.sum_horizontal([pl.any_horizontal([pl.col(c) != _ABSENT_T for c in names])
                                            for _, names in plan.token_paths]).alias("p"))["p"].to_numpy()
    counts = text.gather(res["i"]).str.count_matches(plan.token_regex).to_numpy()
    out[ids[counts > present]] = True
    if lines.buf.find(b"\\") >= 0:  # memchr; a 32 MB comparison and its fresh pages when not
        arr = np.frombuffer(lines.buf, dtype=np.uint8)
        escaped = np.zeros(n, dtype=bool)
        escaped[np.unique(_line_of(lines, byte_positions(arr, 0x5C)))] = True
        for i in ids[escaped[ids]].tolist():
            line = lines.line(i)
            out[i] = any(line.count(t) > 1 for t in plan.tokens)
    return out


def _line_of(lines: Lines, pos: np.ndarray) -> np.ndarray:
    return np.searchsorted(lines.starts, pos, side="right") - 1


SUSPECT_PARTS = (
    r",[ \t\n\r]*(?:[\]}]|-?(?i:nan|inf))",  # a trailing comma (, before ] or }), or a bare
    r":[ \t\n\r]*-?(?i:nan|inf)",  # nan/inf (any case) after , : or [
    r"\[[ \t\n\r]*-?(?i:nan|inf)",
    r"\\u(?:[dD][89a-fA-F]|0000)",  # \uD800-\uDFFF (a lone surrogate) and \u0000
)
SUSPECT_RE = "|".join(SUSPECT_PARTS)
"""Lines DuckDB could read otherwise than Python, matched by DuckDB (RE2) in the engine's
query, so the test runs on DuckDB's threads: a line it matches is not returned, and so read
by Python. The same tests over the block's bytes with numpy and ``bytes.find`` cost 0.18 s
of CPU per 32 MB block on one thread, this 0.15 s on two (measured); the match is exact where
the byte scan took a long run of whitespace as suspect, and both ignore whether the text is
inside a string (a line is flagged in either case). The query tests :data:`SUSPECT_PARTS`, each
starting with one literal byte (``,`` ``:`` ``[`` ``\\``), which RE2 finds with ``memchr``: the
one expression, starting with any of four bytes, ran its automaton over every byte (0.14 s
of CPU per 32 MB block; the four 0.10 s, measured); together they match the same lines."""


def scan(lines: Lines) -> np.ndarray:
    """Lines nested 256 or more brackets deep (Python's decoder stops at its recursion limit;
    DuckDB has none), counted over the block's bytes with numpy; a line flagged here is read
    by Python. The other tests of the module doc are :data:`SUSPECT_RE`, in the query."""
    buf = lines.buf
    arr = np.frombuffer(buf, dtype=np.uint8)
    size = len(arr)
    out = np.zeros(len(lines), dtype=bool)
    if not size or not len(lines):
        return out
    # deeply nested: Python stops at its recursion limit. A line DuckDB reads as JSON that is
    # nested _DEEP deep holds _DEEP opening and _DEEP closing brackets, so it is at least
    # 2 * _DEEP bytes long; a shorter one is never that deep (brackets inside its strings are
    # no nesting), and one that is not JSON goes to Python anyway: no need to count
    if ((lines.ends - lines.starts) >= 2 * _DEEP).any():
        opening = np.flatnonzero((arr | 0x20) == ord("{"))  # { and [
        if len(opening) >= _DEEP:
            out |= np.bincount(_line_of(lines, opening), minlength=len(lines)) >= _DEEP
    return out


# --------------------------------------------------------------------------- reading


class _HashingReader:
    """A file object that hashes what is read through it (the compressed bytes of a .gz)."""

    def __init__(self, fh: Any):
        self.fh = fh
        self.h = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        b = self.fh.read(n)
        self.h.update(b)
        return b

    def readable(self) -> bool:
        return True

    def drain(self) -> None:
        while self.read(1 << 20):
            pass


RESERVE = 1 << 16
"""Free bytes in front of each block from :func:`blocks`: the previous block's unfinished line
is put there (and the front cut off, which a bytearray does without moving its bytes), so a
block is read into memory once. The two copies this replaced (``carry + block`` and the block
cut at its last newline) were 64 MB of fresh pages per 32 MB block: 1M lines, 0.4 s of system
CPU (page faults) of 4 s (measured with ``ru_minflt``)."""


def blocks(path: str, limit: int, too_big: Callable[[str, int | str, int], InputError],
           digest: list[str]) -> Iterator[bytearray]:
    """The decompressed bytes of ``path`` in blocks, each a bytearray holding its bytes from
    offset :data:`RESERVE` on; ``digest`` gets the sha256 of the bytes on disk once the file
    is read. Same limits and messages as reading the file at once."""
    gz = path.endswith(".gz")
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    with fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size > limit and not gz:
                raise too_big(path, size, limit)
            if not gz:
                check_lines(path, limit)  # before a row is read: each line is a row
                h = hashlib.sha256()
                while True:
                    ba = bytearray(RESERVE + BLOCK_BYTES)
                    got = fh.readinto(memoryview(ba)[RESERVE:])  # whole blocks but the last
                    if not got:
                        break
                    del ba[RESERVE + got:]
                    h.update(memoryview(ba)[RESERVE:])
                    yield ba
                digest.append(h.hexdigest())
                return
            isize = gzip_isize(fh, size)  # size mod 2**32 of the last member: a quick first no
            if isize is not None and isize > limit:
                raise too_big(path, f"about {isize}", limit)
            if gzip_over(path, limit):  # every member counted before a row is read
                raise too_big(path, f"more than {limit}", limit)
            check_lines(path, limit)  # the same count's line feeds (no second pass)
            fh.seek(0)
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
        raw = _HashingReader(fh)
        total = 0
        try:
            with gzip.GzipFile(fileobj=raw) as gzf:  # type: ignore[arg-type]
                while True:
                    try:
                        b = gzf.read(min(BLOCK_BYTES, limit + 1 - total))
                    except (OSError, EOFError, gzip.BadGzipFile) as exc:
                        raise InputError(path, f"not a readable gzip file: {exc}") from exc
                    if not b:
                        break
                    total += len(b)
                    if total > limit:
                        raise too_big(path, f"more than {limit}", limit)
                    ba = bytearray(RESERVE + len(b))
                    ba[RESERVE:] = b
                    del b
                    yield ba
                    if total == limit:  # one byte more says whether it is over
                        try:
                            more = gzf.read(1)
                        except (OSError, EOFError, gzip.BadGzipFile) as exc:
                            raise InputError(path, f"not a readable gzip file: {exc}") from exc
                        if more:
                            raise too_big(path, f"more than {limit}", limit)
                        break
            raw.drain()
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
        digest.append(raw.h.hexdigest())


def _bad_utf8(buf: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Indices of the lines that are not valid UTF-8 (as ``bytes.decode`` says)."""
    if buf.isascii():
        return np.zeros(0, dtype=np.int64)
    try:
        codecs.utf_8_decode(buf, "strict", True)
        return np.zeros(0, dtype=np.int64)
    except UnicodeDecodeError:
        pass
    bad = []
    mv = memoryview(buf)
    for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        seg = mv[a:b]
        if seg.nbytes and not bytes(seg).isascii():
            try:
                codecs.utf_8_decode(seg, "strict", True)
            except UnicodeDecodeError:
                bad.append(i)
    return np.asarray(bad, dtype=np.int64)


def byte_positions(arr: np.ndarray, byte: int, step: int = 1 << 20) -> np.ndarray:
    """``np.flatnonzero(arr == byte)`` a megabyte at a time: the comparison's temporary is
    reused, where one of the whole block was 32 MB of fresh pages (page faults) per call."""
    if len(arr) <= step:
        return np.flatnonzero(arr == byte)
    parts = [np.flatnonzero(arr[a:a + step] == byte) + a for a in range(0, len(arr), step)]
    return np.concatenate(parts)


class Lines:
    """The complete lines of one block: offsets into ``buf`` (``ends`` without ``\\r\\n``)."""

    def __init__(self, buf: bytes | bytearray, start: int):
        arr = np.frombuffer(buf, dtype=np.uint8)
        nl = byte_positions(arr, 10)
        starts = np.concatenate([np.asarray([start], dtype=np.int64), nl.astype(np.int64) + 1])
        ends = np.concatenate([nl.astype(np.int64), np.asarray([len(buf)], dtype=np.int64)])
        if starts[-1] >= len(buf):  # nothing after the last newline
            starts, ends = starts[:-1], ends[:-1]
        if len(ends):
            has = ends > starts
            cr = np.zeros(len(ends), dtype=bool)
            cr[has] = arr[ends[has] - 1] == 13
            ends = ends - cr
        self.buf = buf
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, i: int) -> bytes:
        return bytes(memoryview(self.buf)[int(self.starts[i]):int(self.ends[i])])


def _arrow_lines(lines: Lines, null: np.ndarray) -> pa.Table:
    """The block's lines as a large_string column without copying the bytes: line i spans
    ``starts[i]`` to ``starts[i + 1]`` (its ``\\r\\n`` included: JSON whitespace)."""
    n = len(lines)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[:n] = lines.starts
    offsets[n] = len(lines.buf)
    nulls = int(null.sum())
    validity = pa.py_buffer(np.packbits(~null, bitorder="little")) if nulls else None
    arr = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(lines.buf), validity, nulls)
    # from buffers: pa.array of a numpy array imports pandas on first use (0.4 s of CPU)
    ids = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.arange(n, dtype=np.int64))])
    return pa.Table.from_arrays([ids, arr], names=["i", "line"])


# --------------------------------------------------------------------------- columns


def _path_text(p: FieldPath) -> str:
    return "".join(f"[{t}]" if isinstance(t, int) else (f".{t}" if i else t) for i, t in enumerate(p))


_KEY_TYPE_PROBLEM = {
    _BOOL_T: "is a bool, not a string or integer",
    _ARRAY_T: "is a list, not a string or integer",
    _OBJECT_T: "is a dict, not a string or integer",
    _NULL_T: "is null",
}


def path_groups(cfg: Config, path: str) -> tuple[dict[str, str], list[str]]:
    """(groups read from the path, groups that are null columns); raises as ``_extract`` does."""
    if not cfg.path_fields:
        return {}, []
    groups = path_match(cfg.path_fields, Path(path).resolve().as_posix())
    if groups is None:
        names = path_regex_groups(cfg.path_fields)
        if set(names) & set(KEY_FIELDS):
            raise InputError(path, f"file path does not match path_fields regex {cfg.path_fields!r}"
                             f" (it gives {', '.join(sorted(set(names) & set(KEY_FIELDS)))})")
        return {}, list(names)
    return {k: v for k, v in groups.items() if v is not None}, []


def _composite(parts: list[pl.Series]) -> pl.Series:
    df = pl.DataFrame({f"p{i}": s for i, s in enumerate(parts)})
    joined = df.select(pl.concat_str([pl.col(c) for c in df.columns], separator=":").alias("k"))["k"]
    special = df.select(pl.any_horizontal([pl.col(c).str.contains(r"[:\[]") for c in df.columns])
                        .fill_null(False).alias("m"))["m"]
    if not special.any():
        return joined
    idx = special.arg_true().to_list()
    rows = df[idx].rows()
    fixed = [composite_key(list(r)) for r in rows]
    out = joined.to_list()
    for i, v in zip(idx, fixed, strict=True):
        out[i] = v
    return pl.Series("k", out, dtype=pl.String)


def fast_columns(res: pl.DataFrame, plan: Plan, cfg: Config, groups: dict[str, str],
                 null_groups: list[str]) -> dict[str, pl.Series]:
    """The columns :func:`workbench.ingest.reader._extract` gives, for the lines DuckDB read (``res``)."""
    n = res.height
    cols: dict[str, pl.Series] = {}
    problem_exprs: list[pl.Expr] = []
    for g in null_groups:
        cols[f"path_{g}"] = pl.repeat(None, n, dtype=pl.String, eager=True)
    for k in KEY_FIELDS:
        if k in cfg.constants:
            cols[k] = pl.repeat(cfg.constants[k], n, dtype=pl.String, eager=True)
            continue
        if k in groups:
            cols[k] = pl.repeat(groups[k], n, dtype=pl.String, eager=True)
            continue
        spec_paths = cfg.keys[k]
        if spec_paths is None:
            cols[k] = pl.repeat("1" if k == "trial" else "", n, dtype=pl.String, eager=True)
            continue
        parts = []
        number = pl.lit(False)
        for p in spec_paths:
            j = plan.index[tuple(p)]
            t, s, iv = pl.col(f"t{j}"), pl.col(f"s{j}"), pl.col(f"i{j}")
            uniq = res[f"s{j}"].drop_nulls().unique().to_list()
            empty = [u for u in uniq if not u.strip()]  # Python's strip: any Unicode space
            label = _path_text(p)
            label = "" if label == k else f" ({label})"
            prob = (pl.when(t == _ABSENT_T).then(pl.lit("is missing"))
                    .when(t == _STR_T).then(pl.when(s.is_in(empty)).then(pl.lit("is an empty string")))
                    .when(t.is_in(_INT_TYPES)).then(pl.lit(None, dtype=pl.String))
                    .otherwise(t.replace_strict(_KEY_TYPE_PROBLEM, default=None, return_dtype=pl.String)))
            problem_exprs.append(pl.when(prob.is_not_null()).then(
                pl.concat_str(pl.lit(f"key field '{k}'{label} "), prob)))
            value = pl.when(prob.is_null()).then(pl.coalesce(s, iv))
            parts.append(res.select(value.alias("v"))["v"])
            number = number | t.is_in(_INT_TYPES)
        cols[k] = parts[0] if len(parts) == 1 else _composite(parts)
        cols[f"__num_{k}"] = res.select(number.alias("x"))["x"]
    for g, v in groups.items():
        if g not in KEY_FIELDS:
            cols[f"path_{g}"] = pl.repeat(v, n, dtype=pl.String, eager=True)
    exprs: dict[str, pl.Expr] = {}
    for name, p in cfg.scores:
        j = plan.index[tuple(p)]
        t = pl.col(f"t{j}")
        exprs[f"{name}__kind"] = (pl.when(t == _ABSENT_T).then(0).when(t == _NULL_T).then(1)
                                  .when(t.is_in(_NUM_TYPES)).then(2).when(t == _STR_T).then(3)
                                  .when(t == _BOOL_T).then(4).otherwise(5).cast(pl.Int8))
        exprs[f"{name}__num"] = pl.col(f"n{j}")
        exprs[f"{name}__str"] = pl.coalesce(
            pl.col(f"s{j}"), pl.when(pl.col(f"b{j}")).then(pl.lit("true"))
            .when(pl.col(f"b{j}").not_()).then(pl.lit("false")))
    if cfg.flags is not None:
        j = plan.index[tuple(cfg.flags)]
        exprs["flags"] = pl.col(f"l{j}")
        exprs["flags_present"] = pl.col(f"l{j}").is_not_null()
    else:
        exprs["flags"] = pl.lit(None, dtype=pl.List(pl.String))
        exprs["flags_present"] = pl.lit(False)
    exprs["verdict"] = pl.col(f"s{plan.index[tuple(cfg.verdict)]}") if cfg.verdict else pl.lit(None, dtype=pl.String)
    if cfg.pass_field is not None:
        exprs["pass_value"] = pl.col(f"b{plan.index[tuple(cfg.pass_field)]}")
    for name, p in cfg.extra_fields.items():
        exprs[f"x_{name}"] = pl.col(f"s{plan.index[tuple(p)]}")
    exprs["__problem"] = pl.coalesce(problem_exprs) if problem_exprs else pl.lit(None, dtype=pl.String)
    out = res.select([e.alias(c) for c, e in exprs.items()])
    for c in out.columns:  # the order of _extract: keys, path groups, scores, flags, ..., problem
        cols[c] = out[c]
    return cols


def needs_python(plan: Plan, cfg: Config) -> pl.Expr:
    """Lines DuckDB parsed whose values Python shows as JSON text, or that it reads otherwise."""
    conds: list[pl.Expr] = []
    for k in KEY_FIELDS:
        if k in cfg.constants or cfg.keys[k] is None:
            continue
        for p in cfg.keys[k]:
            conds.append(pl.col(f"t{plan.index[tuple(p)]}") == _DOUBLE_T)
    for _, p in cfg.scores:
        j = plan.index[tuple(p)]
        conds.append(pl.col(f"t{j}").is_in([_ARRAY_T, _OBJECT_T]))
        conds.append((pl.col(f"t{j}") == _DOUBLE_T) & (pl.col(f"n{j}").abs() >= _BIG))
    if cfg.flags is not None:
        j = plan.index[tuple(cfg.flags)]
        conds.append(pl.col(f"la{j}").not_())
    for p in [cfg.verdict, *cfg.extra_fields.values()]:
        if p is None:
            continue
        j = plan.index[tuple(p)]
        conds.append(pl.col(f"t{j}").is_in([_INT_T, _UINT_T, _DOUBLE_T, _BOOL_T, _ARRAY_T, _OBJECT_T]))
    if not conds:
        return pl.lit(False)
    return pl.any_horizontal(conds).fill_null(False)


_DB: list[Any] = []
_DB_LOCK = threading.Lock()


def _connection() -> Any:
    """The process's in-memory DuckDB database (a connection costs about 50 ms)."""
    import duckdb

    with _DB_LOCK:
        if not _DB:
            con = duckdb.connect(":memory:")
            # a block's query memory handed back when it is freed, not cached: the cache
            # sat on top of the growing row table (1M lines: 0.05 GB less at the peak, measured)
            con.execute("SET allocator_bulk_deallocation_flush_threshold = '0MB'")
            _DB.append(con)
        return _DB[0]


def release() -> None:
    """Close the process's DuckDB database (the next read opens a new one): DuckDB keeps about
    0.13 GB of freed query memory cached for reuse (measured on a 1M-line file), which the
    stages after ingest would otherwise carry."""
    with _DB_LOCK:
        while _DB:
            _DB.pop().close()


def read_jsonl(path: str, cfg: Config, spec: Any, progress: Callable[[int], None] | None,
               limit: int, too_big: Callable[..., InputError], check_encoding: Callable[[bytes, str], None],
               assemble: Callable[..., pl.DataFrame], python_line: Callable[..., tuple[Any, str | None]],
               max_line: int, each_block: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
               ) -> tuple[pl.DataFrame, int, str]:
    """(per-line frame, lines read, sha256 of the file) for a JSONL file; ``each_block``
    (classification, see :func:`workbench.ingest.reader.read_classified`) is applied to each block's
    frame as it is made, so only its result is held for the file. The blocks' frames are
    concatenated without a copy (one chunk each; :func:`workbench.ingest.reader.merge_parts`
    rechunks the row table once)."""
    try:
        plan: Plan | None = Plan(cfg, spec.key_tokens)
    except Unsupported:
        plan = None
    groups, null_groups = path_groups(cfg, path)
    db = _connection()
    # one cursor per block in flight (a cursor runs one query at a time; files may be read in
    # threads too): block k uses cursor k % IN_FLIGHT, free again once block k - IN_FLIGHT is in
    cons = [db.cursor() for _ in range(IN_FLIGHT)]
    pool = ThreadPoolExecutor(max_workers=IN_FLIGHT, thread_name_prefix="workbench-block")
    inflight: deque[Future[tuple[pl.DataFrame, int]]] = deque()
    digest: list[str] = []
    frames: list[pl.DataFrame] = []
    carry: bytes | bytearray = b""
    first = True
    line_no = 1
    total = 0
    k = 0

    def work(slot: int, lines: Lines, first_line: int) -> tuple[pl.DataFrame, int]:
        frame, n = _block_frame(cons[slot], lines, plan, path, cfg, spec, first_line, groups, null_groups,
                                assemble, python_line, max_line)
        if each_block is not None and frame.width:
            frame = each_block(frame)
        return frame, n

    def collect() -> None:  # the oldest block in flight: frames and progress in file order
        nonlocal total
        frame, n = inflight.popleft().result()
        frames.append(frame)
        total += n
        if progress is not None:
            progress(n)

    try:
        src = blocks(path, limit, too_big, digest)
        pending = next(src, None)
        while pending is not None:
            block = pending
            if len(inflight) >= IN_FLIGHT:  # a slot free before the next block is read
                collect()
            pending = next(src, None)
            final = pending is None
            if len(carry) <= RESERVE:  # the unfinished line put in front, the rest cut off
                block[RESERVE - len(carry):RESERVE] = carry
                del block[:RESERVE - len(carry)]
                buf = block
            else:
                buf = carry + memoryview(block)[RESERVE:]
            del block
            start = 0
            if first:
                check_encoding(buf[:4096], path)
                if buf.startswith(b"\xef\xbb\xbf"):
                    start = 3
                if final and len(buf) <= start:
                    raise InputError(path, "file is empty")
                first = False
            if final:
                cut = len(buf)
                carry = b""
            else:
                cut = buf.rfind(b"\n") + 1
                if cut <= start:
                    carry = buf
                    continue
                carry = bytes(buf[cut:])
                del buf[cut:]
            lines = Lines(buf, start)
            del buf
            inflight.append(pool.submit(work, k % IN_FLIGHT, lines, line_no))
            k += 1
            line_no += len(lines)
            del lines
        while inflight:
            collect()
        if first:
            raise InputError(path, "file is empty")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # no block still on a cursor
        for con in cons:
            con.close()
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed", rechunk=each_block is None)
    return frame, total, digest[0] if digest else ""


_FIRST_TYPE = np.full(256, _DOUBLE_T, dtype=np.int8)  # a number unless it starts otherwise
_FIRST_TYPE[ord('"')] = _STR_T
_FIRST_TYPE[ord("{")] = _OBJECT_T
_FIRST_TYPE[ord("[")] = _ARRAY_T
_FIRST_TYPE[ord("n")] = _NULL_T
_FIRST_TYPE[ord("t")] = _BOOL_T
_FIRST_TYPE[ord("f")] = _BOOL_T
_NUM_MARK = np.zeros(256, dtype=bool)  # a number written with these is a double
_NUM_MARK[[ord("."), ord("e"), ord("E")]] = True


def _texts(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, start, end, valid) of a string array's values, without copying."""
    values = values.cast(pa.large_string()) if values.type != pa.large_string() else values
    validity, offsets, data = values.buffers()
    offs = np.frombuffer(offsets, dtype=np.int64)[values.offset:values.offset + len(values) + 1]
    arr = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    n = len(values)
    if values.null_count == 0:
        valid = np.ones(n, dtype=bool)
    else:  # from the bitmap: pyarrow's to_numpy imports pandas on first use (0.4 s of CPU)
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        valid = bits[values.offset:values.offset + n].astype(bool)
    return arr, offs[:-1], offs[1:], valid


def _decode_texts(values: pa.Array) -> tuple[np.ndarray, pl.Series]:
    """For JSON texts as DuckDB's ``json_extract`` writes them (null: absent): the type code
    of each (as DuckDB's ``json_type`` says: an integer outside the 64-bit ranges is a double)
    and its string (a string unescaped as Python's decoder does; a number or boolean its text)."""
    if values.type != pa.large_string():  # cast once (a copy): numpy and polars read the one result
        values = values.cast(pa.large_string())
    arr, starts, ends, valid = _texts(values)
    n = len(starts)
    codes = np.full(n, _ABSENT_T, dtype=np.int8)
    if not n:
        return codes, pl.Series("s", [], dtype=pl.String)
    first = np.zeros(n, dtype=np.uint8)
    has = valid & (ends > starts)
    first[has] = arr[starts[has]]
    codes[has] = _FIRST_TYPE[first[has]]
    # a number: a double if written with . e E, or an integer past the 64-bit ranges
    num = np.flatnonzero(codes == _DOUBLE_T)
    if len(num):
        at = starts[num]
        last = ends[num] - 1
        marked = _NUM_MARK[arr[at]]
        for k in range(1, int((last - at).max()) + 1):  # numbers are short: byte k of each at
            # once (past its end, a number's last byte again: no subsets to gather)
            marked |= _NUM_MARK[arr[np.minimum(at + k, last)]]
        num_int = num[~marked]
    else:
        num_int = num
    codes[num_int] = _INT_T
    for i in num_int[(ends[num_int] - starts[num_int]) >= 19].tolist():
        v = int(bytes(arr[starts[i]:ends[i]]))
        if not -(2 ** 63) <= v < 2 ** 64:
            codes[i] = _DOUBLE_T
    text = pl.Series("s", values)
    is_str = codes == _STR_T
    if is_str.any():
        at = np.flatnonzero(arr == 0x5C)  # a backslash: in which value (starts are ascending)
        escaped = np.unique(np.searchsorted(starts, at, side="right") - 1) if len(at) else at
        escaped = escaped[is_str[escaped]]
        # the quotes around a string: exactly one each side where there is no backslash (a
        # quote inside is escaped); one with a backslash is decoded by json.loads below. The
        # other texts (numbers, true/false/null, [...], {...}) neither start nor end with one
        stripped = text.str.strip_chars('"')
        if len(escaped):
            import json

            fixed = [json.loads(bytes(arr[starts[i]:ends[i]])) for i in escaped.tolist()]
            stripped = stripped.scatter(escaped, pl.Series(fixed, dtype=pl.String))
        text = stripped
    return codes, text


def _per_path(tbl: pa.Table, plan: Plan, cfg: Config) -> pl.DataFrame:
    """Per path j: its JSON type code ``t{j}``, string ``s{j}``, number ``n{j}``, integer
    text ``i{j}``, boolean ``b{j}`` (and ``la{j}``/``l{j}`` for the flags list)."""
    width = plan.n + plan.extra
    m = tbl.num_rows
    lists = tbl["J"].combine_chunks() if m else None
    if m:
        offs = np.frombuffer(lists.buffers()[1], dtype=np.int64 if pa.types.is_large_list(lists.type)
                             else np.int32)[lists.offset:lists.offset + m + 1]
        if not (np.array_equal(offs, np.arange(m + 1, dtype=offs.dtype) * width + offs[0])
                and lists.null_count == 0):
            raise AssertionError("json_extract gave a list of another width")
        codes, text = _decode_texts(lists.values.slice(int(offs[0]), m * width))
    else:
        codes, text = np.zeros(0, dtype=np.int8), pl.Series("s", [], dtype=pl.String)
    codes = codes.reshape(m, width)
    cols: dict[str, Any] = {"i": pl.Series(tbl["i"]), "nodup": pl.Series(tbl["nodup"])}
    if cfg.flags is not None:
        cols["la"] = pl.Series(tbl["la"])
        cols["l"] = pl.Series(tbl["l"])
    for j in range(plan.n):
        cols[f"t{j}"] = pl.Series(codes[:, j])
        cols[f"s{j}"] = text.gather_every(width, j) if m else text
    for k in range(plan.extra):
        cols[f"q{k}"] = pl.Series(codes[:, plan.n + k])
    res = pl.DataFrame(cols)
    exprs = []
    for j in range(len(plan.paths)):
        t = pl.col(f"t{j}")
        s = pl.col(f"s{j}")
        exprs += [t, pl.when(t == _STR_T).then(s).alias(f"s{j}")]
        if j in plan.numbers:
            exprs.append(pl.when(t.is_in(_NUM_TYPES)).then(s.cast(pl.Float64, strict=False)).alias(f"n{j}"))
        if j in plan.integers:
            exprs.append(pl.when(t.is_in(_INT_TYPES)).then(s).alias(f"i{j}"))
        if j in plan.booleans:
            exprs.append(pl.when(t == _BOOL_T).then(s == "true").alias(f"b{j}"))
    if cfg.flags is not None:
        j = plan.index[tuple(cfg.flags)]
        exprs += [pl.col("la").alias(f"la{j}"), pl.col("l").alias(f"l{j}")]
    exprs += [pl.col(f"q{k}") for k in range(plan.extra)]
    return res.select("i", "nodup", *exprs)


def _block_frame(con: Any, lines: Lines, plan: Plan | None, path: str, cfg: Config, spec: Any,
                 first_line: int, groups: dict[str, str], null_groups: list[str],
                 assemble: Callable[..., pl.DataFrame], python_line: Callable[..., tuple[Any, str | None]],
                 max_line: int) -> tuple[pl.DataFrame, int]:
    buf = lines.buf
    n = len(lines)
    starts, ends = lines.starts, lines.ends
    lengths = ends - starts
    long = lengths > max_line
    # blank: only bytes.strip() whitespace; a candidate starts with one (or is empty)
    arr = np.frombuffer(buf, dtype=np.uint8)
    first = np.full(n, ord("{"), dtype=np.uint8)
    nonempty = lengths > 0
    first[nonempty] = arr[starts[nonempty]]
    blank = ~nonempty  # an empty line is blank without a look (a block of newlines: no loop)
    for i in np.flatnonzero(nonempty & _PY_WS[first]).tolist():
        blank[i] = not lines.line(i).strip()
    ok = np.zeros(n, dtype=bool)
    frames: list[pl.DataFrame] = []
    if plan is not None and n and n >= ENGINE_MIN_LINES:
        null = long | blank | scan(lines)
        bad = _bad_utf8(buf, starts, ends)
        if len(bad):
            null[bad] = True
        # in batches of BATCH_LINES: DuckDB scans one Arrow batch per thread (one batch of a
        # whole block ran on one thread: 0.32 s wall a block, 0.19 s in 8192-line batches)
        table = _arrow_lines(lines, null)
        con.register("lines", pa.Table.from_batches(table.to_batches(BATCH_LINES)))
        try:
            tbl = con.sql(plan.sql).to_arrow_table()
        finally:
            con.unregister("lines")
        if tbl.num_rows and not pl.Series(tbl["i"]).is_sorted():
            tbl = tbl.sort_by("i")
        # one copy of the result in Arrow's pool: columns taken zero-copy from DuckDB's chunks
        # (the flags lists, the texts) kept every chunk's buffers alive in the row table
        # (1M rows: peak RSS of ingest 1.84 -> 1.67 GB, measured)
        tbl = tbl.combine_chunks()
        res = _per_path(tbl, plan, cfg)
        res = res.filter(pl.col("nodup") & ~needs_python(plan, cfg))
        if plan.tokens and res.height:
            # the lines as polars text (views into the block) for the key count; not where a
            # line is not UTF-8 (null here, but its bytes are in the buffer)
            text = None if len(bad) else pl.Series(table.column("line").chunk(0))
            res = res.filter(~pl.Series(repeated_keys(lines, plan, res, text)[res["i"].to_numpy()]))
            del text
        del table
        ok[res["i"].to_numpy()] = True
        if res.height:
            cols = fast_columns(res, plan, cfg, groups, null_groups)
            base = pl.DataFrame({
                "file": pl.repeat(path, res.height, dtype=pl.String, eager=True),
                "line": (res["i"] + first_line).cast(pl.Int64),
                "__present": pl.repeat(True, res.height, dtype=pl.Boolean, eager=True),
                "__blank": pl.repeat(False, res.height, dtype=pl.Boolean, eager=True),
                "__error": pl.repeat(None, res.height, dtype=pl.String, eager=True),
            })
            frames.append(base.hstack([s.alias(c) for c, s in cols.items()]))
        del res
    blank_idx = np.flatnonzero(blank)
    if len(blank_idx):
        m = len(blank_idx)
        frames.append(pl.DataFrame({
            "file": pl.repeat(path, m, dtype=pl.String, eager=True),
            "line": pl.Series(blank_idx + first_line, dtype=pl.Int64),
            "__present": pl.repeat(False, m, dtype=pl.Boolean, eager=True),
            "__blank": pl.repeat(True, m, dtype=pl.Boolean, eager=True),
            "__error": pl.repeat(None, m, dtype=pl.String, eager=True),
        }))
    slow_idx = np.flatnonzero(~ok & ~blank).tolist()
    if slow_idx:
        rows: list[Any] = []
        errors: dict[int, str] = {}
        for pos, i in enumerate(slow_idx):
            if long[i]:
                rows.append(None)
                errors[pos] = f"line is {int(lengths[i])} bytes, over the limit of {max_line} bytes per line"
                continue
            row, reason = python_line(lines.line(i), spec)
            rows.append(row)
            if reason is not None:
                errors[pos] = reason
        frames.append(assemble(rows, errors, None, [i + first_line for i in slow_idx], path, spec, cfg))
    if not frames:
        return pl.DataFrame(), n
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return (frame.sort("line") if len(frames) > 1 else frame), n
