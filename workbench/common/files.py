"""Opening what the user names: regular files only, with a one-line reason for anything else.

Every input the workbench reads (judge rows, config, plan, published card, claims,
manifest) goes through :func:`check_regular_file` first, so a FIFO, ``-``, a dangling
symlink, a symlink loop, a directory or a file name that is not valid UTF-8 is refused by
name instead of being reported as "no such file" (or hanging on a pipe).

File-name patterns (``path_fields``) and ``missing_when`` patterns are matched by polars' regex
engine (Rust ``regex``): it has no backtracking, so matching time is linear in the text's
length whatever the pattern; look-around and backreferences, which need backtracking, are refused when the
config is read.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import stat
from typing import Any

from workbench.common.errors import ConfigError, InputError

STDIN_NAME = "-"


def name_problem(path: str) -> str | None:
    """Why ``path`` cannot be used as a file name here (None when it can)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(path)
        return (f"the file name is not valid UTF-8 ({raw!r}); rename the file "
                "(e.g. convmv -f latin1 -t utf8)")
    return None


COPY_SUFFIXES = ("bak", "orig", "swp")
"""Name parts of editor and merge backups (``x.jsonl.bak``, ``x.orig.jsonl``, ``.x.jsonl.swp``)."""


def copy_reason(path: str) -> str | None:
    """Why ``path`` looks like a copy of a run rather than the run (None when it does not):
    a file under ``.ipynb_checkpoints/``, a Jupyter ``-checkpoint`` copy, an editor backup
    (``~`` suffix, ``.bak``, ``.orig``, ``.swp``). Globs skip such files and an explicit one is
    refused unless ``--allow-copies`` (config ``allow_copies: true``)."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if ".ipynb_checkpoints" in parts[:-1]:
        return "it is under .ipynb_checkpoints/, a Jupyter checkpoint copy"
    if name.endswith("~"):
        return "its name ends in '~', an editor backup"
    pieces = name.lstrip(".").split(".")
    backup = [x for x in pieces[1:] if x.lower() in COPY_SUFFIXES]
    if backup:
        return f"its name has .{backup[-1]}, a backup copy"
    if pieces[0].endswith("-checkpoint"):
        return "its name ends in -checkpoint, a Jupyter checkpoint copy"
    return None


def check_regular_file(path: str, what: str = "input") -> None:
    """Raise :class:`InputError` unless ``path`` is a readable regular file (symlinks followed)."""
    if path == STDIN_NAME:
        raise InputError(path, f"reading the {what} from stdin ('-') is not supported: save it "
                               "to a file first (the workbench hashes and re-reads its inputs)")
    problem = name_problem(path)
    if problem:
        raise InputError(path, problem)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(path, _stat_problem(path, exc, what)) from exc
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise InputError(path, f"is a directory, not a{'n' if what[0] in 'aeiou' else ''} {what} "
                               "file (give files, or a glob such as DIR/*.jsonl)")
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device"
            if stat.S_ISBLK(mode) else "not a regular file")
    raise InputError(path, f"is {kind}, not a regular file: save the stream to a file first")


def check_distinct(paths: list[str], is_url: Any = None) -> None:
    """Raise :class:`InputError` naming both names when two of ``paths`` are one file: the
    same path twice, a symlink and its target, or two hard links (same device and inode; a
    path that cannot be stat'ed is compared by its resolved name). The policy for every
    duplicate input: refused, never read twice (its rows would all be ``duplicate``) nor
    silently dropped. ``is_url(p)`` true: ``p`` is compared as written."""
    seen: dict[Any, str] = {}
    for p in paths:
        if is_url is not None and is_url(p):
            key: Any = ("url", p)
        else:
            try:
                st = os.stat(p)
                key = ("inode", st.st_dev, st.st_ino)
            except OSError:
                key = ("path", os.path.realpath(p))
        first = seen.get(key)
        if first is None:
            seen[key] = p
            continue
        if os.path.realpath(first) != os.path.realpath(p):
            how = "a hard link to it"
        elif os.path.abspath(first) == os.path.abspath(p):
            how = "the same path twice"
        else:
            how = "through a symlink"
        raise InputError(p, f"is the same file as {first} ({how}); each file is read once: give it once")


def _stat_problem(path: str, exc: OSError, what: str) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop (it resolves to itself)"
    if os.path.islink(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        if exc.errno == errno.ENOENT:
            return f"is a dangling symlink (points to {target!r}, which does not exist)"
        return f"is a symlink to {target!r} that cannot be followed: {exc.strerror}"
    if exc.errno == errno.ENOENT:
        return f"{what} file not found" if what != "input" else "no such file"
    if exc.errno == errno.ENOTDIR:
        return "no such file (a parent in the path is not a directory)"
    if exc.errno == errno.EACCES:
        return "permission denied"
    return f"cannot open: {exc.strerror or exc}"


# --------------------------------------------------------------------------- path_fields


def regex_problem(pattern: str) -> str | None:
    """Why polars' regex engine (Rust ``regex``: no backtracking, linear time in the text
    whatever the pattern) cannot use ``pattern`` (its own one-line words), or None when it can.
    Every pattern a config gives (``path_fields``, ``missing_when`` ``matches:``) is checked here
    when the config is read, so no pattern can make matching hang (no ReDoS)."""
    import polars as pl

    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.ComputeError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        return next((ln[len("error:"):].strip() for ln in lines if ln.startswith("error:")),
                    lines[-1] if lines else "invalid")
    return None


def path_regex_groups(pattern: str) -> list[str]:
    """The named groups of a ``path_fields`` pattern; :class:`ConfigError` if it is unusable."""
    import re

    why = regex_problem(pattern)
    if why is not None:
        raise ConfigError(f"config: path_fields is not a usable regex ({why}); the workbench "
                          "matches file names without backtracking, so look-around and "
                          "backreferences are not available")
    try:  # group names, in the syntax both engines share
        names = list(re.compile(pattern).groupindex)
    except re.error:
        names = []
    if not names:
        raise ConfigError("config: path_fields needs named groups, e.g. (?P<judge>...)")
    return names


def path_match(pattern: str, text: str) -> dict[str, Any] | None:
    """The named groups of the first match of ``pattern`` in ``text`` (None: no match).

    Linear time in ``len(text)`` (no backtracking), so no file name can make it hang.
    """
    import polars as pl

    s = pl.Series([text], dtype=pl.String)
    if not s.str.contains(pattern).item():
        return None
    groups = s.str.extract_groups(pattern).item() or {}
    names = path_regex_groups(pattern)
    return {k: groups.get(k) for k in names}


def gzip_isize(fh: Any, size: int) -> int | None:
    """The decompressed size a gzip file's trailer records (ISIZE: its last member's size
    modulo 2**32), for ``fh`` open in binary and ``size`` bytes long; None when it is shorter
    than a gzip header and trailer (18 bytes) or does not start with the gzip magic. Reads
    from the start and the end; the caller seeks where it needs next."""
    if size < 18:
        return None
    fh.seek(0)
    if fh.read(2) != b"\x1f\x8b":
        return None
    fh.seek(size - 4)
    return int.from_bytes(fh.read(4), "little")


# --------------------------------------------------------------------------- compressed inputs
#
# One size budget for every compressed input (the input-size limit, ``max_input_bytes``): a
# gzip file's decompressed bytes are counted over all its members as they stream (its trailer
# records only the last member's size, modulo 2**32, so it proves nothing), before a row is
# read; a zip's members (an Inspect ``.eval`` log) are refused by their declared sizes, each and
# in total, and counted again as they are read. Memory while counting: one 1 MiB buffer.

_COUNT_CHUNK = 1 << 20
_gzip_counted: dict[tuple[Any, ...], tuple[int, bool, int]] = {}


def gzip_size(fh: Any, limit: int, lines: list[int] | None = None) -> int:
    """The decompressed bytes of the gzip stream ``fh`` (binary, at its start), all members,
    counted as they stream with bounded memory and stopping once past ``limit`` (so a result
    over ``limit`` means "more than ``limit``"). Damaged data ends the count where it starts
    (the reader that follows names the damage). ``lines``, when given, gets the number of
    line feeds counted on the way (the same pass; memchr speed)."""
    import zlib

    total = 0
    feeds = 0
    if lines is not None:
        lines.append(0)
    d = zlib.decompressobj(31)
    pending = b""
    while True:
        if not pending:
            pending = fh.read(_COUNT_CHUNK)
            if not pending:
                return total
        try:
            out = d.decompress(pending, _COUNT_CHUNK)
        except zlib.error:
            return total
        total += len(out)
        if lines is not None:
            feeds += out.count(b"\n")
            lines[-1] = feeds
        if total > limit:
            return total
        pending = d.unconsumed_tail
        if d.eof:  # a member ended: the next (if any) starts in unused_data
            rest = d.unused_data.lstrip(b"\x00")  # gzip allows zero padding between members
            d = zlib.decompressobj(31)
            pending = rest
            if not rest:
                more = fh.read(_COUNT_CHUNK).lstrip(b"\x00")
                if not more:
                    return total
                pending = more


def _gzip_count(path: str, limit: int) -> tuple[int, int]:
    """(decompressed bytes, line feeds) of the gzip file ``path`` by :func:`gzip_size` ((0, 0)
    for a file that is not gzip), remembered per file version (device, inode, size, mtime) so
    the size and line decisions before a read and the read itself decompress a file once to
    count it. Past ``limit`` bytes both counts stop (the file is refused by its size)."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            known = _gzip_counted.get(key)
            if known is not None and (known[1] or known[0] > limit):  # exact, or over this limit too
                return known[0], known[2]
            if fh.read(2) != b"\x1f\x8b":
                return 0, 0
            fh.seek(0)
            feeds: list[int] = []
            n = gzip_size(fh, limit, feeds)
    except OSError:
        return 0, 0
    if len(_gzip_counted) > 256:
        _gzip_counted.clear()
    _gzip_counted[key] = (n, n <= limit, feeds[0])
    return n, feeds[0]


def gzip_counted(path: str, limit: int) -> int:
    """:func:`gzip_size` of the file ``path`` (0 for a file that is not gzip), counted once per
    file version (see :func:`_gzip_count`)."""
    return _gzip_count(path, limit)[0]


def count_lines(path: str, byte_limit: int, line_limit: int) -> int:
    """Lines in the input ``path`` (line feeds, plus one for a last line without one), or a
    number over ``line_limit`` once the count passes it: a gzip file's from the size count's
    own pass; a plain file's without reading it when it is too short to hold more than
    ``line_limit`` lines, else in 1 MiB reads (memchr speed, about 0.3 s per GB from the page
    cache). 0 for a file that cannot be read (its reader says why)."""
    if path.endswith(".gz"):
        n, feeds = _gzip_count(path, byte_limit)
        return feeds + (1 if n else 0)  # at most one more than its feeds: enough for a limit
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size <= line_limit:
                return size  # an upper bound, within the limit
            feeds = 0
            last = b"\n"
            while True:
                chunk = fh.read(_COUNT_CHUNK)
                if not chunk:
                    break
                feeds += chunk.count(b"\n")
                last = chunk[-1:]
                if feeds > line_limit:
                    return feeds
    except OSError:
        return 0
    return feeds + (0 if last == b"\n" else 1)


def max_input_lines() -> int:
    """Most lines accepted in one line-oriented input (JSON lines, CSV, TSV), after
    decompression (:data:`MAX_INPUT_LINES`, or ``WORKBENCH_MAX_INPUT_LINES``)."""
    return _env_limit("WORKBENCH_MAX_INPUT_LINES", MAX_INPUT_LINES, "lines")


MAX_INPUT_LINES = 50_000_000
"""Per line-oriented input file. Every line is a row of the row table (a blank line too: it is
counted in the ``blank`` bucket and listed in rows.parquet), about 90 bytes of memory each for
blank lines and more for rows, so a small file of nothing but line feeds (a billion in a 4.7 MB
gzip) would exhaust memory long before its bytes reach :data:`MAX_INPUT_BYTES`. A real judge
row is at least about 50 bytes, so no file within the byte limit meets this one with rows;
split a larger file, or raise it with ``WORKBENCH_MAX_INPUT_LINES``."""


def too_many_lines(path: str, lines: int, limit: int) -> InputError:
    gz = " after decompression" if path.endswith(".gz") else ""
    return InputError(path, f"more than {limit} lines{gz}, over the limit of {limit} lines per input file: "
                            "every line is a row of the row table (split it, or set WORKBENCH_MAX_INPUT_LINES)")


def check_lines(path: str, byte_limit: int) -> None:
    """Refuse the line-oriented input ``path`` before a row is read when it holds more than
    :func:`max_input_lines` lines (:func:`count_lines`)."""
    limit = max_input_lines()
    n = count_lines(path, byte_limit, limit)
    if n > limit:
        raise too_many_lines(path, n, limit)


def gzip_over(path: str, limit: int) -> bool:
    """Whether the gzip file ``path`` holds more than ``limit`` bytes decompressed."""
    return gzip_counted(path, limit) > limit


_ZIP_METHODS = {0: "stored", 8: "Deflate", 12: "bzip2", 14: "LZMA"}  # what zipfile reads
_ZIP_METHOD_NAMES = {9: "Deflate64", 93: "Zstandard", 95: "xz", 98: "PPMd", 99: "AES-encrypted", 6: "Implode",
                     1: "Shrink"}


def _member(name: str) -> str:
    from workbench.common.text import safe

    shown = safe(name)
    return repr(shown if len(shown) <= 80 else shown[:77] + "...")


def zip_members(path: str, z: Any, limit: int) -> dict[str, Any]:
    """The members of the open zip ``z`` by name, refused (:class:`InputError`) when the
    central directory lists a name twice (one member decompressed many times is the zip bomb's
    oldest trick), or when the sizes it declares are over ``limit`` for one member or in total
    (a member is never decompressed past its declared size: :func:`read_member` counts)."""
    members: dict[str, Any] = {}
    total = 0
    for info in z.infolist():
        if info.filename in members:
            raise InputError(path, f"the zip lists member {_member(info.filename)} more than once; "
                                   "refused (a duplicate entry is how a small zip decompresses many times)")
        members[info.filename] = info
        if info.file_size > limit:
            raise InputError(path, f"zip member {_member(info.filename)}: {info.file_size} bytes after "
                                   f"decompression, over the limit of {limit} bytes per input file "
                                   "(split it, or set WORKBENCH_MAX_INPUT_BYTES)")
        total += info.file_size
    if total > limit:
        raise InputError(path, f"its {len(members)} zip members hold {total} bytes after decompression, "
                               f"over the limit of {limit} bytes per input file (split it, or set "
                               "WORKBENCH_MAX_INPUT_BYTES)")
    return members


def read_member(path: str, z: Any, info: Any, limit: int) -> bytearray:
    """One zip member's bytes, read 1 MiB at a time and refused past ``limit`` or its declared
    size; an encrypted member, a compression method Python cannot read (Deflate64...) or a
    damaged one is an :class:`InputError` naming the member."""
    import zipfile
    import zlib

    name = _member(info.filename)
    if info.flag_bits & 0x1:
        raise InputError(path, f"zip member {name} is encrypted; the workbench reads archives without "
                               "a password (extract it and zip it again without one)")
    if info.compress_type not in _ZIP_METHODS:
        what = _ZIP_METHOD_NAMES.get(info.compress_type, "unknown")
        raise InputError(path, f"zip member {name} uses compression method {info.compress_type} ({what}), "
                               "which the workbench cannot read (zip it again with Deflate)")
    cap = min(limit, info.file_size)
    buf = bytearray()
    got = 0
    try:
        with z.open(info) as fh:
            while True:
                b = fh.read(_COUNT_CHUNK)
                if not b:
                    break
                got += len(b)
                if got > cap:
                    raise InputError(path, f"zip member {name}: more than {cap} bytes after decompression "
                                           f"(its declared size {info.file_size}, the limit {limit})")
                buf += b
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError, ValueError) as exc:
        raise InputError(path, f"zip member {name} cannot be read: {exc}") from exc
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    return buf


# --------------------------------------------------------------------------- input size limits


def max_input_bytes() -> int:
    """Largest input file accepted, in bytes after decompression (:data:`MAX_INPUT_BYTES`,
    or the ``WORKBENCH_MAX_INPUT_BYTES`` environment variable)."""
    return _env_limit("WORKBENCH_MAX_INPUT_BYTES", MAX_INPUT_BYTES, "bytes")


def _env_limit(name: str, default: int, unit: str) -> int:
    """A positive integer limit from the environment variable *name*, else *default*."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name}={text!r}: expected a positive number of {unit}")
    return value


MAX_INPUT_BYTES = 2_000_000_000
"""Per input file, after decompression. JSONL is streamed in blocks (memory: the row table plus
about one block); a JSON array file is held whole, about four times its size at the peak. A
larger file is refused with a message instead of exhausting memory. Split it, or raise the
limit with ``WORKBENCH_MAX_INPUT_BYTES``."""


def too_big(path: str, size: int | str, limit: int) -> InputError:
    gz = " after decompression (all its gzip members counted)" if path.endswith(".gz") else ""
    return InputError(path, f"{size} bytes{gz}, "
                            f"over the limit of {limit} bytes per input file (split it, or set "
                            "WORKBENCH_MAX_INPUT_BYTES)")


def read_raw(path: str) -> bytes:
    limit = max_input_bytes()
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit and not path.endswith(".gz"):
                raise too_big(path, size, limit)
            return fh.read()
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc


def gunzip(raw: bytes, path: str) -> bytes:
    """Decompress with a bounded output: at most :func:`max_input_bytes`, every member counted
    first (:func:`workbench.common.files.gzip_size`) so a bomb is refused before it is held."""
    limit = max_input_bytes()
    if len(raw) >= 18 and raw[:2] == b"\x1f\x8b":
        isize = int.from_bytes(raw[-4:], "little")  # size mod 2**32 of the last member
        if isize > limit:
            raise too_big(path, f"about {isize}", limit)
    if gzip_size(io.BytesIO(raw), limit) > limit:  # every member counted, none held
        raise too_big(path, f"more than {limit}", limit)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            data = fh.read(limit + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(path, f"not a readable gzip file: {exc}") from exc
    if len(data) > limit:
        raise too_big(path, f"more than {limit}", limit)
    return data
