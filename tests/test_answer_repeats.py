"""Content-aware repeats (issue 25): rows with one key that judged different answers are a
``conflict`` of kind ``different_answer`` (a stale or overwritten run), even when their scores
agree; the same answer with differing scores stays the ``different_content`` conflict;
identical rows stay ``duplicate``.

The files are constructed in the shape of the issue's case (a model judged twice, on two answer
sets, 60 keys whose two judgments agree) and every expected bucket, count and figure comes from
a naive loop over the records written (:func:`naive_marks`, :func:`naive_runs`), not from the
workbench.
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pytest

from workbench.analysis import check
from workbench.cli import terminal
from workbench.common.config import load_config
from workbench.common.errors import ConfigError
from workbench.document import pipeline
from workbench.ingest import reader as ingest
from workbench.ingest.formats import output_digest

FAST = {"bootstrap": {"resamples": 200}, "min_valid_n": 1, "min_clusters": 1}
KEY = ("scenario", "variant", "trial", "judge")


def naive_marks(records: list[dict[str, Any]], key: Any, answer: Any, content: Any) -> list[str | None]:
    """Per record: ``duplicate``, ``conflict:different_answer``, ``conflict:different_content``
    or None (kept), by the rule of the issue: a key whose records carry two or more distinct
    answers (None tells nothing) is a conflict of different answers; else one whose contents
    differ is a conflict of different content; else every record after the first is a duplicate."""
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(key(r), []).append(i)
    out: list[str | None] = [None] * len(records)
    for idx in groups.values():
        if len(idx) == 1:
            continue
        answers = {answer(records[i]) for i in idx} - {None}
        contents = {content(records[i]) for i in idx}
        for n, i in enumerate(idx):
            if len(answers) > 1:
                out[i] = "conflict:different_answer"
            elif len(contents) > 1:
                out[i] = "conflict:different_content"
            elif n > 0:
                out[i] = "duplicate"
    return out


def naive_runs(records: list[dict[str, Any]], marks: list[str | None], key: Any, answer: Any,
               value: Any, cell: Any) -> dict[Any, tuple[float | None, int, float | None, int]]:
    """Per cell with different-answer conflicts: (mean, n) over the records carrying their key's
    first-seen answer and (mean, n) over those carrying another (valid values only)."""
    first: dict[Any, Any] = {}
    sums: dict[Any, list[float]] = {}
    for r, m in zip(records, marks, strict=True):
        if m != "conflict:different_answer" or answer(r) is None:
            continue
        first.setdefault(key(r), answer(r))
        acc = sums.setdefault(cell(r), [0.0, 0, 0.0, 0])
        v = value(r)
        if v is None:
            continue
        j = 0 if answer(r) == first[key(r)] else 2
        acc[j] += v
        acc[j + 1] += 1
    return {c: (s[0] / s[1] if s[1] else None, s[1], s[2] / s[3] if s[3] else None, s[3]) for c, s in sums.items()}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return str(path)


def default_records(score2: Any = None) -> list[dict[str, Any]]:
    """Model ``m`` judged on answer set a1 (lines 1-60), then again on a2 (61-120) with the
    same scores (``score2(s)`` overrides the second run's score); model ``b`` judged once."""
    recs = []
    for run in ("a1", "a2"):
        for s in range(60):
            score = 5 + s % 4
            if run == "a2" and score2 is not None:
                score = score2(s, score)
            recs.append({"scenario": f"s{s}", "variant": "m", "trial": "1", "judge": "j", "overall": score,
                         "answer_id": f"{run}-{s}"})
    recs += [{"scenario": f"s{s}", "variant": "b", "trial": "1", "judge": "j", "overall": 6, "answer_id": f"b-{s}"}
             for s in range(60)]
    return recs


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(r[k] for k in KEY)


def _buckets(rows: Any) -> list[str | None]:
    """The row table's marks in the naive function's terms (None: not a repeat)."""
    kinds = rows.select(ingest.conflict_kind().alias("k"))["k"].to_list()
    return [f"conflict:{k}" if b == "conflict" else "duplicate" if b == "duplicate" else None
            for b, k in zip(rows["bucket"].to_list(), kinds, strict=True)]


def test_default_format_two_answer_sets_with_equal_scores(tmp_path: Path) -> None:
    recs = default_records()
    f = write_jsonl(tmp_path / "rows.jsonl", recs)
    before = pipeline.run([f], load_config(overrides={**FAST, "scores": {"overall": "overall"}}))
    after = pipeline.run([f], load_config(overrides={**FAST, "scores": {"overall": "overall"}, "answer": "answer_id"}))
    # before: the second run's 60 rows equal the first's content: duplicates, counted once
    want_before = naive_marks(recs, _key, lambda r: None, lambda r: r["overall"])
    assert _buckets(before.rows) == want_before and want_before.count("duplicate") == 60
    assert before.doc["ledger"]["duplicate"] == 60 and before.doc["ledger"]["conflict"] == 0
    # after: their answers differ: all 120 rows of m are conflicts of kind different_answer
    want = naive_marks(recs, _key, lambda r: r["answer_id"], lambda r: r["overall"])
    assert _buckets(after.rows) == want and want.count("conflict:different_answer") == 120
    led = after.doc["ledger"]
    assert (led["duplicate"], led["conflict"], led["valid"]) == (0, 120, 60)
    assert after.doc["conflict_kinds"] == {"different_answer": {"rows": 120, "keys": 60},
                                           "different_content": {"rows": 0, "keys": 0}}
    reasons = after.rows["reason"].to_list()
    assert reasons[0] == ("judged a different answer than 1 other row(s) with the same key (a stale or "
                          "overwritten run; this row: the first-seen answer); all held out")
    assert "this row: a later answer" in reasons[60]
    # the cell of m has no valid row left; b is untouched
    cen = {c["variant"]: c for c in after.doc["census"]}
    assert (cen["m"]["conflict_keys"], cen["m"]["valid"], cen["b"]["valid"]) == (60, 0, 60)
    # both runs' figures: equal here, the mean of 5 + s % 4 over s < 60 (15 each of 5..8)
    (run,) = after.doc["conflict_runs"]
    m = sum(5 + s % 4 for s in range(60)) / 60
    assert (run["judge"], run["variant"], run["field"], run["keys"]) == ("j", "m", "overall", 60)
    assert run["first_answer"] == {"mean": m, "n": 60} and run["other_answer"] == {"mean": m, "n": 60}
    assert math.isclose(m, 6.5)


def test_both_runs_figures_when_the_reruns_scores_differ(tmp_path: Path) -> None:
    # the second run scores 1 lower on every third key and leaves one key unscored (null)
    def second(s: int, score: int) -> Any:
        return None if s == 7 else score - 1 if s % 3 == 0 else score

    recs = default_records(second)
    f = write_jsonl(tmp_path / "rows.jsonl", recs)
    a = pipeline.run([f], load_config(overrides={**FAST, "scores": {"overall": "overall"}, "answer": "answer_id"}))
    marks = naive_marks(recs, _key, lambda r: r["answer_id"], lambda r: r["overall"])
    assert _buckets(a.rows) == marks
    # before (no answer field): the 20 keys with a lower score and the null one differ in
    # content, the other 39 are duplicates
    plain = naive_marks(recs, _key, lambda r: None, lambda r: r["overall"])
    assert plain.count("duplicate") == 39 and plain.count("conflict:different_content") == 42
    want = naive_runs(recs, marks, _key, lambda r: r["answer_id"], lambda r: r["overall"],
                      lambda r: (r["judge"], r["variant"]))
    (run,) = a.doc["conflict_runs"]
    m1, n1, m2, n2 = want[("j", "m")]
    assert (n1, n2) == (60, 59)
    assert math.isclose(run["first_answer"]["mean"], m1) and run["first_answer"]["n"] == n1
    assert math.isclose(run["other_answer"]["mean"], m2) and run["other_answer"]["n"] == n2
    assert m2 < m1
    text = terminal.conflicts_text(a.doc)
    assert text is not None and "different_answer 120 rows / 60 keys" in text
    assert f"{m1:.2f} (n=60)" in text and f"{m2:.2f} (n=59)" in text


def test_kinds_side_by_side_and_a_row_without_an_answer(tmp_path: Path) -> None:
    def r(s: str, score: Any, ans: Any) -> dict[str, Any]:
        out = {"scenario": s, "variant": "v", "trial": "1", "judge": "j", "overall": score}
        if ans is not None:
            out["answer_id"] = ans
        return out

    recs = [r("same", 7, "x"), r("same", 7, "x"),            # identical: duplicate
            r("rescore", 7, "x"), r("rescore", 4, "x"),      # same answer, other score
            r("stale", 7, "x"), r("stale", 7, "y"), r("stale", 7, "x"),  # two answers, three rows
            r("unknown", 7, None), r("unknown", 7, "x"),     # no answer on one: tells nothing
            *[r(f"k{i}", 6, f"a{i}") for i in range(5)]]
    f = write_jsonl(tmp_path / "rows.jsonl", recs)
    cfg = load_config(overrides={"scores": {"overall": "overall"}, "answer": "answer_id"})
    rows, _ = ingest.read_rows([f], cfg)
    want = naive_marks(recs, _key, lambda x: x.get("answer_id"), lambda x: x["overall"])
    assert _buckets(rows) == want
    assert want[:9] == [None, "duplicate", "conflict:different_content", "conflict:different_content",
                        *["conflict:different_answer"] * 3, None, "duplicate"]
    assert check.conflict_kinds(rows) == {"different_answer": {"rows": 3, "keys": 1},
                                          "different_content": {"rows": 2, "keys": 1}}
    # the different-content reason is the one it always was
    assert rows["reason"][2] == "same key as 1 other row(s) with different content; all held out"
    # the digest replaced the text: one 8-byte column, no answer text kept
    assert rows.schema[ingest.ANSWER_COLUMN].is_integer()
    assert not [c for c in rows.columns if c.startswith("x___answer") and c != ingest.ANSWER_COLUMN]


def test_an_answer_of_several_fields_and_non_string_values(tmp_path: Path) -> None:
    # answer: [a, b]: two rows differ when either field does; a long list differs late
    long_a = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x" * 200 + "1"}]
    long_b = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x" * 200 + "2"}]
    recs = [{"scenario": "s1", "variant": "v", "trial": "1", "judge": "j", "overall": 5, "a": "p", "b": long_a},
            {"scenario": "s1", "variant": "v", "trial": "1", "judge": "j", "overall": 5, "a": "p", "b": long_b},
            {"scenario": "s2", "variant": "v", "trial": "1", "judge": "j", "overall": 5, "a": "p", "b": 3},
            {"scenario": "s2", "variant": "v", "trial": "1", "judge": "j", "overall": 5, "a": "p", "b": 3},
            {"scenario": "s3", "variant": "v", "trial": "1", "judge": "j", "overall": 5, "a": "p", "b": 3}]
    f = write_jsonl(tmp_path / "rows.jsonl", recs)
    rows, _ = ingest.read_rows([f], load_config(overrides={"scores": {"overall": "overall"}, "answer": ["a", "b"]}))
    want = naive_marks(recs, _key, lambda x: json.dumps([x["a"], x["b"]]), lambda x: x["overall"])
    assert _buckets(rows) == want == ["conflict:different_answer"] * 2 + [None, "duplicate", None]


def _alpaca(path: Path, outputs: dict[int, str], pref: Any) -> str:
    rows = [{"instruction": f"i{k}", "output_1": f"baseline {k}", "generator_1": "gpt4", "output_2": out,
             "generator_2": "m", "annotator": "a", "preference": pref(k)} for k, out in outputs.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), "utf-8")
    return str(path)


def test_alpaca_eval_two_annotation_files_on_two_answer_sets(tmp_path: Path) -> None:
    # the stale run (old outputs) and the re-run (new outputs) of one model and annotator, each
    # with 10 instructions of its own; the 60 shared ones get the same preference in both
    def pref(k: int) -> float:
        return 1.0 + (k % 5) / 4  # 1, 1.25, 1.5, 1.75, 2 -> credit 0, 25, 50, 75, 100

    old = _alpaca(tmp_path / "old" / "results" / "m" / "a" / "annotations.json",
                  {k: f"old answer {k}" for k in range(70)}, pref)
    new = _alpaca(tmp_path / "new" / "results" / "m" / "a" / "annotations.json",
                  {k: f"new answer {k}" for k in [*range(60), *range(70, 80)]}, pref)
    recs = [{**r, "file": i} for i, p in enumerate((old, new)) for r in json.loads(Path(p).read_text("utf-8"))]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["instruction"], r["generator_2"], r["annotator"])

    before = pipeline.run([old, new], load_config(preset="alpaca-eval", overrides={**FAST, "answer": None}))
    after = pipeline.run([old, new], load_config(preset="alpaca-eval", overrides=FAST))
    plain = naive_marks(recs, key, lambda r: None, lambda r: r["preference"])
    marks = naive_marks(recs, key, lambda r: (r["output_1"], r["output_2"]), lambda r: r["preference"])
    assert _buckets(before.rows) == plain and plain.count("duplicate") == 60
    assert _buckets(after.rows) == marks and marks.count("conflict:different_answer") == 120
    assert (after.doc["ledger"]["conflict"], after.doc["ledger"]["valid"]) == (120, 20)
    # both runs' figures in win credit (percent), the same preferences in both runs
    want = naive_runs(recs, marks, key, lambda r: (r["output_1"], r["output_2"]),
                      lambda r: 100 * (r["preference"] - 1), lambda r: (r["annotator"], r["generator_2"]))
    (run,) = after.doc["conflict_runs"]
    m1, n1, m2, n2 = want[("a", "m")]
    assert (run["keys"], n1, n2) == (60, 60, 60)
    assert math.isclose(run["first_answer"]["mean"], m1) and math.isclose(run["other_answer"]["mean"], m2)
    assert math.isclose(m1, 50.0)
    # before, the 60 shared instructions were averaged once, as if one run: 80 valid
    assert before.doc["ledger"]["valid"] == 80 and before.doc["conflict_runs"] == []


def _inspect(path: Path, eval_id: str, outputs: dict[int, Any]) -> str:
    header = {"version": 2, "status": "success",
              "eval": {"eval_id": eval_id, "task": "t", "model": "openai/x", "run_id": "R1", "task_file": "t.py",
                       "dataset": {"samples": len(outputs)}},
              "results": {"scores": [{"name": "grader", "metrics": {"accuracy": {"value": 1.0}}}]}}
    samples = [{"id": i, "epoch": 1, "scores": {"grader": {"value": "C"}},
                **({} if out is None else {"output": {"choices": [{"message": {"content": out}}]}})}
               for i, out in outputs.items()]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps(header))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_1.json", json.dumps(s))
    return str(path)


def test_inspect_one_log_identity_read_twice_with_other_outputs(tmp_path: Path) -> None:
    # a log copied, then its samples re-generated under the same eval_id: the same keys, the
    # same scores, other outputs for samples 1-60 (61-70 only in the first, 73-74 only in the
    # second, 71-72 unchanged: one output alike, one without an output)
    first = _inspect(tmp_path / "a.eval", "E1", {**{i: f"answer {i}" for i in range(1, 71)}, 71: "same", 72: None})
    second = _inspect(tmp_path / "b.eval", "E1", {**{i: [{"type": "text", "text": f"re-run {i}"}]
                                                     for i in range(1, 61)}, 71: "same", 72: None,
                                                  73: "new", 74: "new"})
    a = pipeline.run([first, second], load_config(preset="inspect", overrides=FAST))
    kinds = a.doc["conflict_kinds"]
    assert kinds["different_answer"] == {"rows": 120, "keys": 60} and kinds["different_content"]["rows"] == 0
    led = a.doc["ledger"]
    # 61-70 and 73-74 once (valid), 71 and 72 twice alike (one valid, one duplicate each)
    assert (led["conflict"], led["duplicate"], led["valid"]) == (120, 2, 14)


def test_output_digest_reads_the_completion_or_the_first_message() -> None:
    import hashlib

    def h(t: str) -> str:
        return hashlib.blake2b(t.encode(), digest_size=16).hexdigest()

    assert output_digest({"output": {"completion": "abc", "choices": []}}) == h("abc")
    assert output_digest({"output": {"choices": [{"message": {"content": "abc"}}]}}) == h("abc")
    parts = [{"type": "text", "text": "ab"}, {"type": "text", "text": "c"}]
    assert output_digest({"output": {"choices": [{"message": {"content": parts}}]}}) == h("abc")
    assert output_digest({"output": {"choices": []}}) is None and output_digest({}) is None
    assert len(output_digest({"output": {"completion": "x" * 100_000}}) or "") == 32


@pytest.mark.parametrize("value", [[], 5, [""], {"a": "b"}])
def test_answer_must_be_a_path_or_a_list_of_paths(value: Any) -> None:
    with pytest.raises(ConfigError, match="answer must be a field path"):
        load_config(overrides={"answer": value})


def test_answer_extra_field_names_are_reserved() -> None:
    with pytest.raises(ConfigError, match="reserved"):
        load_config(overrides={"extra_fields": {"__answer0": "x"}})


def test_the_dask_partition_marks_equal_the_local_marks(tmp_path: Path) -> None:
    # the shuffle's partition function alone, on one partition holding every key
    pd = pytest.importorskip("pandas")
    from workbench.ingest import execute

    recs = default_records(lambda s, score: score - 1 if s % 3 == 0 else score)
    files = [write_jsonl(tmp_path / "a.jsonl", recs[:60] + recs[120:150]),
             write_jsonl(tmp_path / "b.jsonl", recs[60:120] + recs[150:])]
    cfg = load_config(overrides={"scores": {"overall": "overall"}, "answer": "answer_id"})
    parts = [ingest.read_classified(p, cfg, i) for i, p in enumerate(files)]
    keys = pd.concat([execute.repeat_keys(p, cfg) for p in parts], ignore_index=True)
    marks = execute.mark_partition(keys)
    shift = 1 << execute.ORDER_SHIFT
    got = {(int(o) // shift, int(o) % shift + 1): (b, r)
           for o, b, r in zip(marks["__order"], marks["__repeat"], marks["__repeat_reason"], strict=True)}
    rows, _ = ingest.read_rows(files, cfg)
    want = {(files.index(f), ln): (b, r) for f, ln, b, r in rows.select("file", "line", "bucket", "reason").iter_rows()
            if b in ("duplicate", "conflict")}
    assert got == want and len(want) == 120
    assert all(r.startswith(ingest.DIFFERENT_ANSWER_REASON) for _, r in want.values())


def test_the_report_lists_both_runs_figures(tmp_path: Path) -> None:
    from workbench import report

    recs = default_records(lambda s, score: score + 1 if s < 30 else score)
    f = write_jsonl(tmp_path / "rows.jsonl", recs)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("answer: answer_id\nscores: {overall: overall}\n", "utf-8")
    built = report.build([f], config=str(cfg), resamples=200, out=str(tmp_path / "out"), write_outputs=False)
    marks = naive_marks(recs, _key, lambda r: r["answer_id"], lambda r: r["overall"])
    m1, n1, m2, n2 = naive_runs(recs, marks, _key, lambda r: r["answer_id"], lambda r: r["overall"],
                                lambda r: (r["judge"], r["variant"]))[("j", "m")]
    (line,) = [x for x in report.limits(built) if "stale or overwritten run" in x]
    assert line == (f"m under j: 60 keys judged different answers (a stale or overwritten run), all held out; "
                    f"overall over the first-seen answers {m1:.4g} (n = {n1}), over the others {m2:.4g} (n = {n2}).")
    assert math.isclose(m2 - m1, 0.5)  # 30 of 60 keys one point higher
