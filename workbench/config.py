"""Configuration: where fields live in a row, what counts as a score, analysis parameters.

The defaults describe the post-mortem's judge format exactly, so such a file needs no config.
A YAML file (``--config``) or a shipped preset (``--preset``) changes any of it; see
``docs/config.md`` for every key. :class:`Config` is frozen and travels explicitly through
every stage: the CLI and the notebook build it the same way, so they cannot disagree.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

KEY_FIELDS: tuple[str, ...] = ("scenario", "variant", "trial", "judge")

PathToken = str | int
FieldPath = tuple[PathToken, ...]

DEFAULTS: dict[str, Any] = {
    "keys": {k: k for k in KEY_FIELDS},
    "scores": {
        "overall": "overall",
        "correctness": "correctness",
        "completeness": "completeness",
        "depth": "depth",
        "citations": "citations",
        "honesty": "honesty",
    },
    "headline": "overall",
    "flags": "fabrication_flags",
    "verdict": "verdict",
    "constants": {},
    "path_fields": None,
    "format": "auto",
    "rubric": {"min": 1, "max": 10},
    "missing_values": [],
    "numeric_strings": "reject",
    "preference": None,
    "values": None,
    "explode": None,
    "reader": None,
    "aliases": {},
    "extra_fields": {},
    "cross_check": [],
    "harness": None,
    "tasks": None,
    "unit": None,
    "subsets": {},
    "min_valid_n": 10,
    "min_clusters": 3,
    "confidence": 0.95,
    "bootstrap": {"resamples": 10000, "seed": 20260819},
    "alpha": 0.05,
    "power": 0.8,
    "target_effect": 0.5,
    "contrasts": None,
    "pass": {"field": None, "threshold": None, "gate": None, "k": None},
    "equivalence_margin": None,
    "trials_matched": False,
    "consistency": {"overall_vs_subscores": 3.0, "honesty_high": 8},
}

PRESETS: tuple[str, ...] = ("mt-bench", "mt-bench-pair", "alpaca-eval", "wildbench", "arena-hard",
                             "inspect", "arena-hard-v1")

AUTO = "auto"
"""``--preset auto``: detect the preset from the files (:mod:`workbench.detect`)."""

READERS: tuple[str, ...] = ("inspect",)
"""Native readers besides JSON lines / arrays (``reader:``): see :mod:`workbench.formats`."""

HARNESS_RULES: tuple[str, ...] = ("fastchat_single", "fastchat_pairwise", "alpaca_eval", "wildbench",
                                  "arena_hard", "inspect")
"""Harness scoring rules a preset can name (``harness: {rule: ...}``): :mod:`workbench.harness`."""

_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def parse_path(text: str, where: str = "config") -> FieldPath:
    """Return the tokens of a field path: ``meta.judge[0]`` -> ``("meta", "judge", 0)``."""
    if not isinstance(text, str) or not text:
        raise ConfigError(f"{where}: a field path must be a non-empty string, got {text!r}")
    tokens: list[PathToken] = []
    pos = 0
    while pos < len(text):
        if text[pos] == "." and tokens:
            pos += 1
        m = _TOKEN.match(text, pos)
        if not m:
            raise ConfigError(f"{where}: cannot parse field path {text!r} at position {pos}")
        tokens.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if not isinstance(tokens[0], str):
        raise ConfigError(f"{where}: field path {text!r} must start with a field name")
    return tuple(tokens)


@dataclass(frozen=True)
class Config:
    """Everything that decides how rows are read and analysed. Build with :func:`load_config`."""

    keys: dict[str, tuple[FieldPath, ...] | None]
    key_text: dict[str, Any]
    scores: tuple[tuple[str, FieldPath], ...]
    headline: str
    flags: FieldPath | None
    verdict: FieldPath | None
    constants: dict[str, str]
    path_fields: str | None
    format: str
    rubric_min: float
    rubric_max: float
    missing_values: tuple[Any, ...]
    numeric_strings: bool
    preference: dict[float, float] | None
    values: dict[str, tuple[float, float]] | None
    explode: dict[str, Any] | None
    reader: str | None
    aliases: dict[str, tuple[str, ...]]
    extra_fields: dict[str, FieldPath]
    cross_check: tuple[dict[str, str], ...]
    harness: dict[str, Any] | None
    tasks: dict[str, Any] | None
    unit: dict[str, Any]
    subsets: dict[str, dict[str, tuple[str, ...]]]
    min_valid_n: int
    min_clusters: int
    confidence: float
    resamples: int
    seed: int
    alpha: float
    power: float
    target_effect: float
    contrasts: tuple[tuple[str, str], ...] | None
    pass_field: FieldPath | None
    pass_threshold: float | None
    pass_gate: float | None
    consistency_gap: float
    honesty_high: float
    pass_k: int | None = None
    equivalence_margin: float | None = None
    trials_matched: bool = False
    preference_scale: tuple[float, float] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    sources: tuple[str, ...] = ()

    @property
    def native(self) -> bool:
        """True when files go through :mod:`workbench.formats` (explode, aliases or a reader)."""
        return bool(self.explode or self.reader or self.aliases)

    @property
    def credit(self) -> bool:
        """True when the headline is win credit in percent (a preference or a value mapping)."""
        return self.preference is not None or self.preference_scale is not None or (
            self.values is not None and self.unit.get("name") == "percent")

    @property
    def score_names(self) -> tuple[str, ...]:
        """Logical names of the rubric fields, headline included, in display order."""
        return tuple(name for name, _ in self.scores)

    @property
    def subscores(self) -> tuple[str, ...]:
        """Rubric fields other than the headline."""
        return tuple(name for name, _ in self.scores if name != self.headline)

    @property
    def value_range(self) -> tuple[float, float]:
        """The range of usable values: the rubric, or 0-100 (percent) for preferences."""
        if self.credit:
            return (0.0, 100.0)
        if self.values is not None:
            nums = [v for v, _ in self.values.values()]
            return (min(nums), max(nums))
        return (self.rubric_min, self.rubric_max)

    @property
    def value_unit(self) -> str:
        """What a headline mean is: ``rubric points``, ``percent`` (win rate) or the unit the
        config declares (``unit: {name: ...}``)."""
        if self.unit.get("name"):
            return str(self.unit["name"])
        return "percent" if self.credit else "rubric points"

    @property
    def decimals(self) -> int:
        """Decimals for a rendered headline number: ``unit.decimals``, else enough to order cells
        on the value range (2 on a 1-10 rubric or 0-100, 3 on a 1-2 or 0-1 scale, 4 below)."""
        if "decimals" in self.unit:
            return int(self.unit["decimals"])
        lo, hi = self.value_range
        span = hi - lo
        return 2 if span >= 5 else 3 if span >= 0.5 else 4

    def with_overrides(self, **params: Any) -> Config:
        """Return a copy with analysis parameters replaced (``min_valid_n=12``, ``seed=1``...)."""
        unknown = set(params) - set(self.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        return replace(self, **params)

    def to_dict(self) -> dict[str, Any]:
        """The effective configuration as plain data (recorded in results.json)."""
        return copy.deepcopy(self.raw)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in ("scores", "values", "preference"):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def preset_text(name: str) -> str:
    """Return the YAML text of a shipped preset."""
    if name == AUTO:
        raise ConfigError("preset 'auto' is chosen from the input files: the CLI resolves it; from "
                          "Python call workbench.detect.detect(paths) and pass the preset it names")
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(PRESETS)}")
    try:
        return resources.files("workbench").joinpath("presets", f"{name}.yaml").read_text("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"preset {name!r} is not installed with this package") from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error (its ``str`` spans several lines with a caret drawing)."""
    problem = getattr(exc, "problem", None)
    if problem is None:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        problem = lines[0] if lines else type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {_yaml_problem(exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def _layers(path: str | None, preset: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    layers: list[dict[str, Any]] = []
    sources: list[str] = []
    user: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"{path}: config file not found")
        try:
            text = p.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read config: {exc}") from exc
        user = _read_yaml(text, path)
    base = preset or user.get("extends")
    if base is not None:
        layers.append(_read_yaml(preset_text(base), f"preset {base}"))
        sources.append(f"preset:{base}")
    if path is not None:
        layers.append({k: v for k, v in user.items() if k != "extends"})
        sources.append(str(path))
    return layers, sources


def load_config(
    path: str | None = None, preset: str | None = None, overrides: dict[str, Any] | None = None
) -> Config:
    """Build a :class:`Config` from defaults, an optional preset, a YAML file and overrides.

    ``overrides`` uses the YAML keys (``{"min_valid_n": 12, "bootstrap": {"seed": 3}}``).
    Unknown keys are an error naming the file, never ignored.
    """
    layers, sources = _layers(path, preset)
    merged = copy.deepcopy(DEFAULTS)
    for layer, where in zip(layers, sources, strict=True):
        unknown = set(layer) - set(DEFAULTS) - {"extends"}
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(sorted(unknown))}; see docs/config.md"
            )
        merged = _merge(merged, {k: v for k, v in layer.items() if k != "extends"})
    if overrides:
        unknown = set(overrides) - set(DEFAULTS)
        if unknown:
            raise ConfigError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        merged = _merge(merged, overrides)
        sources.append("parameters")
    return _build(merged, tuple(sources) or ("defaults",))


def _num(v: Any, name: str, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ConfigError(f"config: {name} must be a number, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ConfigError(f"config: {name} must be in [{lo}, {hi}], got {v!r}")
    return float(v)


def _int(v: Any, name: str, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ConfigError(f"config: {name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"config: {name} must be true or false, got {v!r}")
    return v


def _section(m: dict[str, Any], name: str) -> dict[str, Any]:
    """A config section that must be a mapping (``rubric: {min: 1, max: 10}``), or {} if unset."""
    value = m.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"config: {name} must be a mapping (see docs/config.md), got {value!r}")
    return value


def _values(v: Any) -> dict[str, tuple[float, float]] | None:
    """``values:``: label -> credit, or label -> {value, weight}; returns label -> (value, weight)."""
    if v is None:
        return None
    if not isinstance(v, dict) or not v:
        raise ConfigError('config: values must map labels to numbers, e.g. {"A>>B": 0, "A>B": 0.25}')
    out: dict[str, tuple[float, float]] = {}
    for label, spec in v.items():
        if isinstance(spec, dict):
            extra = set(spec) - {"value", "weight"}
            if extra or "value" not in spec:
                raise ConfigError(f"config: values.{label}: expected a number or {{value, weight}}")
            out[str(label)] = (_num(spec["value"], f"values.{label}.value"),
                               _num(spec.get("weight", 1), f"values.{label}.weight", 0))
        else:
            out[str(label)] = (_num(spec, f"values.{label}"), 1.0)
    return out


def _explode(v: Any) -> dict[str, Any] | None:
    """``explode:``: one row holding several judgments -> one row per judgment."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ConfigError("config: explode must be a mapping {field: LIST_FIELD | fields: [...], as, "
                          "position, positions, flip}")
    extra = set(v) - {"field", "fields", "as", "position", "positions", "flip"}
    if extra:
        raise ConfigError(f"config: explode: unknown key(s) {sorted(map(str, extra))}")
    if ("field" in v) == ("fields" in v):
        raise ConfigError("config: explode needs exactly one of field (a list field) or fields (a list "
                          "of fields, one judgment each)")
    fields = v.get("fields")
    if fields is not None and (not isinstance(fields, list) or not fields
                               or not all(isinstance(f, str) and f for f in fields)):
        raise ConfigError("config: explode.fields must be a non-empty list of field names")
    if "field" in v and (not isinstance(v["field"], str) or not v["field"]):
        raise ConfigError("config: explode.field must be a field name")
    position = v.get("position", "trial")
    if position not in KEY_FIELDS:
        raise ConfigError(f"config: explode.position must be a key field {KEY_FIELDS}, got {position!r}")
    positions = v.get("positions")
    if positions is not None:
        _int(positions, "explode.positions", 1)
    flip = v.get("flip") or []
    if not isinstance(flip, list):
        raise ConfigError("config: explode.flip must be a list of positions, e.g. [2]")
    return {"field": v.get("field"), "fields": tuple(fields) if fields else None,
            "as": str(v.get("as", "game")), "position": position, "positions": positions,
            "flip": tuple(str(f) for f in flip)}


def _build(m: dict[str, Any], sources: tuple[str, ...]) -> Config:
    keys_in = m["keys"] or {}
    if not isinstance(keys_in, dict):
        raise ConfigError("config: keys must be a mapping of key field -> path")
    bad = set(keys_in) - set(KEY_FIELDS)
    if bad:
        raise ConfigError(f"config: keys: unknown key field(s) {sorted(bad)}; use {KEY_FIELDS}")
    keys: dict[str, tuple[FieldPath, ...] | None] = {}
    for k in KEY_FIELDS:
        spec = keys_in.get(k, k)
        if spec is None:
            keys[k] = None
        elif isinstance(spec, list):
            if not spec:
                raise ConfigError(f"config: keys.{k}: a composite key needs at least one path")
            keys[k] = tuple(parse_path(s, f"config: keys.{k}") for s in spec)
        else:
            keys[k] = (parse_path(spec, f"config: keys.{k}"),)

    scores_in = m["scores"]
    if isinstance(scores_in, list):
        scores_in = {s: s for s in scores_in}
    if not isinstance(scores_in, dict) or not scores_in:
        raise ConfigError("config: scores must be a non-empty mapping of name -> path")
    scores = tuple(
        (str(name), parse_path(p if p is not None else name, f"config: scores.{name}"))
        for name, p in scores_in.items()
    )
    names = [n for n, _ in scores]
    reserved = set(KEY_FIELDS) | {"file", "line", "bucket", "reason", "verdict", "flags"}
    clash = [n for n in names if n in reserved or "__" in n]
    if clash:
        raise ConfigError(f"config: scores: names {clash} clash with reserved column names")
    headline = m["headline"]
    if headline not in names:
        raise ConfigError(f"config: headline {headline!r} is not one of scores {names}")

    rubric = _section(m, "rubric")
    rmin = _num(rubric.get("min"), "rubric.min")
    rmax = _num(rubric.get("max"), "rubric.max")
    if rmin >= rmax:
        raise ConfigError(f"config: rubric.min ({rmin}) must be below rubric.max ({rmax})")

    ns = m["numeric_strings"]
    if ns not in ("reject", "accept"):
        raise ConfigError(f"config: numeric_strings must be 'reject' or 'accept', got {ns!r}")
    fmt = m["format"]
    if fmt not in ("auto", "jsonl", "json-array"):
        raise ConfigError(f"config: format must be auto, jsonl or json-array, got {fmt!r}")

    mv = m["missing_values"] or []
    if not isinstance(mv, list) or any(isinstance(v, dict | list) for v in mv):
        raise ConfigError("config: missing_values must be a list of numbers or strings")

    pref = m["preference"]
    preference: dict[float, float] | None = None
    pref_scale: tuple[float, float] | None = None
    if pref is not None:
        if not isinstance(pref, dict) or not pref:
            raise ConfigError("config: preference must map raw values to win credit, e.g. {1: 0, 2: 1}")
        if "continuous" in pref or "codes" in pref:
            extra = set(pref) - {"continuous", "codes"}
            if extra:
                raise ConfigError(f"config: preference: unknown key(s) {sorted(map(str, extra))}; "
                                  "use continuous: [lo, hi] and codes: {raw: credit}")
            cont = pref.get("continuous")
            if cont is not None:
                if not isinstance(cont, list) or len(cont) != 2:
                    raise ConfigError("config: preference.continuous must be [lo, hi], e.g. [1, 2]")
                lo_p, hi_p = _num(cont[0], "preference.continuous[0]"), _num(cont[1], "preference.continuous[1]")
                if lo_p >= hi_p:
                    raise ConfigError("config: preference.continuous: lo must be below hi")
                pref_scale = (lo_p, hi_p)
            codes = pref.get("codes") or {}
            if not isinstance(codes, dict):
                raise ConfigError("config: preference.codes must map raw values to win credit")
            preference = {_num(k, "preference code"): _num(v, "preference credit", 0, 1)
                          for k, v in codes.items()}
        else:
            preference = {_num(k, "preference key"): _num(v, "preference value", 0, 1) for k, v in pref.items()}

    value_map = _values(m["values"])
    explode = _explode(m["explode"])
    reader = m["reader"]
    if reader is not None and reader not in READERS:
        raise ConfigError(f"config: reader must be one of {', '.join(READERS)} or null, got {reader!r}")
    aliases_in = _section(m, "aliases")
    aliases: dict[str, tuple[str, ...]] = {}
    for k, v in aliases_in.items():
        alts = v if isinstance(v, list) else [v]
        if not alts or not all(isinstance(a, str) and a for a in alts):
            raise ConfigError(f"config: aliases.{k} must be a field name or a list of field names")
        aliases[str(k)] = tuple(alts)
    extra_fields = {str(k): parse_path(v, f"config: extra_fields.{k}")
                    for k, v in _section(m, "extra_fields").items()}
    cross = m["cross_check"] or []
    if not isinstance(cross, list):
        raise ConfigError("config: cross_check must be a list of {field, path, compare}")
    cross_check = []
    for i, c in enumerate(cross):
        if not isinstance(c, dict) or not {"field", "path"} <= set(c) or set(c) - {"field", "path", "compare"}:
            raise ConfigError(f"config: cross_check[{i}] must be {{field: COLUMN, path: COLUMN, compare: "
                              "equal|suffix}}")
        cmp = c.get("compare", "equal")
        if cmp not in ("equal", "suffix"):
            raise ConfigError(f"config: cross_check[{i}].compare must be equal or suffix, got {cmp!r}")
        cross_check.append({"field": str(c["field"]), "path": str(c["path"]), "compare": cmp})
    harness = m["harness"]
    if harness is not None:
        if not isinstance(harness, dict) or harness.get("rule") not in HARNESS_RULES:
            raise ConfigError(f"config: harness must be {{rule: NAME, ...}} with NAME one of "
                              f"{', '.join(HARNESS_RULES)}, got {harness!r}")
    tasks = m["tasks"]
    if tasks is not None and (not isinstance(tasks, dict) or not isinstance(tasks.get("file"), str)
                              or not isinstance(tasks.get("key"), str | list)):
        raise ConfigError("config: tasks must be {file: PATH relative to the input, key: FIELD}")
    unit = _section(m, "unit")
    bad_unit = set(unit) - {"name", "decimals", "scale"}
    if bad_unit:
        raise ConfigError(f"config: unit: unknown key(s) {sorted(bad_unit)}; use name, decimals, scale")
    if "decimals" in unit:
        _int(unit["decimals"], "unit.decimals", 0)

    subsets_in = m["subsets"] or {}
    if not isinstance(subsets_in, dict):
        raise ConfigError("config: subsets must be a mapping name -> {scenario: [...]}")
    subsets: dict[str, dict[str, tuple[str, ...]]] = {}
    for name, spec in subsets_in.items():
        if not isinstance(spec, dict) or not spec:
            raise ConfigError(f"config: subsets.{name} must map a key field to a list of values")
        sub: dict[str, tuple[str, ...]] = {}
        for fld, values in spec.items():
            if fld not in KEY_FIELDS or not isinstance(values, list):
                raise ConfigError(
                    f"config: subsets.{name}.{fld}: expected a key field with a list of values"
                )
            sub[fld] = tuple(str(v) for v in values)
        subsets[str(name)] = sub

    constants = {str(k): str(v) for k, v in _section(m, "constants").items()}
    bad = set(constants) - set(KEY_FIELDS)
    if bad:
        raise ConfigError(f"config: constants may set key fields only, not {sorted(bad)}")

    pf = m["path_fields"]
    if pf is not None:
        try:
            rx = re.compile(pf)
        except re.error as exc:
            raise ConfigError(f"config: path_fields is not a valid regex: {exc}") from exc
        if not rx.groupindex:
            raise ConfigError("config: path_fields needs named groups, e.g. (?P<judge>...)")

    boot = _section(m, "bootstrap")
    contrasts = m["contrasts"]
    if contrasts is not None:
        if not isinstance(contrasts, list) or any(
            not isinstance(c, list) or len(c) != 2 for c in contrasts
        ):
            raise ConfigError("config: contrasts must be a list of [a, b] pairs")
        contrasts = tuple((str(a), str(b)) for a, b in contrasts)
    pas = _section(m, "pass")
    cons = _section(m, "consistency")

    def opt_path(v: Any, name: str) -> FieldPath | None:
        return None if v is None else parse_path(v, f"config: {name}")

    return Config(
        keys=keys,
        key_text={k: keys_in.get(k, k) for k in KEY_FIELDS},
        scores=scores,
        headline=headline,
        flags=opt_path(m["flags"], "flags"),
        verdict=opt_path(m["verdict"], "verdict"),
        constants=constants,
        path_fields=pf,
        format=fmt,
        rubric_min=rmin,
        rubric_max=rmax,
        missing_values=tuple(mv),
        numeric_strings=ns == "accept",
        preference=preference,
        values=value_map,
        explode=explode,
        reader=reader,
        aliases=aliases,
        extra_fields=extra_fields,
        cross_check=tuple(cross_check),
        harness=harness,
        tasks=tasks,
        unit=dict(unit),
        preference_scale=pref_scale,
        subsets=subsets,
        min_valid_n=_int(m["min_valid_n"], "min_valid_n", 1),
        min_clusters=_int(m["min_clusters"], "min_clusters", 1),
        confidence=_num(m["confidence"], "confidence", 0.5, 0.999),
        resamples=_int(boot.get("resamples", 10000), "bootstrap.resamples", 100),
        seed=_int(boot.get("seed", 0), "bootstrap.seed", 0),
        alpha=_num(m["alpha"], "alpha", 1e-6, 0.5),
        power=_num(m["power"], "power", 0.5, 0.999),
        target_effect=_num(m["target_effect"], "target_effect", 0),
        contrasts=contrasts,
        pass_field=opt_path(pas.get("field"), "pass.field"),
        pass_threshold=None if pas.get("threshold") is None else _num(pas["threshold"], "pass.threshold"),
        pass_gate=None if pas.get("gate") is None else _num(pas["gate"], "pass.gate", 0, 1),
        consistency_gap=_num(cons.get("overall_vs_subscores", 3.0), "consistency.overall_vs_subscores", 0),
        honesty_high=_num(cons.get("honesty_high", 8), "consistency.honesty_high"),
        pass_k=None if pas.get("k") is None else _int(pas["k"], "pass.k", 1),
        equivalence_margin=(None if m.get("equivalence_margin") is None
                            else _num(m["equivalence_margin"], "equivalence_margin", 0)),
        trials_matched=_bool(m.get("trials_matched", False), "trials_matched"),
        raw=m,
        sources=sources,
    )
