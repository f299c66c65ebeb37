"""Fuzz: generated inputs of five families, each run through the CLI with bounded sizes.

Families: content (damaged, odd and hostile judge lines), config (YAML values and keys of
every type at every depth, ``-p`` pairs), paths (special files, collisions between inputs
and outputs, foreign files in ``--out``), batch (manifests) and terminal (control characters
in every name). Every case must keep the promises of :func:`fuzz_support.check_outcome`:
exit 0/1/2, no traceback, one stderr line on exit 2, nothing raw on the terminal, the ledger
adds up to the physical lines, nothing outside ``--out`` changed, a time bound.

Examples per family are kept small (``FUZZ_EXAMPLES``, default 15) so the module runs in a
couple of minutes on CI; set the environment variable higher for a longer hunt. Every case
run is counted (cases, broken promises by kind) into ``$FUZZ_COUNTS.<pid>`` when the
``FUZZ_COUNTS`` environment variable names a file prefix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzz_support import check_outcome, run_cli, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
FAST = ["--resamples", "100", "-q", "--no-gate"]
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

COUNTS: dict[str, int] = {"cases": 0, "tracebacks": 0, "hangs": 0, "wrong_ledgers": 0,
                          "files_modified": 0, "other": 0}


def _count(problems: list[str]) -> None:
    COUNTS["cases"] += 1
    for p in problems:
        key = ("tracebacks" if p.startswith("traceback") else "hangs" if p.startswith("took")
               else "wrong_ledgers" if "ledger" in p else "files_modified"
               if p.startswith("changed") else "other")
        COUNTS[key] += 1
    target = os.environ.get("FUZZ_COUNTS")
    if target:
        Path(f"{target}.{os.getpid()}").write_text(json.dumps(COUNTS, indent=2) + "\n", encoding="utf-8")


def _fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("case")


def run_case(root: Path, argv: list[str], out: Path, jsonl: list[str] | None = None) -> Any:
    before = snapshot(root, out)
    o = run_cli(argv)
    problems = check_outcome(o, out_dir=out, before=before, root=root, jsonl_inputs=jsonl)
    _count(problems)
    assert problems == [], (argv, problems)
    return o


# --------------------------------------------------------------------------- strategies

HOSTILE = ["\x1b[31m", "\x1b]0;t\x07", "\n", "\r", "\x00", "\u202e", "\x9b", " ", "\u0301",
           "é", "e\u0301", ":", "[", "\\", '"', "<script>", "&amp;", "url(http://x)", "\ud800"]
name_st = st.one_of(
    st.sampled_from(["a", "b", "v0", "v0 ", "café", "cafe\u0301", "1", "x:1", "[x"]),
    st.lists(st.sampled_from(HOSTILE + list("ab")), min_size=1, max_size=4).map("".join),
    st.text(max_size=6),
)
key_value_st = st.one_of(name_st, st.integers(-3, 3), st.integers(10**20, 10**21), st.none(),
                         st.booleans(), st.floats(allow_nan=True), st.lists(st.integers(), max_size=2))
score_st = st.one_of(st.integers(0, 11), st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from(["7", "8/10", "", "NaN", None, True, [], {}]),
                     st.integers(10**30, 10**31))


@st.composite
def row_line(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["row", "row", "row", "raw", "dupkey", "nested", "blank"]))
    if kind == "blank":
        return draw(st.sampled_from([b"", b"  ", b"\t"]))
    if kind == "raw":
        return draw(st.one_of(
            st.binary(max_size=40).filter(lambda b: b"\n" not in b),
            st.sampled_from([b"{", b"[1,2]", b'"x"', b"null", b'{"overall": NaN}', b"\xff\xfe{}",
                             b'{"a":' * 50, b'{"overall": 1e400}', b'{"scenario": "\\ud800"}',
                             b"\xef\xbb\xbf{}", b'{"overall": 5}\r']),
        ))
    row = {"scenario": draw(st.one_of(key_value_st, st.sampled_from(["s1", "s2", "s3"]))),
           "variant": draw(st.one_of(name_st, st.sampled_from(["a", "b"]))),
           "trial": draw(st.one_of(st.just(1), st.just("1"), key_value_st)),
           # mostly one judge: each judge pair costs a permutation test per variant
           "judge": draw(st.sampled_from(["j", "j", "j", "j", "k", "j "])),
           "overall": draw(score_st), "honesty": draw(score_st)}
    if draw(st.booleans()):
        row["verdict"] = draw(name_st)
    if draw(st.booleans()):
        row["fabrication_flags"] = draw(st.lists(name_st | st.integers(), max_size=3))
    text = json.dumps(row, ensure_ascii=draw(st.booleans()))
    if kind == "dupkey":
        text = text[:-1] + ', "overall": ' + json.dumps(draw(score_st)) + "}"
    if kind == "nested":
        text = '{"meta": ' + text + "}"
    return text.encode("utf-8", "surrogatepass")


def good_lines(n: int = 12) -> list[bytes]:
    return [json.dumps({"scenario": f"s{s}", "variant": v, "trial": 1, "judge": "j",
                        "overall": 3 + (s + i) % 6}).encode() for s in range(n) for i, v in enumerate("ab")]


# --------------------------------------------------------------------------- Inspect logs

any_json_st = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)


@st.composite
def inspect_log_st(draw: Any) -> tuple[dict[str, Any], list[Any]]:
    """An Inspect log whose fields are of the documented types or, each with some chance, any
    JSON value (issue 28: ``samples: 5``, ``eval: [1]``, a sample that is ``5``...)."""
    def maybe(good: Any) -> Any:
        return draw(any_json_st) if draw(st.integers(0, 5)) == 0 else good

    scorer = {"name": maybe("g"), "metrics": maybe({"accuracy": maybe({"value": maybe(0.5)})}),
              "params": maybe({}), "metadata": maybe({})}
    ev = {"task": maybe("t"), "model": maybe("m"), "run_id": maybe("r"), "task_file": maybe("t.py"),
          "dataset": maybe({"samples": maybe(4), "sample_ids": maybe([1, 2, 3, 4])}),
          "scorers": maybe([maybe({"name": maybe("g"), "metrics": maybe([maybe({"name": "accuracy"})])})])}
    header = {"version": 2, "status": maybe("success"), "eval": maybe(ev),
              "results": maybe({"scores": maybe([maybe(scorer)])})}
    samples = [maybe({"id": maybe(i), "epoch": maybe(1), "error": maybe(None),
                      "scores": maybe({"g": maybe({"value": maybe(draw(st.sampled_from(["C", "I", "P", 1, 0])))})})})
               for i in range(1, draw(st.integers(1, 5)) + 1)]
    return header, samples


@SETTINGS
@given(log=inspect_log_st(), zipped=st.booleans())
def test_fuzz_inspect_logs(tmp_path_factory: pytest.TempPathFactory, log: tuple[dict[str, Any], list[Any]],
                           zipped: bool) -> None:
    import zipfile

    root = _fresh(tmp_path_factory)
    header, samples = log
    if zipped:
        p = root / "log.eval"
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("header.json", json.dumps(header))
            for i, smp in enumerate(samples, start=1):
                z.writestr(f"samples/{i}_epoch_1.json", json.dumps(smp))
    else:
        p = root / "log.json"
        p.write_text(json.dumps({**header, "samples": samples}), encoding="utf-8")
    out = root / "out"
    before = snapshot(root, out)
    o = run_cli(["analyze", str(p), "--preset", "inspect", "--out", str(out), *FAST])
    # (not check_outcome's ledger check: a log's ledger counts sample x scorer rows, its
    # inputs[].lines the samples; the buckets must still add up to the ledger's lines)
    problems = check_outcome(o)
    if snapshot(root, out) != before:
        problems.append("changed outside --out")
    _count(problems)
    assert problems == [], problems
    if o.code == 2:
        assert "log." in o.err, o.err
    elif (out / "results.json").is_file():
        led = json.loads((out / "results.json").read_text(encoding="utf-8"))["ledger"]
        assert sum(v for k, v in led.items() if k not in ("lines", "missing_planned") and v) == led["lines"], led
    from workbench.ingest.detect import classify

    preset, why = classify(str(p))  # --preset auto's look: a reason, never an exception
    assert preset in ("inspect", "?", None) and why.startswith("log."), (preset, why)


# --------------------------------------------------------------------------- content


@SETTINGS
@given(lines=st.lists(row_line(), max_size=40), eol=st.sampled_from([b"\n", b"\r\n"]),
       tail=st.booleans(), array=st.booleans())
def test_fuzz_content(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], eol: bytes,
                      tail: bool, array: bool) -> None:
    root = _fresh(tmp_path_factory)
    body = good_lines() + lines
    if array:
        p = root / "rows.json"
        p.write_bytes(b"[" + b",\n".join(body) + b"]")
        jsonl = None
    else:
        p = root / "rows.jsonl"
        p.write_bytes(eol.join(body) + (eol if tail else b""))
        jsonl = [str(p)]
    out = root / "out"
    run_case(root, ["analyze", str(p), "--out", str(out), *FAST], out, jsonl)


# --------------------------------------------------------------------------- config

yaml_scalar = st.one_of(
    st.sampled_from([".nan", ".inf", "-.inf", "2024-01-01", "2024-01-01T00:00:00", "!!binary aGk=",
                     "!!set {a, b}", "null", "~", "yes", "0x10", "1e400", "[]", "{}", "'x'",
                     "*undefined", "&a 1", "!!python/object:os.system ls", "10000000000000000000000"]),
    st.integers(-10**6, 10**6).map(str), st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
config_keys = ["confidence", "alpha", "power", "target_effect", "min_valid_n", "min_clusters",
               "bootstrap", "bootstrap.resamples", "bootstrap.seed", "bootstrap.resample", "rubric",
               "rubric.min", "rubric.max", "rubric.minimum", "pass", "pass.threshold", "pass.treshold",
               "pass.gate", "consistency.honesty_high", "path_fields", "subsets", "constants",
               "constants.judge", "keys.judge", "keys", "scores", "headline", "missing_values",
               "preference", "contrasts", "contrast_baseline", "max_contrast_pairs", "format",
               "numeric_strings", "flags", "verdict", "extends", "unknown_key", "1", "true", "null"]


@st.composite
def config_text(draw: Any) -> str:
    lines = []
    for key in draw(st.lists(st.sampled_from(config_keys), max_size=4, unique=True)):
        value = draw(st.one_of(yaml_scalar, st.lists(yaml_scalar, max_size=3).map(lambda v: "[" + ", ".join(v) + "]")))
        parts = key.split(".")
        text = value
        for part in reversed(parts[1:]):
            text = "{" + f"{part}: {text}" + "}"
        lines.append(f"{parts[0]}: {text}")
    if draw(st.booleans()):
        depth = draw(st.integers(1, 60))
        lines.append("subsets: " + "{a: " * depth + "1" + "}" * depth)
    return "\n".join(lines) + "\n"


@SETTINGS
@given(text=config_text(), params=st.lists(st.tuples(st.sampled_from(config_keys), yaml_scalar), max_size=2))
def test_fuzz_config(tmp_path_factory: pytest.TempPathFactory, text: str, params: list[tuple[str, str]]) -> None:
    root = _fresh(tmp_path_factory)
    p = root / "rows.jsonl"
    p.write_bytes(b"\n".join(good_lines()) + b"\n")
    cfg = root / "config.yaml"
    cfg.write_text(text, encoding="utf-8")
    out = root / "out"
    argv = ["analyze", str(p), "--config", str(cfg), "--out", str(out), *FAST]
    for k, v in params:
        argv += ["-p", k, v]
    o = run_case(root, argv, out, [str(p)])
    if o.code == 0:  # the recorded config is what the run used
        doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
        assert doc["config"]["bootstrap"]["resamples"] == 100


# --------------------------------------------------------------------------- paths


PATH_CASES = ["fifo", "stdin", "dangling", "loop", "directory", "non_utf8_name", "utf16", "utf32",
              "out_is_input", "out_is_file", "foreign_in_out", "own_out_rerun", "glob_none",
              "config_is_output", "plan_fifo", "empty", "gzip_garbage", "gzip_ok", "twice"]


@pytest.mark.parametrize("case", PATH_CASES)
def test_fuzz_paths(tmp_path: Path, case: str) -> None:
    root = tmp_path
    good = root / "rows.jsonl"
    good.write_bytes(b"\n".join(good_lines()) + b"\n")
    out = root / "out"
    argv_inputs = [str(good)]
    extra: list[str] = []
    if case == "fifo":
        os.mkfifo(root / "f")
        argv_inputs = [str(root / "f")]
    elif case == "stdin":
        argv_inputs = ["-"]
    elif case == "dangling":
        (root / "d").symlink_to(root / "nowhere")
        argv_inputs = [str(root / "d")]
    elif case == "loop":
        (root / "l").symlink_to(root / "l")
        argv_inputs = [str(root / "l")]
    elif case == "directory":
        argv_inputs = [str(root)]
    elif case == "non_utf8_name":
        raw = os.fsencode(str(root)) + b"/x\xfe.jsonl"
        with open(raw, "wb") as fh:
            fh.write(good.read_bytes())
        argv_inputs = [os.fsdecode(raw)]
    elif case in ("utf16", "utf32"):
        p = root / f"{case}.jsonl"
        p.write_text(good.read_text(encoding="utf-8"), encoding=case.replace("utf", "utf-"))
        argv_inputs = [str(p)]
    elif case == "out_is_input":
        out = root
        p = root / "rows.parquet"
        p.write_bytes(good.read_bytes())
        argv_inputs = [str(p)]
        extra = ["--overwrite"]
    elif case == "out_is_file":
        out = root / "file"
        out.write_text("keep", encoding="utf-8")
    elif case == "foreign_in_out":
        out.mkdir()
        (out / "notes.txt").write_text("mine", encoding="utf-8")
    elif case == "own_out_rerun":
        assert run_cli(["analyze", str(good), "--out", str(out), *FAST]).code == 0
    elif case == "glob_none":
        argv_inputs = [str(root / "*.nothing")]
    elif case == "config_is_output":
        out.mkdir()
        (out / "run.json").write_text("bootstrap: {seed: 1}\n", encoding="utf-8")
        extra = ["--config", str(out / "run.json"), "--overwrite"]
    elif case == "plan_fifo":
        os.mkfifo(root / "plan")
        extra = ["--plan", str(root / "plan")]
    elif case == "empty":
        (root / "e.jsonl").write_bytes(b"")
        argv_inputs = [str(root / "e.jsonl")]
    elif case == "gzip_garbage":
        (root / "g.jsonl.gz").write_bytes(b"\x1f\x8bnot gzip")
        argv_inputs = [str(root / "g.jsonl.gz")]
    elif case == "gzip_ok":
        import gzip

        (root / "g.jsonl.gz").write_bytes(gzip.compress(good.read_bytes()))
        argv_inputs = [str(root / "g.jsonl.gz")]
    elif case == "twice":
        argv_inputs = [str(good), str(good)]
    jsonl = [str(good)] if case in ("own_out_rerun", "foreign_in_out") else None
    o = run_case(root, ["analyze", *argv_inputs, "--out", str(out), *extra, *FAST], out, jsonl)
    expected = {"own_out_rerun": 0, "gzip_ok": 0}
    assert o.code == expected.get(case, 2), (case, o.err)


# --------------------------------------------------------------------------- batch

entry_st = st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from(["one", "index.html", "INDEX.HTML", "batch.json", "a b", "../x",
                                        ".wb-tmp-1", "x" * 120, "ok-1"]), st.text(max_size=5))},
    optional={"inputs": st.one_of(st.just("rows.jsonl"), st.just("missing.jsonl"), st.integers(),
                                  st.lists(st.just("rows.jsonl"), max_size=2)),
              "params": st.one_of(st.just({"confidence": ".nan"}), st.just({"bootstrap": 5}),
                                  st.just(7), st.just({"resamples": 10**9})),
              "no_gate": st.one_of(st.booleans(), st.just("yes")), "unknown": st.just(1)},
)


@SETTINGS
@given(entries=st.lists(entry_st, min_size=0, max_size=3), as_mapping=st.booleans())
def test_fuzz_batch_manifest(tmp_path_factory: pytest.TempPathFactory, entries: list[dict],
                             as_mapping: bool) -> None:
    """Manifest checks only (exit 2 before any report runs), or a run of entries that fail
    fast (``missing.jsonl``)."""
    root = _fresh(tmp_path_factory)
    (root / "rows.jsonl").write_bytes(b"\n".join(good_lines()) + b"\n")
    for e in entries:  # keep the fuzz fast: no entry may render a full report
        if e.get("inputs") == "rows.jsonl" or isinstance(e.get("inputs"), list):
            e["inputs"] = "missing.jsonl"
    m = root / "manifest.yaml"
    m.write_text(yaml.safe_dump({"entries": entries} if as_mapping else entries, allow_unicode=True),
                 encoding="utf-8")
    out = root / "out"
    o = run_case(root, ["batch", str(m), "--out", str(out), "-q", "--jobs", "1"], out)
    assert o.code in (1, 2)


def test_batch_rerun_and_foreign_root(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(yaml.safe_dump([{"name": "bad", "inputs": "missing.jsonl"}]),
                                     encoding="utf-8")
    out = tmp_path / "out"
    for _ in range(2):  # the second run goes into the batch's own directory: fine
        o = run_case(tmp_path, ["batch", str(tmp_path / "m.yaml"), "--out", str(out), "-q"], out)
        assert o.code == 1 and (out / "index.html").is_file() and (out / "batch.json").is_file()
        assert 'href="bad/report.html"' not in (out / "index.html").read_text(encoding="utf-8")
    (out / "mine.txt").write_text("x", encoding="utf-8")
    o = run_case(tmp_path, ["batch", str(tmp_path / "m.yaml"), "--out", str(out), "-q"], out)
    assert o.code == 2 and "did not write" in o.err


# --------------------------------------------------------------------------- terminal


@SETTINGS
@given(names=st.lists(st.lists(st.sampled_from(HOSTILE[:9] + list("ab")), min_size=1, max_size=5).map("".join),
                      min_size=1, max_size=3, unique=True),
       claim=st.booleans())
def test_fuzz_terminal(tmp_path_factory: pytest.TempPathFactory, names: list[str], claim: bool) -> None:
    root = _fresh(tmp_path_factory)
    lines = [json.dumps({"scenario": f"s{s}", "variant": v, "trial": 1, "judge": v[:1] + "j",
                         "overall": 3 + (s + i) % 6, "verdict": v})
             for s in range(6) for i, v in enumerate(["base", *names])]
    fname = "rows" + "".join(c for c in names[0] if c not in "/\x00") + ".jsonl"
    p = root / fname
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "out"
    argv = ["analyze", str(p), "--out", str(out), "--resamples", "100", "-p", "min_clusters", "1"]
    if claim:
        c = root / "claims.yaml"
        c.write_text(yaml.safe_dump([{"name": names[0], "a": names[0], "b": "base", "claimed": 1.0}],
                                    allow_unicode=True), encoding="utf-8")
        argv = ["check", str(p), "--claims", str(c), "--out", str(out), "--resamples", "100",
                "-p", "min_clusters", "1"]
    run_case(root, argv, out, [str(p)])
