"""Executing the report notebook: papermill with ipykernel from this interpreter.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.common.errors import WorkbenchError


def notebook_path() -> Path:
    """The report notebook, ``workbench/notebooks/reanalysis.ipynb``: its one copy, shipped in
    the package (open it in JupyterLab from there, or copy it)."""
    return Path(__file__).resolve().parent.parent / "notebooks" / "reanalysis.ipynb"


def kernel_log_path() -> Path:
    """Where this process's report kernel writes its own log (removed when the run ends well)."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"workbench-kernel-{os.getpid()}.log"


def _log_tail(limit: int = 300) -> str:
    try:
        text = kernel_log_path().read_text("utf-8", errors="replace").strip()
    except OSError:
        return ""
    return text.splitlines()[-1][:limit] if text else ""


#: the longest Unix socket path (sun_path is 108 bytes with its NUL on Linux)
IPC_PATH_MAX = 107


def _kernel_manager_class() -> type:
    """A kernel manager that starts ipykernel in *this* interpreter (the venv), whatever
    kernelspecs the machine has: a fresh machine needs no ``ipykernel install``."""
    import tempfile
    import uuid

    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec
    from traitlets import CaselessStrEnum, default

    class VenvKernelManager(AsyncKernelManager):  # type: ignore[misc]
        # Unix sockets: no TCP port to open (or to leave unencrypted) for a local batch run.
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        @default("ip")
        def _unique_ipc_path(self) -> str:
            # jupyter_client's default is the relative "kernel-ipc": two reports running in one
            # folder (a batch) would share sockets. One absolute path per kernel instead, short
            # enough for a Unix socket (sun_path holds 107 bytes; a long TMPDIR gave
            # "ZMQError: File name too long"): the temporary folder, else /tmp
            name = f"wb-kernel-{uuid.uuid4().hex[:16]}"
            for folder in (tempfile.gettempdir(), "/tmp"):
                path = os.path.join(folder, name)
                if len(os.fsencode(path)) + len("-65535") <= IPC_PATH_MAX and os.access(folder, os.W_OK):
                    return path
            raise WorkbenchError(f"no folder for the report kernel's sockets: {tempfile.gettempdir()} gives a "
                                 f"socket path over {IPC_PATH_MAX} bytes and /tmp is not writable; set "
                                 "TMPDIR to a shorter folder")

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            # the kernel's own log (IPKernelApp's "Exception in message handler" when it is
            # stopped mid-cell, debugger warnings) goes to a file, not the user's terminal:
            # papermill reports a cell's error itself; :func:`execute` names the log on failure
            import subprocess

            log = kernel_log_path()
            kw["stdout"] = subprocess.DEVNULL
            kw["stderr"] = open(log, "ab")  # noqa: SIM115 - the kernel process holds it
            try:
                await super()._async_launch_kernel(kernel_cmd, **kw)
            finally:
                kw["stderr"].close()

        @property
        def kernel_spec(self) -> KernelSpec:
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(
                    # -P (Python >= 3.11) and ignore_cwd: the kernel's working directory is NOT
                    # put on sys.path, so a `workbench/` folder in it cannot shadow the installed
                    # package (it did: MultiplexedPath.joinpath() errors in the report cell)
                    argv=[sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []),
                          "-m", "ipykernel_launcher", "--IPKernelApp.ignore_cwd=True",
                          "-f", "{connection_file}"],
                    display_name=f"Python {platform.python_version()} ({sys.prefix})",
                    language="python",
                    metadata={},
                    env={},
                    resource_dir="",
                )
            return self._kernel_spec

    return VenvKernelManager


def execute(
    out_dir: str | Path,
    parameters: Mapping[str, Any],
    notebook: str | Path | None = None,
    progress: bool = False,
    cwd: str | Path | None = None,
) -> Path:
    """Execute the report notebook with papermill into ``out_dir/report.ipynb``.

    Raises :class:`WorkbenchError` naming the failing cell when a cell raises (the executed
    notebook is still written, with the traceback in it).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "report.ipynb"
    # papermill saves the notebook after every cell: it writes a temporary name, moved into
    # place when the run ends (a failing run's notebook too, with its traceback), and removed
    # when the run is interrupted, so no partial report.ipynb is left as if current
    tmp = out / f".wb-tmp-{os.getpid()}-report.ipynb"
    env_before = os.environ.get("PYDEVD_DISABLE_FILE_VALIDATION")
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = (
        "1"  # silences a debugger warning in the kernel's stderr
    )
    try:
        papermill.execute_notebook(
            str(notebook or notebook_path()),
            str(tmp),
            parameters=dict(parameters),
            kernel_name="python3",
            progress_bar=progress,
            cwd=str(cwd or os.getcwd()),
            kernel_manager_class=_kernel_manager_class(),
            log_output=False,
        )
        os.replace(tmp, target)
    except PapermillExecutionError as exc:
        if tmp.is_file():
            os.replace(tmp, target)
        raise WorkbenchError(
            f"report notebook failed in cell {exc.cell_index + 1}: {exc.ename}: {exc.evalue} "
            f"(see {target})"
        ) from exc
    except (RuntimeError, OSError, TimeoutError) as exc:  # the kernel did not start or died
        tmp.unlink(missing_ok=True)
        tail = _log_tail()
        raise WorkbenchError(f"report notebook could not run: {type(exc).__name__}: {exc}"
                             + (f" (the kernel's log {kernel_log_path()} ends: {tail})" if tail else "")) from exc
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): nothing partial stays
        tmp.unlink(missing_ok=True)
        kernel_log_path().unlink(missing_ok=True)
        raise
    else:
        kernel_log_path().unlink(missing_ok=True)
    finally:
        if env_before is None:
            os.environ.pop("PYDEVD_DISABLE_FILE_VALIDATION", None)
        else:
            os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = env_before
    return target


