"""Harness rules: the figure each harness's own scoring code prints, recomputed from the rows.

The workbench's own numbers (valid means with valid n, intervals, bounds) answer "what do the
rows say"; a reviewer also needs "what did the harness print, and does it follow from these
rows". A preset names its harness (``harness: {rule: NAME, ...}``) and :func:`harness_figures`
applies that harness's documented rule to the rows *as read* (every line, re-runs and
conflicting duplicates included, as the harness reads them), so the printed leaderboard value
can be compared with the workbench's figure side by side. The rules (source files and lines
in each preset and in docs/real-data.md):

* ``fastchat_single`` (FastChat show_result.py, single): drop ``score == -1``, mean of every
  other row per model and turn and over both turns.
* ``fastchat_pairwise`` (show_result.py, pairwise-all): drop a row if either game is
  ``error``; per row one outcome: a tie if game 1 is a tie or the two games disagree, else the
  agreed winner; ``win_rate_adjusted = (win + tie / 2) / n`` for each model of the pair.
* ``alpaca_eval`` (metrics/helpers.py describe_head2head): 0 -> 1.5, keep 1 <= p <= 2,
  ``x = p - 1``; ``win_rate = 100 mean(x)``, ``standard_error = 100 sem(x)``, ``n_wins``,
  ``n_wins_base``, ``n_draws``, ``n_total``, ``discrete_win_rate``.
* ``wildbench`` (leaderboard/data_dir/_create_tables.py): ``score`` = mean of every row's
  score, ``adjusted_score = (score - 5) * 2``, ``total`` = rows; a file whose name contains
  "128", "256", ... is skipped by the harness: it prints nothing for that model, so the records
  have no value, and the note says why (with the value the rule would give).
* ``arena_hard`` (show_result.py): v0.1 keeps each game with one of its five labels (weight
  3 for ``>>``; a game whose score is null dropped alone; a null game object or a one-game row
  stops the script, so no figure, and the note says where), v2.0 (rows with ``uid``, or "v2" in
  the bench folder) drops a row with any null game or score and prints a figure per category;
  score = 100 * weighted win share against the baseline, ties half (the single-baseline
  Bradley-Terry MLE); a model that is the baseline is 50 by construction, and the baseline's
  own line (printed at 50 by both versions) is a record too, rows of its own or not; a row
  that stops the script stops it for every model of the judge's folder (read at once).
* ``inspect`` (scorer/_metrics accuracy, stderr): C 1, P 0.5, I 0, N 0 (NOANSWER as 0: the
  zero-filled counterfactual), mean and sample sd / sqrt(n) (0 when n < 2) over scored
  samples; logs written by vitals (R) use vitals' rule (grades I < P < C as 0, 1, 2 divided by
  the observed maximum, times 100). The log's printed metrics are compared.

:func:`position_swap` adds, for presets that explode position-swapped games, per variant and
judge: items with both games usable, how often the two games disagree (with a Wilson
interval), the mean credit by position (the position effect), items with one or both games
missing, and items planned but absent from the file.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl

from workbench import stats
from workbench.common.config import Config
from workbench.ingest import selection

WILDBENCH_SKIP = ("128", "256", "384", "512", "640", "768", "896", "1024")
"""File-name fragments WildBench's _create_tables.py (line 86) skips."""


def _mean(xs: list[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def _sem(xs: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    m = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)) / math.sqrt(len(xs))


def _read(rows: pl.DataFrame) -> pl.DataFrame:
    """Every row as read from a file (no planned-but-absent rows, no blank or malformed lines:
    those have no trustworthy key, and the harness's own reader would fail on them)."""
    return rows.filter(pl.col("line").is_not_null() & selection.keyed())


def _rec(rule: str, variant: str | None, judge: str | None, figure: str, value: Any, n: int | None,
         note: str | None = None, printed: Any = None, file: str | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"rule": rule, "variant": variant, "judge": judge, "figure": figure,
                           "value": value, "n": n, "note": note}
    if printed is not None:
        rec["printed"] = printed
        rec["matches"] = (value is not None and isinstance(printed, int | float)
                          and abs(float(value) - float(printed)) <= 5e-5 * max(1.0, abs(float(printed))))
    if file is not None:
        rec["file"] = file
    return rec


# --------------------------------------------------------------------------- rules


def _fastchat_single(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    hl = cfg.headline
    read = _read(rows).filter(pl.col(f"{hl}__raw").is_not_null()
                              & (pl.col(f"{hl}__status") != "sentinel"))
    out = []
    for (variant, judge), g in sorted(read.partition_by(["variant", "judge"], as_dict=True).items(),
                                      key=lambda kv: tuple(map(str, kv[0]))):
        turn = g["scenario"].str.split(":").list.last()
        for label, part in (("turn 1", g.filter(turn == "1")), ("turn 2", g.filter(turn == "2")),
                            ("average", g)):
            vals = part[f"{hl}__raw"].to_list()
            if vals:
                out.append(_rec("fastchat_single", variant, judge, label, _mean(vals), len(vals)))
    return out


def _pair_games(rows: pl.DataFrame, cfg: Config) -> dict[tuple[str, int], dict[str, Any]]:
    """Per input row (file, line): its games' labels by position, variant, judge, opponent,
    and how each position was written (``shape``: ``absent`` when the list was shorter,
    ``null`` when the game itself is null, else ``game``), what the harness's reader sees."""
    hl = cfg.headline
    read = _read(rows)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    cols = ["file", "line", "variant", "judge", "trial", "reason", f"{hl}__label", f"{hl}__raw"]
    extra = [c for c in ("x_opponent", "x_baseline", "x_uid", "x_category", "path_bench") if c in read.columns]
    for r in read.select(cols + extra).iter_rows(named=True):
        key = (r["file"], r["line"])
        item = out.setdefault(key, {"variant": r["variant"], "judge": r["judge"], "games": {},
                                    "credit": {}, "shape": {}, "opponent": r.get("x_opponent"),
                                    "baseline": r.get("x_baseline"), "bench": r.get("path_bench"),
                                    "uid": r.get("x_uid"), "category": r.get("x_category"),
                                    "file": r["file"], "line": r["line"]})
        why = r["reason"] or ""
        item["games"][r["trial"]] = r[f"{hl}__label"]
        item["credit"][r["trial"]] = r[f"{hl}__raw"]
        item["shape"][r["trial"]] = ("absent" if "no judgment in the row" in why
                                     else "null" if "the judgment is null" in why else "game")
    return out


def _fastchat_pairwise(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    items = _pair_games(rows, cfg)
    res: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    dropped: dict[str, int] = defaultdict(int)
    for it in items.values():
        g1, g2 = it["games"].get("1"), it["games"].get("2")
        m1, m2, judge = it["opponent"], it["variant"], it["judge"]
        if g1 == "error" or g2 == "error":
            dropped[judge] += 1
            continue
        if g1 == "tie" or g1 != g2:
            res[(m1, judge)][2] += 1
            res[(m2, judge)][2] += 1
        else:
            w, lo = (m1, m2) if g1 == "model_1" else (m2, m1)
            res[(w, judge)][0] += 1
            res[(lo, judge)][1] += 1
    out = []
    for (model, judge), (w, lo, t) in sorted(res.items(), key=lambda kv: tuple(map(str, kv[0]))):
        n = w + lo + t
        note = (f"pairwise-all; {dropped[judge]} row(s) with an 'error' game dropped"
                if dropped.get(judge) else "pairwise-all; every row counted, re-runs included")
        for fig, val in (("win", w), ("loss", lo), ("tie", t), ("win_rate", w / n),
                         ("loss_rate", lo / n), ("win_rate_adjusted", (w + 0.5 * t) / n)):
            out.append(_rec("fastchat_pairwise", model, judge, fig, val, n,
                            note if fig == "win_rate_adjusted" else None))
    return out


def _alpaca_eval(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    hl = cfg.headline
    read = _read(rows).filter(pl.col(f"{hl}__raw").is_not_null())
    out = []
    for (variant, judge), g in sorted(read.partition_by(["variant", "judge"], as_dict=True).items(),
                                      key=lambda kv: tuple(map(str, kv[0]))):
        prefs = [1.5 if p == 0 else float(p) for p in g[f"{hl}__raw"].to_list()]
        prefs = [p for p in prefs if 1 <= p <= 2]
        x = [p - 1 for p in prefs]
        disc = []
        for p in prefs:
            q = 0.0 if p == 1.5 else float(round(p))
            disc.append((1.5 if q == 0 else q) - 1)
        n = len(x)
        if not n:
            continue
        se = _sem(x)
        figs = [("win_rate", 100 * _mean(x)), ("standard_error", None if se is None else 100 * se),  # type: ignore[operator]
                ("n_wins", sum(v > 0.5 for v in x)), ("n_wins_base", sum(v < 0.5 for v in x)),
                ("n_draws", sum(p == 1.5 for p in prefs)), ("n_total", n),
                ("discrete_win_rate", 100 * _mean(disc))]  # type: ignore[operator]
        for fig, val in figs:
            out.append(_rec("alpaca_eval", variant, judge, fig, val, n))
    return out


def _wildbench(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    hl = cfg.headline
    read = _read(rows)
    out = []
    for (file, variant, judge), g in sorted(read.partition_by(["file", "variant", "judge"], as_dict=True).items(),
                                            key=lambda kv: tuple(map(str, kv[0]))):
        vals = g[f"{hl}__raw"].drop_nulls().to_list()
        name = Path(file).name
        skip = [s for s in WILDBENCH_SKIP if s in name]
        score = _mean(vals)
        adjusted = None if score is None else (score - 5) * 2
        note = None
        if len(vals) != g.height:
            note = (f"{g.height - len(vals)} row(s) without a number: the harness's float() would fail")
        if skip:
            # the harness prints nothing for this file: no figure; its rule's value is in the note
            why = (f"the harness skips this file (its name contains {skip[0]!r}, _create_tables.py line 86): "
                   "this model never reaches score.json, so it prints no figure")
            rule = ("" if score is None else
                    f"; its rule would give score {score:.10g}, adjusted_score {adjusted:.10g}, "
                    f"total {g.height}")
            note = why + rule + (f"; {note}" if note else "")
            for fig in ("score", "adjusted_score", "total"):
                out.append(_rec("wildbench", variant, judge, fig, None, None, note, file=file))
            continue
        out.append(_rec("wildbench", variant, judge, "score", score, len(vals), note, file=file))
        out.append(_rec("wildbench", variant, judge, "adjusted_score", adjusted, len(vals), file=file))
        out.append(_rec("wildbench", variant, judge, "total", g.height, g.height, file=file))
    return out


ARENA_V01_LABELS = {"A>>B", "A>B", "A=B", "B>A", "B>>A"}
"""The labels show_result.py v0.1 (get_battles_from_row) gives a battle; any other label,
``A<<B`` and ``B=A`` included, gets weight 0 there (v2.0's label_to_score knows all ten)."""


def _arena_version(it: dict[str, Any]) -> str:
    """Which show_result.py reads this row: v2.0's load_judgments keys battles by ``uid`` (and
    needs ``category``), v0.1's get_battles_from_row by ``question_id``: a row carrying ``uid``
    is v2.0-shaped whatever its folder is called; otherwise the data/<bench> folder decides."""
    return "v2.0" if it.get("uid") is not None or "v2" in str(it["bench"] or "") else "v0.1"


def _arena_hard(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """show_result.py line for line (v0.1 @ e883410/0489bf3, v2.0 @ 196f6b8): per row, game 1
    (the baseline is A) and game 2 (swapped).

    * v0.1: a game whose label is one of :data:`ARENA_V01_LABELS` gives ``weight`` battles
      (3 for ``>>``), any other label (null included) none: that game alone is dropped. A row
      with fewer than two games or a null game stops the harness (``row["games"][1]``:
      IndexError; ``None["score"]``: TypeError): it prints nothing, and the record says so.
    * v2.0: a row with a null game or a null score is dropped whole (line 31); a row with
      fewer than two games stops it (IndexError), as does a label outside label_to_score
      (KeyError); the default leaderboard is ``--category hard_prompt``: rows of another
      category are another leaderboard (a record per category). It prints the mean of 100
      unseeded bootstrap means, which varies around the point value computed here.
    """
    params = cfg.harness or {}
    weights = {k: w for k, (_, w) in (cfg.values or {}).items()}
    scale = float(cfg.unit.get("scale", 1))
    items = _pair_games(rows, cfg)
    acc: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for it in items.values():
        version = _arena_version(it)
        v2 = version == "v2.0"
        key = (it["variant"], it["judge"], it["category"] if v2 else None)
        a = acc.setdefault(key, {"wc": 0.0, "w": 0.0, "games": 0, "null_games": 0, "dropped_rows": 0,
                                 "empty_rows": 0, "half_rows": 0, "stops": [],
                                 "baseline": it["baseline"] or params.get("baseline"),
                                 "v2": v2, "bench": it["bench"]})
        a["v2"] = a["v2"] or v2
        shapes = [it["shape"].get(pos, "absent") for pos in ("1", "2")]
        labels = [it["games"].get(pos) for pos in ("1", "2")]
        where = f"{Path(str(it['file'])).name}:{it['line']}"
        if "absent" in shapes:
            a["stops"].append(f"{where} has {shapes.count('game') + shapes.count('null')} game(s): "
                              "games[1] raises IndexError")
            continue
        if v2:
            if "null" in shapes or any(lab is None for lab in labels):
                a["dropped_rows"] += 1
                a["null_games"] += sum(lab is None for lab in labels)
                continue
            unknown = [lab for lab in labels if lab not in weights]
            if unknown:
                a["stops"].append(f"{where}: label {unknown[0]!r} is not in label_to_score (KeyError)")
                continue
        elif "null" in shapes:
            a["stops"].append(f"{where}: a null game: game['score'] raises TypeError")
            continue
        known = weights if v2 else {k: w for k, w in weights.items() if k in ARENA_V01_LABELS}
        games = [(lab, it["credit"].get(pos)) for pos, lab in zip(("1", "2"), labels, strict=True)]
        usable = [(lab, c) for lab, c in games if lab in known and c is not None]
        a["null_games"] += len(games) - len(usable)
        if not usable:
            a["empty_rows"] += 1
        elif len(usable) < len(games):
            a["half_rows"] += 1
        for lab, c in usable:
            w = known[lab]  # the value mapping's weight: 3 for a ">>" verdict
            a["wc"] += w * (c / scale)
            a["w"] += w
            a["games"] += 1
    # show_result.py reads a judge's whole folder (data/<bench>/model_judgment/<judge>/*.jsonl) at
    # once: a row that stops it stops it for every model of that folder
    stops: dict[tuple[Any, Any], list[str]] = defaultdict(list)
    for (_, judge, _), a in sorted(acc.items(), key=lambda kv: tuple(map(str, kv[0]))):
        stops[(judge, a["bench"])].extend(a["stops"])
    # every model is printed, and so is the baseline (every battle is against it) at 50
    boards: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    out = []
    for (variant, judge, category), a in sorted(acc.items(), key=lambda kv: tuple(map(str, kv[0]))):
        version = "v2.0" if a["v2"] else "v0.1"
        figure = "score" if category in (None, "hard_prompt") else f"score ({category})"
        cat = "" if category is None else (f"; category {category}" + (
            " (the default --category)" if category == "hard_prompt"
            else ": printed only with --category " + str(category)))
        stop = stops[(judge, a["bench"])]
        board = boards.setdefault((judge, a["bench"], category), {
            "variants": set(), "baseline": a["baseline"], "version": version, "figure": figure,
            "cat": cat, "stop": stop})
        board["variants"].add(variant)
        if stop:
            more = f" (and {len(stop) - 1} more)" if len(stop) > 1 else ""
            out.append(_rec("arena_hard", variant, judge, figure, None, None,
                            f"{version}: show_result.py stops before printing: {stop[0]}{more}; "
                            "it prints no figure for these rows"))
            continue
        if variant == a["baseline"]:
            out.append(_rec("arena_hard", variant, judge, figure, 50.0, a["games"],
                            f"{version}: the baseline judged against itself; the harness ignores these "
                            f"battles and reports 50 by construction{cat}"))
            continue
        score = 100 * a["wc"] / a["w"] if a["w"] else None
        drop = (f"{a['dropped_rows']} row(s) with a null game dropped whole" if a["v2"]
                else f"{a['null_games']} game(s) without a v0.1 verdict dropped: {a['half_rows']} row(s) kept "
                     f"with their other game, {a['empty_rows']} row(s) with no usable game at all")
        printed = ("; it prints the mean of 100 unseeded bootstrap means (rounded to 0.1), which varies "
                   "around this point value") if a["v2"] else ""
        out.append(_rec("arena_hard", variant, judge, figure, score, a["games"],
                        f"{version} vs baseline {a['baseline']}: {a['games']} games kept = "
                        f"{a['w']:g} weighted battles; {drop}{cat}{printed}"))
    for (judge, _, _), b in sorted(boards.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if b["baseline"] is None or b["baseline"] in b["variants"]:
            continue
        if b["stop"]:
            out.append(_rec("arena_hard", b["baseline"], judge, b["figure"], None, None,
                            f"{b['version']}: the baseline; show_result.py stops before printing: "
                            f"{b['stop'][0]}; it prints no figure"))
            continue
        line = ("v0.1: the baseline (model_a of every battle); show_result.py prints its line at 50 "
                "(its win rate against itself, fillna(0.5))" if b["version"] == "v0.1" else
                "v2.0: the baseline; show_result.py's format_confidence_interval appends its line at 50.0")
        out.append(_rec("arena_hard", b["baseline"], judge, b["figure"], 50.0, None,
                        f"{line}; it has no rows of its own in the input{b['cat']}"))
    return out


_TO_FLOAT = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0, "true": 1.0, "false": 0.0}


def _inspect(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    from workbench.ingest.formats import inspect_header, inspect_writer

    hl = cfg.headline
    read = _read(rows)
    out = []
    for (file, judge), g in sorted(read.partition_by(["file", "judge"], as_dict=True).items(),
                                   key=lambda kv: tuple(map(str, kv[0]))):
        header = inspect_header(file)
        writer = inspect_writer(header)
        printed = {}
        for sc in (header.get("results") or {}).get("scores") or []:
            if sc.get("name") == judge:
                printed = {k: (m or {}).get("value") for k, m in (sc.get("metrics") or {}).items()}
        labels = g.filter(~pl.col("bucket").is_in(["unscored", "errored"]))
        vals: list[float] = []
        grades: list[str] = []
        for lab, raw in labels.select(f"{hl}__label", f"{hl}__raw").iter_rows():
            if lab in _TO_FLOAT:
                vals.append(_TO_FLOAT[lab])
                grades.append(lab)
            elif raw is not None:
                vals.append(float(raw))
        variant = g["variant"][0]
        n = len(vals)
        skipped = g.height - labels.height
        note = (f"{skipped} unscored/errored sample(s) left out" if skipped else None)
        if writer == "vitals":
            level = {"I": 0, "P": 1, "C": 2}
            num = [level[x] for x in grades if x in level]
            acc = None
            if num and len(num) == len(grades) and max(num) > 0:
                acc = 100 * math.fsum(v / max(num) for v in num) / len(num)
            rubric = 100 * _mean(vals) if vals else None  # type: ignore[operator]
            vnote = ("vitals (R) rule: grades I<P<C as 0,1,2 divided by the observed maximum; "
                     f"Inspect's C=1/P=0.5/I=0 gives {rubric:.4f}" if rubric is not None else None)
            if acc is not None and rubric is not None and abs(acc - rubric) > 1e-9:
                vnote = (vnote or "") + ": P counts as full credit because no sample got C"
            rec = _rec("inspect", variant, judge, "accuracy", acc, len(num),
                       "; ".join(x for x in (vnote, note) if x) or None,
                       printed=printed.get("accuracy"), file=file)
            rec["lead"] = True
            out.append(rec)
            continue
        se = 0.0 if n < 2 else _sem(vals)
        sd = 0.0 if n < 2 else (None if se is None else se * math.sqrt(n))
        rule = "Inspect rule: C 1, P 0.5, I 0, N (NOANSWER) 0" if grades else "Inspect rule: the values' mean"
        # the log's own metric names (accuracy, mean, stderr, std...), in the log's order; a log
        # without recorded metrics gets Inspect's defaults (accuracy, stderr)
        names = (list(printed) or [m.rsplit("/", 1)[-1] for m in _scorer_metrics(header, judge)]
                 or ["accuracy", "stderr"])
        computed = {"accuracy": _mean(vals), "mean": _mean(vals), "stderr": se, "std": sd}
        first = True
        for name in names:
            if name not in computed:
                out.append(_rec("inspect", variant, judge, name, None, n,
                                f"metric {name!r}: the workbench has no rule for it (printed value shown)",
                                printed=printed.get(name), file=file))
                continue
            rec = _rec("inspect", variant, judge, name, computed[name], n,
                       "; ".join(x for x in (rule, note) if x) if first else None,
                       printed=printed.get(name), file=file)
            if first:
                rec["lead"] = True
                first = False
            out.append(rec)
    return out


def _scorer_metrics(header: dict[str, Any], judge: str) -> list[str]:
    """The metric names ``eval.scorers`` lists for a scorer (``inspect_ai/mean``...)."""
    for sc in (header.get("eval") or {}).get("scorers") or []:
        if isinstance(sc, dict) and sc.get("name") == judge:
            ms = sc.get("metrics") or []
            if not isinstance(ms, list):
                return []
            return [str(m.get("name")) for m in ms if isinstance(m, dict) and m.get("name")]
    return []


_RULES = {"fastchat_single": _fastchat_single, "fastchat_pairwise": _fastchat_pairwise,
          "alpaca_eval": _alpaca_eval, "wildbench": _wildbench, "arena_hard": _arena_hard,
          "inspect": _inspect}


def harness_figures(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """The configured harness's figures per variant x judge (see the module docstring)."""
    if cfg.harness is None:
        return []
    return _RULES[cfg.harness["rule"]](rows, cfg)


# --------------------------------------------------------------------------- position swap


def position_swap(rows: pl.DataFrame, cfg: Config) -> list[dict[str, Any]]:
    """Per variant x judge, for exploded position-swapped games (see the module docstring).

    An item is one judged comparison: a (scenario, variant, judge) key of the ledger, however
    many times it was judged. A game's winner is read from the variant's credit: above, at or
    below the middle of the value range (win, tie, loss). ``disagree`` counts items whose two
    usable games name different winners; ``disagreement_rate`` = disagree / both_usable with a
    Wilson interval. A game is usable when its row is ``valid``; an exact repeat of a game
    (``duplicate``) is the same game counted once, and a game judged again with another
    verdict (``conflict``, every copy held out, as in the scorecard) is not usable.
    ``one_missing``/``both_missing``: items with one or both games without a usable verdict;
    ``reruns``: items with more than one input line (judged again); ``absent_items``: planned
    items with no row at all (needs a plan).
    """
    if cfg.explode is None:
        return []
    hl = cfg.headline
    pos_key = cfg.explode["position"]
    lo, hi = cfg.value_range
    mid = (lo + hi) / 2
    # exact repeats are the game already counted: they are no new item and no new game
    read = _read(rows).filter(~pl.col("bucket").is_in(["malformed", "duplicate"]))
    reread = _read(rows).filter(~pl.col("bucket").is_in(["malformed"]))
    planned = rows.filter(pl.col("bucket") == "missing_planned")
    out = []
    groups = read.partition_by(["variant", "judge"], as_dict=True) if read.height else {}
    for (variant, judge), g in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        per: dict[str, dict[str, float | None]] = defaultdict(dict)
        for sc, pos, raw, status, bucket in g.select("scenario", pos_key, f"{hl}__raw", f"{hl}__status",
                                                     "bucket").iter_rows():
            usable = raw if status == "valid" and bucket != "conflict" else None
            # a conflicting copy of a game makes the game unusable, whichever copy comes first
            per[sc][pos] = None if per[sc].get(pos, 0.0) is None else usable
        lines = (reread.filter((pl.col("variant") == variant) & (pl.col("judge") == judge))
                 .group_by("scenario").agg(pl.col("file"), pl.col("line")))
        reruns = sum(1 for fs, ls in lines.select("file", "line").iter_rows() if len(set(zip(fs, ls, strict=True))) > 1)
        both = disagree = one = none = 0
        by_pos: dict[str, list[float]] = defaultdict(list)
        for games in per.values():
            vals = list(games.values())
            ok = [v for v in vals if v is not None]
            if len(vals) >= 2 and len(ok) == len(vals):
                both += 1
                sides = {(v > mid) - (v < mid) for v in ok}
                disagree += len(sides) > 1
                for p, v in games.items():
                    by_pos[str(p)].append(float(v))  # type: ignore[arg-type]
            elif ok:
                one += 1
            else:
                none += 1
        lo_ci, hi_ci = stats.wilson_interval(disagree, both, cfg.confidence)
        means = {p: _mean(v) for p, v in sorted(by_pos.items())}
        absent = planned.filter((pl.col("variant") == variant) & (pl.col("judge") == judge))
        absent_items = absent.select("scenario").unique().height if absent.height else 0
        present_items = g.select("scenario").unique().height
        effect = None
        if len(means) == 2:
            a, b = list(means.values())
            effect = None if a is None or b is None else a - b
        out.append({"variant": variant, "judge": judge, "items": len(per), "both_usable": both,
                    "disagree": disagree, "disagreement_rate": disagree / both if both else None,
                    "ci_low": lo_ci, "ci_high": hi_ci, "mean_by_position": means,
                    "position_effect": effect, "one_missing": one, "both_missing": none, "reruns": reruns,
                    "absent_items": absent_items if planned.height else None,
                    "planned_items": (present_items + absent_items) if planned.height else None})
    return out
