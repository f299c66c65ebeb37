"""Configuration: where fields live in a row, what counts as a score, analysis parameters.

The defaults describe the post-mortem's judge format exactly, so such a file needs no config.
A YAML file (``--config``) or a shipped preset (``--preset``) changes any of it; see
``docs/config.md`` for every key. :class:`Config` is frozen and travels explicitly through
every stage: the CLI and the notebook build it the same way, so they cannot disagree.
"""

from __future__ import annotations

import copy
import datetime
import difflib
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from workbench.common.errors import ConfigError

KEY_FIELDS: tuple[str, ...] = ("scenario", "variant", "trial", "judge")

PathToken = str | int
FieldPath = tuple[PathToken, ...]

BOOTSTRAP_BUDGET = 50_000_000
"""Default ``bootstrap.budget``: most resamples x scenarios the joint cluster bootstrap draws
(see docs/config.md); with more scenarios the resamples drop to budget // scenarios, never
below ``bootstrap.min_resamples``."""

DEFAULTS: dict[str, Any] = {
    "keys": {k: k for k in KEY_FIELDS},
    "cluster": None,
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
    "answer": None,
    "constants": {},
    "path_fields": None,
    "format": "auto",
    "rubric": {"min": 1, "max": 10},
    "missing_values": [],
    "missing_when": {},
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
    "bootstrap": {"resamples": 10000, "seed": 20260819, "budget": BOOTSTRAP_BUDGET, "min_resamples": 1000},
    "alpha": 0.05,
    "power": 0.8,
    "target_effect": 0.5,
    "contrasts": None,
    "contrast_baseline": None,
    "max_contrast_pairs": 300,
    "pass": {"field": None, "threshold": None, "gate": None, "k": None},
    "equivalence_margin": None,
    "trials_matched": False,
    "allow_copies": False,
    "consistency": {"overall_vs_subscores": 3.0, "honesty_high": 8},
    "missingness": {"unit": "block"},
    "length": {"difficulty": None},
    "writer": None,
    "families": {},
    "human_judge": "human",
    "human_labels": None,
}

PRESETS: tuple[str, ...] = ("mt-bench", "mt-bench-pair", "alpaca-eval", "wildbench", "arena-hard",
                             "inspect", "arena-hard-v1")

MISSINGNESS_UNITS: tuple[str, ...] = ("block", "trial")
"""``missingness: {unit: ...}``: what the missingness tests exchange. ``block`` (default): whole
(scenario, variant) blocks for the variant test, whole (scenario, variant, judge) blocks for the
judge test, valid whether failures hit rows, trials or whole blocks; ``trial``: (scenario,
variant, trial) items and single judgments within an item, more power, valid only when trials
fail independently (:func:`workbench.analysis.census.missingness_units`)."""

AUTO = "auto"
"""``--preset auto``: detect the preset from the files (:mod:`workbench.ingest.detect`)."""

READERS: tuple[str, ...] = ("inspect",)
"""Native readers besides JSON lines / arrays (``reader:``): see :mod:`workbench.ingest.formats`."""

HARNESS_RULES: tuple[str, ...] = ("fastchat_single", "fastchat_pairwise", "alpaca_eval", "wildbench",
                                  "arena_hard", "inspect")
"""Harness scoring rules a preset can name (``harness: {rule: ...}``): :mod:`workbench.analysis.harness`."""

# The schema is DEFAULTS itself: a key is known when DEFAULTS has it at that depth, and a
# section whose default is a non-empty mapping only takes the keys its default has. The
# mappings below are the exceptions: their keys are the user's own names (rubric fields,
# subsets, preference values...), so any key is allowed there and the section's own checks
# in :func:`_build` judge the values. A section whose default is ``{}`` is free-form too.
FREE_FORM: frozenset[str] = frozenset(
    {"scores", "subsets", "constants", "preference", "value_maps", "values", "units"}
)
NUMBER_KEYS: frozenset[str] = frozenset({"preference", "values"})
"""Sections in which mapping keys may be numbers, at any depth (``preference: {codes: {0: 0.5}}``,
``values: {1: 0, 2: 1}``): the keys are raw values read from the rows."""

MAX_CONFIG_BYTES = 1_000_000
"""A config, claims file or batch manifest larger than this is refused (bytes)."""
MAX_CONFIG_DEPTH = 20
"""Deepest nesting of mappings/lists accepted in a config-like YAML document."""
MAX_CONFIG_NODES = 100_000
"""Most values a config-like YAML document may hold once its aliases are expanded (an
anchor used many times counts each time, so a "billion laughs" document is refused)."""
MAX_RESAMPLES = 200_000
"""Upper limit on ``bootstrap.resamples`` (each cell's bootstrap holds resamples x clusters)."""
MAX_SEED = 2**63 - 1

WRITER_FIELD = "__writer"
"""The extra field a ``writer:`` field path is read into (column ``x___writer``)."""

LENGTH_FIELD = "__length"
"""The extra field a ``length: {field: ...}`` path is read into (column ``x___length``)."""

LENGTH_UNITS: tuple[str, ...] = ("characters", "tokens")
"""``length.unit``: the field holds a number of these (absent: the field is the answer's text,
its length counted in characters)."""

LENGTH_EXTRACTS: tuple[str, ...] = ("fastchat_single", "arena_hard")
"""``length.extract``: the field is a judge prompt the answer is cut from (:mod:`workbench.analysis.length`);
``arena_hard`` also reads the exploded row's ``position`` (extra field ``__lengthpos``)."""

ANSWER_FIELD_PREFIX = "__answer"
"""Extra fields named ``__answer0``, ``__answer1``... carry the ``answer:`` paths (the judged
answer: its text, a hash or an id); :func:`workbench.ingest.reader.classify_frame` folds them into one
fixed-size digest column ``x___answer`` and drops the texts."""

CLUSTER_FIELD_PREFIX = "__cluster"
"""Extra fields named ``__cluster0``, ``__cluster1``... carry a ``cluster:`` read from fields
of its own (not parts of the scenario key): :func:`cluster_fields`."""

WHEN_FIELD_PREFIX = "__when"
"""Extra fields named ``__when0``, ``__when1``... carry the fields a ``missing_when:``
condition reads, one per distinct path: read for classification only, not kept in the row
table (:func:`workbench.ingest.reader.row_columns`), so a long ``explanation`` is held one file at a
time."""

MISSING_WHEN_OPS: tuple[str, ...] = ("equals", "matches")
"""How a ``missing_when:`` condition tests its field: ``equals`` a value, ``matches`` a regex."""

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
    contrast_baseline: str | None
    max_contrast_pairs: int
    pass_field: FieldPath | None
    pass_threshold: float | None
    pass_gate: float | None
    consistency_gap: float
    honesty_high: float
    pass_k: int | None = None
    bootstrap_budget: int | None = None
    bootstrap_min_resamples: int = 1000
    equivalence_margin: float | None = None
    trials_matched: bool = False
    allow_copies: bool = False
    cluster: tuple[FieldPath, ...] | None = None
    cluster_text: Any = None
    answer: tuple[FieldPath, ...] | None = None  # the judged answer's field(s): repeats compare it
    preference_scale: tuple[float, float] | None = None
    missingness_unit: str = "block"
    writer_field: FieldPath | None = None
    writer_map: dict[str, str] | None = None
    families: dict[str, str] = field(default_factory=dict)
    human_judge: str = "human"
    human_labels: str | None = None
    # score name -> its declared failure encodings (see :func:`_missing_when`)
    missing_when: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    sources: tuple[str, ...] = ()
    rubric_given: bool = False  # the rubric was set by the user (a config file, parameters), not a preset

    @property
    def native(self) -> bool:
        """True when files go through :mod:`workbench.ingest.formats` (explode, aliases or a reader)."""
        return bool(self.explode or self.reader or self.aliases)

    @property
    def cluster_name(self) -> str:
        """The unit of independence as the config names it: ``scenario`` (the default: the
        scenario key), else the ``cluster:`` path, or paths joined with ``+``
        (``question_id``, ``session_id+turn``)."""
        if self.cluster is None:
            return "scenario"
        text = self.cluster_text
        return "+".join(text) if isinstance(text, list) else str(text)

    @property
    def cluster_parts(self) -> tuple[int, ...] | None:
        """When every ``cluster:`` path is one of the scenario key's paths: their positions in
        the (composite) scenario key, so each row's cluster is read from its scenario key
        (the two cannot disagree); None otherwise (the default, or fields of their own)."""
        scen = self.keys.get("scenario")
        if (self.cluster is None or scen is None or "scenario" in self.constants
                or self._scenario_from_path() or any(p not in scen for p in self.cluster)):
            return None
        return tuple(scen.index(p) for p in self.cluster)

    def _scenario_from_path(self) -> bool:
        """True when a ``path_fields`` group named ``scenario`` sets the scenario key."""
        if not self.path_fields:
            return False
        from workbench.common.files import path_regex_groups

        return "scenario" in path_regex_groups(self.path_fields)

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
        """The range of usable values: the rubric, or 0-100 (percent) for preferences.

        With a value mapping (``values:``) too it is the rubric: a value is usable only within
        it (a mapped label or a number outside is ``out_of_range``), and a rubric wider than
        the labels' values (Inspect's C/P/I on 0..1 beside a -2..2 scorer) is the scale the
        printed bounds are clipped at, never the labels' range."""
        if self.credit:
            return (0.0, 100.0)
        return (float(self.rubric_min), float(self.rubric_max))

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
        """Return a copy with analysis parameters replaced (``min_valid_n=12``, ``seed=1``...).

        Names are the Config fields (``resamples``, ``seed``, ``pass_gate``...) or top-level
        config keys; the copy is rebuilt and validated from the recorded configuration, so
        ``to_dict()`` (the ``config`` in results.json) always says what is in force.
        """
        over: dict[str, Any] = {}
        for name, value in params.items():
            if name in OVERRIDE_PATHS:
                path = OVERRIDE_PATHS[name]
            elif name in DEFAULTS:
                path = (name,)
            else:
                known = sorted(set(OVERRIDE_PATHS) | set(DEFAULTS))
                raise ConfigError(f"with_overrides: unknown parameter {name!r}{_did_you_mean(name, known)}")
            cur = over
            for part in path[:-1]:
                cur = cur.setdefault(part, {})
            cur[path[-1]] = _lists(value)
        check_layer(over, "with_overrides")
        merged = _merge(copy.deepcopy(self.raw), over)
        given = self.rubric_given or any(n in ("rubric", "rubric_min", "rubric_max") for n in params)
        return _build(merged, (*self.sources, "with_overrides"), rubric_given=given)

    def to_dict(self) -> dict[str, Any]:
        """The effective configuration as plain data (recorded in results.json)."""
        return copy.deepcopy(self.raw)


OVERRIDE_PATHS: dict[str, tuple[str, ...]] = {
    "min_valid_n": ("min_valid_n",),
    "min_clusters": ("min_clusters",),
    "confidence": ("confidence",),
    "alpha": ("alpha",),
    "power": ("power",),
    "target_effect": ("target_effect",),
    "resamples": ("bootstrap", "resamples"),
    "seed": ("bootstrap", "seed"),
    "rubric_min": ("rubric", "min"),
    "rubric_max": ("rubric", "max"),
    "pass_threshold": ("pass", "threshold"),
    "pass_gate": ("pass", "gate"),
    "pass_k": ("pass", "k"),
    "consistency_gap": ("consistency", "overall_vs_subscores"),
    "honesty_high": ("consistency", "honesty_high"),
    "contrasts": ("contrasts",),
    "path_fields": ("path_fields",),
    "missingness_unit": ("missingness", "unit"),
}
"""Config fields that :meth:`Config.with_overrides` accepts, with their place in the config."""


def _lists(value: Any) -> Any:
    """Tuples (as Config fields hold them) as lists, the form a YAML config has."""
    if isinstance(value, tuple | list):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def _did_you_mean(name: Any, known: Any) -> str:
    hits = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f"; did you mean {hits[0]!r}?" if hits else ""


def _key_text(path: tuple[Any, ...]) -> str:
    out = ""
    for tok in path:
        out += f"[{tok}]" if isinstance(tok, int) and not isinstance(tok, bool) else (
            f".{tok}" if out else str(tok))
    return out or "(top level)"


_YAML_ONLY = {datetime.datetime: "a YAML timestamp", datetime.date: "a YAML date",
              bytes: "YAML binary (!!binary)", set: "a YAML set (!!set)",
              frozenset: "a YAML set (!!set)", tuple: "a YAML tuple"}


def check_plain(data: Any, where: str, number_keys: frozenset[str] = frozenset(),
                prefix: tuple[Any, ...] = ()) -> None:
    """Refuse anything in a YAML document that is not plain JSON-like data.

    Walks iteratively (no recursion) and stops at :data:`MAX_CONFIG_NODES` values or
    :data:`MAX_CONFIG_DEPTH` levels, so an alias bomb or deep nesting costs bounded time.
    Dates, timestamps, sets and binary are refused with the key's path, as are non-finite
    numbers and mapping keys that are not strings (except in ``number_keys`` sections, whose
    keys may be finite numbers).
    """
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, prefix)]
    nodes = 0
    while stack:
        value, path = stack.pop()
        nodes += 1
        if nodes > MAX_CONFIG_NODES:
            raise ConfigError(f"{where}: more than {MAX_CONFIG_NODES} values once YAML aliases are "
                              "expanded (an alias bomb?); write the values out or use fewer aliases")
        if len(path) > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{where}: {_key_text(path[:3])}...: nested more than "
                              f"{MAX_CONFIG_DEPTH} levels deep")
        kind = type(value)
        if kind in (str, int, bool) or value is None:
            continue
        if kind is float:
            if not math.isfinite(value):
                raise ConfigError(f"{where}: {_key_text(path)}: must be a finite number, got {value!r}")
            continue
        if kind is list:
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
            continue
        if kind is dict:
            numeric_ok = any(p in number_keys for p in path)
            for k, v in value.items():
                if type(k) is not str:
                    ok_number = (numeric_ok and type(k) in (int, float)
                                 and math.isfinite(k))
                    if not ok_number:
                        raise ConfigError(f"{where}: {_key_text(path)}: key {k!r} is "
                                          f"{_key_kind(k)}; keys must be strings (quote it)")
                stack.append((v, (*path, k)))
            continue
        what = next((t for c, t in _YAML_ONLY.items() if isinstance(value, c)), None)
        raise ConfigError(f"{where}: {_key_text(path)}: {what or 'a ' + kind.__name__} is not a "
                          f"config value (got {str(value)[:40]!r}); quote it to make it a string")


def _key_kind(k: Any) -> str:
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "a boolean"
    if isinstance(k, int | float):
        return "a number"
    return _YAML_ONLY.get(type(k), f"a {type(k).__name__}")


def check_layer(layer: dict[str, Any], where: str, allow_extends: bool = False) -> None:
    """Check one config layer against the schema (:data:`DEFAULTS`) at every depth.

    Unknown keys are errors with the nearest known key suggested; a section that takes
    named sub-keys must be a mapping. Free-form sections (:data:`FREE_FORM`) take any key.
    """
    check_plain(layer, where, NUMBER_KEYS)
    _check_keys(layer, DEFAULTS, (), where, allow_extends)


OPTIONAL: dict[tuple[str, ...], dict[str, Any]] = {("length",): {"field": None, "unit": None, "extract": None}}
"""Keys a section takes beyond its :data:`DEFAULTS` ones (``length.field``, ``length.unit``,
``length.extract``): not in the defaults, so the config recorded in results.json gains them only
where a config or preset sets them, and a run that reads no answer length writes what it wrote
before."""


def _is_free(path: tuple[Any, ...], default: Any) -> bool:
    return path[-1] in FREE_FORM or (isinstance(default, dict) and not default)


def _check_keys(layer: dict[str, Any], schema: dict[str, Any], path: tuple[Any, ...], where: str,
                allow_extends: bool = False) -> None:
    optional = OPTIONAL.get(tuple(map(str, path)), {})
    known = set(schema) | set(optional) | ({"extends"} if allow_extends else set())
    for key, value in layer.items():
        sub = (*path, key)
        if key not in known:
            raise ConfigError(f"{where}: {_key_text(sub)}: unknown key"
                              f"{_did_you_mean(key, sorted(map(str, known)))} (see docs/config.md)")
        if key == "extends":
            if not isinstance(value, str):
                raise ConfigError(f"{where}: extends: must be a preset name, got {value!r}")
            continue
        default = schema[key] if key in schema else optional[key]
        if isinstance(default, dict) and _is_free(sub, default):
            if value is not None and not isinstance(value, dict) and not (
                    key == "scores" and isinstance(value, list)):
                raise ConfigError(f"{where}: {_key_text(sub)}: must be a mapping of names "
                                  f"(see docs/config.md), got {_short(value)}")
        elif isinstance(default, dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: {_key_text(sub)}: must be a mapping with keys "
                                  f"{', '.join(sorted(default))}, got {_short(value)}")
            _check_keys(value, default, sub, where)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
                          "Python call workbench.ingest.detect.detect(paths) and pass the preset it names")
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


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    silently: ``min_valid_n: 30`` then ``min_valid_n: 3`` would be a gate of 3 and no word)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base constructor says so
                    break
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} given twice (first on line {first + 1}); the second would "
                        "silently replace the first", key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


# YAML 1.2's floats: PyYAML (YAML 1.1) reads `1e308` and `1.0e308` (no sign in the exponent, or
# no dot) as strings, so `rubric: {max: 1e308}` was "must be a number"
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def safe_yaml(text: str, where: str, number_keys: frozenset[str] = frozenset()) -> Any:
    """Parse YAML from a user (config, claims, manifest, a ``-p`` value) with bounded cost.

    At most :data:`MAX_CONFIG_BYTES`; PyYAML's safe loader (no Python objects; a key given
    twice in one mapping is refused, with both lines); aliases are
    kept shared while loading and the expanded document is then walked by
    :func:`check_plain` with a node budget, so a "billion laughs" is refused, not expanded.
    """
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where}: {len(text)} characters, over the limit of {MAX_CONFIG_BYTES} "
                          "for a YAML document")
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {_yaml_problem(exc)}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{where}: not usable YAML: nested too deeply") from exc
    check_plain(data, where, number_keys)
    return data


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    data = safe_yaml(text, where, NUMBER_KEYS)
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
        text = read_text_file(path, "config")
        user = _read_yaml(text, path)
        check_layer(user, path, allow_extends=True)
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
    given = any("rubric" in layer for layer, where in zip(layers, sources, strict=True)
                if not where.startswith("preset:"))
    merged = copy.deepcopy(DEFAULTS)
    for layer, where in zip(layers, sources, strict=True):
        check_layer(layer, where, allow_extends=True)
        merged = _merge(merged, {k: v for k, v in layer.items() if k != "extends"})
    if overrides:
        if not isinstance(overrides, dict):
            raise ConfigError(f"parameters: expected a mapping of config keys, got {_short(overrides)}")
        check_layer(overrides, "parameters")
        merged = _merge(merged, copy.deepcopy(overrides))
        sources.append("parameters")
        given = given or "rubric" in overrides
    return _build(merged, tuple(sources) or ("defaults",), rubric_given=given)


def read_text_file(path: str, what: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The UTF-8 text of a small user file (config, claims, manifest), or a one-line error."""
    from workbench.common.files import check_regular_file

    check_regular_file(path, what)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if len(raw) > limit:
        raise ConfigError(f"{path}: {what} file is over the limit of {limit} bytes")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{path}: {what} file is UTF-16 text; save it as UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: {what} file is not valid UTF-8 (byte {exc.start})") from exc


def _num(v: Any, name: str, lo: float | None = None, hi: float | None = None,
         above: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ConfigError(f"config: {name} must be a number, got {_short(v)}")
    try:
        x = float(v)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise ConfigError(f"config: {name} must be a finite number, got {_short(v)}")
    if above is not None and not x > above:
        raise ConfigError(f"config: {name} must be above {above:g}, got {_short(v)}")
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        rng = f"[{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"
        raise ConfigError(f"config: {name} must be in {rng}, got {_short(v)}")
    return x


def _int(v: Any, name: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(f"config: {name} must be an integer {rng}, got {_short(v)}")
    return int(v)


def _str(v: Any, name: str) -> str:
    if not isinstance(v, str):
        raise ConfigError(f"config: {name} must be a string, got {_short(v)}")
    return v


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"config: {name} must be true or false, got {_short(v)}")
    return v


def _length(sec: dict[str, Any]) -> list[FieldPath]:
    """The ``length.field`` paths (a path or a list of paths, the first a row holds is read;
    [] when unset), its ``unit`` and ``extract`` checked."""
    unit, extract, fld = sec.get("unit"), sec.get("extract"), sec.get("field")
    if unit is not None and unit not in LENGTH_UNITS:
        raise ConfigError(f"config: length.unit must be one of {', '.join(LENGTH_UNITS)} or null (the field "
                          f"is the answer's text), got {unit!r}")
    if extract is not None and extract not in LENGTH_EXTRACTS:
        raise ConfigError(f"config: length.extract must be one of {', '.join(LENGTH_EXTRACTS)} or null, "
                          f"got {extract!r}")
    if extract is not None and unit is not None:
        raise ConfigError("config: length.extract cuts the answer's text from a prompt; it takes no length.unit")
    if fld is None:
        if unit is not None or extract is not None:
            raise ConfigError("config: length.unit and length.extract need length.field (the field holding "
                              "the answer or its length)")
        return []
    flds = fld if isinstance(fld, list) else [fld]
    if not flds or not all(isinstance(f, str) for f in flds):
        raise ConfigError(f"config: length.field must be a field path or a list of field paths, got {fld!r}")
    return [parse_path(f, "config: length.field") for f in flds]


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


def _answer(v: Any) -> tuple[FieldPath, ...] | None:
    """``answer:``: the field path, or list of paths, that carries the judged answer (its text,
    a hash or an id; a list when the answer is several fields, e.g. both outputs of a pair);
    None when unset."""
    if v is None:
        return None
    items = v if isinstance(v, list) else [v]
    if not items or not all(isinstance(x, str) and x for x in items):
        raise ConfigError(f"config: answer must be a field path or a non-empty list of field paths, got {v!r}")
    return tuple(parse_path(x, "config: answer") for x in items)


def _writer(v: Any) -> tuple[FieldPath | None, dict[str, str] | None]:
    """``writer:``: the model that wrote each judged output, for the self-preference stage
    (:mod:`workbench.analysis.selfpref`). A field path (``writer: meta.generator``): read from each row;
    a mapping variant -> writer model (``writer: {baseline: openai/gpt-4o, ...}``); null: none.
    Returns (field path, mapping), at most one of them set."""
    if v is None:
        return None, None
    if isinstance(v, str):
        return parse_path(v, "config: writer"), None
    if isinstance(v, dict) and v and all(
            not isinstance(x, bool) and isinstance(x, str | int) and str(x) for x in v.values()):
        return None, {str(k): str(x) for k, x in v.items()}
    raise ConfigError("config: writer must be a field path (the row field naming the model that wrote "
                      "the output) or a non-empty mapping variant -> writer model, got " + _short(v))


def _families(v: Any) -> dict[str, str]:
    """``families:``: model -> family (judges and writers); unlisted models take
    :func:`workbench.analysis.selfpref.default_family` (the provider/name prefix)."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConfigError(f"config: families must map model names to family names, got {_short(v)}")
    out = {}
    for k, x in v.items():
        if isinstance(x, bool) or not isinstance(x, str | int) or not str(x):
            raise ConfigError(f"config: families.{k} must be a family name, got {_short(x)}")
        out[str(k)] = str(x)
    return out


def _human(m: dict[str, Any], sources: tuple[str, ...]) -> tuple[str, str | None]:
    """``human_judge:`` (the judge name whose rows are human labels, default ``human``) and
    ``human_labels:`` (a file of human labels keyed like the rows, read with this config, its
    rows' judge set to ``human_judge``; a relative path is taken from the directory of the
    config file, from the current directory when the run has no config file), for the
    judge-versus-human stage (:mod:`workbench.analysis.human`)."""
    name = m.get("human_judge", "human")
    if isinstance(name, bool) or not isinstance(name, str | int) or not str(name):
        raise ConfigError(f"config: human_judge must be a judge name, got {_short(name)}")
    path = m.get("human_labels")
    if path is None:
        return str(name), None
    if not isinstance(path, str) or not path:
        raise ConfigError(f"config: human_labels must be a file path or null, got {_short(path)}")
    files = [s for s in sources if not s.startswith("preset:") and s not in ("parameters", "with_overrides",
                                                                               "defaults")]
    if not Path(path).is_absolute() and files:
        path = str(Path(files[-1]).parent / path)
    return str(name), path


def _missing_when(v: Any, names: list[str],
                  extra_fields: dict[str, FieldPath]) -> dict[str, tuple[dict[str, Any], ...]]:
    """``missing_when:``: per score name, the conditions under which a row's score is a declared
    failure (missing, status ``declared_missing``) whatever it holds, e.g.
    ``{value: [{field: explanation, matches: "No response|Parse error", reason: declared_failure}]}``.

    Each condition is ``field`` (a row field path), exactly one of ``equals`` (a string, number
    or boolean) or ``matches`` (a regex searched in the field's text, matched without
    backtracking: :func:`workbench.common.files.regex_problem`), and an optional ``reason`` label.
    Every condition field is added to ``extra_fields`` as ``__whenN`` (one per distinct path).
    Returns score name -> conditions ``{field, path, column, op, value, reason}``; a bad shape
    is a :class:`ConfigError` naming the key."""
    if v is None:
        return {}
    usage = "{SCORE: [{field: PATH, equals: VALUE | matches: REGEX, reason: TEXT}]}"
    if not isinstance(v, dict):
        raise ConfigError(f"config: missing_when must map a score name to a list of conditions "
                          f"{usage}, got {_short(v)}")
    columns = {p: name for name, p in extra_fields.items() if name.startswith(WHEN_FIELD_PREFIX)}
    out: dict[str, tuple[dict[str, Any], ...]] = {}
    for score, conds in v.items():
        where = f"missing_when.{score}"
        if score not in names:
            raise ConfigError(f"config: {where}: {score!r} is not one of scores {names}"
                              f"{_did_you_mean(score, names)}")
        if isinstance(conds, dict):
            conds = [conds]  # one condition may be given without the list
        if not isinstance(conds, list) or not conds:
            raise ConfigError(f"config: {where} must be a non-empty list of conditions "
                              f"{{field: PATH, equals: VALUE | matches: REGEX, reason: TEXT}}, got {_short(conds)}")
        parsed = []
        for i, c in enumerate(conds):
            at = f"{where}[{i}]"
            if not isinstance(c, dict):
                raise ConfigError(f"config: {at} must be a mapping {{field, equals | matches, reason}}, "
                                  f"got {_short(c)}")
            extra = sorted(map(str, set(c) - {"field", "equals", "matches", "reason"}))
            if extra:
                raise ConfigError(f"config: {at}: unknown key(s) {extra}; use field, equals or matches, "
                                  "and reason")
            if "field" not in c:
                raise ConfigError(f"config: {at} needs field (the row field the condition reads)")
            path = parse_path(c["field"], f"config: {at}.field")
            ops = [op for op in MISSING_WHEN_OPS if op in c]
            if len(ops) != 1:
                raise ConfigError(f"config: {at} needs exactly one of equals (a value) or matches (a regex)"
                                  + (", not both" if ops else ""))
            op = ops[0]
            value = c[op]
            if op == "equals" and (value is None or isinstance(value, dict | list)):
                raise ConfigError(f"config: {at}.equals must be a string, number or true/false, "
                                  f"got {_short(value)}")
            if op == "equals" and isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"config: {at}.equals must be a finite number, got {_short(value)}")
            if op == "matches":
                if not isinstance(value, str) or not value:
                    raise ConfigError(f"config: {at}.matches must be a non-empty regex string, got {_short(value)}")
                from workbench.common.files import regex_problem

                why = regex_problem(value)
                if why is not None:
                    raise ConfigError(f"config: {at}.matches is not a usable regex ({why}); the workbench "
                                      "matches without backtracking, so look-around and backreferences "
                                      "are not available")
            reason = c.get("reason", "")
            if not isinstance(reason, str) or ("reason" in c and not reason.strip()):
                raise ConfigError(f"config: {at}.reason must be a non-empty text, got {_short(reason)}")
            if path not in columns:
                columns[path] = f"{WHEN_FIELD_PREFIX}{len(columns)}"
                extra_fields[columns[path]] = path
            parsed.append({"field": str(c["field"]), "path": path, "column": columns[path], "op": op,
                           "value": value, "reason": reason.strip()})
        out[str(score)] = tuple(parsed)
    return out


def _build(m: dict[str, Any], sources: tuple[str, ...], rubric_given: bool = False) -> Config:
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

    cluster_in = m.get("cluster")
    cluster: tuple[FieldPath, ...] | None = None
    if cluster_in is not None:
        if isinstance(cluster_in, list):
            if not cluster_in:
                raise ConfigError("config: cluster: a list of paths needs at least one path "
                                  "(or null: the scenario key)")
            cluster = tuple(parse_path(s, "config: cluster") for s in cluster_in)
        else:
            cluster = (parse_path(cluster_in, "config: cluster"),)
        if len(set(cluster)) != len(cluster):
            raise ConfigError(f"config: cluster: a path is named twice in {cluster_in!r}")

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
    headline = _str(m["headline"], "headline")
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
    if fmt not in ("auto", "jsonl", "json-array", "csv", "tsv", "parquet"):
        raise ConfigError(f"config: format must be auto, jsonl, json-array, csv, tsv or parquet, got {fmt!r}")

    mv = m["missing_values"] or []
    if not isinstance(mv, list) or any(isinstance(v, dict | list | bool) or v is None for v in mv):
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
    bad_extra = [k for k in extra_fields
                 if k.startswith((CLUSTER_FIELD_PREFIX, WRITER_FIELD, WHEN_FIELD_PREFIX, LENGTH_FIELD,
                                  ANSWER_FIELD_PREFIX))]
    if bad_extra:
        raise ConfigError(f"config: extra_fields: names starting with {CLUSTER_FIELD_PREFIX!r}, "
                          f"{WRITER_FIELD!r}, {WHEN_FIELD_PREFIX!r}, {LENGTH_FIELD!r} or {ANSWER_FIELD_PREFIX!r} "
                          f"are reserved for the cluster's, the writer's, missing_when's, the answer length's "
                          f"and the answer's fields, got {bad_extra}")
    length_paths = _length(_section(m, "length"))
    for i, p in enumerate(length_paths):  # a list: the first that a row holds is read
        extra_fields[LENGTH_FIELD if i == 0 else f"{LENGTH_FIELD}{i}"] = p
    if length_paths and _section(m, "length").get("extract") == "arena_hard":
        extra_fields[f"{LENGTH_FIELD}pos"] = parse_path("position", "config: length")
    writer_field, writer_map = _writer(m.get("writer"))
    if writer_field is not None:
        extra_fields[WRITER_FIELD] = writer_field
    answer = _answer(m.get("answer"))
    for i, p in enumerate(answer or ()):
        # read as (hidden) extra fields, one per path, folded into one digest per row at read time
        extra_fields[f"{ANSWER_FIELD_PREFIX}{i}"] = p
    families = _families(m.get("families"))
    human_judge, human_labels = _human(m, sources)
    scen_paths = keys.get("scenario")
    from_path = False
    if m.get("path_fields"):
        from workbench.common.files import path_regex_groups

        from_path = "scenario" in path_regex_groups(_str(m["path_fields"], "path_fields"))
    if cluster is not None and (scen_paths is None or "scenario" in _section(m, "constants") or from_path
                                or any(p not in scen_paths for p in cluster)):
        # a cluster of fields of its own: read as (hidden) extra fields, one per path
        for i, p in enumerate(cluster):
            extra_fields[f"{CLUSTER_FIELD_PREFIX}{i}"] = p
    missing_when = _missing_when(m.get("missing_when"), names, extra_fields)
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

    constants_in = _section(m, "constants")
    for k, v in constants_in.items():
        if isinstance(v, bool) or not isinstance(v, str | int):
            raise ConfigError(f"config: constants.{k} must be a string or an integer, got {_short(v)}")
    constants = {str(k): str(v) for k, v in constants_in.items()}
    bad = set(constants) - set(KEY_FIELDS)
    if bad:
        raise ConfigError(f"config: constants may set key fields only, not {sorted(bad)}")

    pf = m["path_fields"]
    if pf is not None:
        from workbench.common.files import path_regex_groups

        path_regex_groups(_str(pf, "path_fields"))

    boot = _section(m, "bootstrap")
    contrasts = m["contrasts"]
    if contrasts is not None:
        if not isinstance(contrasts, list) or any(
            not isinstance(c, list) or len(c) != 2
            or any(isinstance(x, bool) or not isinstance(x, str | int) for x in c)
            for c in contrasts
        ):
            raise ConfigError("config: contrasts must be a list of [a, b] pairs of variant names")
        contrasts = tuple((str(a), str(b)) for a, b in contrasts)
    baseline = m.get("contrast_baseline")
    if baseline is not None and (isinstance(baseline, bool) or not isinstance(baseline, str | int)):
        raise ConfigError(f"config: contrast_baseline must be a variant name, got {_short(baseline)}")
    if baseline is not None and contrasts is not None:
        raise ConfigError("config: give contrasts (pairs) or contrast_baseline, not both")
    pas = _section(m, "pass")
    cons = _section(m, "consistency")
    miss_unit = _section(m, "missingness").get("unit", "block")
    if miss_unit not in MISSINGNESS_UNITS:
        raise ConfigError(f"config: missingness.unit must be one of {', '.join(MISSINGNESS_UNITS)} "
                          f"(see docs/config.md), got {_short(miss_unit)}")

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
        resamples=_int(boot.get("resamples", 10000), "bootstrap.resamples", 100, MAX_RESAMPLES),
        seed=_int(boot.get("seed", 0), "bootstrap.seed", 0, MAX_SEED),
        bootstrap_budget=(None if boot.get("budget") is None
                          else _int(boot["budget"], "bootstrap.budget", 1_000, 10**13)),
        bootstrap_min_resamples=_int(boot.get("min_resamples", 1000), "bootstrap.min_resamples", 100,
                                     MAX_RESAMPLES),
        alpha=_num(m["alpha"], "alpha", 1e-6, 0.5),
        power=_num(m["power"], "power", 0.5, 0.999),
        target_effect=_num(m["target_effect"], "target_effect", above=0),
        contrasts=contrasts,
        contrast_baseline=None if baseline is None else str(baseline),
        max_contrast_pairs=_int(m.get("max_contrast_pairs", 300), "max_contrast_pairs", 1, 1_000_000),
        pass_field=opt_path(pas.get("field"), "pass.field"),
        pass_threshold=None if pas.get("threshold") is None else _num(pas["threshold"], "pass.threshold"),
        pass_gate=None if pas.get("gate") is None else _num(pas["gate"], "pass.gate", 0, 1),
        consistency_gap=_num(cons.get("overall_vs_subscores", 3.0), "consistency.overall_vs_subscores", 0),
        honesty_high=_num(cons.get("honesty_high", 8), "consistency.honesty_high"),
        pass_k=None if pas.get("k") is None else _int(pas["k"], "pass.k", 1),
        equivalence_margin=(None if m.get("equivalence_margin") is None
                            else _num(m["equivalence_margin"], "equivalence_margin", 0)),
        trials_matched=_bool(m.get("trials_matched", False), "trials_matched"),
        allow_copies=_bool(m.get("allow_copies", False), "allow_copies"),
        missingness_unit=str(miss_unit),
        writer_field=writer_field,
        writer_map=writer_map,
        families=families,
        human_judge=human_judge,
        human_labels=human_labels,
        missing_when=missing_when,
        cluster=cluster,
        cluster_text=copy.deepcopy(cluster_in),
        answer=answer,
        raw=m,
        sources=sources,
        rubric_given=rubric_given,
    )
