# Two commands on a fresh machine with python3 and make:
#   make report   set up .venv from requirements.lock and render the example report
#   make test     set up .venv and run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: report test bench bench-scale bench-smoke lint example golden clean

$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

report: $(STAMP)
	$(BIN)/workbench report data/example/judge_rows.jsonl \
		--config data/example/config.yaml --plan data/example/plan.csv \
		--published data/example/published_scorecard.csv --claims data/example/claims.yaml \
		--out reports/example --no-gate

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_ingest.py

# issue 12: workbench vs DuckDB/polars/pandas, whole process, peak RSS (1M and 5M rows;
# BENCH_ARGS="--sizes 1000000 --resamples 2000" to narrow it); bench-smoke: 60k rows
bench-scale: $(STAMP)
	nice -n 19 $(BIN)/python benchmarks/bench_scale.py $(BENCH_ARGS)

bench-smoke: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py --smoke $(BENCH_ARGS)

example: $(STAMP)
	$(BIN)/python -m workbench.example data/example

golden: $(STAMP)
	WORKBENCH_REGENERATE_GOLDEN=1 $(BIN)/python -m pytest -q tests/test_golden.py

lint: $(STAMP)
	$(BIN)/ruff check workbench tests

clean:
	rm -rf $(VENV) reports/example
