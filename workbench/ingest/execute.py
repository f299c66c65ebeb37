"""Where ingest runs: this process, a local pool (``--jobs N``) or a Dask cluster (``--engine dask``).

Ingest is split at one seam (:mod:`workbench.ingest.reader`): :func:`~workbench.ingest.reader.read_classified`
reads one file and classifies every row (nothing crosses files), and
:func:`~workbench.ingest.reader.merge_parts` joins the files in file order and marks duplicates and
conflicts across the whole input. This module only decides where the first part runs and how
the repeats are found; the row table, and so ``results.json``, is the same whatever it decides
(``tests/test_execute.py``, ``tests/test_dask_engine.py``). How the work ran is recorded in the
run manifest (``run.json``, key ``execution``), never in ``results.json``.

* ``local`` with ``jobs=1``: every file in this process, one after the other.
* ``local`` with ``jobs=N``: files read by N worker processes (a per-file read is mostly
  Python-level decoding that holds the GIL, so threads do not run side by side; measured in
  docs/scale.md), merged here in file order whatever order they finish in.
* ``dask``: each file read and classified as a Dask task on the cluster's workers (local
  paths as given, which the workers must see, or fsspec URLs such as ``s3://``, ``gs://``,
  ``memory://``); duplicates and conflicts found by a shuffle of (key, content) on the key
  columns with :func:`workbench.ingest.reader.repeat_marks` applied per partition; the classified
  per-file tables then come back to this process, which merges them (docs/scale.md says what
  stays here).

Layer: below :mod:`workbench.document.pipeline`, above :mod:`workbench.ingest.reader`; imports only downward.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import polars as pl

from workbench.common.config import KEY_FIELDS, Config
from workbench.common.errors import ConfigError, InputError, WorkbenchError
from workbench.common.files import check_distinct
from workbench.ingest import reader as ingest

ENGINES = ("local", "dask")
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


@dataclass(frozen=True)
class Execution:
    """How ingest runs (never what it computes): ``engine`` ``local`` or ``dask``; ``jobs``
    files read at once by the local engine (None: :data:`DEFAULT_JOBS`); ``scheduler`` a
    Dask scheduler address (None: ``DASK_SCHEDULER_ADDRESS``, else a LocalCluster)."""

    engine: str = "local"
    jobs: int | None = None
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine {self.engine!r}: expected one of {', '.join(ENGINES)}")
        if self.jobs is not None and (isinstance(self.jobs, bool) or not isinstance(self.jobs, int)
                                      or self.jobs < 1):
            raise ConfigError(f"--jobs {self.jobs!r}: expected a whole number of files read at once, at least 1")
        if self.scheduler is not None and self.engine != "dask":
            raise ConfigError("--scheduler is a Dask scheduler address: it needs --engine dask")
        if self.engine == "dask" and self.jobs is not None:
            raise ConfigError("--jobs is the local engine's: with --engine dask the cluster's workers "
                              "read the files (size the cluster instead)")


DEFAULT_JOBS = 1
"""Files read at once by default. One: the per-file read already uses the machine's cores on
a large file (the ingest engine's own parallelism), and two layers of parallelism on a 2-core
machine only compete; ``--jobs N`` pays off for many files (docs/scale.md has the figures)."""


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def is_url(path: str) -> bool:
    """An fsspec URL (``s3://bucket/key``, ``memory://x``, ``file:///tmp/x``), not a local path."""
    head, sep, _ = path.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").isalnum() and "/" not in head


def describe(execution: Execution, n_files: int) -> dict[str, Any]:
    """How ingest ran, for the run manifest (``run.json`` key ``execution``)."""
    if execution.engine == "dask":
        address = scheduler_address(execution)
        return {"engine": "dask", "scheduler": address or f"LocalCluster ({usable_cpus()} worker processes)",
                "files": n_files}
    jobs = min(execution.jobs or DEFAULT_JOBS, max(n_files, 1))
    return {"engine": "local", "jobs": jobs, "pool": "processes" if jobs > 1 else "this process",
            "files": n_files}


def read_rows(inputs: Sequence[str], cfg: Config, execution: Execution | None = None,
              progress: Callable[[int], None] | None = None,
              notes: dict[str, Any] | None = None) -> tuple[pl.DataFrame, list[ingest.SourceFile]]:
    """:func:`workbench.ingest.reader.read_rows` on the chosen executor: the same ``(rows, sources)``."""
    ex = execution or Execution()
    if ex.engine == "dask":
        return _dask_read_rows(list(inputs), cfg, ex, progress, notes)
    urls = [p for p in inputs if is_url(p)]
    if urls:
        raise InputError(urls[0], "an fsspec URL is read by the Dask engine only: add --engine dask "
                                  "(or copy the file to a local path)")
    files = ingest.expand_inputs(list(inputs), allow_copies=cfg.allow_copies)
    jobs = min(ex.jobs or DEFAULT_JOBS, len(files))
    if jobs <= 1:
        return ingest.read_rows(files, cfg, progress=progress, notes=notes)
    return ingest.merge_parts(_pool_parts(files, cfg, jobs, progress), cfg, notes)


# --------------------------------------------------------------------------- local pool


@dataclass(frozen=True)
class _Failure:
    """A WorkbenchError raised in a worker, carried back as data (InputError's constructor
    takes its parts, so it does not survive pickling as an exception)."""

    kind: str
    args: tuple[Any, ...]

    @classmethod
    def of(cls, exc: WorkbenchError) -> _Failure:
        if isinstance(exc, InputError):
            return cls("input", (exc.path, exc.reason, exc.line, exc.field))
        return cls(type(exc).__name__, (str(exc),))

    def error(self) -> WorkbenchError:
        if self.kind == "input":
            return InputError(*self.args)
        from workbench.common import errors

        return getattr(errors, self.kind, WorkbenchError)(*self.args)


_QUEUE: Any = None


def _pool_init(queue: Any) -> None:
    global _QUEUE
    _QUEUE = queue


def _report(n: int) -> None:
    _QUEUE.put(n)


def _pool_read(path: str, cfg: Config, index: int) -> tuple[pl.DataFrame, ingest.SourceFile] | _Failure:
    try:
        return ingest.read_classified(path, cfg, index, _report if _QUEUE is not None else None)
    except WorkbenchError as exc:
        return _Failure.of(exc)


def _pool_parts(files: list[str], cfg: Config, jobs: int,
                progress: Callable[[int], None] | None) -> list[Any]:
    """Each file read and classified in a pool of ``jobs`` processes; results in file order."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    queue = ctx.Queue() if progress is not None else None
    relay = _Relay(queue, progress) if queue is not None else None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_pool_init, initargs=(queue,))
    try:
        futures = [pool.submit(_pool_read, path, cfg, i) for i, path in enumerate(files)]
        results = [f.result() for f in futures]  # file order, whatever order they finish in
        # the workers' counts are put on the queue by a feeder thread in each worker, which may
        # still hold some when its result is back: a worker flushes them as it exits, so the
        # relay's stop mark goes in after the pool is shut down (before, under load, the last
        # counts could come after the mark and be lost: 29 of 35 lines in one run)
        pool.shutdown()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if relay is not None:
            relay.stop()
    return [r.error() if isinstance(r, _Failure) else r for r in results]


class _Relay:
    """Forwards the workers' line counts to the progress callback (one thread)."""

    def __init__(self, queue: Any, progress: Callable[[int], None]):
        self.queue, self.progress = queue, progress
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            n = self.queue.get()
            if n is None:
                return
            self.progress(n)

    def stop(self) -> None:
        self.queue.put(None)
        self.thread.join()


# --------------------------------------------------------------------------- dask


def _dask_modules() -> tuple[Any, Any]:
    try:
        import dask.dataframe as dd
        import distributed
    except ImportError as exc:
        raise WorkbenchError(f"--engine dask needs dask and distributed, which are not installed "
                             f"({exc}); install them with: pip install 'workbench[dask]'") from None
    return dd, distributed


def scheduler_address(execution: Execution) -> str | None:
    """``--scheduler``, else ``DASK_SCHEDULER_ADDRESS``, else None (a LocalCluster)."""
    if execution.scheduler:
        return execution.scheduler
    return os.environ.get(SCHEDULER_ENV, "").strip() or None


class _Cluster:
    """A client on the given scheduler, or on a LocalCluster sized to this machine (one
    single-threaded worker process per usable CPU) that lives as long as the run."""

    def __init__(self, execution: Execution):
        _, distributed = _dask_modules()
        self.address = scheduler_address(execution)
        self.cluster = None
        try:
            if self.address is None:
                self.cluster = distributed.LocalCluster(n_workers=usable_cpus(), threads_per_worker=1,
                                                        processes=True, dashboard_address=":0",
                                                        silence_logs=logging.ERROR)
                self.client = distributed.Client(self.cluster)
            else:
                self.client = distributed.Client(self.address)
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            where = f"the Dask scheduler at {self.address}" if self.address else "a local Dask cluster"
            source = "" if self.address is None else (
                " (--scheduler)" if execution.scheduler else f" (from {SCHEDULER_ENV})")
            text = " ".join(str(exc).split()) or type(exc).__name__
            raise WorkbenchError(f"cannot reach {where}{source}: {text}") from None

    def close(self) -> None:
        for thing in (getattr(self, "client", None), self.cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass


def expand_urls(inputs: Sequence[str], allow_copies: bool = False) -> list[str]:
    """Local paths as :func:`workbench.ingest.reader.expand_inputs` expands them; fsspec URLs (and
    their globs) through fsspec, so a missing object is the same one-line error."""
    out: list[str] = []
    for pat in inputs:
        if not is_url(pat):
            out.extend(ingest.expand_inputs([pat], allow_copies=allow_copies))
            continue
        import fsspec

        try:
            fs, _ = fsspec.core.url_to_fs(pat)
        except (ImportError, ValueError) as exc:
            raise InputError(pat, f"cannot open this URL: {exc}") from None
        try:
            if any(ch in pat for ch in "*?["):
                hits = sorted(fs.glob(pat))
                if not hits:
                    raise InputError(pat, "no object matches this pattern")
                # spelled as the pattern was (memory://a/x, not memory:///a/x; file:///tmp/x)
                protocol, rest = pat.split("://", 1)
                lead = "/" if rest.startswith("/") else ""
                out.extend(f"{protocol}://{lead}{h.split('://', 1)[-1].lstrip('/')}" for h in hits)
            elif fs.isfile(pat):
                out.append(pat)
            else:
                raise InputError(pat, "no such object (or it is a directory)")
        except OSError as exc:
            raise InputError(pat, f"cannot read: {exc}") from None
    check_distinct(out, is_url)
    if not out:
        raise InputError("<inputs>", "no input files given")
    return out


def _localise(url: str) -> tuple[str, Any]:
    """A local copy of an fsspec URL (streamed to scratch disk, keeping the file name so the
    format and compression read the same), and its temporary directory."""
    import tempfile

    import fsspec

    tmp = tempfile.TemporaryDirectory(prefix="workbench-")
    name = url.rstrip("/").rsplit("/", 1)[-1] or "input"
    local = os.path.join(tmp.name, name)
    limit = ingest.max_input_bytes()
    try:
        with fsspec.open(url, "rb") as src, open(local, "wb") as dst:
            copied = 0
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                copied += len(block)
                if copied > limit and not name.endswith(".gz"):
                    raise InputError(url, f"more than {limit} bytes, over the limit of {limit} bytes per "
                                          "input file (split it, or set WORKBENCH_MAX_INPUT_BYTES)")
                dst.write(block)
    except OSError as exc:
        tmp.cleanup()
        raise InputError(url, f"cannot read: {exc}") from None
    except BaseException:
        tmp.cleanup()
        raise
    return local, tmp


def _dask_read(path: str, cfg: Config, index: int) -> tuple[pl.DataFrame, ingest.SourceFile] | _Failure:
    """One Dask task: read and classify one file (a URL through a local scratch copy)."""
    tmp = None
    try:
        local = path
        if is_url(path):
            local, tmp = _localise(path)
        frame, src = ingest.read_classified(local, cfg, index)
        if local != path:  # the rows and the ledger name the URL, not the scratch copy
            frame = frame.with_columns(pl.lit(path, dtype=pl.String).alias("file"))
            src = ingest.SourceFile(path=path, sha256=src.sha256, lines=src.lines)
        return frame, src
    except InputError as exc:
        if tmp is not None and exc.path != path:
            exc = InputError(path, exc.reason.replace(local, path), exc.line, exc.field)
        return _Failure.of(exc)
    except WorkbenchError as exc:
        return _Failure.of(exc)
    finally:
        if tmp is not None:
            tmp.cleanup()


ORDER_SHIFT = 40
"""The row order across files as one integer: file index << 40 | position in the file (a
file holds far fewer than 2**40 rows), the order :func:`workbench.ingest.reader.merge_parts`
concatenates in."""


def _lines(part: Any) -> int:
    return 0 if isinstance(part, _Failure) else int(part[0].height)


def _float_text(col: str) -> pl.Expr:
    # equal as polars compares them: every NaN alike, -0.0 as 0.0; null stays null
    x = pl.col(col)
    return (pl.when(x.is_nan()).then(pl.lit("nan")).when(x == 0).then(pl.lit("0.0"))
            .otherwise(x.cast(pl.String)).alias(col))


def repeat_keys(part: Any, cfg: Config) -> Any:
    """The shuffle's input for one file: per keyed row ``__order`` (see :data:`ORDER_SHIFT`),
    ``__key`` (the key fields as JSON), ``__content`` (the content columns of
    :func:`workbench.ingest.reader.content_columns` as JSON, floats as exact text) and, when the
    config names an ``answer:``, ``__answer`` (the row's answer digest as text), as pandas."""
    import pandas as pd

    answer = bool(cfg.answer)
    if isinstance(part, _Failure):
        return pd.DataFrame({"__order": pd.Series([], dtype="int64"), "__key": pd.Series([], dtype="string"),
                             "__content": pd.Series([], dtype="string"),
                             **({"__answer": pd.Series([], dtype="string")} if answer else {})})
    frame = part[0]
    index = int(frame["__file_index"][0]) if frame.height else 0
    content = [(_float_text(c) if frame.schema.get(c) == pl.Float64 else e)
               for c, e in zip(ingest.content_columns(cfg), ingest.content_exprs(frame.columns, cfg), strict=True)]
    keys = (frame.with_row_index("__pos")
            .filter(ingest.KEYED)
            .select((pl.col("__pos").cast(pl.Int64) + (index << ORDER_SHIFT)).alias("__order"),
                    pl.struct(list(KEY_FIELDS)).struct.json_encode().alias("__key"),
                    pl.struct(content).struct.json_encode().alias("__content"),
                    *([(pl.col(ingest.ANSWER_COLUMN) if ingest.ANSWER_COLUMN in frame.columns
                        else pl.lit(None)).cast(pl.String).alias("__answer")] if answer else [])))
    out = keys.to_pandas()
    return out.astype({"__key": "string", "__content": "string", **({"__answer": "string"} if answer else {})})


_MARKS_META = {"__order": "int64", "__repeat": "string", "__repeat_reason": "string"}


def mark_partition(pdf: Any) -> Any:
    """:func:`workbench.ingest.reader.repeat_marks` on one partition of the shuffle by ``__key``
    (every row of a key is in the same partition): the rows of repeated keys only."""
    import pandas as pd

    if not len(pdf):
        return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in _MARKS_META.items()})
    sub = pl.from_pandas(pdf[["__order", "__key", "__content",
                              *(["__answer"] if "__answer" in pdf.columns else [])]].reset_index(drop=True))
    sub = sub.filter(pl.len().over("__key") > 1)
    marks = ingest.repeat_marks(sub, ["__key"]).filter(pl.col("__repeat").is_not_null())
    return marks.to_pandas().astype(_MARKS_META)


@contextmanager
def _quiet_dask() -> Iterator[None]:
    """Dask's own INFO/WARNING chatter (shuffle start/stop, worker shutdown) kept off the
    terminal for the run: the workbench says what matters; errors still show."""
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _dask_read_rows(inputs: list[str], cfg: Config, ex: Execution,
                    progress: Callable[[int], None] | None,
                    notes: dict[str, Any] | None) -> tuple[pl.DataFrame, list[ingest.SourceFile]]:
    with _quiet_dask():
        return _dask_run(inputs, cfg, ex, progress, notes)


def _dask_run(inputs: list[str], cfg: Config, ex: Execution,
              progress: Callable[[int], None] | None,
              notes: dict[str, Any] | None) -> tuple[pl.DataFrame, list[ingest.SourceFile]]:
    dd, distributed = _dask_modules()
    files = expand_urls(inputs, allow_copies=cfg.allow_copies)
    cluster = _Cluster(ex)
    client = cluster.client
    try:
        parts = [client.submit(_dask_read, path, cfg, i, pure=False) for i, path in enumerate(files)]
        lines = [client.submit(_lines, p, pure=False) for p in parts]
        if progress is not None:
            for fut in distributed.as_completed(lines):
                progress(fut.result())
        keys = [client.submit(repeat_keys, p, cfg, pure=False) for p in parts]
        meta = repeat_keys(_Failure("input", ()), cfg)
        table = dd.from_delayed(keys, meta=meta, verify_meta=False)
        marks = (table.shuffle(on="__key", npartitions=max(1, len(files)))
                 .map_partitions(mark_partition, meta=mark_partition(meta.iloc[:0])))
        marks_pd = marks.compute()
        results = client.gather(parts)
    finally:
        cluster.close()
    merged = [r.error() if isinstance(r, _Failure) else r for r in results]
    marks_pl = pl.from_pandas(marks_pd.reset_index(drop=True), schema_overrides={
        "__order": pl.Int64, "__repeat": pl.String, "__repeat_reason": pl.String})

    # the cluster's marks, from (file index, position) to the merged table's row order
    starts, start = [], 0
    for i, part in enumerate(merged):
        if not isinstance(part, InputError):
            starts.append((i, start))
            start += part[0].height

    def apply(df: pl.DataFrame, cfg: Config) -> pl.DataFrame:
        table = pl.DataFrame(starts, schema={"__fi": pl.Int64, "__start": pl.Int64}, orient="row")
        repeat = (marks_pl.with_columns((pl.col("__order") // (1 << ORDER_SHIFT)).alias("__fi"),
                                        (pl.col("__order") % (1 << ORDER_SHIFT)).alias("__pos"))
                  .join(table, on="__fi", how="inner")
                  .select((pl.col("__start") + pl.col("__pos")).cast(df.schema["__order"]).alias("__order"),
                          "__repeat", "__repeat_reason"))
        return ingest.apply_repeat_marks(df, repeat, cfg)

    return ingest.merge_parts(merged, cfg, notes, mark_repeats=apply)
