"""The DuckDB engine (workbench/ingest/engine.py) and the plain per-line reference reader
(tests/reference_ingest.py) give identical row tables and identical results.json bytes.

Every block goes through the engine here (``ENGINE_MIN_LINES`` 0; in use, blocks of fewer
lines are read by Python line by line), on every hazard file, their gzip copies, the shipped
example, the real JSONL logs under ``../shared/realdata/native`` (skipped with the reason when
absent, failed under ``CI=true``), generated benchmark files with different seeds, and
hypothesis-made lines around the places where DuckDB's JSON reading and Python's differ.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_ingest import reference_rows

from workbench import InputError, load_config
from workbench.cli import main as cli
from workbench.ingest import engine
from workbench.ingest import reader as ingest
from workbench.ingest.detect import classify

ROOT = Path(__file__).resolve().parents[1]
HAZARDS = ROOT / "tests" / "data" / "hazards"
EXAMPLE = ROOT / "data" / "example"
NATIVE = ROOT.parent / "shared" / "realdata" / "native"
sys.path.insert(0, str(ROOT / "benchmarks"))


@pytest.fixture(autouse=True)
def _engine_everywhere(monkeypatch) -> None:
    monkeypatch.setattr(engine, "ENGINE_MIN_LINES", 0)


def _sources(src: list) -> list[tuple]:
    return [(s.path, s.sha256, s.lines) for s in src]


def assert_same(paths: list[str], cfg) -> pl.DataFrame | None:
    """Engine and reference agree: the same row table (columns, dtypes, values, order) and
    sources, or the same InputError."""
    try:
        rows, src = ingest.read_rows(paths, cfg)
    except InputError as exc:
        with pytest.raises(InputError) as ref_exc:
            reference_rows(paths, cfg)
        assert str(ref_exc.value) == str(exc)
        return None
    ref, ref_src = reference_rows(paths, cfg)
    assert rows.schema == ref.schema
    diff = [c for c in rows.columns if not rows[c].equals(ref[c], check_names=True)] if rows.height == ref.height \
        else ["height"]
    assert not diff, (diff, rows.filter(pl.Series([True] * rows.height)).head(3))
    assert rows.equals(ref)
    assert _sources(src) == _sources(ref_src)
    return rows


@pytest.mark.parametrize("name", sorted(p.name for p in HAZARDS.glob("*.jsonl")))
def test_hazard_files(name: str, default_config, tmp_path: Path) -> None:
    rows = assert_same([str(HAZARDS / name)], default_config)
    assert rows is not None and rows.height > 0
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress((HAZARDS / name).read_bytes(), mtime=0))
    assert_same([str(gz)], default_config)


def test_all_hazard_files_together(default_config) -> None:
    """Repeats across files are marked on the engine's frames as on the reference's (together
    the files hold one with no valid row left: both raise the same error)."""
    assert_same(sorted(str(p) for p in HAZARDS.glob("*.jsonl")), default_config)



def test_example() -> None:
    cfg = load_config(str(EXAMPLE / "config.yaml"))
    assert_same([str(EXAMPLE / "judge_rows.jsonl")], cfg)


def _analyze(path: Path, out: Path, extra: list[str]) -> bytes:
    assert cli.main(["analyze", str(path), "--out", str(out), "--no-gate", *extra]) == 0
    return (out / "results.json").read_bytes()


def _reference_read_rows(paths, cfg, progress=None, notes=None):
    rows, src = reference_rows(list(paths), cfg, notes=notes)
    if progress is not None:
        progress(sum(s.lines for s in src))
    return rows, src


@pytest.mark.parametrize("which", ["example", "hazard"])
def test_results_json_bytes(which: str, tmp_path: Path, monkeypatch) -> None:
    """``workbench analyze`` writes the same results.json bytes on the engine's rows and on the
    reference's."""
    if which == "example":
        path, extra = EXAMPLE / "judge_rows.jsonl", ["--config", str(EXAMPLE / "config.yaml"),
                                                     "--resamples", "200"]
    else:
        path, extra = HAZARDS / "conflict.jsonl", ["--resamples", "200"]
    a = _analyze(path, tmp_path / "engine", extra)
    monkeypatch.setattr(ingest, "read_rows", _reference_read_rows)
    b = _analyze(path, tmp_path / "reference", extra)
    assert json.loads(a) == json.loads(b)
    assert a.replace(str(tmp_path / "engine").encode(), b"OUT") == b.replace(str(tmp_path / "reference").encode(),
                                                                             b"OUT")


@pytest.mark.parametrize("seed", [1, 7, 2026])
def test_generated_files(seed: int, tmp_path: Path, default_config) -> None:
    from generate import generate

    path = generate(6000, seed=seed, path=tmp_path / f"g{seed}.jsonl")
    rows = assert_same([str(path)], default_config)
    assert rows is not None
    assert set(rows["bucket"]) >= {"valid", "partial", "malformed", "duplicate", "conflict"}


def _real_jsonl() -> list[Path]:
    if not NATIVE.is_dir():
        return []
    return sorted(p for p in NATIVE.rglob("*.jsonl") if p.stat().st_size < 40_000_000)


@pytest.mark.parametrize("path", _real_jsonl() or [None], ids=lambda p: "absent" if p is None else p.name)
def test_real_data(path: Path | None) -> None:
    from test_real_data import require_real_data

    require_real_data(NATIVE)
    assert path is not None
    preset, _ = classify(str(path))
    cfg = load_config(preset=preset) if preset not in (None, "?") else load_config()
    if cfg.native:
        pytest.skip(f"{path.name}: read by the {preset} preset's native reader, not the JSONL engine")
    assert_same([str(path)], cfg)


# --------------------------------------------------------------------------- hypothesis lines

_ROW = ('{"scenario": "s%d", "variant": "v", "trial": %s, "judge": "j", "overall": %s,'
        ' "correctness": %s, "fabrication_flags": %s, "verdict": %s%s}')
_VALUES = st.sampled_from([
    "7", "7.5", "1e1", "-0", "-0.0", "0.1", "1E400", "-1e400", "NaN", "nan", "Infinity", "-Infinity", "inf", "-inf",
    "INF", "infinity", "123456789012345678901234567890", "18446744073709551615", "9223372036854775808",
    "-9223372036854775809", "4.9e-324", "2.2250738585072011e-308", "1e-400", "null", "true", "false", '"8"',
    '" 8 "', '"8/10"', '""', '"\\u0038"', '"\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', '"caf\\u00e9"', "[8]",
    "[8,]", '{"v": 8}', '{"v": 8,}', "01", "+1", ".5", "1.", "0x1",
    # whitespace inside the suspect patterns (the engine's regular expression allows it)
    "[8, ]", '{"v": 8,\t}', "[ nan]", "-nan", "-INF", '"\\uDBFF"', '"\\udc00x"'])
_FLAGS = st.sampled_from(['[]', '["a"]', '["a", "b"]', '["a",]', '[1]', '["a", null]', '"a"', "null", '["\\n"]',
                          '["\\u00e9"]'])
_TRIALS = st.sampled_from(["1", '"1"', "2", "1.0", "true", "null", '""', '" "', '"\\u00a0"', '"\\u2003"',
                           "18446744073709551615", "123456789012345678901234567890", "[1]", "-0"])
_TEXT = st.sampled_from(['"ok"', '"a, inf"', '"x: nan"', '"[,]"', '"\\"overall\\""', "1", "1.5", "null", "true",
                         '"ov\\u0065rall"', '"\\\\u0000"'])
_EXTRA = st.sampled_from(["", ', "overall": 3', ', "over\\u0061ll": 3', ', "x": 1, "x": 2', ', "x": [1, 2,]',
                          ', "x": NaN', ', "x": nan', ', "m": {"overall": 1, "y": 1, "y": 2}', ', "deep": '
                          + "[" * 300 + "]" * 300, ', "x": "\\ud800"', ', "x": Infinity'])
_RAW = st.sampled_from(["", "   ", "\t", "\r", "{", "[]", '"x"', "null", "{} {}", '{"a":1}x', "\ufeff{}",
                        '{"scenario": "s", "variant": "v", "judge": "j", "overall": 5}\x0c'])


@st.composite
def _line(draw) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(_RAW).encode()
    text = _ROW % (draw(st.integers(0, 3)), draw(_TRIALS), draw(_VALUES), draw(_VALUES), draw(_FLAGS),
                   draw(_TEXT), draw(_EXTRA))
    data = text.encode()
    if draw(st.integers(0, 19)) == 0:
        data = data.replace(b'"j"', b'"\xe9"')  # not UTF-8
    if draw(st.integers(0, 9)) == 0:
        data = data + b"\r"
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_line(), min_size=1, max_size=40), st.booleans())
def test_hypothesis_lines(tmp_path: Path, default_config, lines: list[bytes], final_newline: bool) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    assert_same([str(path)], default_config)


def test_suspect_patterns_with_whitespace(tmp_path: Path, default_config) -> None:
    """Trailing commas, bare nan/inf and surrogate escapes, with JSON whitespace inside the
    pattern, in a field the configuration does not read: DuckDB reads such lines (or, for a
    lone low surrogate, raises), so the engine's regular expression must send them to Python,
    which finds them malformed; the same characters inside a string, or a NaN, are read."""
    row = '{"scenario": "s%d", "variant": "v", "trial": 1, "judge": "j", "overall": 5, "x": %s}'
    odd = ["[1, ]", "[1,\t]", '{"a": 5 , \t}', "[ nan]", "-inf", "-INF", '"\\uDBFF"', '"\\udc00"']
    fine = ["[1, NaN]", '"a, inf, ]"', "1"]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(row % (i, v) for i, v in enumerate(odd + fine)) + "\n")
    rows = assert_same([str(path)], default_config)
    assert rows is not None
    assert rows["bucket"].to_list() == ["malformed"] * len(odd) + ["valid"] * len(fine)


@pytest.mark.parametrize("judge", ["judge", "j\u00e9", ":j", " j", "}j"])
def test_key_names_as_values_and_repeated(tmp_path: Path, judge: str) -> None:
    """A key's quoted name occurring twice in a line sends it to Python's duplicate check
    (which then rejects the line for a repeated key in any object): the name as a string value,
    as a key in a nested object, twice at the top, with and without a backslash in the line.
    Names that may follow a string's closing quote in JSON (``:j``, `` j``, ``}j``) are counted
    token by token; the others all at once (``Plan.token_regex``)."""
    import yaml

    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump({"keys": {"judge": judge}}), encoding="utf-8")
    cfg = load_config(str(cfg_path))
    plan = engine.Plan(cfg, ingest._Spec(cfg).key_tokens)
    assert (plan.token_regex is None) == (judge[0] in ": }")
    k = json.dumps(judge, ensure_ascii=False)
    head = '{"scenario": "s%d", "variant": "v", "trial": 1, ' + k + ': "a", "overall": 5'
    tails = ['}', ', "verdict": ' + k + '}', ', "verdict": ' + k + ', "m": {"y": 1, "y": 2}}',
             ', "m": {"y": 1, "y": 2}}', ', ' + k + ': "b"}', ', "m": {' + k + ': 1, "y": 1, "y": 2}}',
             ', "x": "a\\nb", "verdict": ' + k + ', "m": {"y": 1, "y": 2}}', ', "x": "a\\nb", "verdict": ' + k + '}',
             ', "x": [' + k + ', ' + k + ']}', ', "x": "' + judge.replace(":", "") + '"}']
    path = tmp_path / "k.jsonl"
    path.write_text("\n".join(head % i + t for i, t in enumerate(tails)) + "\n", encoding="utf-8")
    rows = assert_same([str(path)], cfg)
    assert rows is not None
    malformed = rows.filter(pl.col("bucket") == "malformed")["line"].to_list()
    assert malformed == [3, 5, 6, 7]  # a repeated key found where the name occurs twice
