"""Ingest: every physical line in exactly one bucket, with a reason a reader can act on.

The hazard files in ``tests/data/hazards/`` are hand-written (one per ledger hazard of issue
2); the tables below give, per line number, the bucket and the reason text expected, worked
out by hand from the issue's definitions (not copied from a run). Config features (dotted
paths, list indices, composite keys, constants, path_fields, numeric_strings, sentinels, JSON
arrays) are tested on small inline files whose expected values are spelled out.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import DROP, make_row_line, write_lines

from workbench import InputError, count_ledger, load_config, read_rows
from workbench.analysis.census import census
from workbench.common.config import KEY_FIELDS
from workbench.ingest.reader import BUCKETS, FIELD_STATUSES

HAZARDS = Path(__file__).resolve().parent / "data" / "hazards"

DUP = "identical to an earlier row with the same key; counted once"


def conflict(n_other: int) -> str:
    return f"same key as {n_other} other row(s) with different content; all held out"


def nonnum(got: str) -> str:
    return f"field 'overall': expected a number in [1, 10], got {got}"


def oor(got: str) -> str:
    return f"field 'overall': outside the rubric [1, 10], got {got} (not rescaled)"


def notfinite(got: str) -> str:
    return f"field 'overall': not a finite number, got {got}"


# file -> {line: (bucket, reason)}; every line of the file is listed.
EXPECTED: dict[str, dict[int, tuple[str, str | None]]] = {
    "valid.jsonl": {
        1: ("valid", None),  # 7, all sub-scores, flags [], verdict
        2: ("valid", None),  # 7.5: a real number inside [1, 10]
        3: ("valid", None),  # 1: lower bound is inclusive
        4: ("valid", None),  # 10: upper bound is inclusive
        5: ("valid", None),  # 1.0 plus fields that are carried and ignored
        6: ("valid", None),  # trial "6" as a string, non-ASCII verdict
    },
    "partial.jsonl": {
        1: ("valid", None),
        2: ("partial", None),  # overall absent, five sub-scores
        3: ("partial", None),  # overall null, five sub-scores
        4: ("partial", None),  # overall absent, one sub-score
        5: ("partial", None),  # overall null, depth 0 (present, although out of range)
        6: ("partial", None),  # overall absent, depth "shallow" (present, not numeric)
    },
    "empty.jsonl": {
        1: ("valid", None),
        2: ("empty", None),  # key fields only
        3: ("empty", None),  # overall null, nothing else
        4: ("empty", None),  # every rubric field null
        5: ("empty", None),  # flags and verdict but no rubric field
    },
    "non_numeric.jsonl": {
        1: ("valid", None),
        2: ("non_numeric", nonnum("'8/10'")),
        3: ("non_numeric", nonnum("'8'")),  # numeric string: rejected by default
        4: ("non_numeric", nonnum("'true'")),  # a bool is not a number
        5: ("non_numeric", nonnum("'[8]'")),
        6: ("non_numeric", nonnum("'{\"v\": 8}'")),
        7: ("non_numeric", nonnum("'false'")),  # sub-scores present do not make it partial
        8: ("non_numeric", nonnum("''")),
    },
    "out_of_range.jsonl": {
        1: ("valid", None),
        2: ("out_of_range", oor("0")),
        3: ("out_of_range", oor("-1")),
        4: ("out_of_range", oor("85")),
        5: ("out_of_range", oor("10.5")),
        6: ("out_of_range", oor("0.99")),
    },
    "invalid_number.jsonl": {
        1: ("valid", None),
        2: ("invalid_number", notfinite("NaN")),
        3: ("invalid_number", notfinite("inf")),
        4: ("invalid_number", notfinite("-inf")),
    },
    "malformed.jsonl": {
        1: ("valid", None),
        2: ("malformed", "not JSON: Expecting property name enclosed in double quotes (column 58)"),
        3: ("malformed", "not JSON: Expecting value (column 1)"),
        4: ("malformed", "not a JSON object (a JSON array)"),
        5: ("malformed", "not a JSON object (a JSON string)"),
        6: ("malformed", "not valid UTF-8 (byte 117)"),  # the lone 0xE9 of "caf\xe9"
        7: ("malformed", "key field 'judge' is missing"),
        8: ("malformed", "key field 'judge' is a list, not a string or integer"),
        9: ("malformed", "key field 'judge' is a dict, not a string or integer"),
        10: ("malformed", "key field 'judge' is null"),
        11: ("malformed", "key field 'variant' is an empty string"),
        12: ("malformed", "key field 'variant' is an empty string"),  # whitespace only
        13: ("malformed", "key field 'judge' is a bool, not a string or integer"),
        14: ("malformed", "key field 'trial' is a float, not a string or integer"),
        15: ("malformed", "not a JSON object (a JSON number)"),
        16: ("malformed", "not a JSON object (a JSON null)"),
        17: ("malformed", "not JSON: Extra data (column 226)"),  # two objects on one line
    },
    "duplicate.jsonl": {
        1: ("valid", None),  # A
        2: ("duplicate", DUP),  # A again, byte for byte
        3: ("valid", None),  # B
        4: ("duplicate", DUP),  # A: other key order, an ignored extra field
        5: ("duplicate", DUP),  # A a third time
        6: ("duplicate", DUP),  # B with 6.0 for 6: the same number
    },
    "conflict.jsonl": {
        1: ("conflict", conflict(1)),  # A overall 7
        2: ("conflict", conflict(1)),  # A overall 3
        3: ("conflict", conflict(1)),  # B
        4: ("conflict", conflict(1)),  # B with another verdict
        5: ("conflict", conflict(2)),  # C
        6: ("conflict", conflict(2)),  # C identical to line 5, but line 7 differs: all conflict
        7: ("conflict", conflict(2)),  # C overall null
        8: ("conflict", conflict(1)),  # D trial 4
        9: ("conflict", conflict(1)),  # D trial "4" is the same key
        10: ("valid", None),  # E
        11: ("conflict", conflict(1)),  # F overall "8"
        12: ("conflict", conflict(1)),  # F overall 8
    },
    "blank.jsonl": {
        1: ("valid", None),
        2: ("blank", None),
        3: ("blank", None),  # spaces
        4: ("blank", None),  # a tab
        5: ("valid", None),
        6: ("blank", None),  # spaces and a tab
        7: ("blank", None),  # empty last line before the final newline
    },
    "crlf.jsonl": {
        1: ("valid", None),
        2: ("partial", None),
        3: ("blank", None),  # "\r\n" alone
        4: ("out_of_range", oor("85")),
        5: ("malformed", "not JSON: Unterminated string starting at (column 35)"),
        6: ("valid", None),
    },
    "bom.jsonl": {
        1: ("valid", None),  # the BOM is not part of the first line
        2: ("valid", None),
        3: ("partial", None),
    },
}


def _buckets(rows: pl.DataFrame) -> dict[int, tuple[str, str | None]]:
    return {line: (b, r) for line, b, r in rows.select("line", "bucket", "reason").iter_rows()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hazard_file_every_line(name: str, default_config) -> None:
    path = str(HAZARDS / name)
    rows, sources = read_rows([path], default_config)
    raw = (HAZARDS / name).read_bytes()
    assert sources[0].path == path
    assert sources[0].sha256 == hashlib.sha256(raw).hexdigest()
    assert sources[0].lines == len(EXPECTED[name]) == raw.count(b"\n")
    assert rows["file"].to_list() == [path] * len(EXPECTED[name])
    assert _buckets(rows) == EXPECTED[name]


def test_hazard_files_cover_every_bucket() -> None:
    # unscored / errored come only from the Inspect reader (tests/test_native.py covers them)
    seen = {b for table in EXPECTED.values() for b, _ in table.values()}
    assert seen == set(BUCKETS) - {"unscored", "errored"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gzip_variant_reads_identically(name: str, tmp_path: Path, default_config) -> None:
    raw = (HAZARDS / name).read_bytes()
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress(raw, mtime=0))
    rows, sources = read_rows([str(gz)], default_config)
    assert _buckets(rows) == EXPECTED[name]
    # sha256 is of the bytes on disk (the compressed file), lines of the decompressed text
    assert sources[0].sha256 == hashlib.sha256(gz.read_bytes()).hexdigest()
    assert sources[0].lines == len(EXPECTED[name])


def test_hazard_files_are_byte_exact() -> None:
    """Guard the fixtures themselves: a checkout that rewrote line ends would void the tests."""
    assert b"\r\n" in (HAZARDS / "crlf.jsonl").read_bytes()
    assert b"\r\n" not in (HAZARDS / "valid.jsonl").read_bytes()
    assert (HAZARDS / "bom.jsonl").read_bytes().startswith(b"\xef\xbb\xbf")
    with pytest.raises(UnicodeDecodeError):
        (HAZARDS / "malformed.jsonl").read_bytes().decode("utf-8")


def test_repeats_are_judged_across_files(write_jsonl, default_config, row_line) -> None:
    a = write_jsonl(
        [row_line(trial=1), row_line(trial=2), row_line(trial=3, overall=4)], name="a.jsonl"
    )
    b = write_jsonl(
        [row_line(trial=9), row_line(trial=2), row_line(trial=3, overall=5)], name="b.jsonl"
    )
    rows, sources = read_rows([a, b], default_config)
    assert [s.lines for s in sources] == [3, 3]
    assert rows.select("file", "line", "bucket").rows() == [
        (a, 1, "valid"),
        (a, 2, "valid"),
        (a, 3, "conflict"),
        (b, 1, "valid"),
        (b, 2, "duplicate"),
        (b, 3, "conflict"),
    ]


def test_file_whose_rows_all_repeat_another_file(tmp_path: Path, default_config) -> None:
    """A copy of a file has no valid row of its own: every row is a duplicate."""
    copy = tmp_path / "copy.jsonl"
    shutil.copy(HAZARDS / "valid.jsonl", copy)
    with pytest.raises(InputError, match=r"copy\.jsonl: no valid row at all \(duplicate 6\)"):
        read_rows([str(HAZARDS / "valid.jsonl"), str(copy)], default_config)


def test_value_columns_hold_only_usable_values(default_config) -> None:
    rows, _ = read_rows([str(HAZARDS / "out_of_range.jsonl")], default_config)
    # the usable value is null outside the rubric; __raw keeps what was read
    assert rows["overall"].to_list() == [7.0, None, None, None, None, None]
    assert rows["overall__raw"].to_list() == [7.0, 0.0, -1.0, 85.0, 10.5, 0.99]
    assert rows["overall__status"].to_list() == ["valid"] + ["out_of_range"] * 5
    assert set(rows["overall__status"]) <= set(FIELD_STATUSES)
    rows, _ = read_rows([str(HAZARDS / "duplicate.jsonl")], default_config)
    # a duplicate is counted once: its values never reach a mean
    assert rows["overall"].to_list() == [7.0, None, 6.0, None, None, None]
    rows, _ = read_rows([str(HAZARDS / "conflict.jsonl")], default_config)
    assert rows["overall"].to_list() == [None] * 9 + [8.0, None, None]


def test_flags_verdict_and_keys(default_config) -> None:
    rows, _ = read_rows([str(HAZARDS / "valid.jsonl")], default_config)
    assert rows["flags"].to_list() == [[], None, None, ["invented_citation"], None, None]
    assert rows["flags_present"].to_list() == [True, False, False, True, False, False]
    assert rows["verdict"].to_list() == [
        "fine",
        None,
        None,
        "ok",
        None,
        "d\u00e9j\u00e0 vu \u2014 \u2713",
    ]
    assert rows["trial"].to_list() == ["1", "2", "3", "4", "5", "6"]
    assert set(rows["judge"]) == {"gpt-4o"}
    assert rows["correctness"].to_list() == [7.0, 7.0, None, None, None, None]
    assert rows["correctness__status"].to_list() == ["valid", "valid"] + ["absent"] * 4


# ----------------------------------------------------------------------------- file errors


def test_file_level_errors(tmp_path: Path, default_config, row_line) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_rows([str(tmp_path / "nope.jsonl")], default_config)
    empty = write_lines(tmp_path / "empty.jsonl", [])
    with pytest.raises(InputError, match=r"empty\.jsonl: file is empty"):
        read_rows([empty], default_config)
    bom_only = tmp_path / "bom_only.jsonl"
    bom_only.write_bytes(b"\xef\xbb\xbf")
    with pytest.raises(InputError, match="file is empty"):
        read_rows([str(bom_only)], default_config)
    no_valid = write_lines(tmp_path / "novalid.jsonl", [row_line(overall=None), "", "{"])
    with pytest.raises(
        InputError, match=r"novalid\.jsonl: no valid row at all \(blank 1, malformed 1, partial 1\)"
    ):
        read_rows([no_valid], default_config)
    with pytest.raises(InputError, match="is a directory"):
        read_rows([str(tmp_path)], default_config)
    with pytest.raises(InputError, match="no file matches"):
        read_rows([str(tmp_path / "*.nothing")], default_config)
    bad_gz = tmp_path / "bad.jsonl.gz"
    bad_gz.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="not a readable gzip file"):
        read_rows([str(bad_gz)], default_config)


def test_glob_expands_sorted(tmp_path: Path, default_config, row_line) -> None:
    write_lines(tmp_path / "b.jsonl", [row_line(trial=2)])
    write_lines(tmp_path / "a.jsonl", [row_line(trial=1)])
    rows, sources = read_rows([str(tmp_path / "*.jsonl")], default_config)
    assert [Path(s.path).name for s in sources] == ["a.jsonl", "b.jsonl"]
    assert rows["trial"].to_list() == ["1", "2"]


# ----------------------------------------------------------------------------- robustness


def test_line_boundaries_are_respected(write_jsonl, default_config, row_line) -> None:
    """An object split over two lines plus a line with two objects must not realign.

    Decoding the lines as one newline-joined stream would read lines 1-2 as one object and
    line 3 as two, which gives the right *count* of objects for the wrong lines.
    """
    two = row_line(trial=3, overall=5) + " " + row_line(trial=4, overall=6)
    head = row_line(trial=1, overall=3)
    path = write_jsonl(
        [head[: head.index('"overall"') + 10], "3}", two, row_line(trial=9, overall=7)]
    )
    rows, _ = read_rows([path], default_config)
    assert rows["bucket"].to_list() == ["malformed", "malformed", "malformed", "valid"]
    assert rows["trial"].to_list() == [None, None, None, "9"]
    assert rows["reason"][2].startswith("not JSON: Extra data")


def test_numbers_beyond_float_and_int_limits(write_jsonl, default_config, row_line) -> None:
    big = "1" + "0" * 400  # a JSON integer too large for a float
    huge = "1" + "0" * 5000  # beyond Python's int-from-string digit limit
    lines = [
        row_line(trial=1),
        row_line(trial=2).replace('"overall": 7', f'"overall": {big}'),
        row_line(trial=3).replace('"overall": 7', f'"overall": -{big}'),
        row_line(trial=4).replace('"overall": 7', f'"overall": {huge}'),
        row_line(trial=5).replace('"overall": 7', '"overall": 1e400'),
        row_line(trial=6).replace('"overall": 7', '"overall": 99999999999999999999999'),
        row_line(trial=7).replace('"correctness": 7', f'"correctness": {big}'),
    ]
    rows, _ = read_rows([write_jsonl(lines)], default_config)
    # past the float range is a number outside every rubric, as 1e23 is (issue 28: it was
    # invalid_number "got inf" while 1e23 was out_of_range), and the reason says what it was
    assert rows["bucket"].to_list() == [
        "valid",
        "out_of_range",
        "out_of_range",
        "out_of_range",
        "out_of_range",
        "out_of_range",
        "valid",
    ]
    assert rows["correctness__status"].to_list()[-1] == "out_of_range"
    beyond = "field 'overall': outside the rubric [1, 10], got {} (beyond the float range) (not rescaled)"
    assert rows["reason"][1] == beyond.format("an integer of 401 digits")
    assert rows["reason"][2] == beyond.format("a negative integer of 401 digits")
    assert rows["reason"][3] == beyond.format("an integer of 5001 digits")
    assert rows["reason"][4] == beyond.format("1e400")
    assert rows["overall__raw"][5] == 1e23


def test_lone_surrogate_escape_is_malformed(write_jsonl, default_config, row_line) -> None:
    lines = [
        row_line(trial=1),
        row_line(trial=2, verdict="bad \ud800 text"),  # json.dumps escapes it: \ud800
        row_line(trial=3, judge="gpt-\udfff"),
        row_line(trial=4, verdict="pair \U0001f600 ok"),  # a proper pair is fine
        row_line(trial=5, scenario="soc2_gap_analysis", latency="\ud83d"),  # in an ignored field
    ]
    assert "\\ud800" in lines[1]
    rows, _ = read_rows([write_jsonl(lines)], default_config)
    assert rows["bucket"].to_list() == ["valid", "malformed", "malformed", "valid", "malformed"]
    assert rows["reason"][1] == "not valid Unicode: a lone surrogate escape in a string"
    assert rows["verdict"][3] == "pair \U0001f600 ok"


def test_deeply_nested_line_is_malformed(write_jsonl, default_config, row_line) -> None:
    deep = (
        '{"scenario": "s", "variant": "v", "trial": 1, "judge": "j", "x": '
        + "[" * 100000
        + "]" * 100000
        + "}"
    )
    rows, _ = read_rows([write_jsonl([row_line(), deep])], default_config)
    assert rows["bucket"].to_list() == ["valid", "malformed"]
    assert rows["reason"][1].startswith("not JSON")


def test_last_line_without_newline_and_lone_cr(write_jsonl, default_config, row_line) -> None:
    path = write_jsonl(
        [row_line(trial=1), "\r", row_line(trial=2, overall=None)], trailing_newline=False
    )
    rows, sources = read_rows([path], default_config)
    assert sources[0].lines == 3
    assert rows["bucket"].to_list() == ["valid", "blank", "partial"]


def test_bom_crlf_gzip_combined(write_jsonl, default_config, row_line) -> None:
    lines = [row_line(trial=1), "", row_line(trial=2, overall="8/10"), "{oops"]
    plain = write_jsonl(lines, name="p.jsonl")
    combo = write_jsonl(lines, name="c.jsonl.gz", newline="\r\n", bom=True, gz=True)
    a, _ = read_rows([plain], default_config)
    b, _ = read_rows([combo], default_config)
    assert a["bucket"].to_list() == ["valid", "blank", "non_numeric", "malformed"]
    assert b.drop("file").equals(a.drop("file"))


def test_malformed_line_in_the_middle_of_a_large_file(
    tmp_path: Path, default_config, py_rng
) -> None:
    """200k lines, damage in the middle: the rest still decodes; classification == per line."""
    from test_ledger import naive_classify, split_lines

    n = 200_000
    lines: list[str | bytes] = []
    for i in range(n):
        line = make_row_line(
            scenario=f"s{i % 997}", trial=i // 997 + 1, overall=py_rng.randint(1, 10)
        )
        lines.append(line)
    mid = n // 2
    lines[mid] = lines[mid][:40]  # truncated
    lines[mid + 1] = b"\xff\xfe" + b"garbage"  # not UTF-8
    lines[mid + 2] = lines[mid + 2].replace(
        '"overall": ', '"overall": NaN, "x": '
    )  # slow path, valid JSON
    lines[mid + 3] = "[" + lines[mid + 3] + "]"  # array
    lines[7] = make_row_line(scenario="s7", trial=1, overall=DROP)
    path = write_lines(tmp_path / "big.jsonl", lines)
    rows, sources = read_rows([path], default_config)
    assert sources[0].lines == n == rows.height
    expected = naive_classify(split_lines(Path(path).read_bytes()))
    assert rows["bucket"].to_list() == expected
    assert rows["bucket"][mid : mid + 4].to_list() == [
        "malformed",
        "malformed",
        "invalid_number",
        "malformed",
    ]
    assert rows["bucket"].value_counts().filter(pl.col("bucket") == "valid")["count"][0] == n - 5
    assert rows["line"].to_list() == list(range(1, n + 1))


# ----------------------------------------------------------------------------- config features


def _cfg(tmp_path: Path, text: dict) -> object:
    p = tmp_path / "cfg.yaml"
    p.write_text(yaml.safe_dump(text), encoding="utf-8")
    return load_config(str(p))


def test_dotted_paths_and_list_index(tmp_path: Path, write_jsonl) -> None:
    cfg = _cfg(
        tmp_path,
        {
            "keys": {
                "scenario": "task.id",
                "variant": "run.variant",
                "trial": "run.seed",
                "judge": "judges[0]",
            },
            "scores": {"overall": "scores.overall", "accuracy": "scores.detail.acc"},
            "flags": None,
            "verdict": "out.text",
        },
    )

    def line(**kw):
        base = {
            "task": {"id": "t1"},
            "run": {"variant": "v", "seed": 1},
            "judges": ["gpt-4o", "claude"],
            "scores": {"overall": 8, "detail": {"acc": 6}},
            "out": {"text": "ok"},
        }
        base.update(kw)
        return json.dumps(base)

    lines = [
        line(),
        line(run={"variant": "v", "seed": 2}, scores={"detail": {"acc": 6}}),  # partial
        line(run={"variant": "v", "seed": 3}, judges=[]),  # index out of range
        line(run={"variant": "v", "seed": 4}, judges="gpt-4o"),  # not a list
        line(run={"variant": "v", "seed": 5}, scores={"overall": "9/10"}),  # non_numeric
        line(run={"variant": "v", "seed": 6}, task="t1"),  # task not an object
        line(run={"variant": "v", "seed": 7}, judges=[["nested"]]),  # element is a list
    ]
    rows, _ = read_rows([write_jsonl(lines)], cfg)
    assert rows["bucket"].to_list() == [
        "valid",
        "partial",
        "malformed",
        "malformed",
        "non_numeric",
        "malformed",
        "malformed",
    ]
    assert rows["reason"].to_list()[2:] == [
        "key field 'judge' (judges[0]) is missing",
        "key field 'judge' (judges[0]) is missing",
        "field 'overall': expected a number in [1, 10], got '9/10'",
        "key field 'scenario' (task.id) is missing",
        "key field 'judge' (judges[0]) is a list, not a string or integer",
    ]
    assert rows["judge"][0] == "gpt-4o"
    assert rows["scenario"][0] == "t1"
    assert rows["accuracy"].to_list()[:2] == [6.0, 6.0]
    assert rows["verdict"][0] == "ok"
    assert rows["flags_present"].to_list() == [False] * 7


def test_composite_key_and_constants(tmp_path: Path, write_jsonl) -> None:
    cfg = _cfg(
        tmp_path,
        {
            "keys": {
                "scenario": ["question_id", "turn"],
                "variant": "model",
                "trial": None,
                "judge": None,
            },
            "constants": {"judge": "gpt-4", "trial": 1},
            "scores": {"overall": "score"},
            "flags": None,
            "verdict": None,
        },
    )
    lines = [
        json.dumps({"question_id": 81, "turn": 1, "model": "m", "score": 8}),
        json.dumps({"question_id": 81, "turn": 2, "model": "m", "score": 6}),
        json.dumps({"question_id": 81, "turn": 1, "model": "m", "score": 8}),  # duplicate of line 1
        json.dumps({"question_id": 82, "model": "m", "score": 5}),  # no turn
        json.dumps(
            {"question_id": "81", "turn": "2", "model": "m", "score": 3}
        ),  # same key as line 2
        json.dumps({"question_id": 83, "turn": 1, "model": "m", "score": -1}),
    ]
    rows, _ = read_rows([write_jsonl(lines)], cfg)
    assert rows["scenario"].to_list() == ["81:1", "81:2", "81:1", None, "81:2", "83:1"]
    assert rows["bucket"].to_list() == [
        "valid",
        "conflict",
        "duplicate",
        "malformed",
        "conflict",
        "out_of_range",
    ]
    assert rows["reason"][3] == "key field 'scenario' (turn) is missing"
    assert set(rows["judge"]) == {"gpt-4"}
    assert set(rows["trial"]) == {"1"}


def test_path_fields_regex(tmp_path: Path) -> None:
    cfg = _cfg(
        tmp_path,
        {
            "path_fields": r"(?P<run>[^_/]+)__(?P<judge>[^_/]+)__(?P<variant>[^/]+)\.slim\.jsonl$",
            "keys": {"judge": None, "variant": None},
        },
    )
    a = write_lines(
        tmp_path / "runs" / "v2__gpt-4o__gemma.slim.jsonl",
        [
            make_row_line(judge=DROP, variant=DROP, trial=1),
            make_row_line(judge="ignored", variant=DROP, trial=2, overall=3),
        ],
    )
    b = write_lines(
        tmp_path / "runs" / "v2__claude__gemma.slim.jsonl",
        [make_row_line(judge=DROP, variant=DROP)],
    )
    rows, _ = read_rows([a, b], cfg)
    assert rows["judge"].to_list() == ["gpt-4o", "gpt-4o", "claude"]
    assert rows["variant"].to_list() == ["gemma"] * 3
    assert rows["path_run"].to_list() == ["v2"] * 3
    assert rows["bucket"].to_list() == ["valid"] * 3
    stray = write_lines(tmp_path / "other.jsonl", [make_row_line()])
    with pytest.raises(InputError, match=r"other\.jsonl: file path does not match path_fields"):
        read_rows([stray], cfg)


def test_numeric_strings_accept_and_reject(
    tmp_path: Path, write_jsonl, row_line, default_config
) -> None:
    lines = [
        row_line(trial=1),
        row_line(trial=2, overall="8"),
        row_line(trial=3, overall=" 7.5 "),
        row_line(trial=4, overall="8/10"),
        row_line(trial=5, overall="85"),
        row_line(trial=6, overall=True),
        row_line(trial=7, correctness="6", overall=9),
    ]
    path = write_jsonl(lines)
    strict, _ = read_rows([path], default_config)
    assert strict["bucket"].to_list() == [
        "valid",
        "non_numeric",
        "non_numeric",
        "non_numeric",
        "non_numeric",
        "non_numeric",
        "valid",
    ]
    assert strict["correctness__status"][6] == "non_numeric"
    assert not any(strict["overall__from_string"])
    cfg = _cfg(tmp_path, {"numeric_strings": "accept"})
    acc, _ = read_rows([path], cfg)
    assert acc["bucket"].to_list() == [
        "valid",
        "valid",
        "valid",
        "non_numeric",
        "out_of_range",
        "non_numeric",
        "valid",
    ]
    assert acc["overall"].to_list() == [7.0, 8.0, 7.5, None, None, None, 9.0]
    assert acc["overall__from_string"].to_list() == [False, True, True, False, True, False, False]
    assert acc["correctness"][6] == 6.0 and acc["correctness__from_string"][6]
    assert acc["reason"][4] == oor("'85'")  # the value as written: a string
    # counted beside the ledger: valid rows whose headline came from a string
    assert census(acc, cfg)["from_string"].to_list() == [2]


def test_missing_value_sentinels(tmp_path: Path, write_jsonl, row_line) -> None:
    cfg = _cfg(tmp_path, {"missing_values": [-1, "error"]})
    lines = [
        row_line(trial=1),  # valid
        row_line(trial=2, overall=-1),  # sentinel, subs present -> partial
        row_line(trial=3, overall="error"),  # string sentinel -> partial
        row_line(
            trial=4,
            overall=-1.0,
            correctness=DROP,
            completeness=DROP,
            depth=DROP,
            citations=DROP,
            honesty=DROP,
        ),  # sentinel, no subs -> empty
        row_line(trial=5, overall=-2),  # not a sentinel: out of range
        row_line(trial=6, overall="Error"),  # case matters: non_numeric
        row_line(
            trial=7,
            overall=None,
            correctness=-1,
            completeness="error",
            depth=None,
            citations=DROP,
            honesty=DROP,
        ),  # only sentinel subs -> empty
        row_line(trial=2, overall=-1),  # duplicate of line 2: counted once
    ]
    rows, _ = read_rows([write_jsonl(lines)], cfg)
    assert rows["bucket"].to_list() == [
        "valid",
        "partial",
        "partial",
        "empty",
        "out_of_range",
        "non_numeric",
        "empty",
        "duplicate",
    ]
    assert rows["overall__status"].to_list() == [
        "valid",
        "sentinel",
        "sentinel",
        "sentinel",
        "out_of_range",
        "non_numeric",
        "null",
        "sentinel",
    ]
    assert rows["correctness__status"][6] == "sentinel"
    assert rows["completeness__status"][6] == "sentinel"
    assert rows["overall"].to_list() == [7.0] + [None] * 7
    assert rows["overall__raw"][1] == -1.0  # what was read is kept
    cen = census(rows, cfg)
    assert cen["sentinel"].to_list() == [3]  # lines 2, 3, 4 (8 is a duplicate)
    # per-field nulls: absent, null or sentinel, duplicates excluded (lines 1-7)
    assert cen["nulls__overall"].to_list() == [4]  # lines 2, 3, 4, 7
    assert cen["nulls__correctness"].to_list() == [2]  # line 4 absent, 7 sentinel
    # without the config, -1 is out of range and "error" is non_numeric
    plain, _ = read_rows([write_jsonl(lines, name="b.jsonl")], load_config())
    assert plain["bucket"].to_list()[1:4] == ["out_of_range", "non_numeric", "out_of_range"]


def test_json_array_files(tmp_path: Path, default_config) -> None:
    items = [
        json.loads(make_row_line(trial=1)),
        json.loads(make_row_line(trial=2, overall=None)),
        [1, 2],
        "text",
        json.loads(make_row_line(trial=1)),
        json.loads(make_row_line(trial=3, overall=11)),
    ]
    p = tmp_path / "rows.json"
    p.write_text(json.dumps(items, indent=2), encoding="utf-8")
    rows, sources = read_rows([str(p)], default_config)
    assert sources[0].lines == 6  # elements, not physical lines
    assert rows["line"].to_list() == [1, 2, 3, 4, 5, 6]
    assert rows["bucket"].to_list() == [
        "valid",
        "partial",
        "malformed",
        "malformed",
        "duplicate",
        "out_of_range",
    ]
    assert rows["reason"][2] == "not a JSON object (a JSON array)"
    assert rows["reason"][3] == "not a JSON object (a JSON string)"
    # gzip and a BOM work for arrays too
    gz = tmp_path / "rows2.json.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf" + p.read_bytes(), mtime=0))
    rows2, _ = read_rows([str(gz)], default_config)
    assert rows2["bucket"].to_list() == rows["bucket"].to_list()
    # a file that is not an array at all is an input error naming the file
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: expected a JSON array"):
        read_rows([str(bad)], default_config)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"a": 1},', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.json"):
        read_rows([str(broken)], default_config)
    # format: jsonl forces line mode whatever the extension
    lines_json = tmp_path / "lines.json"
    shutil.copy(HAZARDS / "valid.jsonl", lines_json)
    cfg = _cfg(tmp_path, {"format": "jsonl"})
    rows3, _ = read_rows([str(lines_json)], cfg)
    assert rows3["bucket"].to_list() == ["valid"] * 6


def test_json_array_with_nan_and_surrogate(tmp_path: Path, default_config) -> None:
    good = make_row_line(trial=1)
    text = (
        "["
        + ", ".join(
            [
                good,
                good.replace('"overall": 7', '"overall": NaN').replace('"trial": 1', '"trial": 2'),
                make_row_line(trial=3, verdict="x \ud800"),
            ]
        )
        + "]"
    )
    p = tmp_path / "rows.json"
    p.write_text(text, encoding="utf-8")
    rows, _ = read_rows([str(p)], default_config)
    assert rows["bucket"].to_list() == ["valid", "invalid_number", "malformed"]


def test_key_fields_as_strings(write_jsonl, default_config, row_line) -> None:
    rows, _ = read_rows(
        [write_jsonl([row_line(trial=1), row_line(trial="2"), row_line(trial=-3)])], default_config
    )
    for k in KEY_FIELDS:
        assert rows[k].dtype == pl.String
    assert rows["trial"].to_list() == ["1", "2", "-3"]


def test_score_values_are_exact(write_jsonl, default_config, row_line) -> None:
    vals = [1, 1.5, 2.25, 9.999, 10]
    rows, _ = read_rows(
        [write_jsonl([row_line(trial=i, overall=v) for i, v in enumerate(vals)])], default_config
    )
    assert rows["overall"].to_list() == [float(v) for v in vals]
    assert all(math.isfinite(x) for x in rows["overall__raw"].to_list())


def test_repeat_content_compares_what_was_read(write_jsonl, default_config, row_line) -> None:
    """Same key: true vs "true", NaN vs Infinity differ (conflict); NaN vs NaN is a repeat."""
    nan = row_line(trial=3).replace('"overall": 7', '"overall": NaN')
    inf = row_line(trial=4).replace('"overall": 7', '"overall": Infinity')
    lines = [
        row_line(trial=1),
        row_line(trial=2, overall=True),
        row_line(trial=2, overall="true"),
        nan,
        nan.replace("NaN", "-Infinity"),
        inf,
        inf,
        row_line(trial=5, overall=[1, 2]),
        row_line(trial=5, overall="[1, 2]"),
        row_line(trial=6, overall=None),
        row_line(trial=6, overall=DROP),  # null vs absent
    ]
    rows, _ = read_rows([write_jsonl(lines)], default_config)
    assert rows["bucket"].to_list() == [
        "valid",
        "conflict",
        "conflict",
        "conflict",
        "conflict",
        "invalid_number",
        "duplicate",
        "conflict",
        "conflict",
        "conflict",
        "conflict",
    ]


def test_flags_compare_as_lists(write_jsonl, default_config, row_line) -> None:
    lines = [
        row_line(trial=1, fabrication_flags=["a", "b"]),
        row_line(trial=1, fabrication_flags=["a\x1fb"]),
        row_line(trial=2, fabrication_flags=[]),
        row_line(trial=2, fabrication_flags=DROP),
        row_line(trial=3, fabrication_flags=["x"]),
        row_line(trial=3, fabrication_flags=["x"]),
        row_line(trial=4, fabrication_flags=["x", 1, None]),
        row_line(trial=9),
    ]
    rows, _ = read_rows([write_jsonl(lines)], default_config)
    assert rows["bucket"].to_list() == ["conflict"] * 4 + ["valid", "duplicate", "valid", "valid"]
    assert rows["flags"][6].to_list() == ["x", "1", "null"]  # non-strings shown as JSON text


# ----------------------------------------------------------------------------- engine blocks


def _block_file(tmp_path: Path, py_rng, block: int, gz: bool = False, crlf: bool = False) -> tuple[str, int, list[int]]:
    """~3,000 lines with damage on both sides of the points where blocks of ``block`` bytes
    end, a duplicate and a conflict whose rows land in different blocks, blank lines and a BOM."""
    n = 3000
    lines: list[str | bytes] = [
        make_row_line(scenario=f"s{i}", trial=1, overall=py_rng.randint(1, 10)) for i in range(n)
    ]
    newline = "\r\n" if crlf else "\n"
    probe = ("\ufeff" + "".join(str(ln) + newline for ln in lines)).encode()
    cut_lines = [probe.count(b"\n", 0, k * block) for k in range(1, len(probe) // block + 1)]
    assert len(cut_lines) >= 2 and min(cut_lines) > 100 and max(cut_lines) < n - 100
    for c in cut_lines:  # damage right before, at and after each cut (lengths kept)
        width = len(str(lines[c]))
        lines[c - 2] = str(lines[c - 2])[:30].ljust(width)  # truncated
        lines[c - 1] = b"\xff\xfe not utf-8".ljust(width)
        lines[c] = ""  # blank
        lines[c + 1] = "   \t".ljust(2 * width)  # blank (whitespace)
        lines[c + 2] = str(lines[c + 2]).replace('"overall": ', '"overall": NaN, "x": ')
        lines[c + 3] = "[" + str(lines[c + 3]) + "]"
        lines[c + 4] = make_row_line(scenario=f"c{c}", overall="8/10").ljust(width)
    lines[10] = make_row_line(scenario="dup", overall=6)
    lines[n - 10] = make_row_line(scenario="dup", overall=6)
    lines[20] = make_row_line(scenario="conf", overall=6)
    lines[n - 20] = make_row_line(scenario="conf", overall=9)
    lines[n // 2 + 50] = make_row_line(scenario="dup2", overall=DROP)
    lines[n - 30] = make_row_line(scenario="dup2", overall=DROP)
    name = "split.jsonl.gz" if gz else "split.jsonl"
    path = write_lines(tmp_path / name, lines, newline=newline, bom=True, gz=gz)
    return path, n, cut_lines


@pytest.mark.parametrize("gz, crlf", [(False, False), (True, False), (False, True)])
def test_engine_blocks_equal_one_block(
    tmp_path: Path, default_config, py_rng, monkeypatch, gz: bool, crlf: bool
) -> None:
    """The frame does not depend on where the blocks of the streamed file end (damage at the
    block ends), nor on the engine reading a block or Python reading it line by line."""
    from workbench.ingest import engine

    path, n, cuts = _block_file(tmp_path, py_rng, 110_000, gz=gz, crlf=crlf)
    monkeypatch.setattr(engine, "ENGINE_MIN_LINES", 0)
    results = {}
    for block in (1 << 30, 110_000, 250):
        monkeypatch.setattr(engine, "BLOCK_BYTES", block)
        # a block of 250 bytes holds a line or two: read by Python (a query each would be slow)
        monkeypatch.setattr(engine, "ENGINE_MIN_LINES", 0 if block > 1000 else 2000)
        seen: list[int] = []
        rows, sources = read_rows([path], default_config, progress=seen.append)
        assert rows.height == n == sources[0].lines
        assert rows.filter(pl.col("bucket") == "blank").height > 0
        # progress counts every line the ledger does, blank ones included, block by block
        assert sum(seen) == n == count_ledger(rows, planned=False)["lines"]
        assert len(seen) >= (1 if block > 1 << 20 else 2)
        results[block] = (rows, sources)
    one, src1 = results[1 << 30]
    for block, (rows, src) in results.items():
        assert rows.schema == one.schema
        assert rows.equals(one), block
        assert src == src1
    # every line read by Python (blocks under ENGINE_MIN_LINES) gives the same frame as well
    monkeypatch.setattr(engine, "ENGINE_MIN_LINES", 10**9)
    rows, _ = read_rows([path], default_config)
    assert rows.equals(one)
    # and the plain per-line reference reader (tests/reference_ingest.py) agrees
    from reference_ingest import reference_rows

    ref, ref_src = reference_rows([path], default_config)
    assert ref.equals(one)
    assert [(s.path, s.sha256, s.lines) for s in ref_src] == [(s.path, s.sha256, s.lines) for s in src1]
    counts = dict(one.group_by("bucket").len().iter_rows())
    k = len(cuts)
    assert counts["duplicate"] == 2 and counts["conflict"] == 2
    assert counts["blank"] == 2 * k and counts["malformed"] >= 3 * k - 1
    assert one.filter(pl.col("bucket") == "conflict")["scenario"].to_list() == ["conf", "conf"]
    assert one["line"].to_list() == list(range(1, n + 1))


def test_engine_errors_are_input_errors(tmp_path: Path, py_rng, monkeypatch) -> None:
    """An InputError found while streaming (a path that does not match path_fields) is raised
    as such."""
    from workbench.ingest import engine

    monkeypatch.setattr(engine, "ENGINE_MIN_LINES", 0)
    cfg = _cfg(tmp_path, {"path_fields": r"(?P<judge>run\d+)\.jsonl$"})
    path, _, _ = _block_file(tmp_path, py_rng, 110_000)
    with pytest.raises(InputError, match="file path does not match path_fields"):
        read_rows([path], cfg)


def test_duplicate_key_whose_value_is_a_lone_surrogate(write_jsonl, default_config, row_line) -> None:
    """Found by tests/test_engine_identity.py's hypothesis lines: the first value of a repeated
    key holds a lone surrogate (the last value wins in json, so the decoded row is clean): the
    line is malformed with the duplicate-key reason, the surrogate shown as its escape, and no
    traceback."""
    bad = row_line(trial=2)[:-1] + ', "overall": "\\ud800", "overall": 3}'
    rows, _ = read_rows([write_jsonl([row_line(trial=1), bad])], default_config)
    assert rows["bucket"].to_list() == ["valid", "malformed"]
    reason = rows["reason"][1]
    assert reason.startswith("duplicate key 'overall'") and "\\ud800" in reason


def test_repeats_across_blocks_whose_text_columns_differ(tmp_path: Path, default_config, monkeypatch) -> None:
    """Blocks are classified as they are read, and a block whose scores are all numbers drops
    its (all-null) text columns: repeats across such blocks and files are still judged on what
    was read. Expected buckets worked out by hand; rows equal the per-line reference reader's
    for every block size."""
    from reference_ingest import reference_rows

    from workbench.ingest import engine

    def row(i: int, **kw: object) -> str:
        return make_row_line(**{"scenario": f"s{i}", **kw})

    n = 3000
    first = [row(i) for i in range(n)]  # block 1 of file a: holds text scores
    first[5] = row(0, scenario="K", overall="abc")
    first[6] = row(0, scenario="D", overall="x")
    first[7] = row(0, scenario="N", overall=6)
    first[8] = row(0, scenario="M", overall="6")
    first[9] = row(0, scenario="F", overall="y")
    second = [row(n + i) for i in range(n)]  # block 2: numbers only
    second[5] = row(0, scenario="N", overall=6)  # same as line 8: duplicate
    second[6] = row(0, scenario="M", overall=6)  # a number, the other "6": conflict
    third = [row(2 * n + i) for i in range(n)]  # block 3: text again
    third[5] = row(0, scenario="K", overall="abd")  # another text: conflict
    third[6] = row(0, scenario="D", overall="x")  # the same text: duplicate
    a = write_lines(tmp_path / "a.jsonl", first + second + third)
    b = write_lines(tmp_path / "b.jsonl", [row(9 * n + i) for i in range(n)]
                    + [row(0, scenario="F", overall=6)])  # numbers only; F was "y" in a: conflict
    size = len((tmp_path / "a.jsonl").read_bytes())
    monkeypatch.setattr(engine, "ENGINE_MIN_LINES", 0)
    ref, _ = reference_rows([a, b], default_config)
    want = {("K", 6): "conflict", ("K", 2 * n + 6): "conflict", ("D", 7): None,
            ("D", 2 * n + 7): "duplicate", ("N", 8): None, ("N", n + 6): "duplicate",
            ("M", 9): "conflict", ("M", n + 7): "conflict", ("F", 10): "conflict", ("F", n + 1): "conflict"}
    marked = ref.filter(pl.col("scenario").is_in(["K", "D", "N", "M", "F"]))
    got = {(s, ln): (b_ if b_ in ("duplicate", "conflict") else None)
           for s, ln, b_ in marked.select("scenario", "line", "bucket").iter_rows()}
    assert got == want
    for block in (size // 3 + 1, size // 7, 1 << 30):
        monkeypatch.setattr(engine, "BLOCK_BYTES", block)
        rows, _ = read_rows([a, b], default_config)
        assert rows.schema == ref.schema
        assert rows.equals(ref), block
        assert rows.n_chunks("all") == [1] * rows.width  # one chunk, as the join used to give


# --------------------------------------------------------------------------- issue 25: copies


def _mt_file(path: Path, n: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"question_id": q, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 3 + q % 7, "turn": t}
            for q in range(81, 81 + n) for t in (1, 2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return str(path)


def test_copies_of_runs_are_skipped_by_globs_and_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main as cli
    from workbench.common.files import copy_reason

    monkeypatch.chdir(tmp_path)
    _mt_file(tmp_path / "gpt-4_single.jsonl", 20)                                  # the run: 40 lines
    _mt_file(tmp_path / ".ipynb_checkpoints" / "gpt-4_single-checkpoint.jsonl", 5)  # a partial copy
    _mt_file(tmp_path / "gpt-4_single.jsonl~", 3)
    _mt_file(tmp_path / "gpt-4_single.bak.jsonl", 3)
    assert copy_reason(".ipynb_checkpoints/gpt-4_single-checkpoint.jsonl") == (
        "it is under .ipynb_checkpoints/, a Jupyter checkpoint copy")
    assert copy_reason("runs/gpt-4_single-checkpoint.jsonl.gz") == (
        "its name ends in -checkpoint, a Jupyter checkpoint copy")
    assert copy_reason("a.jsonl.orig") == "its name has .orig, a backup copy"
    assert copy_reason(".a.jsonl.swp") == "its name has .swp, a backup copy"
    assert copy_reason("gpt-4_single.jsonl") is None and copy_reason("checkpoints/run.jsonl") is None
    # a glob: the copies are skipped with a note naming them; the run alone is read
    code = cli.main(["analyze", "--preset", "auto", "--no-gate", "--resamples", "200", "--out", "o1",
                     "gpt-4_single*"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("workbench: skipped 2 files the input globs match, as copies of a run rather than the run: "
            "gpt-4_single.bak.jsonl (its name has .bak, a backup copy); gpt-4_single.jsonl~ (its name "
            "ends in '~', an editor backup); --allow-copies reads them") in err
    doc = json.loads((tmp_path / "o1" / "results.json").read_text("utf-8"))
    assert [i["path"] for i in doc["inputs"]] == ["gpt-4_single.jsonl"] and doc["ledger"]["lines"] == 40
    assert doc["config"]["allow_copies"] is False
    # the checkpoint named explicitly (what --preset auto took as a complete run): exit 2, saying why
    ck = ".ipynb_checkpoints/gpt-4_single-checkpoint.jsonl"
    code = cli.main(["analyze", "--preset", "auto", "--no-gate", "--out", "o2", ck])
    err = capsys.readouterr().err
    assert code == 2
    assert (f"workbench: error: {ck}: looks like a copy of a run, not the run: it is under "
            ".ipynb_checkpoints/, a Jupyter checkpoint copy;") in err
    assert "add --allow-copies to read it" in err
    (tmp_path / "pub.csv").write_text("variant,score\nm,6.50\n", "utf-8")
    code = cli.main(["check", "--preset", "mt-bench", "--published", "pub.csv", "--out", "o3",
                     ".ipynb_checkpoints/*.jsonl"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("matches only copies of runs (1: .ipynb_checkpoints/gpt-4_single-checkpoint.jsonl: it is under "
            ".ipynb_checkpoints/, a Jupyter checkpoint copy); add --allow-copies to read them") in err
    # --allow-copies reads it, and results.json records the choice (config and its source)
    code = cli.main(["analyze", "--preset", "mt-bench", "--allow-copies", "--no-gate", "--resamples", "200",
                     "--out", "o4", ck])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "o4" / "results.json").read_text("utf-8"))
    assert doc["config"]["allow_copies"] is True and "parameters" in doc["config_sources"]
    assert [i["path"] for i in doc["inputs"]] == [ck] and doc["ledger"]["lines"] == 10


@pytest.mark.parametrize("slice_rows,parts", [(1 << 20, 16), (7, 16), (3, 1), (5, 2)])
def test_repeated_hash_rows_are_the_rows_whose_key_hash_repeats(slice_rows: int, parts: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the candidates of the repeat check, found in slices and partitions, against a plain
    # count of each keyed row's key (and of its XOR hash) in Python
    from collections import Counter

    from workbench.ingest import reader

    monkeypatch.setattr(reader, "HASH_SLICE", slice_rows)
    monkeypatch.setattr(reader, "HASH_PARTS", parts)
    rng = np.random.default_rng(7)
    n = 400
    df = pl.DataFrame({
        "bucket": rng.choice(["valid", "partial", "malformed", "blank"], n, p=[0.6, 0.2, 0.1, 0.1]).tolist(),
        "scenario": [f"s{k}" for k in rng.integers(0, 40, n)],
        "variant": rng.choice(["a", "b"], n).tolist(),
        "trial": [None if k == 0 else str(k) for k in rng.integers(0, 3, n)],
        "judge": rng.choice(["j1", "j2"], n).tolist(),
    })
    key = ["scenario", "variant", "trial", "judge"]
    keyed = [b not in ("malformed", "blank") for b in df["bucket"].to_list()]
    tuples = list(df.select(key).iter_rows())
    hashes = [0] * n
    for i, k in enumerate(key):
        for r, v in enumerate(df[k].hash(seed=i).to_list()):
            hashes[r] ^= v
    by_hash = Counter(h for h, k in zip(hashes, keyed, strict=True) if k)
    by_key = Counter(t for t, k in zip(tuples, keyed, strict=True) if k)
    want = [r for r in range(n) if keyed[r] and by_hash[hashes[r]] > 1]
    got = reader.repeated_hash_rows(df, key).tolist()
    assert got == want
    # every row whose key repeats is a candidate (the hash loses none); there are some
    repeats = [r for r in range(n) if keyed[r] and by_key[tuples[r]] > 1]
    assert repeats and set(repeats) <= set(got)
