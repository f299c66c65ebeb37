"""Provenance: the results document's hash, package versions and the git commit.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from workbench.common import results
from workbench.report.model import VERSIONED, Report


def results_sha256(r: Report) -> str:
    """sha256 of the canonical results document (what results.json holds)."""
    return hashlib.sha256(results.dumps(r.doc).encode("utf-8")).hexdigest()


def versions() -> dict[str, str]:
    """Python and the versions of the packages that computed and drew the report."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_commit(path: str | Path | None = None) -> str | None:
    """The git commit of the workbench source tree (``+dirty`` with local edits), or None.

    Never raises: no git, no repository or a slow git all give None.
    """
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if head.returncode != 0:
            return None
        commit = head.stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return commit + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


