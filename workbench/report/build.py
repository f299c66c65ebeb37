"""Build a :class:`Report`: run the analysis the way ``workbench report`` does.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config as config_mod
from ..errors import WorkbenchError
from .model import Report
from .prose import leads


def overrides(
    params: Sequence[Sequence[str]] = (),
    min_valid_n: int | None = None,
    min_clusters: int | None = None,
    seed: int | None = None,
    resamples: int | None = None,
    confidence: float | None = None,
    subsets: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Config overrides exactly as the CLI builds them (``-p NAME VALUE`` pairs, then flags)."""
    from .. import cliargs

    ns = argparse.Namespace(
        param=[(str(p[0]), str(p[1])) for p in params],
        min_valid_n=min_valid_n,
        min_clusters=min_clusters,
        seed=seed,
        resamples=resamples,
    )
    over = cliargs.overrides_from_args(ns)
    if confidence is not None:
        over["confidence"] = confidence
    if subsets is not None:
        over["subsets"] = dict(subsets)
    return over


def build(
    inputs: Sequence[str | Path] | str | Path | None = None,
    config: str | None = None,
    preset: str | None = None,
    plan: str | None = None,
    published: str | None = None,
    claims: str | None = None,
    params: Sequence[Sequence[str]] | None = None,
    min_valid_n: int | None = None,
    min_clusters: int | None = None,
    confidence: float | None = None,
    resamples: int | None = None,
    seed: int | None = None,
    subsets: Mapping[str, Any] | None = None,
    engine: str | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    out: str | Path | None = None,
    no_gate: bool = False,
    write_outputs: bool = True,
    command_line: str | None = None,
) -> Report:
    """Run the analysis (:func:`workbench.pipeline.run`) the way ``workbench report`` does.

    The parameters are the notebook's ``parameters`` cell; the config is built by the same
    code as the CLI's, so a notebook run and ``workbench analyze`` with the same flags write the
    same results document. ``out`` (default ``report``) receives ``results.json`` and
    ``rows.parquet`` here when ``write_outputs`` (``workbench report`` wrote them already and
    passes False, so the provenance section checks its file against this computation), and
    ``report.html`` from :func:`workbench.report.finish`.
    """
    from .. import cliargs, pipeline

    if inputs is None or (not isinstance(inputs, str | Path) and not list(inputs)):
        raise WorkbenchError(
            "no inputs given: set `inputs` (a path or a list of paths), e.g. "
            "papermill ... -y '{inputs: [rows.jsonl]}' or workbench report rows.jsonl"
        )
    paths = [str(inputs)] if isinstance(inputs, str | Path) else [str(p) for p in inputs]
    pairs = [list(p) for p in params or ()]
    out_dir = str(out) if out is not None else "report"
    over = overrides(pairs, min_valid_n, min_clusters, seed, resamples, confidence, subsets)
    cfg = config_mod.load_config(config, preset, over or None)
    from ..execute import Execution

    # where ingest runs (never part of results.json): a report of URL inputs reads them as
    # `workbench report --engine dask` did
    execution = Execution(engine=engine or "local", jobs=jobs, scheduler=scheduler)
    analysis = pipeline.run(paths, cfg, plan=plan, published=published, claims=claims, execution=execution)
    given = {
        "inputs": paths,
        "config": config,
        "preset": preset,
        "plan": plan,
        "published": published,
        "claims": claims,
        "params": pairs,
        "min_valid_n": min_valid_n,
        "min_clusters": min_clusters,
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "subsets": dict(subsets) if subsets is not None else None,
        "engine": engine,
        "jobs": jobs,
        "scheduler": scheduler,
        "out_dir": out_dir,
    }
    cmd = command_line or command_for(given)
    rep = Report(analysis=analysis, parameters=given, out_dir=Path(out_dir), command_line=cmd)
    rep.no_gate = bool(no_gate)
    rep.leads = leads(rep)
    if write_outputs:
        cliargs.write_outputs(analysis, rep.out_dir, argv=shlex.split(cmd))
    rep.kernel_start = _execution_count()
    return rep


def _execution_count() -> int | None:
    """The IPython execution count of the running cell (None outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        return None
    shell = get_ipython()
    return None if shell is None else int(shell.execution_count)


def command_for(p: Mapping[str, Any]) -> str:
    """The ``workbench report`` command that reproduces a parameter set."""
    argv = ["workbench", "report", *p["inputs"], "--out", str(p.get("out") or p.get("out_dir") or "report")]
    for flag in ("config", "preset", "plan", "published", "claims"):
        if p.get(flag) is not None:
            argv += [f"--{flag}", str(p[flag])]
    for flag, key in (
        ("--min-valid-n", "min_valid_n"),
        ("--min-clusters", "min_clusters"),
        ("--seed", "seed"),
        ("--resamples", "resamples"),
    ):
        if p.get(key) is not None:
            argv += [flag, str(p[key])]
    for name, value in p.get("params") or ():
        argv += ["-p", str(name), str(value)]
    if p.get("confidence") is not None:
        argv += ["-p", "confidence", str(p["confidence"])]
    if p.get("subsets") is not None:
        argv += ["-p", "subsets", json.dumps(p["subsets"], sort_keys=True)]
    if p.get("engine") not in (None, "local"):
        argv += ["--engine", str(p["engine"])]
    for flag in ("jobs", "scheduler"):
        if p.get(flag) is not None:
            argv += [f"--{flag}", str(p[flag])]
    return shlex.join(argv)


