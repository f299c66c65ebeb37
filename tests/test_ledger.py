"""Ledger: conservation (every line in exactly one bucket) against a naive reference, and plans.

``naive_classify`` below is the reference: stdlib ``json.loads`` on one line at a time,
following issue 2's definitions word for word, with no workbench code. The hypothesis
property draws random mixtures of good and damaged lines (spread over one to three files,
with LF or CRLF, with or without BOM, plain or gzip) and checks that ``read_rows`` +
``count_ledger`` give the same bucket for every line, and that the buckets sum to the lines.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import InputError, apply_plan, count_ledger, load_config, read_plan, read_rows
from workbench.ingest.ledger import LEDGER_KEYS, complete_plan
from workbench.ingest.reader import BUCKETS

KEYS = ("scenario", "variant", "trial", "judge")
SCORES = ("overall", "correctness", "completeness", "depth", "citations", "honesty")
SUBS = SCORES[1:]
LO, HI = 1.0, 10.0
ABSENT = object()


# ----------------------------------------------------------------------------- naive reference


def split_lines(data: bytes) -> list[bytes]:
    """Physical lines of a file as the issue defines input: optional BOM, LF or CRLF."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]


class _Beyond(float):
    """A number literal past the float range (``1e400``, an integer of 5,000 digits): finite as
    written, so outside every rubric (out_of_range), unlike the NaN/Infinity constants."""


def _big_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:  # beyond the digit limit
        return _Beyond(-math.inf if text.startswith("-") else math.inf)


def _big_float(text: str) -> Any:
    f = float(text)
    return _Beyond(f) if math.isinf(f) else f


def _has_surrogate(x: Any) -> bool:
    if isinstance(x, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in x)
    if isinstance(x, list):
        return any(_has_surrogate(v) for v in x)
    if isinstance(x, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in x.items())
    return False


def _status(v: Any) -> str:
    """missing | non_numeric | invalid_number | out_of_range | valid for one rubric value."""
    if v is ABSENT or v is None:
        return "missing"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return "non_numeric"
    if isinstance(v, _Beyond):
        return "out_of_range"
    try:
        f = float(v)
    except OverflowError:  # an integer past the float range, as written: a number outside the rubric
        return "out_of_range"
    if math.isnan(f) or math.isinf(f):  # the NaN / Infinity constants: not numbers
        return "invalid_number"
    return "valid" if LO <= f <= HI else "out_of_range"


def _content(v: Any) -> tuple:
    if v is ABSENT:
        return ("absent",)
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        try:
            f = float(v)
        except OverflowError:
            f = math.inf if v > 0 else -math.inf
        return ("num", "nan" if math.isnan(f) else f)
    if isinstance(v, str):
        return ("str", v)
    return ("json", json.dumps(v))


def naive_line(raw: bytes) -> tuple[str, tuple | None, tuple | None]:
    """(bucket before repeats, key, content) of one physical line."""
    if not raw.strip():
        return "blank", None, None
    try:
        text = raw.decode("utf-8")
        obj = json.loads(text, parse_int=_big_int, parse_float=_big_float)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        return "malformed", None, None
    if not isinstance(obj, dict) or _has_surrogate(obj):
        return "malformed", None, None
    key = []
    for k in KEYS:
        v = obj.get(k)
        if type(v) is str and v.strip():
            key.append(v)
        elif type(v) is int:
            key.append(str(v))
        else:
            return "malformed", None, None
    head = _status(obj.get("overall", ABSENT))
    if head != "missing":
        bucket = head
    elif any(obj.get(s, ABSENT) is not ABSENT and obj.get(s) is not None for s in SUBS):
        bucket = "partial"
    else:
        bucket = "empty"
    flags = obj.get("fabrication_flags")
    verdict = obj.get("verdict")
    content = (
        tuple(_content(obj.get(s, ABSENT)) for s in SCORES),
        tuple(flags) if isinstance(flags, list) else None,
        verdict if isinstance(verdict, str) else None,
    )
    return bucket, tuple(key), content


def naive_classify(lines: list[bytes]) -> list[str]:
    """Bucket of every line, repeats included (lines of all files, in reading order)."""
    first = [naive_line(ln) for ln in lines]
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for i, (_, key, _) in enumerate(first):
        if key is not None:
            by_key[key].append(i)
    out = [b for b, _, _ in first]
    for idx in by_key.values():
        if len({first[i][2] for i in idx}) > 1:
            for i in idx:
                out[i] = "conflict"
        else:
            for i in idx[1:]:
                out[i] = "duplicate"
    return out


# ----------------------------------------------------------------------------- line generators

SCENARIOS = ["soc2_gap_analysis", "iso42001_policy"]
VARIANTS = ["baseline", "rag"]
JUDGES = ["gpt-4o", "claude"]

key_st = st.fixed_dictionaries(
    {
        "scenario": st.sampled_from(SCENARIOS),
        "variant": st.sampled_from(VARIANTS),
        "trial": st.sampled_from([1, 2, "2"]),
        "judge": st.sampled_from(JUDGES),
    }
)
score_st = st.one_of(st.integers(1, 10), st.sampled_from([1.5, 7.25, 10.0, 6.0]))
subs_st = st.dictionaries(st.sampled_from(SUBS), score_st, min_size=1, max_size=5)
extra_st = st.fixed_dictionaries(
    {},
    optional={
        "fabrication_flags": st.lists(
            st.sampled_from(["invented_citation", "wrong_article"]), max_size=2
        ),
        "verdict": st.sampled_from(["ok", "weak", ""]),
    },
)


def _dump(d: dict[str, Any]) -> str:
    return json.dumps(d)


@st.composite
def valid_line(draw):
    return _dump({**draw(key_st), "overall": draw(score_st), **draw(subs_st), **draw(extra_st)})


@st.composite
def partial_line(draw):
    row = {**draw(key_st), **draw(subs_st), **draw(extra_st)}
    if draw(st.booleans()):
        row["overall"] = None
    return _dump(row)


@st.composite
def empty_line(draw):
    row = {**draw(key_st), **draw(extra_st)}
    for f in draw(st.lists(st.sampled_from(SCORES), max_size=3)):
        row[f] = None
    return _dump(row)


@st.composite
def non_numeric_line(draw):
    bad = draw(st.sampled_from(["8/10", "8", True, False, [8], {"v": 8}, "true", "", "NaN"]))
    return _dump({**draw(key_st), "overall": bad, **draw(subs_st)})


@st.composite
def out_of_range_line(draw):
    bad = draw(st.sampled_from([0, -1, 85, 10.5, 0.99, 11, 100]))
    return _dump({**draw(key_st), "overall": bad, **draw(extra_st)})


@st.composite
def invalid_number_line(draw):
    # NaN and Infinity are not numbers; 1e400 and a 400-digit integer are numbers past the float
    # range, outside every rubric (out_of_range since issue 28): both kinds are drawn here
    lit = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400]))
    body = _dump({**draw(key_st), "overall": 0, **draw(subs_st)})
    return body.replace('"overall": 0', f'"overall": {lit}')


@st.composite
def malformed_line(draw):
    good = draw(valid_line())
    kind = draw(
        st.sampled_from(
            [
                "truncated",
                "text",
                "array",
                "string",
                "bytes",
                "no_key",
                "list_key",
                "null_key",
                "empty_key",
                "two",
                "fragment",
                "surrogate",
                "number",
            ]
        )
    )
    if kind == "truncated":
        return good[: draw(st.integers(1, len(good) - 1))]
    if kind == "text":
        return draw(st.sampled_from(["judge timed out", "{oops", "}", "NaN", "[[[", "{'a': 1}"]))
    if kind == "array":
        return "[" + good + "]"
    if kind == "string":
        return json.dumps(good)
    if kind == "bytes":
        return good.encode()[:20] + b"\xff\xc3(" + good.encode()[20:]
    if kind == "number":
        return draw(st.sampled_from(["42", "null", "true", "-0.5"]))
    row = json.loads(good)
    k = draw(st.sampled_from(KEYS))
    if kind == "no_key":
        del row[k]
    elif kind == "list_key":
        row[k] = [row[k]]
    elif kind == "null_key":
        row[k] = None
    elif kind == "empty_key":
        row[k] = draw(st.sampled_from(["", "  ", "\t"]))
    elif kind == "two":
        return good + " " + good
    elif kind == "fragment":
        return "3}"
    elif kind == "surrogate":
        row["verdict"] = "x \ud800"
    return _dump(row)


blank_line = st.sampled_from(["", " ", "\t", "  \t  "])

GENERATORS = {
    "valid": valid_line(),
    "partial": partial_line(),
    "empty": empty_line(),
    "non_numeric": non_numeric_line(),
    "out_of_range": out_of_range_line(),
    "invalid_number": invalid_number_line(),
    "malformed": malformed_line(),
    "blank": blank_line,
}


@st.composite
def line_mixture(draw):
    """A list of raw lines: fresh lines of every kind, exact repeats, same-key-other-score."""
    n = draw(st.integers(1, 40))
    lines: list[str | bytes] = []
    for _ in range(n):
        kind = draw(st.sampled_from([*GENERATORS, "repeat", "rekey"]))
        if kind in ("repeat", "rekey") and not lines:
            kind = "valid"
        if kind == "repeat":
            lines.append(lines[draw(st.integers(0, len(lines) - 1))])
        elif kind == "rekey":
            src = lines[draw(st.integers(0, len(lines) - 1))]
            try:
                row = json.loads(src)
            except (ValueError, TypeError):
                row = None
            if isinstance(row, dict):
                row["overall"] = draw(st.one_of(score_st, st.none(), st.just("8")))
                lines.append(_dump(row))
            else:
                lines.append(draw(valid_line()))
        else:
            lines.append(draw(GENERATORS[kind]))
    return lines


@st.composite
def file_layout(draw):
    lines = draw(line_mixture())
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(lines) - 1)), max_size=2, unique=True)))
    cuts = [c for c in cuts if 0 < c < len(lines)]
    bounds = [0, *cuts, len(lines)]
    files = []
    for i in range(len(bounds) - 1):
        files.append(
            {
                "lines": lines[bounds[i] : bounds[i + 1]],
                "crlf": draw(st.booleans()),
                "bom": draw(st.booleans()),
                "gz": draw(st.booleans()),
                "final_newline": draw(st.booleans()),
            }
        )
    return files


def _encode(spec: dict[str, Any]) -> bytes:
    sep = b"\r\n" if spec["crlf"] else b"\n"
    raw = [
        ln if isinstance(ln, bytes) else ln.encode("utf-8", "surrogatepass") for ln in spec["lines"]
    ]
    data = sep.join(raw)
    if spec["final_newline"] or (raw and not raw[-1].strip()):
        data += sep  # a last blank line needs its newline to exist as a line
    return (b"\xef\xbb\xbf" if spec["bom"] else b"") + data


HSET = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@HSET
@given(layout=file_layout())
def test_conservation_matches_naive_reference(tmp_path_factory, layout) -> None:
    cfg = load_config()
    d = tmp_path_factory.mktemp("mix")
    paths, all_lines, per_file = [], [], []
    for i, spec in enumerate(layout):
        data = _encode(spec)
        p = d / (f"f{i}.jsonl.gz" if spec["gz"] else f"f{i}.jsonl")
        p.write_bytes(gzip.compress(data, mtime=0) if spec["gz"] else data)
        lines = split_lines(data)
        paths.append(str(p))
        all_lines.extend(lines)
        per_file.append(len(lines))
    expected = naive_classify(all_lines)
    # which file has no valid row at all (after repeats across files)?
    starts = [sum(per_file[:i]) for i in range(len(per_file))]
    no_valid = [
        paths[i] for i, s in enumerate(starts) if "valid" not in expected[s : s + per_file[i]]
    ]
    if any(n == 0 for n in per_file):
        with pytest.raises(InputError, match="file is empty"):
            read_rows(paths, cfg)
        return
    if no_valid:
        with pytest.raises(InputError, match="no valid row at all") as err:
            read_rows(paths, cfg)
        # every file without a valid row is named, in input order, in one message
        text = str(err.value)
        if len(no_valid) == 1:
            assert text.startswith(no_valid[0] + ": ")
        else:
            assert text.startswith(f"{len(no_valid)} of {len(paths)} inputs: unusable: {no_valid[0]}: ")
            assert [text.index(p + ": ") for p in no_valid] == sorted(text.index(p + ": ") for p in no_valid)
        return
    rows, sources = read_rows(paths, cfg)
    assert [s.lines for s in sources] == per_file
    assert rows["bucket"].to_list() == expected
    led = count_ledger(rows, planned=False)
    assert led["lines"] == len(all_lines)
    assert sum(led[b] for b in BUCKETS) == led["lines"]
    counts = Counter(expected)
    assert {b: led[b] for b in BUCKETS} == {b: counts.get(b, 0) for b in BUCKETS}
    assert led["missing_planned"] is None
    assert list(led) == list(LEDGER_KEYS)
    # line numbers restart per file and are 1..lines
    for path, n in zip(paths, per_file, strict=True):
        assert rows.filter(pl.col("file") == path)["line"].to_list() == list(range(1, n + 1))


def test_naive_reference_on_a_hand_case() -> None:
    """The reference itself, on lines whose buckets are obvious by eye."""
    k = '"scenario": "a", "variant": "b", "trial": 1, "judge": "j"'
    lines = [
        f'{{{k}, "overall": 5}}',
        f'{{{k}, "overall": 5}}',
        "",
        "{",
        f'{{{k.replace("1", "2")}, "overall": 5}}',
        f'{{{k.replace("1", "2")}, "overall": 6}}',
        f'{{{k.replace("1", "3")}, "depth": 6}}',
        f"{{{k.replace('1', '4')}}}",
    ]
    got = naive_classify([ln.encode() for ln in lines])
    assert got == [
        "valid",
        "duplicate",
        "blank",
        "malformed",
        "conflict",
        "conflict",
        "partial",
        "empty",
    ]


# ----------------------------------------------------------------------------- plans


def _row(s: str, v: str, t: int, j: str, overall: Any = 7) -> str:
    return json.dumps({"scenario": s, "variant": v, "trial": t, "judge": j, "overall": overall})


@pytest.fixture
def observed(write_jsonl) -> str:
    # observed keys: (s1,v1,1,A) valid, (s1,v1,1,A) duplicate, (s1,v2,1,A) partial via null + depth,
    # (s2,v1,1,B) out of range, a malformed line and a blank line
    lines = [
        _row("s1", "v1", 1, "A"),
        _row("s1", "v1", 1, "A"),
        json.dumps(
            {
                "scenario": "s1",
                "variant": "v2",
                "trial": 1,
                "judge": "A",
                "overall": None,
                "depth": 4,
            }
        ),
        _row("s2", "v1", 1, "B", 85),
        "{broken",
        "",
    ]
    return write_jsonl(lines)


def _plan(tmp_path: Path, rows: list[tuple], header: str = "scenario,variant,trial,judge") -> str:
    p = tmp_path / "plan.csv"
    p.write_text(
        header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows), encoding="utf-8"
    )
    return str(p)


def test_plan_missing_planned_counts(tmp_path: Path, observed: str, default_config) -> None:
    plan_path = _plan(
        tmp_path,
        [
            ("s1", "v1", 1, "A"),  # has a valid row (and a duplicate)
            ("s1", "v2", 1, "A"),  # has a partial row: a row, so not missing
            ("s2", "v1", 1, "B"),  # has an out-of-range row
            ("s2", "v2", 1, "B"),  # no row -> missing_planned
            ("s3", "v1", 1, "A"),  # no row -> missing_planned
            ("s3", "v1", 1, "A"),  # listed twice: one planned judgment
            ("s1", "v1", 2, "A"),  # trial 2 never ran -> missing_planned
        ],
    )
    plan = read_plan(plan_path)
    assert plan.height == 6
    rows, _ = read_rows([observed], default_config)
    out, info = apply_plan(rows, plan)
    assert info == {"planned": 6, "unplanned": 0}
    led = count_ledger(out, planned=True)
    assert led["missing_planned"] == 3
    assert led["lines"] == 6 == rows.height  # missing_planned rows are not lines
    assert (
        led["valid"],
        led["duplicate"],
        led["partial"],
        led["out_of_range"],
        led["malformed"],
        led["blank"],
    ) == (1, 1, 1, 1, 1, 1)
    mp = out.filter(pl.col("bucket") == "missing_planned").sort(KEYS)
    assert mp.select(KEYS).rows() == [
        ("s1", "v1", "2", "A"),
        ("s2", "v2", "1", "B"),
        ("s3", "v1", "1", "A"),
    ]
    assert mp["file"].to_list() == [None] * 3 and mp["line"].to_list() == [None] * 3


def test_plan_unplanned_rows_are_counted_beside(
    tmp_path: Path, observed: str, default_config
) -> None:
    plan = read_plan(_plan(tmp_path, [("s1", "v1", 1, "A")]))
    rows, _ = read_rows([observed], default_config)
    out, info = apply_plan(rows, plan)
    # keyed rows not in the plan, duplicates excluded: (s1,v2,1,A) partial, (s2,v1,1,B) out of range
    assert info == {"planned": 1, "unplanned": 2}
    assert count_ledger(out, planned=True)["missing_planned"] == 0


def test_plan_complete(observed: str, default_config) -> None:
    rows, _ = read_rows([observed], default_config)
    plan = complete_plan(rows)
    # observed values: scenario {s1, s2} x variant {v1, v2} x trial {1} x judge {A, B} = 8
    assert plan.height == 8
    out, info = apply_plan(rows, plan)
    # with a row: (s1,v1,1,A), (s1,v2,1,A), (s2,v1,1,B) -> 5 of the 8 have none
    assert count_ledger(out, planned=True)["missing_planned"] == 5
    assert info["unplanned"] == 0


def test_no_plan_means_null_missing_planned(observed: str, default_config) -> None:
    rows, _ = read_rows([observed], default_config)
    out, info = apply_plan(rows, None)
    assert info == {"planned": None, "unplanned": None}
    assert out.equals(rows)
    assert count_ledger(out, planned=False)["missing_planned"] is None


def test_plan_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.csv: plan file not found"):
        read_plan(str(tmp_path / "nope.csv"))
    bad = _plan(tmp_path, [("s1", "v1", "A")], header="scenario,variant,judge")
    with pytest.raises(
        InputError,
        match=r"plan\.csv: plan is missing column\(s\) trial; need scenario, "
        r"variant, trial, judge",
    ):
        read_plan(bad)
    gap = _plan(tmp_path, [("s1", "v1", 1, "A"), ("s1", "", 2, "A")])
    with pytest.raises(InputError, match=r"plan\.csv:3: a planned judgment has an empty key field"):
        read_plan(gap)
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"empty\.csv"):
        read_plan(str(empty))
    with pytest.raises(InputError, match="plan file not found"):
        read_plan(str(tmp_path))


def test_plan_extra_columns_and_string_keys(tmp_path: Path, default_config, write_jsonl) -> None:
    p = tmp_path / "plan.csv"
    p.write_text(
        "judge,trial,variant,scenario,note\nA,01,v1,s1,leading zero\nA,1,v1,s1,x\n",
        encoding="utf-8",
    )
    plan = read_plan(str(p))
    assert plan.columns == list(KEYS)
    assert plan.rows() == [("s1", "v1", "01", "A"), ("s1", "v1", "1", "A")]
    rows, _ = read_rows([write_jsonl([_row("s1", "v1", 1, "A")])], default_config)
    out, _ = apply_plan(rows, plan)
    # trial "01" is not "1": keys are compared as text, so the 01 judgment has no row
    assert count_ledger(out, planned=True)["missing_planned"] == 1
