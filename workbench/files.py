"""Opening what the user names: regular files only, with a one-line reason for anything else.

Every input the workbench reads (judge rows, config, plan, published card, claims,
manifest) goes through :func:`check_regular_file` first, so a FIFO, ``-``, a dangling
symlink, a symlink loop, a directory or a file name that is not valid UTF-8 is refused by
name instead of being reported as "no such file" (or hanging on a pipe).

File-name patterns (``path_fields``) are matched by polars' regex engine (Rust ``regex``):
it has no backtracking, so matching time is linear in the file name's length whatever the
pattern; look-around and backreferences, which need backtracking, are refused when the
config is read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

from .errors import ConfigError, InputError

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


def path_regex_groups(pattern: str) -> list[str]:
    """The named groups of a ``path_fields`` pattern; :class:`ConfigError` if it is unusable."""
    import re

    import polars as pl

    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.ComputeError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        why = next((ln[len("error:"):].strip() for ln in lines if ln.startswith("error:")),
                   lines[-1] if lines else "invalid")
        raise ConfigError(f"config: path_fields is not a usable regex ({why}); the workbench "
                          "matches file names without backtracking, so look-around and "
                          "backreferences are not available") from exc
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
