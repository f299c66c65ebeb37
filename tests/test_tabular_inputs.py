"""CSV, TSV and Parquet inputs (issue 26): one record, one ledger line, the same buckets and reasons.

The acceptance test writes one list of hazard records as JSONL, as CSV and as Parquet (the
Parquet file without the blank record: a Parquet file has no blank row) and asserts the three
ledgers agree line by line: bucket, reason, key values, field statuses, usable values, flags,
verdict. The CSV is written by hand following the typing rule of :mod:`workbench.ingest.tabular`
(numbers as their JSON text, NaN as ``NaN``, a list as its JSON text, an absent field as an
empty cell); the Parquet file holds the headline in a string column (the only way one column
can hold ``8/10`` beside ``7``) and the sub-scores in an integer column with nulls.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench import InputError, load_config, read_rows
from workbench.cli.main import main as cli_main
from workbench.ingest import tabular
from workbench.ingest.detect import classify, detect

DROP = object()
BLANK = object()
SUBS = ("correctness", "completeness", "depth", "citations", "honesty")
COLUMNS = ("scenario", "variant", "trial", "judge", "overall", *SUBS, "fabrication_flags", "verdict")


def rec(trial: Any = 1, overall: Any = 7, subs: Any = 6, judge: Any = "j1", flags: Any = DROP,
        verdict: Any = "fine", scenario: str = "s1") -> dict[str, Any]:
    r: dict[str, Any] = {"scenario": scenario, "variant": "v1", "trial": trial, "judge": judge,
                         "overall": overall}
    for s in SUBS:
        r[s] = subs
    r["fabrication_flags"] = flags
    r["verdict"] = verdict
    return {k: v for k, v in r.items() if v is not DROP}


# (record, expected bucket): every hazard the three formats can all hold, plus a blank one
HAZARDS: list[tuple[Any, str]] = [
    (rec(1, 7, flags=["a", "b, with a comma"], verdict='fine, "quoted"'), "valid"),
    (rec(2, 7.5, verdict="two\nlines"), "valid"),  # a quoted field with a newline
    (rec(3, 10, subs=1), "valid"),
    (rec(4, DROP), "partial"),  # headline missing, sub-scores present
    (rec(5, DROP, subs=DROP), "empty"),  # no rubric field at all
    (rec(6, "8/10"), "non_numeric"),
    (rec(7, True), "non_numeric"),  # a boolean is not a number
    (rec(8, 85), "out_of_range"),
    (rec(9, -1), "out_of_range"),
    (rec(10, math.nan), "invalid_number"),
    (rec(11, math.inf), "invalid_number"),
    (BLANK, "blank"),
    (rec(1, 7, flags=["a", "b, with a comma"], verdict='fine, "quoted"'), "duplicate"),  # = record 1
    (rec(12, 3), "conflict"),
    (rec(12, 4), "conflict"),  # same key, another score
    (rec(13, 5, judge=DROP), "malformed"),  # key field missing
    (rec(14, 6, scenario="s2"), "valid"),
]


def _jsonl(path: Path, records: list[Any]) -> str:
    lines = ["" if r is BLANK else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _cell(v: Any) -> str:
    if v is DROP:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list | dict):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def _csv_text(records: list[Any], delimiter: str = ",") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in records:
        if r is BLANK:
            buf.write("\n")
        else:
            w.writerow([_cell(r.get(c, DROP)) for c in COLUMNS])
    return buf.getvalue()


def _csv(path: Path, records: list[Any], delimiter: str = ",") -> str:
    path.write_text(_csv_text(records, delimiter), encoding="utf-8")
    return str(path)


def _parquet(path: Path, records: list[Any]) -> str:
    rows = [r for r in records if r is not BLANK]
    cols: dict[str, pa.Array] = {}
    for c in ("scenario", "variant", "judge", "verdict"):
        cols[c] = pa.array([r.get(c) for r in rows], type=pa.string())
    cols["trial"] = pa.array([r.get("trial") for r in rows], type=pa.int64())
    cols["overall"] = pa.array([None if "overall" not in r else _cell(r["overall"]) for r in rows],
                               type=pa.string())
    for s in SUBS:
        cols[s] = pa.array([r.get(s) for r in rows], type=pa.int64())
    cols["fabrication_flags"] = pa.array([r.get("fabrication_flags") for r in rows], type=pa.list_(pa.string()))
    pq.write_table(pa.table(cols), path)
    return str(path)


COMPARED = ("bucket", "reason", "scenario", "variant", "trial", "judge", "overall", "overall__status",
            *(f"{s}__status" for s in SUBS), "flags", "verdict")


def _ledger(path: str, cfg: Any = None) -> pl.DataFrame:
    rows, _ = read_rows([path], cfg or load_config())
    return rows


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a["bucket"].value_counts().sort("bucket").to_dicts() == b["bucket"].value_counts().sort("bucket").to_dicts()
    for c in COMPARED:
        assert a[c].to_list() == b[c].to_list(), c


def test_hazard_file_as_jsonl_csv_and_parquet_gives_one_ledger(tmp_path: Path) -> None:
    records = [r for r, _ in HAZARDS]
    j = _ledger(_jsonl(tmp_path / "h.jsonl", records))
    c = _ledger(_csv(tmp_path / "h.csv", records))
    assert j["bucket"].to_list() == [b for _, b in HAZARDS]  # the expectations, by hand
    _same(j, c)
    # CSV lines are records, the header being line 1 (the two-line record is one line)
    assert c["line"].to_list() == list(range(2, len(records) + 2))
    no_blank = [r for r in records if r is not BLANK]
    jp = _ledger(_jsonl(tmp_path / "nb.jsonl", no_blank))
    p = _ledger(_parquet(tmp_path / "h.parquet", records))
    _same(jp, p)
    assert p["line"].to_list() == list(range(1, len(no_blank) + 1))
    reasons: dict[str, str] = {}
    for b, r in zip(c["bucket"], c["reason"], strict=True):
        reasons.setdefault(b, r)
    assert reasons["non_numeric"] == "field 'overall': expected a number in [1, 10], got '8/10'"
    assert reasons["malformed"] == "key field 'judge' is missing"
    assert c.filter(pl.col("trial") == "1")["flags"].to_list()[0] == ["a", "b, with a comma"]
    assert c.filter(pl.col("trial") == "2")["verdict"].to_list() == ["two\nlines"]


def test_tsv_gzip_and_block_boundaries_read_identically(tmp_path: Path, monkeypatch) -> None:
    records = [r for r, _ in HAZARDS]
    c = _ledger(_csv(tmp_path / "h.csv", records))
    t = _ledger(_csv(tmp_path / "h.tsv", records, delimiter="\t"))
    _same(c, t)
    gz = tmp_path / "h.csv.gz"
    gz.write_bytes(gzip.compress(_csv_text(records).encode(), mtime=0))
    rows, src = read_rows([str(gz)], load_config())
    _same(c, rows)
    assert src[0].lines == len(records)
    monkeypatch.setattr(tabular, "BLOCK_RECORDS", 3)
    _same(c, _ledger(_csv(tmp_path / "b.csv", records)))
    _same(_ledger(_parquet(tmp_path / "a.parquet", records)), _ledger(_parquet(tmp_path / "b.parquet", records)))


@pytest.mark.parametrize(("cell", "value"), [
    ("", "ABSENT"), ("7", 7), ("-1", -1), ("7.5", 7.5), ("1e3", 1000.0), ("8/10", "8/10"),
    (" 7", " 7"), ("07", "07"), ("+7", "+7"), ("null", "null"), ("NA", "NA"), ("true", True),
    ("FALSE", False), ('["a", 1]', ["a", 1]), ('{"v": 8}', {"v": 8}), ("[not json", "[not json"),
    ("NaN", "NAN"), ("-inf", -math.inf), ("Infinity", math.inf), ("1e400", math.inf),
])
def test_csv_typing_rule(cell: str, value: Any) -> None:
    got = tabular.cell_value(cell)
    if value == "ABSENT":
        assert got is tabular._UNSET
    elif value == "NAN":
        assert isinstance(got, float) and math.isnan(got)
    else:
        assert got == value and type(got) is type(value)


def test_text_columns_keep_the_cell_as_written(tmp_path: Path) -> None:
    p = tmp_path / "k.csv"
    p.write_text("scenario,variant,trial,judge,overall,verdict\n"
                 "s1,v1,1.0,j1,7,1.50\ns1,v1,007,j1,7,true\n", encoding="utf-8")
    rows = _ledger(str(p))
    assert rows["trial"].to_list() == ["1.0", "007"]
    assert rows["verdict"].to_list() == ["1.50", "true"]
    assert rows["bucket"].to_list() == ["valid", "valid"]


def _error(path: str) -> InputError:
    with pytest.raises(InputError) as info:
        read_rows([path], load_config())
    return info.value


HEAD = "scenario,variant,trial,judge,overall,verdict\n"


@pytest.mark.parametrize(("body", "line", "field", "words"), [
    ("s1,v1,1,j1,7,ok\ns1,v1,2,j1,7\n", 3, "verdict", "has 5 fields, the header has 6"),
    ("s1,v1,1,j1,7,ok\ns1,v1,2,j1,7,ok,extra\n", 3, "#7", "'extra' has no column"),
    ('s1,v1,1,j1,"7"x,ok\n', 2, "overall", "bad quoting"),
    ('s1,v1,1,j1,7,"never closed\ns1,v1,2,j1,7,ok\n', 2, "verdict", "never closed"),
])
def test_malformed_csv_names_file_line_and_field(tmp_path: Path, body: str, line: int, field: str,
                                                 words: str) -> None:
    p = tmp_path / "bad.csv"
    p.write_text(HEAD + body, encoding="utf-8")
    err = _error(str(p))
    assert err.path == str(p) and err.line == line and err.field == field, str(err)
    assert words in str(err)


@pytest.mark.parametrize(("text", "words"), [
    ("", "file is empty"),
    (HEAD, "only a CSV header"),
    ("scenario,judge,scenario\ns,j,s\n", "names column 'scenario' twice"),
])
def test_csv_file_level_problems(tmp_path: Path, text: str, words: str) -> None:
    p = tmp_path / "f.csv"
    p.write_text(text, encoding="utf-8")
    assert words in str(_error(str(p)))


def test_invalid_utf8_cell_is_a_malformed_record(tmp_path: Path) -> None:
    p = tmp_path / "u.csv"
    p.write_bytes(HEAD.encode() + b"s1,v1,1,j1,7,ok\ns1,v1,2,j1,7,caf\xe9\n")
    rows = _ledger(str(p))
    assert rows["bucket"].to_list() == ["valid", "malformed"]
    assert rows["reason"].to_list()[1] == "not valid UTF-8 (field 'verdict')"


def test_corrupted_parquet_is_an_input_error(tmp_path: Path) -> None:
    good = Path(_parquet(tmp_path / "g.parquet", [r for r, _ in HAZARDS]))
    data = good.read_bytes()
    truncated = tmp_path / "t.parquet"
    truncated.write_bytes(data[: len(data) // 2])
    assert "not a readable Parquet file" in str(_error(str(truncated)))
    garbled = tmp_path / "x.parquet"
    mid = len(data) // 3
    garbled.write_bytes(data[:8] + bytes(b ^ 0x5A for b in data[8:mid]) + data[mid:])
    err = _error(str(garbled))
    assert "Parquet" in str(err) and err.path == str(garbled)


def test_unsupported_formats_are_refused_by_name(tmp_path: Path) -> None:
    xlsx = tmp_path / "scores.xlsx"
    with zipfile.ZipFile(xlsx, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    assert "an Excel workbook (.xlsx), a format the workbench does not read" in str(_error(str(xlsx)))
    renamed = tmp_path / "scores.csv"  # an .xlsx renamed: the content decides
    renamed.write_bytes(xlsx.read_bytes())
    assert "Excel workbook" in str(_error(str(renamed)))
    feather = tmp_path / "rows.feather"
    feather.write_bytes(b"not really")
    assert "Arrow/Feather" in str(_error(str(feather)))


def test_detection_by_extension_and_content(tmp_path: Path) -> None:
    records = [r for r, _ in HAZARDS]
    txt = tmp_path / "rows.txt"
    txt.write_text(_csv_text(records), encoding="utf-8")
    assert tabular.file_format(str(txt)) == "csv"
    jsonl_txt = Path(_jsonl(tmp_path / "rows2.txt", records))
    assert tabular.file_format(str(jsonl_txt)) == "jsonl"
    dat = tmp_path / "rows.dat"
    dat.write_bytes(Path(_parquet(tmp_path / "p.parquet", records)).read_bytes())
    assert tabular.file_format(str(dat)) == "parquet"
    _same(_ledger(_csv(tmp_path / "h.csv", records)), _ledger(str(txt)))
    # --preset auto: CSV and Parquet rows in the default format are the default preset
    for path in (str(tmp_path / "h.csv"), str(dat)):
        preset, why = classify(path)
        assert preset is None and "default format" in why
    assert detect([str(tmp_path / "h.csv"), str(dat)])[0] is None


def test_format_can_be_forced_in_the_config(tmp_path: Path) -> None:
    records = [r for r, _ in HAZARDS]
    odd = tmp_path / "rows.jsonl"  # misnamed: format: csv says what it is
    odd.write_text(_csv_text(records), encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("format: csv\n", encoding="utf-8")
    _same(_ledger(_csv(tmp_path / "h.csv", records)), _ledger(str(odd), load_config(str(cfg))))


def test_cli_exit_codes(tmp_path: Path, capsys) -> None:
    rows = []
    for s in range(4):
        for v in ("a", "b"):
            for t in range(3):
                rows.append(rec(t + 1, 5 + t, scenario=f"s{s}") | {"variant": v})
    good = _csv(tmp_path / "good.csv", rows)
    code = cli_main(["analyze", "--preset", "auto", good, "--out", str(tmp_path / "o1"), "--no-gate",
                     "--resamples", "200", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads((tmp_path / "o1" / "results.json").read_text(encoding="utf-8"))
    assert doc["ledger"]["lines"] == len(rows) and doc["ledger"]["valid"] == len(rows)
    pqf = _parquet(tmp_path / "good.parquet", rows)
    assert cli_main(["analyze", pqf, "--out", str(tmp_path / "o2"), "--no-gate", "--resamples", "200", "-q"]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.csv"
    bad.write_text(HEAD + "s1,v1,1,j1,7\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from workbench.cli.main import main; sys.exit(main())",
         "analyze", str(bad), "--out", str(tmp_path / "o3"), "-q"],
        capture_output=True, text=True, timeout=300, cwd=str(Path(__file__).resolve().parents[1]),
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{bad}:2: field 'verdict'" in proc.stderr


def test_native_preset_reads_csv_as_its_jsonl(tmp_path: Path) -> None:
    """An exploding preset (FastChat pairwise, ``format: jsonl``) on the same rows as CSV: the
    .csv extension keeps it CSV, the list cell ``judge`` is a list, a missing game is ``empty``."""
    objs = [{"question_id": 81, "turn": 1, "model_1": "gpt-4", "model_2": "llama", "g1_winner": "model_2",
             "g2_winner": "model_1", "judge": ["gpt-4", "pair-v2"]},
            {"question_id": 82, "turn": 1, "model_1": "gpt-4", "model_2": "llama", "g1_winner": "tie",
             "judge": ["gpt-4", "pair-v2"]},
            {"question_id": 83, "turn": 1, "model_1": "gpt-4", "model_2": "llama", "g1_winner": "error",
             "g2_winner": "model_9", "judge": ["gpt-4", "pair-v2"]}]
    jl = tmp_path / "gpt-4_pair.jsonl"
    jl.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    cols = ["question_id", "turn", "model_1", "model_2", "g1_winner", "g2_winner", "judge"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for o in objs:
        w.writerow([_cell(o.get(c, DROP)) for c in cols])
    cv = tmp_path / "gpt-4_pair.csv"
    cv.write_text(buf.getvalue(), encoding="utf-8")
    assert detect([str(cv)])[0] == "mt-bench-pair"
    cfg = load_config(preset="mt-bench-pair")
    a, b = _ledger(str(jl), cfg), _ledger(str(cv), cfg)
    for c in ("bucket", "reason", "scenario", "variant", "trial", "judge", "winner"):
        assert a[c].to_list() == b[c].to_list(), c
    assert b["line"].to_list() == [2, 2, 3, 3, 4, 4]
    assert "empty" in b["bucket"].to_list()


def test_csv_named_jsonl_gets_a_hint(tmp_path: Path) -> None:
    p = tmp_path / "rows.jsonl"
    p.write_text(_csv_text([rec(1), rec(2)]), encoding="utf-8")
    err = str(_error(str(p)))
    assert "no valid row at all (malformed 3)" in err
    assert "looks like a CSV header: name the file .csv or set format: csv" in err


def test_parquet_nested_and_typed_columns(tmp_path: Path) -> None:
    """Struct columns are read by dotted paths, a float NaN is invalid_number, a null absent; a
    CSV cell holding a JSON object is the same nested value."""
    cfgf = tmp_path / "c.yaml"
    cfgf.write_text("keys: {scenario: meta.task, variant: variant, trial: trial, judge: meta.judge}\n"
                    "scores: {overall: s.overall, depth: s.depth}\nheadline: overall\n"
                    "flags: null\nverdict: null\n", encoding="utf-8")
    cfg = load_config(str(cfgf))
    objs = [{"meta": {"task": "t1", "judge": "j"}, "variant": "v", "trial": 1, "s": {"overall": 7.0, "depth": 3}},
            {"meta": {"task": "t2", "judge": "j"}, "variant": "v", "trial": 1, "s": {"overall": math.nan, "depth": 3}},
            {"meta": {"task": "t3", "judge": "j"}, "variant": "v", "trial": 1, "s": {"overall": None, "depth": 2}},
            {"meta": {"task": "t4", "judge": "j"}, "variant": "v", "trial": 1, "s": {"overall": 11.0, "depth": None}}]
    p = tmp_path / "n.parquet"
    pq.write_table(pa.Table.from_pylist(objs), p)
    rows = _ledger(str(p), cfg)
    assert rows["bucket"].to_list() == ["valid", "invalid_number", "partial", "out_of_range"]
    assert rows["scenario"].to_list() == ["t1", "t2", "t3", "t4"]
    c = tmp_path / "n.csv"
    c.write_text("meta,variant,trial,s\n" + "".join(
        '"' + json.dumps(o["meta"]).replace('"', '""') + '",v,1,"'
        + json.dumps({k: v for k, v in o["s"].items() if v is not None}).replace('"', '""') + '"\n'
        for o in objs), encoding="utf-8")
    rows_c = _ledger(str(c), cfg)
    assert rows_c["bucket"].to_list() == rows["bucket"].to_list()
    assert rows_c["reason"].to_list() == rows["reason"].to_list()
