"""The whole run in one place: inputs + config -> every stage -> the results document.

The CLI (``workbench analyze``/``check``/``report``) and the notebook both call
:func:`run`, so a papermill report and a terminal run cannot disagree.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from workbench import stats
from workbench.analysis import harness, human, names, paired, provenance, ranks, selfpref
from workbench.analysis.census import VariantItems, census_margins, missingness_tests, scale_checks
from workbench.analysis.census import census as census_table
from workbench.analysis.scorecard import check_names, consistency, flag_rates, gate, pass_rates
from workbench.analysis.scorecard import scorecard as scorecard_table
from workbench.common import schemas
from workbench.common.config import Config
from workbench.common.results import SCHEMA_VERSION
from workbench.common.text import count as _count_noun
from workbench.document import build as document
from workbench.ingest import clusters, execute, formats, ledger, selection
from workbench.ingest import reader as ingest
from workbench.reduce import codes as reduce_codes


@dataclass
class Analysis:
    """Everything one run computed: the row table, stage frames and the results document."""

    config: Config
    rows: pl.DataFrame
    sources: list[ingest.SourceFile]
    doc: dict[str, Any]
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    execution: dict[str, Any] | None = None
    """How ingest ran (engine, jobs, scheduler, files): for run.json, never results.json."""

    #: frames built from the results document on demand (beside the stage tables)
    DOCUMENT_FRAMES = ("ledger", "rows", "board", "methods", "self_preference", "self_preference_judges", "human",
                       "length_slopes")

    #: the judge diagnostics' record lists in the results document, by frame name
    #: (section, list): one row per record, list values joined by ", " (a frame of no record
    #: when the run has no such section)
    DIAGNOSTIC_FRAMES = {"self_preference": ("self_preference", "pairs"),
                         "self_preference_judges": ("self_preference", "judges"), "human": ("human", "records"),
                         "length_slopes": ("length", "slopes")}

    def frame_names(self) -> list[str]:
        """Every name :meth:`frame` accepts: the stage tables, then the document's frames."""
        return [*self.frames, *(n for n in self.DOCUMENT_FRAMES if n not in self.frames)]

    def frame(self, name: str) -> pl.DataFrame:
        """A table by name as a polars DataFrame (``.to_pandas()`` for pandas): a stage's table
        (``census``, ``scorecard``, ``judge_offsets`` ...), or ``ledger`` (one row per bucket:
        lines), ``rows`` (the row table), ``board`` (:meth:`board`), ``methods`` (every method
        the run used), the judge diagnostics ``self_preference`` (one row per judge pair),
        ``self_preference_judges`` (per judge, against a reference judge of a non-writing family),
        ``human`` (per judge x variant: judge-only, human-only and prediction-powered means) and
        ``length_slopes`` (per judge, the slope of score on log answer length). A typo gets a
        "did you mean"."""
        if name in self.frames:
            return self.frames[name]
        if name == "ledger":
            led = self.doc["ledger"]
            return pl.DataFrame({"bucket": list(led), "lines": [None if v is None else int(v) for v in led.values()]},
                                schema={"bucket": pl.String, "lines": pl.Int64})
        if name == "rows":
            return self.rows
        if name == "board":
            return self.board()
        if name == "methods":
            recs = [{"name": m["name"], "description": m["description"], "reference": m["reference"],
                     "used_in": ", ".join(m["used_in"])} for m in self.doc.get("methods") or []]
            return pl.DataFrame(recs, schema={"name": pl.String, "description": pl.String,
                                              "reference": pl.String, "used_in": pl.String})
        if name in self.DIAGNOSTIC_FRAMES:
            section, key = self.DIAGNOSTIC_FRAMES[name]
            recs = (self.doc.get(section) or {}).get(key) or []
            flat = [{k: ", ".join(map(str, v)) if isinstance(v, list) else v
                     for k, v in r.items() if not isinstance(v, dict)} for r in recs]
            return pl.DataFrame(flat, infer_schema_length=None) if flat else pl.DataFrame()
        import difflib

        names = self.frame_names()
        near = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise KeyError(f"no frame {name!r}; {hint}frames: {', '.join(names)}") from None

    def board(self, field: str | None = None) -> pl.DataFrame:
        """The board of ``field`` (default: the headline) as a DataFrame: one row per variant,
        sorted as the report shows it (results.json ``board``)."""
        field = self.config.headline if field is None else field
        boards = {b["field"]: b for b in self.doc.get("board") or []}
        if field not in boards:
            raise KeyError(f"no board for field {field!r}; boards: {', '.join(boards) or 'none'}")
        rows = boards[field]["rows"]
        return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()

    def cells(self, field: str | None = None, judge: str | None = None, subset: str | None = None) -> pl.DataFrame:
        """The scorecard slice most questions need: one field (default: the headline), judges
        pooled (or one ``judge``), all scenarios (or one ``subset``); one row per variant."""
        field = self.config.headline if field is None else field
        card = self.frame("scorecard")
        for col, want in (("field", field), ("judge", judge), ("subset", subset)):
            card = card.filter(pl.col(col).is_null() if want is None else pl.col(col) == want)
        if card.height == 0:
            known = sorted(set(self.frame("scorecard")["field"].drop_nulls()))
            raise KeyError(f"no scorecard cells for field={field!r}, judge={judge!r}, subset={subset!r}; "
                           f"fields: {', '.join(known)}")
        return card.sort("variant")

    def _repr_html_(self) -> str:
        """A compact summary in JupyterLab (the whole document is ``.doc``)."""
        import html

        led, gate = self.doc["ledger"], self.doc.get("gate") or {}
        names = ", ".join(html.escape(p["path"].rsplit("/", 1)[-1]) for p in self.doc["inputs"])
        shown = ", ".join(f"{k} {v}" for k, v in led.items() if v and k != "lines")
        frames = ", ".join(f"<code>{html.escape(k)}</code> ({v.height})" for k, v in self.frames.items())
        verdict = "passed" if gate.get("passed", True) else "FAILED"
        return (f"<div><b>workbench Analysis</b> of {names}: {led['lines']} lines ({html.escape(shown)}); "
                f"headline <code>{html.escape(self.config.headline)}</code>; gate {verdict}.<br>"
                f"<code>.board()</code>, <code>.cells()</code> (the headline slice), "
                f"<code>.frame(name)</code>: {frames}, ledger, rows, board, methods (polars; "
                "<code>.to_pandas()</code> for pandas); <code>.doc</code> the results document.</div>")

    def __repr__(self) -> str:
        led = self.doc["ledger"]
        return (f"<Analysis: {_count_noun(len(self.doc['inputs']), 'input')}, {led['lines']} lines, "
                f"{led['valid']} valid; "
                f"frames: {', '.join(self.frames)}>")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:  # glibc only; elsewhere there is nothing to do
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None


def release_memory() -> None:
    """Hand the pages a stage freed back to the operating system.

    The stages' numpy arrays come from the C allocator (glibc malloc), which keeps freed
    heap pages resident for reuse when a small live block sits above them: at 1M rows about
    0.3 GB stayed resident after the scorecard although nothing held it, and the row table's
    own allocator (polars') cannot reuse those pages. ``malloc_trim(0)`` returns every free
    page; it changes no number. Called between the stages of :func:`run`.

    Arrow's default memory pool (mimalloc in the pyarrow wheels) keeps the pages of the blocks
    ingest read and the spill wrote for reuse too: ``release_unused`` returns them (after
    ``pipeline.load`` of the 5M-row benchmark file, 0.23 -> 0.16 GB of anonymous memory).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _version() -> str:
    try:
        return metadata.version("workbench")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def load(
    inputs: Sequence[str], cfg: Config, plan: str | None = None,
    progress: Callable[[int], None] | None = None,
    notes: dict[str, Any] | None = None,
    execution: execute.Execution | None = None,
) -> tuple[pl.DataFrame, list[ingest.SourceFile], dict[str, Any]]:
    """Read inputs and apply the plan: ``(rows, sources, plan_info)``.

    ``plan`` is a CSV path, ``"complete"`` (every observed scenario x variant x trial x
    judge) or None. ``execution``: where ingest runs (:mod:`workbench.ingest.execute`; the rows do
    not depend on it).
    """
    try:
        rows, sources = execute.read_rows(inputs, cfg, execution, progress=progress, notes=notes)
    except BaseException:
        close = getattr(progress, "close", None)
        if close is not None:  # blank the bar before the error line is printed
            close()
        raise
    finish = getattr(progress, "finish", None)
    if finish is not None:  # a terminal progress line: end it with the ledger's count
        finish(int(rows.select(pl.col("line").is_not_null().sum()).item()))
    plan_df = None
    mode = None
    task_files: list[str] = []
    task_notes: list[str] = []
    if plan == "complete":
        plan_df, mode = ledger.complete_plan(rows), "complete"
    elif plan is not None and plan.endswith((".jsonl", ".json")):
        plan_df, task_files, task_notes = _task_plan(rows, cfg, plan)
        mode = "tasks"
    elif plan is not None:
        plan_df, mode = ledger.read_plan(plan), "file"
    elif cfg.tasks is not None and any(formats.task_file_for(s.path, cfg) for s in sources):
        plan_df, task_files, task_notes = _task_plan(rows, cfg, None)
        mode = "tasks"
    if plan_df is not None and mode != "complete":
        # a plan in another key structure (questions for rows keyed by question and turn)
        # would make every row unplanned and every planned key missing: refused instead
        where = plan if plan is not None else ", ".join(task_files)
        ledger.check_plan_keys(rows, plan_df, where, cfg, task_notes)
    rows, info = ledger.apply_plan(rows, plan_df)
    rows = clusters.assign(rows, cfg)  # the planned rows' clusters (a line's came with it)
    from workbench.analysis import length as length_mod

    rows = length_mod.keep_lengths(rows, cfg)  # the answers' length, not their text, from here on
    info["mode"] = mode
    if mode == "tasks":
        info["task_files"] = task_files
    return rows, sources, info


def _task_plan(rows: pl.DataFrame, cfg: Config,
               task_file: str | None) -> tuple[pl.DataFrame, list[str], list[str]]:
    """The plan a harness's question file gives: its scenario keys in the rows' key structure
    (a question with two turns plans both, :func:`workbench.ingest.formats.read_task_keys`) x the
    variant, trial and judge combinations each input file holds (a file whose task list cannot
    be found plans its own scenarios). ``task_file`` None: the preset's ``tasks.file`` beside
    each input. Returns ``(plan, task files used, notes on parts the task list lacks)``."""
    from workbench.common.config import KEY_FIELDS

    keys = (cfg.tasks or {}).get("key") or ["question_id", "uid", "id", "session_id", "instruction"]
    keys = [keys] if isinstance(keys, str) else list(keys)
    # only the file and key columns of the keyed rows (a filter of the rows would copy every
    # column, the verdict texts included)
    keyed = rows.lazy().filter(selection.keyed()).select("file", *KEY_FIELDS).collect()
    parts = []
    used: list[str] = []
    notes: list[str] = []
    read: dict[str, list[str]] = {}
    for (f,), sub in sorted(keyed.partition_by(["file"], as_dict=True).items()):
        tf = task_file if task_file is not None else formats.task_file_for(f, cfg)
        combos = sub.select("variant", "trial", "judge").unique()
        if tf is None:
            scen = sub.select("scenario").unique()
        else:
            if tf not in read:
                read[tf], note = formats.read_task_keys(tf, keys, cfg)
                if note is not None:
                    notes.append(note)
            scen = pl.DataFrame({"scenario": read[tf]})
            if tf not in used:
                used.append(tf)
        parts.append(scen.join(combos, how="cross").select(KEY_FIELDS))
    if not parts:  # no keyed row at all: the task list's keys alone (nothing to cross with)
        return pl.DataFrame(schema={k: pl.String for k in KEY_FIELDS}), used, notes
    return pl.concat(parts).unique(maintain_order=True), used, notes


def _one_blas_thread(fn: Callable[..., Analysis]) -> Callable[..., Analysis]:
    """Run ``fn`` with one BLAS thread (:func:`workbench.stats.one_blas_thread`): without it
    ``results.json`` could depend on the machine's core count."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Analysis:
        with stats.one_blas_thread():
            return fn(*args, **kwargs)

    return wrapper


ROW_READERS: dict[str, str] = {
    # the reduction: one pass over the key, bucket and status columns
    "reduce_codes.KeyedCodes": "the reduction itself (codes of the keyed rows, built once)",
    # read the coded view; the row table only when it is unusable (a key column not text)
    "census_table": "the view; rows only when the view is unusable",
    "census_margins": "the view; rows only when the view is unusable",
    "names.name_warnings": "the view; the key texts of a few near-duplicate names",
    "missingness_tests": "the view; rows only when the view is unusable",
    "JointBootstrap.for_rows": "only when the view is unusable (the cluster index)",
    "selection.cell_values": "only when the view is unusable (the cell rows' variants and judges)",
    # row-sized reads still to move onto the reduction (issue 29)
    "selection.count_where": "the ledger's notes: predicates on status columns the view does not code",
    "conflict_kinds": "the conflicting rows (few), filtered lazily",
    "conflict_runs": "the conflicting rows (few), filtered lazily",
    "scale_checks": "each field's raw numbers",
    "provenance.provenance_checks": "the file and line columns",
    "scorecard_table": "each cell's valid values (the sort of packed cell, scenario, value keys)",
    "flag_rates": "the flag lists",
    "pass_rates": "each cell's valid values against the pass threshold",
    "consistency": "values per item across trials",
    "paired.PairedTables": "the within-item pairs of judges and variants",
    "paired.judge_offsets": "the within-item pairs (or PairedTables')",
    "paired.contrasts": "the within-item pairs (or PairedTables')",
    "paired.contrast_confounding": "only when the view is unusable (the judgment units of each contrast)",
    "check.published_check": "every line's value as read (duplicates and re-judgments included)",
    "check.check_claims": "every line's value as read, and the claim's units",
    "paired.repetition_consistency": "values per item across trials",
    "selfpref.self_preference": "per-item scores with the writer of each answer",
    "human.human_section": "per-item scores beside the human labels",
    "harness.harness_figures": "the harness's own rule over the lines as read",
    "harness.position_swap": "the two orders of each pairwise judgment",
    "length_mod.section": "answer lengths per item",
    "Analysis": "no stage: returned to the caller as Analysis.rows",
    # the row table's own methods called in run() (and in the helpers it calls)
    "rows.lazy": "the malformed lines' file, line and reason",
    "rows.columns": "the column names only",
}
"""Every function :func:`run` hands the row table to after the reduction (the coded view,
:class:`workbench.reduce.codes.KeyedCodes`), and what it reads there. Issue 29's target is a
table of the reduction alone: every other stage reading typed tables of cells and items, none
row-sized. ``tests/test_layers.py`` reads :func:`run`'s source (and the helpers of this module
it calls) and fails when a call receives ``rows``, a method of ``rows`` is used or ``rows`` is
bound to another name without an entry here (a new reader), or an entry has no such use (a
reader moved off the rows: delete its line)."""


@_one_blas_thread
def run(
    inputs: Sequence[str | Path] | str | Path, cfg: Config | str | Path | None = None, plan: str | None = None,
    published: str | None = None, claims: str | None = None,
    progress: Callable[[int], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    execution: execute.Execution | None = None,
    on_rows: Callable[[pl.DataFrame], None] | None = None,
) -> Analysis:
    """Run every stage and return the :class:`Analysis` (nothing is written to disk).

    ``progress(n)`` is called as lines are read; ``on_stage(text)`` as each later stage
    starts (the CLI shows both on a terminal, so a long run is never silent); when
    ``on_stage`` has a ``bar(label, total)`` method, the pairwise stages get progress bars.
    ``execution`` (:class:`workbench.ingest.execute.Execution`): where ingest runs; ``results.json``
    is the same whatever it is, so it is not recorded there (``Analysis.execution`` -> ``run.json``).
    ``on_rows(rows)`` is called once with the final row table (``Analysis.rows``) before the
    stages start: the CLI writes ``rows.parquet`` from it while they run
    (:class:`workbench.document.cliargs.RowsParquet`).
    """
    stage = on_stage or (lambda text: None)

    def bar(label: str, total: int) -> Callable[[int | None], None] | None:
        # a progress bar for a long pairwise stage, when ``on_stage`` makes them (the CLI's
        # terminal.StagePrinter, on a terminal only); the pipeline never imports the terminal
        make = getattr(on_stage, "bar", None)
        if make is None or total < 20:
            return None
        return make(label, total)
    if isinstance(inputs, str | Path):  # one path, not a sequence of characters
        inputs = [str(inputs)]
    if not isinstance(cfg, Config):  # a config path (or None: the defaults)
        from workbench.common.config import load_config

        cfg = load_config(None if cfg is None else str(cfg))
    notes: dict[str, Any] = {}
    execution = execution or execute.Execution()
    rows, sources, plan_info = load([str(i) for i in inputs], cfg, plan, progress, notes, execution)
    fields = cfg.score_names  # every stage table below is checked against workbench.common.schemas
    rows = schemas.conform(rows, schemas.ROWS, fields)
    release_memory()  # what ingest freed
    if on_rows is not None:
        on_rows(rows)  # the row table is final from here on (Analysis.rows)
    stage(f"{rows.height} rows read; census")
    config_warnings = check_names(rows, cfg)
    hl = cfg.headline
    led = ledger.count_ledger(rows, planned=plan_info["mode"] is not None)
    # the keyed rows as integer codes, built once (in the census) for the stages up to the
    # flag rates, and dropped after them
    view = reduce_codes.KeyedCodes(rows, cfg)
    cen = schemas.conform(census_table(rows, cfg, view=view), schemas.CENSUS, fields)
    margins = schemas.conform(census_margins(rows, cfg, view=view), schemas.CENSUS_MARGINS, fields)
    head: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "workbench_version": _version(),
        "inputs": [{"path": s.path, "sha256": s.sha256, "lines": s.lines} for s in sources],
        "config": cfg.to_dict(),
        "config_sources": list(cfg.sources),
        "config_warnings": config_warnings,
        "name_warnings": names.name_warnings(rows, notes.get("key_types"), view=view),
        "plan": plan_info,
        "ledger": led,
        "ledger_notes": {
            # counts as sums of predicates (a filter would copy every column of the rows it keeps)
            "from_string": selection.count_where(rows, (pl.col("bucket") == "valid") & pl.col(f"{hl}__from_string")),
            "sentinel": selection.count_where(rows, (pl.col(f"{hl}__status") == "sentinel")
                                              & (pl.col("bucket") != "duplicate")),
            "unplanned": plan_info.get("unplanned"),
            "duplicate_json_key": selection.count_where(rows, (pl.col("bucket") == "malformed")
                                         & pl.col("reason").str.starts_with(ingest.DUPLICATE_KEY)),
        },
    }
    if cfg.missing_when:
        # headline scores a missing_when condition declared failures (inside partial/empty)
        head["ledger_notes"]["declared_missing"] = selection.count_where(
            rows, (pl.col(f"{hl}__status") == "declared_missing") & (pl.col("bucket") != "duplicate"))
    # conflicts by kind, and for different answers (a stale or overwritten run) each run's figure
    from workbench.analysis.check import conflict_kinds, conflict_runs

    head["conflict_kinds"] = conflict_kinds(rows)
    head["conflict_runs"] = conflict_runs(rows, cfg)
    if cfg.explode is not None:
        # one input line holds several judgments: the ledger counts judgments (rows)
        head["ledger_notes"]["input_lines"] = sum(s.lines for s in sources)
    malformed = rows.lazy().filter(pl.col("bucket") == "malformed").select("file", "line", "reason").collect()
    # the census's group numbers of every keyed row, its per-scenario judgments and its flags:
    # its tables are built, and the missingness tests read none of them (they read the cached
    # cell counts), so they go before those tests make their units
    view.forget("groups:", "census:per_scenario", "flags")
    release_memory()
    missing_tests = missingness_tests(rows, cfg, view=view)
    # the variant test's units, for the contrasts' confounding tests (a selection of them per
    # pair), from the judgment table the missingness tests built: small (cells x scenarios)
    variant_items = VariantItems.of_view(view, cfg)
    view.forget("groups:", "census:")  # the census's group numbers: the later stages read none
    scales = scale_checks(rows, cfg)
    prov = provenance.provenance_checks(rows, cfg)
    release_memory()
    from workbench.reduce.sufficient import JointBootstrap

    # the joint bootstrap's weights are drawn over the run's clusters (config cluster:; by
    # default the scenarios): the same sorted index either way
    joint = (JointBootstrap.for_scenarios([s for s in view.levels("cluster") if s is not None], cfg,
                                          n_scenarios=sum(s is not None for s in view.levels("scenario")))
             if view.usable else JointBootstrap.for_rows(rows, cfg))
    head["clustering"] = clusters.record(
        cfg, len(joint.scenarios) if joint.n_scenarios is None else joint.n_scenarios, len(joint.scenarios))
    make_bar = getattr(on_stage, "bar", None)
    if make_bar is not None:  # a long pass (thousands of cells) shows its progress on a terminal
        joint.progress_bar = lambda label, total: make_bar(label, total, unit=" steps")
    unit = "scenarios" if cfg.cluster is None else f"clusters ({cfg.cluster_name})"
    # the flag rates and the cell rows' variants and judges (which the paired stages compare)
    # before the scorecard, so that the scorecard can release the view once it has read it
    flags = schemas.conform(flag_rates(rows, cfg, view=view), schemas.FLAG_RATES)
    view.forget("flag_rates:")  # its three flags a keyed row: not kept through the scorecard
    variants, judges = ((view.cell_levels("variant"), view.cell_levels("judge")) if view.usable
                        else (selection.cell_values(rows, "variant"), selection.cell_values(rows, "judge")))
    stage(f"scorecard (joint cluster bootstrap, {joint.resamples} resamples over "
          f"{len(joint.scenarios)} {unit})")
    card = schemas.conform(scorecard_table(rows, cfg, joint, view=view, release_view=True), schemas.SCORECARD)
    del view  # released by the scorecard (its codes, about 17 bytes a keyed row)
    release_memory()
    passes = schemas.conform(pass_rates(rows, cfg), schemas.PASS_RATES)
    cons = schemas.conform(consistency(rows, cfg), schemas.CONSISTENCY)
    gate_doc = gate(card, cfg, passes, census=cen)
    pairs, pair_info = selection.contrast_pairs(variants, cfg)
    n_judges = len(judges)
    _, offset_info = selection.offset_variants(variants, cfg, n_judges * (n_judges - 1) // 2)
    contrast_selection = {"variant_contrasts": pair_info, "judge_offsets": offset_info}
    config_warnings.extend(i["note"] for i in (pair_info, offset_info) if i["note"])
    n_offsets = offset_info["judge_pairs"] * (1 + offset_info["computed"] // max(offset_info["judge_pairs"], 1)
                                              + len(cfg.subsets))
    stage(f"judge offsets ({n_offsets} records)")
    # the headline's cell rows coded once for the offsets and the contrasts; dropped before
    # the confounding tests, whose judgment units are large too (paired.PairedTables)
    tables = paired.PairedTables(rows, cfg).prepare()
    offsets = paired.judge_offsets(rows, cfg, progress=bar("judge offsets", n_offsets), joint=joint,
                                   tables=tables, judges=judges, variants=variants)
    tables.forget_judge_orders()
    release_memory()
    n_pairs = len(pairs) * (1 + len(cfg.subsets))
    stage(f"variant contrasts ({n_pairs} pairs, {pair_info['mode'].replace('_', ' ')})")
    contrasts = paired.contrasts(rows, cfg, progress=bar("contrasts", n_pairs), joint=joint, tables=tables,
                                 variants=variants)
    del tables
    release_memory()
    boot_doc = joint.record()
    contrasts = paired.contrast_confounding(contrasts, cen, margins, cfg, rows if variant_items is None else None,
                                            items=variant_items)
    del variant_items
    rank_table = ranks.rank_intervals(card, contrasts, hl, cfg.alpha)
    # headline check (workbench.analysis.check): a published card and/or claims, when given
    from workbench.analysis import check

    published_checks = claims_checked = None
    if published is not None or claims is not None:
        stage("headline check")
    if published is not None:
        published_checks = check.published_check(
            rows, cfg, check.read_published(published, cfg), source=published)
    if claims is not None:
        claims_checked = check.check_claims(rows, cfg, check.read_claims(claims))
    release_memory()  # what the confounding tests' units freed
    repetition = paired.repetition_consistency(rows, cfg)
    release_memory()
    self_pref = selfpref.self_preference(rows, cfg)
    note = selfpref.families_note(self_pref)
    if note:
        config_warnings.append(note)
    human_doc = human.human_section(rows, cfg, human.read_labels(cfg))
    harness_doc = None
    if cfg.harness is not None or cfg.explode is not None:
        stage("harness rule")
        harness_doc = {"rule": (cfg.harness or {}).get("rule"),
                       "figures": harness.harness_figures(rows, cfg),
                       "position_swap": harness.position_swap(rows, cfg)}
    from workbench.analysis import length as length_mod

    if "x_output_1" in rows.columns:
        stage("length-controlled win rate (refitted in each resample)")
    length_doc = length_mod.section(rows, cfg, [s.path for s in sources])
    frames = {"census": cen, "census_margins": margins, "missingness_tests": missing_tests,
              "scale_checks": scales, "provenance_checks": prov, "scorecard": card, "flag_rates": flags,
              "pass_rates": passes, "consistency": cons,
              "judge_offsets": offsets, "contrasts": contrasts, "ranks": rank_table.cells,
              "repetition": repetition.per_variant, "repetition_slices": repetition.slices}
    if published_checks is not None:
        frames["published_check"] = published_checks
    if claims_checked is not None:
        frames["claims"] = claims_checked
    frames = schemas.conform_frames(frames, fields)
    doc = document.build(
        head=head, fields=fields, malformed_lines=malformed, census=cen, census_margins=margins,
        missingness_tests=missing_tests, scale_checks=scales, provenance_checks=prov,
        value_unit=cfg.value_unit, value_range=cfg.value_range,
        scorecard=card, flag_rates=flags, pass_rates=passes, consistency=cons, gate=gate_doc,
        contrast_selection=contrast_selection, judge_offsets=offsets, contrasts=contrasts,
        bootstrap=boot_doc, ranks=rank_table,
        published_check=published_checks,
        claims=claims_checked, repetition=repetition, harness=harness_doc, length=length_doc,
        self_preference=self_pref, human=human_doc)
    return Analysis(config=cfg, rows=rows, sources=sources, doc=doc, frames=frames,
                    execution=execute.describe(execution, len(sources)))

