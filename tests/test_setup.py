"""The two lock files: the runtime (``make report``) and the test tooling (``make test``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock(name: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        assert re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!-]+", line), f"{name}: not pinned: {line!r}"
        pkg, version = line.split("==")
        assert _norm(pkg) not in out, f"{name}: {pkg} twice"
        out[_norm(pkg)] = version
    return out


def _requirement_name(req: str) -> str:
    return _norm(re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0])


def test_runtime_and_dev_locks_pin_everything_once() -> None:
    runtime, dev = _lock("requirements.lock"), _lock("requirements-dev.lock")
    assert not set(runtime) & set(dev), f"pinned in both: {sorted(set(runtime) & set(dev))}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for req in project["dependencies"]:
        assert _requirement_name(req) in runtime, f"runtime dependency {req} not in requirements.lock"
    assert set(project["optional-dependencies"]) == {"dev", "lab", "dask"}  # duckdb is a runtime dependency now
    assert "duckdb" in runtime  # the JSONL engine (workbench/ingest/engine.py)
    for extra in ("dev", "lab", "dask"):
        for req in project["optional-dependencies"][extra]:
            assert _requirement_name(req) in dev, f"{extra} dependency {req} not in requirements-dev.lock"
    # the test and browser tooling is not what a report-only user installs
    for tool in ("pytest", "playwright", "hypothesis", "ruff", "jupyterlab"):
        assert tool not in runtime and tool in dev, tool


def test_installer_pin_is_separate_from_the_project_locks() -> None:
    # make installs the lock files with uv; uv itself is pinned on its own, not a dependency
    uv = _lock("requirements-uv.lock")
    assert list(uv) == ["uv"], uv
    assert not set(uv) & (set(_lock("requirements.lock")) | set(_lock("requirements-dev.lock")))
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "uv pip install --compile-bytecode --python $(BIN)/python $(1)" in make and "-r requirements-uv.lock" in make
    assert "python -m pip install --progress-bar on $(1)" in make  # the pip fallback
