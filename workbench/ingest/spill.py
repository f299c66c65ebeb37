"""The row table on disk: columns written to uncompressed Arrow IPC and memory-mapped back.

A large input's row table does not live in the process's own (anonymous) memory. Each
block's classified frame, as the engine reads it, and each column of the merged row table
are written to a file in a private temporary folder, mapped back with ``pyarrow.memory_map``
(``pl.from_arrow`` of the mapped table copies nothing) and the file is unlinked at once: the
mapping keeps it alive until the last frame using it is dropped, and nothing is left on disk
afterwards, even when the run fails. The pages are the kernel's page cache: clean, so under
memory pressure (a cgroup limit, a busy machine) they are dropped and read again from disk
instead of the process being killed. What stays in anonymous memory is what the stages
compute from the columns.

Values, chunks and dtypes are exactly those of the frame written (one record batch per
frame, so a column of the merged table is one chunk, as in memory: a sum over it adds in the
same order). ``WORKBENCH_SPILL`` chooses: ``auto`` (default: when the inputs hold at least
:data:`AUTO_BYTES` bytes, or the merged table at least :data:`AUTO_ROWS` rows), ``always``,
``never``; ``WORKBENCH_SPILL_DIR`` is the folder (default: the system's temporary folder,
``TMPDIR``). A folder on tmpfs holds its files in memory: point it at a disk.
"""

from __future__ import annotations

import bisect
import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc

from workbench.common.errors import WorkbenchError
from workbench.common.files import gzip_counted

AUTO_BYTES = 64 * 2**20
"""``auto``: the row table goes to disk when the input files hold at least this many bytes
(decompressed: a ``.gz`` counts as its trailer's size, see :func:`input_bytes`)."""
AUTO_ROWS = 200_000
"""``auto``: ... or when the merged row table has at least this many rows (any engine)."""
MODES = ("auto", "always", "never")


T = TypeVar("T")


class SpillError(WorkbenchError):
    """The temporary folder for the row table could not be written (full disk, no rights)."""


def mode() -> str:
    """``WORKBENCH_SPILL`` (``auto`` when unset); an unknown value is a one-line error."""
    value = os.environ.get("WORKBENCH_SPILL", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise SpillError(f"WORKBENCH_SPILL={value!r}: use one of {', '.join(MODES)}")
    return value


def folder() -> str | None:
    """``WORKBENCH_SPILL_DIR``, or None for the system's temporary folder (``TMPDIR``): where
    the row table's files and the bootstrap's weight file go."""
    return os.environ.get("WORKBENCH_SPILL_DIR") or None


def wanted(paths: Iterable[str] = (), rows: int | None = None) -> bool:
    """Whether the row table of these input files (or of ``rows`` rows) goes to disk."""
    m = mode()
    if m != "auto":
        return m == "always"
    if rows is not None and rows >= AUTO_ROWS:
        return True
    return sum(input_bytes(p) for p in paths) >= AUTO_BYTES


def input_bytes(path: str | os.PathLike[str]) -> int:
    """The bytes ``path`` holds as ingest reads them: its size, or for a ``.gz`` the larger
    of its size and its decompressed size, every member counted (:func:`workbench.common.files.
    gzip_counted`, remembered for the read that follows; the trailer records only the last
    member's size modulo 2**32), so a well-compressed log of a large sweep is judged by what
    it holds, not by its few megabytes on disk. 0 for a URL or an unreadable path (decided by
    rows at the merge)."""
    try:
        path = os.fsdecode(path)
        size = os.path.getsize(path)
        if not os.path.isfile(path):
            return 0
        if not path.endswith(".gz"):
            return size
        from workbench.common.files import MAX_INPUT_BYTES

        try:
            from workbench.common.files import max_input_bytes

            limit = max_input_bytes()
        except WorkbenchError:  # a bad WORKBENCH_MAX_INPUT_BYTES: the read says so
            limit = MAX_INPUT_BYTES
        return max(size, gzip_counted(path, limit))  # 0: not gzip, its size on disk
    except (OSError, TypeError, ValueError):  # not a path (a NUL in it, not text): decided by rows
        return 0


class Spill:
    """A private temporary folder whose frames are memory-mapped (see the module's doc).

    Thread-safe (the engine's blocks in flight spill from two threads). ``close()`` removes
    the folder; the frames it made stay valid (their files are unlinked, not unmapped).
    """

    def __init__(self, directory: str | None = None):
        base = directory if directory is not None else folder()
        try:
            self.dir = tempfile.mkdtemp(prefix="workbench-rows-", dir=base)
        except OSError as exc:
            raise SpillError(f"cannot make a folder for the row table in {base or tempfile.gettempdir()}: "
                             f"{exc.strerror or exc} (WORKBENCH_SPILL_DIR chooses another, "
                             "WORKBENCH_SPILL=never keeps it in memory)") from None
        self._n = itertools.count()
        self._lock = threading.Lock()
        self.bytes = 0
        """Bytes written so far (the disk the mapped frames hold until they are dropped)."""

    def frame(self, df: pl.DataFrame) -> pl.DataFrame:
        """``df`` written to disk and mapped back: the same columns, values, dtypes and chunk
        count one (one record batch), in no anonymous memory."""
        if df.height == 0 or df.width == 0:
            return df
        out = pl.from_arrow(self._mapped(df, df.height), rechunk=False)
        assert isinstance(out, pl.DataFrame)
        if out.schema != df.schema:  # pragma: no cover - a dtype IPC cannot carry
            raise AssertionError(f"spilled frame changed its schema: {df.schema} -> {out.schema}")
        return out

    def _mapped(self, df: pl.DataFrame, batch: int) -> pa.Table:
        """``df`` written in record batches of ``batch`` rows and read back as a mapped table."""
        return self._file(".arrow", lambda path: df.write_ipc(path, compression="uncompressed",
                                                               record_batch_size=batch),
                          lambda mapped: ipc.open_file(mapped).read_all())

    def _file(self, suffix: str, write: Callable[[str], object],
              read: Callable[[pa.MemoryMappedFile], T]) -> T:
        """``write(path)`` a new file of this folder, ``read`` it through a memory map, unlink
        it (the mapping keeps it) and count its bytes: every file a spill makes goes this way.
        A full disk or no rights is :class:`SpillError`."""
        with self._lock:
            path = os.path.join(self.dir, f"{next(self._n)}{suffix}")
        try:
            write(path)
            size = os.path.getsize(path)
            out = read(pa.memory_map(path))
        except OSError as exc:
            raise SpillError(f"cannot write the row table to {self.dir}: {exc.strerror or exc} "
                             f"(the row table needs about 2.5 times the input's size on disk; "
                             "WORKBENCH_SPILL_DIR chooses another folder, WORKBENCH_SPILL=never "
                             "keeps it in memory)") from None
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        with self._lock:
            self.bytes += size
        return out

    def series(self, s: pl.Series) -> pl.Series:
        """One column written to disk and mapped back (one chunk).

        A column of text in several chunks is not made one chunk in memory (``rechunk``
        copies every string: about 1 GB for the ``file`` column of 20M rows): its chunks are
        written as they are (one record batch each) and mapped back, then joined by Arrow,
        which copies only the 16-byte views of a ``string_view`` array (its strings stay in
        the mapped buffers), and that one chunk is written and mapped.

        Text already in this process's row-table mappings (:func:`is_mapped`: the engine's
        spilled blocks, the repeat marks) is not written again: in one chunk it is returned as
        it is; in several, only the joined views are written (:meth:`_views`). At 5M generated
        rows that took the merge's column writes from 6.7 to 4.2 s (the strings of eleven text
        columns had been written twice more)."""
        if s.dtype in (pl.String, pl.Binary) and s.len() > 0 and is_mapped(s):
            if s.n_chunks() == 1:  # on disk already, in one chunk
                return s
            joined_views = self._views(s)
            if joined_views is not None:
                return joined_views
        if s.n_chunks() > 1 and s.dtype in (pl.String, pl.Binary) and s.len() > 0:
            staged = self._mapped(s.to_frame(), max(c.len() for c in s.get_chunks())).column(0)
            if pa.types.is_string_view(staged.type) or pa.types.is_binary_view(staged.type):
                joined = pl.from_arrow(pa.table({s.name: staged.combine_chunks()}), rechunk=False)
                assert isinstance(joined, pl.DataFrame)
                del staged
                return self.frame(joined).to_series()
        return self.frame(s.rechunk().to_frame()).to_series()

    def _views(self, s: pl.Series) -> pl.Series | None:
        """A text column whose chunks are all in this spill's mappings (:func:`is_mapped`), in
        one chunk without writing its strings again: Arrow joins the chunks' 16-byte views
        (their strings stay in the mapped buffers they are in), only the views and the
        validity are written to disk and mapped back, and the column is assembled from those
        and the strings' mapped buffers. None when the chunks are not views (then
        :meth:`series` writes the column whole)."""
        chunks = [c.to_arrow(compat_level=pl.CompatLevel.newest()) for c in s.get_chunks()]
        kind = chunks[0].type
        if not (pa.types.is_string_view(kind) or pa.types.is_binary_view(kind)):
            return None  # pragma: no cover - polars gives views for text
        joined = pa.chunked_array(chunks, type=kind).combine_chunks()
        validity, views, *data = joined.buffers()

        def write(path: str) -> None:
            with open(path, "wb") as fh:
                fh.write(views)
                if validity is not None:
                    fh.write(validity)

        def read(mapped: pa.MemoryMappedFile) -> tuple[pa.Buffer, pa.Buffer | None]:
            return mapped.read_buffer(views.size), (None if validity is None else mapped.read_buffer(validity.size))

        views_m, validity_m = self._file(".views", write, read)
        arr = pa.Array.from_buffers(kind, len(joined), [validity_m, views_m, *data],
                                    null_count=joined.null_count, offset=joined.offset)
        del joined
        out = pl.from_arrow(arr)
        assert isinstance(out, pl.Series)
        return out.alias(s.name)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _mapped_ranges() -> list[tuple[int, int]]:
    """Sorted address ranges of this process's live mappings of row-table files, from
    ``/proc/self/maps`` (none off Linux)."""
    out = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 6 and "/workbench-rows-" in parts[5]:
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    out.append((lo, hi))
    except OSError:  # pragma: no cover - not Linux
        return []
    return sorted(out)


def is_mapped(s: pl.Series) -> bool:
    """True when every buffer of every chunk of ``s`` lies in a mapping of a row-table file
    (:class:`Spill`): the column is on disk already, so writing it again would only copy it.
    False for an empty column, off Linux, or when any buffer is in ordinary memory."""
    ranges = _mapped_ranges()
    if not ranges or s.len() == 0:
        return False
    starts = [lo for lo, _ in ranges]
    for chunk in s.get_chunks():  # one chunk at a time: zero-copy, never a rechunk
        arr = chunk.to_arrow(compat_level=pl.CompatLevel.newest())
        for buf in arr.buffers():
            if buf is None or buf.size == 0:
                continue
            i = bisect.bisect_right(starts, buf.address) - 1
            if i < 0 or buf.address + buf.size > ranges[i][1]:
                return False
    return True


def mapped_bytes() -> int:
    """Bytes of this process's live mappings of row-table files (0 when none is alive or off
    Linux): what the spilled frames still hold, read from ``/proc/self/maps``. For tests and
    measurements; a frame that copied its columns out of the mapping holds none."""
    return sum(hi - lo for lo, hi in _mapped_ranges())
