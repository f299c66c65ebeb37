"""The output directory: never overwrite a file the workbench did not write.

Rules (checked by :func:`prepare` before any analysis runs):

* an output path that is also an input (a data file, config, plan, published card, claims,
  manifest) is refused, with or without ``--overwrite``;
* ``--out`` may be new, empty, or a directory the workbench wrote before: it recognises its
  own outputs by the run manifest (``run.json``, key ``workbench_outputs``, listing every
  file it wrote there; ``batch.json`` for a batch root). Any other file in it means the
  directory is the user's, and writing needs ``--overwrite`` (which still only replaces the
  workbench's own output names);
* the directory must be writable, which is tried before the analysis, not after it.

Files are written to a temporary name in the same directory and moved into place
(:func:`write_atomic`), so a crash never leaves half a file. A run's writes are one unit
(:class:`Staged`): the previous run's files are set aside by rename when it starts writing
and deleted when it has finished, or put back when it fails (a full disk, a failing notebook
cell, Ctrl-C, SIGTERM), so the folder holds either the whole new run or exactly the old one,
and an old report never sits beside new results as if it were current.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from workbench.common.errors import WorkbenchError

RUN_MANIFEST = "run.json"
BATCH_MANIFEST = "batch.json"
MARK = "workbench_outputs"
ANALYSIS_FILES = ("results.json", "rows.parquet", RUN_MANIFEST)
REPORT_FILES = ("report.ipynb", "report.html")
FIGURES = "figures"
TMP_PREFIX = ".wb-tmp-"


def _real(path: str | Path) -> str:
    return os.path.realpath(os.fspath(path))


def _listing(out: Path) -> list[str]:
    """Every file under ``out`` as a POSIX path relative to it (directories not listed)."""
    found = []
    for root, dirs, files in os.walk(out):
        dirs.sort()
        rel = Path(root).relative_to(out)
        for name in sorted(files):
            found.append((rel / name).as_posix())
    return found


def _folders(out: Path) -> set[str]:
    """Every real folder under ``out`` (links not followed) as a POSIX path relative to it."""
    found = set()
    for root, dirs, _ in os.walk(out):
        rel = Path(root).relative_to(out)
        found |= {(rel / d).as_posix() for d in dirs if not (Path(root) / d).is_symlink()}
    return found


def own_files(out: Path, manifest: str = RUN_MANIFEST) -> set[str] | None:
    """The files the workbench's manifest in ``out`` says it wrote (None: no manifest)."""
    p = out / manifest
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get(MARK), dict):
        return None
    files = doc[MARK].get("files")
    if not isinstance(files, list):
        return None
    return {str(f) for f in files} | {manifest}


def prepare(out: str | Path, inputs: Iterable[str | None], overwrite: bool = False,
            writes: Sequence[str] = ANALYSIS_FILES + REPORT_FILES, flag: str = "--out",
            manifest: str = RUN_MANIFEST, also_own: Iterable[str] = ()) -> Path:
    """Check ``out`` for this run (see the module docstring) and make sure it is writable.

    ``writes``: the names this run writes (``figures/`` covers everything below it);
    ``also_own``: more names to treat as the workbench's (a batch's ``report.log``).
    Raises :class:`WorkbenchError` with one line naming the path.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"{out}: {flag} must be a directory; a file of that name exists "
                             "(it is left alone)")
    real_out = _real(out)
    targets = {_real(out / w) for w in writes}
    for src in inputs:
        if src is None:
            continue
        real = _real(src)
        under_figures = real.startswith(_real(out / FIGURES) + os.sep)
        if real in targets or under_figures or real == real_out:
            raise WorkbenchError(f"{src}: is an input and {flag} {out} would overwrite it; "
                                 "choose another output directory")
    check_targets(out, writes, flag)
    if out.is_dir():
        lock(out, flag)
        present = [p for p in _listing(out)
                   if not Path(p).name.startswith(TMP_PREFIX) and not p.split("/", 1)[0].startswith(TMP_PREFIX)]
        own = own_files(out, manifest) or set()
        own |= set(also_own)
        foreign = [p for p in present if p not in own]
        if foreign and not overwrite:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise WorkbenchError(
                f"{out}: holds files the workbench did not write ({shown}); pass --overwrite to "
                f"write into it anyway (files there named like its outputs are then replaced), "
                f"or choose a new or empty {flag} directory")
    try:
        if not out.exists():
            _CREATED.add(_real(out))
        out.mkdir(parents=True, exist_ok=True)
        lock(out, flag)
        probe = out / f"{TMP_PREFIX}probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise WorkbenchError(f"{out}: {flag} is not writable: {exc.strerror or exc}") from exc
    return out


def _kind(path: Path) -> str | None:
    """What a non-regular entry is ("a symbolic link to X", "a FIFO" ...), None when it is a
    regular file, a real directory or absent."""
    import stat

    try:
        st = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"a symbolic link (to {target})"
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device")):
        if test(st.st_mode):
            return name
    return "not a regular file"


def check_targets(out: Path, writes: Sequence[str], flag: str = "--out") -> None:
    """Refuse (by name) any entry the run would write through: ``out`` itself, each name in
    ``writes`` and everything under ``figures/`` must be a regular file or a real directory
    (or absent); a symbolic link there would send the workbench's files wherever it points."""
    from workbench.common.text import safe

    fig = out / FIGURES
    entries = [out, *(out / w for w in writes), fig]
    if fig.is_dir() and not fig.is_symlink():
        entries += [fig / name for name in sorted(os.listdir(fig))]
    for entry in entries:
        kind = _kind(entry)
        if kind is not None and not (entry == out and kind.startswith("a symbolic link") and out.is_dir()):
            raise WorkbenchError(f"{safe(str(entry))}: is {safe(kind)}; the workbench writes only regular "
                                 f"files under {flag} and never through a link: remove it or choose another "
                                 f"{flag} directory")


def guard_write(path: Path) -> None:
    """Just before writing ``path`` (a file, or a folder to write into): refuse when it is a
    link or another non-regular entry (see :func:`check_targets`), so a link made after the
    check is not followed either."""
    kind = _kind(path)
    if kind is not None:
        from workbench.common.text import safe

        raise WorkbenchError(f"{safe(str(path))}: is {safe(kind)}; the workbench writes only regular "
                             "files under its output folder and never through a link")


#: the output folders this process holds locked (real path -> the folder's open descriptor)
_LOCKS: dict[str, int] = {}


def lock(out: Path, flag: str = "--out") -> None:
    """Hold ``out`` for this run: an exclusive lock on the folder itself (no lock file), so two
    runs into one folder cannot mix their files (one run's report beside the other's results).
    A second run is refused at once, by name; the lock ends with :func:`release` or the process
    (the kernel a report runs does not take it: it writes inside this run)."""
    import fcntl

    key = os.path.realpath(out)
    if key in _LOCKS:
        return
    try:
        fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # cannot be opened: the writability check that follows says why
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        from workbench.common.text import safe

        raise WorkbenchError(f"{safe(str(out))}: another workbench run is writing into this {flag} directory; "
                             "wait for it to finish or choose another directory") from None
    _LOCKS[key] = fd


def release() -> None:
    """Give up every output folder this process locked (the end of a command)."""
    while _LOCKS:
        _, fd = _LOCKS.popitem()
        try:
            os.close(fd)
        except OSError:
            pass


def write_atomic(path: str | Path, data: str | bytes | Callable[[Path], object]) -> Path:
    """Write ``data`` to a temporary file beside ``path`` and move it into place; ``data`` may
    be a function that writes the file it is given (``frame.write_parquet``, a copy)."""
    p = Path(path)
    guard_write(p)
    tmp = p.with_name(f"{TMP_PREFIX}{os.getpid()}-{p.name}")
    try:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        elif isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            data(tmp)
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


#: output folders inside a :class:`Staged` run in this process (nested stages are one stage)
_STAGED: set[str] = set()
#: output folders this process created (:func:`prepare`): a failed run removes them when empty
_CREATED: set[str] = set()


class Staged:
    """One run's writes into ``out`` as a unit: the folder ends as the whole new run or exactly
    as it was before (a full disk, a failing notebook cell, Ctrl-C or SIGTERM midway).

    On entry every entry the run will write (``writes``; ``figures`` covers its figure files) and the
    previous run's own files (its manifest) are moved, by rename (no space needed), into a
    hidden folder ``.wb-tmp-<pid>-previous`` inside ``out``. The run then writes as usual. On
    success the hidden folder is deleted (the previous run's files are replaced or, when the
    new run does not rewrite them, gone, so nothing old sits beside new results as if
    current); on any exception every file the run created is removed and the previous ones
    are renamed back, and a folder this run created is removed when it is left empty. Files
    in ``out`` that are neither the run's names nor the workbench's (``--overwrite``) are
    never touched. Hold the folder's :func:`lock` first (:func:`prepare` takes it).
    """

    def __init__(self, out: str | Path, writes: Sequence[str], manifest: str = RUN_MANIFEST):
        self.out = Path(out)
        self.writes = tuple(writes)
        self.manifest = manifest
        self.key = ""
        self.backup: Path | None = None
        self.moved: list[str] = []
        self.created = False
        self.before: set[str] = set()
        self.dirs_before: set[str] = set()

    def __enter__(self) -> Staged:
        out = self.out
        self.key = _real(out)
        if self.key in _STAGED:  # an outer stage holds this folder already
            self.key = ""
            return self
        try:
            self._stage()
        except OSError as exc:
            self.rollback()
            raise WorkbenchError(f"{out}: cannot set the previous run's files aside: {exc.strerror or exc}") from exc
        _STAGED.add(self.key)
        return self

    def _stage(self) -> None:
        out = self.out
        self.created = not out.exists() or self.key in _CREATED
        out.mkdir(parents=True, exist_ok=True)
        present = {p for p in _listing(out) if not p.split("/", 1)[0].startswith(TMP_PREFIX)}
        names = set(self.writes)
        # a file named in ``writes``; under a folder named there (figures/) the figure files
        # it would overwrite (a user's notes.txt in figures/ under --overwrite stays)
        ours = {p for p in present
                if p in names or (p.split("/", 1)[0] in names and p.endswith((".png", ".svg")))}
        ours |= (own_files(out, self.manifest) or set()) & present
        self.backup = out / f"{TMP_PREFIX}{os.getpid()}-previous"
        if ours:
            for rel in sorted(ours):
                dest = self.backup / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(out / rel, dest)
                self.moved.append(rel)
        self.before = {p for p in _listing(out) if not p.split("/", 1)[0].startswith(TMP_PREFIX)}
        self.dirs_before = _folders(out)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        if not self.key:
            return False
        _STAGED.discard(self.key)
        import shutil

        if kind is None:
            if self.backup is not None and self.backup.exists():
                shutil.rmtree(self.backup, ignore_errors=True)
            self._prune_empty()
            return False
        self.rollback()
        return False

    def rollback(self) -> None:
        """Remove what the run wrote and put the previous run's files back (never raises)."""
        import shutil

        out = self.out
        for rel in sorted(set(_listing(out)) - self.before):
            if rel.split("/", 1)[0].startswith(TMP_PREFIX) and not rel.startswith(f"{TMP_PREFIX}{os.getpid()}-"):
                continue  # another process's temporary (none while the lock is held)
            target = out / rel
            try:
                if self.backup is not None and (target == self.backup or self.backup in target.parents):
                    continue
                if target.is_file() or target.is_symlink():
                    target.unlink()
            except OSError:
                pass
        for rel in self.moved:
            assert self.backup is not None
            dest = out / rel
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.backup / rel, dest)
            except OSError:
                pass
        if self.backup is not None:
            shutil.rmtree(self.backup, ignore_errors=True)
        self._prune_empty()
        for rel in sorted(_folders(out) - self.dirs_before, key=lambda p: -p.count("/")):
            try:
                (out / rel).rmdir()  # a folder the run made (figures/), when it is empty again
            except OSError:
                pass
        if self.created:
            try:
                out.rmdir()  # only when empty
            except OSError:
                pass

    def _prune_empty(self) -> None:
        """Remove the folders the move left empty (``figures/`` of a report that an analyze run
        replaced), deepest first; ``out`` itself and folders the run never emptied stay."""
        parents = {p for rel in self.moved for p in Path(rel).parents if str(p) != "."}
        for rel in sorted(parents, key=lambda p: -len(p.parts)):
            try:
                (self.out / rel).rmdir()  # only when empty
            except OSError:
                pass


def staged(out: str | Path, writes: Sequence[str], manifest: str = RUN_MANIFEST) -> Staged:
    """The context manager :class:`Staged` (``with outdir.staged(out, names): write ...``)."""
    return Staged(out, writes, manifest)


def record(out: Path, files: Iterable[str], extra: dict[str, Any] | None = None,
           manifest: str = RUN_MANIFEST) -> Path:
    """Write the run manifest listing ``files`` (relative to ``out``) as the workbench's own."""
    doc: dict[str, Any] = dict(extra or {})
    doc[MARK] = {"files": sorted(set(files) | {manifest})}
    return write_atomic(out / manifest, json.dumps(doc, indent=2, sort_keys=True) + "\n")


def add_files(out: Path, files: Iterable[str], manifest: str = RUN_MANIFEST) -> None:
    """Add ``files`` to an existing run manifest (no-op when there is none)."""
    p = out / manifest
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(doc, dict) or not isinstance(doc.get(MARK), dict):
        return
    doc[MARK]["files"] = sorted(set(doc[MARK].get("files") or []) | set(files))
    write_atomic(p, json.dumps(doc, indent=2, sort_keys=True) + "\n")


def figure_files(out: Path) -> list[str]:
    """The files under ``out/figures`` as manifest entries."""
    fig = out / FIGURES
    if not fig.is_dir():
        return []
    return [f"{FIGURES}/{p}" for p in _listing(fig)]
