"""Build a :class:`Report`: run the analysis the way ``workbench report`` does.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.common import config as config_mod
from workbench.common.errors import WorkbenchError
from workbench.report.model import Report
from workbench.report.prose import leads


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
    from workbench.document import cliargs

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


class ParameterError(WorkbenchError):
    """A notebook parameter of the wrong type (as papermill passed it): one line naming it.

    In the notebook's kernel it shows as that line, not as a traceback through the workbench."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for an exception's traceback
        return [f"{type(self).__name__}: {self}"]


_TEXT = ("config", "preset", "plan", "published", "claims", "engine", "scheduler", "out", "command_line")
_INTS = ("min_valid_n", "min_clusters", "resamples", "seed", "jobs")
_BOOLS = ("no_gate", "write_outputs")


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _flag(name: str, value: Any) -> bool:
    """A boolean parameter: True/False, or the strings true/false (any case); nothing else
    (the string "false" is truthy in Python: papermill's ``-p no_gate false`` passes it)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ParameterError(f"parameter {name}: expected true or false, got {_shown(value)}")


def _integer(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ParameterError(f"parameter {name}: expected a whole number, got {_shown(value)}")


def validate_parameters(values: Mapping[str, Any]) -> dict[str, Any]:
    """The notebook's parameters checked by type as papermill passes them (``-p`` gives
    strings, numbers and booleans; ``-y`` any YAML value): booleans from true/false only,
    whole numbers from ints or digit strings, paths from strings; ``inputs`` a path or a list
    of paths. Returns the values typed; raises :class:`ParameterError` naming the parameter."""
    out = dict(values)
    inputs = values.get("inputs")
    if inputs is not None:
        items = [inputs] if isinstance(inputs, str | Path) else inputs
        if not isinstance(items, list | tuple) or not all(isinstance(i, str | Path) for i in items):
            raise ParameterError(f"parameter inputs: expected a path or a list of paths, got {_shown(inputs)}")
    for name in _TEXT:
        v = values.get(name)
        if v is not None and not isinstance(v, str | Path):
            raise ParameterError(f"parameter {name}: expected a path or name (text), got {_shown(v)}")
    for name in _INTS:
        if name in values:
            out[name] = _integer(name, values[name])
    for name in _BOOLS:
        if name in values:
            out[name] = _flag(name, values[name])
    conf = values.get("confidence")
    if conf is not None:
        try:
            ok = not isinstance(conf, bool) and 0.0 < float(conf) < 1.0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ParameterError(f"parameter confidence: expected a number between 0 and 1, got {_shown(conf)}")
        out["confidence"] = float(conf)
    params = values.get("params")
    if params is not None and (not isinstance(params, list | tuple) or not all(
            isinstance(p, list | tuple) and len(p) == 2 for p in params)):
        raise ParameterError(f"parameter params: expected a list of [NAME, VALUE] pairs, got {_shown(params)}")
    subsets = values.get("subsets")
    if subsets is not None and not isinstance(subsets, Mapping):
        raise ParameterError(f"parameter subsets: expected a mapping of name to filter, got {_shown(subsets)}")
    return out


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
    """Run the analysis (:func:`workbench.document.pipeline.run`) the way ``workbench report`` does.

    The parameters are the notebook's ``parameters`` cell; the config is built by the same
    code as the CLI's, so a notebook run and ``workbench analyze`` with the same flags write the
    same results document. ``out`` (default ``report``) receives ``results.json`` and
    ``rows.parquet`` here when ``write_outputs`` (``workbench report`` wrote them already and
    passes False, so the provenance section checks its file against this computation), and
    ``report.html`` from :func:`workbench.report.finish`.
    """
    from workbench.document import cliargs, pipeline

    checked = validate_parameters({
        "inputs": inputs, "config": config, "preset": preset, "plan": plan, "published": published,
        "claims": claims, "params": params, "min_valid_n": min_valid_n, "min_clusters": min_clusters,
        "confidence": confidence, "resamples": resamples, "seed": seed, "subsets": subsets, "engine": engine,
        "jobs": jobs, "scheduler": scheduler, "out": out, "no_gate": no_gate, "write_outputs": write_outputs,
        "command_line": command_line})
    min_valid_n, min_clusters, resamples, seed, jobs = (checked[k] for k in _INTS)
    no_gate, write_outputs, confidence = checked["no_gate"], checked["write_outputs"], checked["confidence"]
    if inputs is None or (not isinstance(inputs, str | Path) and not list(inputs)):
        raise ParameterError(
            "no inputs given: set `inputs` (a path or a list of paths), e.g. "
            "papermill ... -y '{inputs: [rows.jsonl]}' or workbench report rows.jsonl"
        )
    paths = [str(inputs)] if isinstance(inputs, str | Path) else [str(p) for p in inputs]
    pairs = [list(p) for p in params or ()]
    out_dir = str(out) if out is not None else "report"
    over = overrides(pairs, min_valid_n, min_clusters, seed, resamples, confidence, subsets)
    cfg = config_mod.load_config(config, preset, over or None)
    from workbench.ingest.execute import Execution

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


