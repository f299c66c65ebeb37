# Two commands on a fresh machine with python3 and make:
#   make report   set up .venv from requirements.lock and render the example report
#   make test     set up .venv and run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: report test bench lint example golden clean selftest calibrate

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

selftest: $(STAMP)
	$(BIN)/workbench selftest

calibrate: $(STAMP)
	$(BIN)/workbench calibrate --out reports/calibration
	mkdir -p docs/calibration && cp reports/calibration/calibration.csv reports/calibration/power.csv \
		reports/calibration/coverage.png docs/calibration/

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_ingest.py

example: $(STAMP)
	$(BIN)/python -m workbench.example data/example

golden: $(STAMP)
	WORKBENCH_REGENERATE_GOLDEN=1 $(BIN)/python -m pytest -q tests/test_golden.py

lint: $(STAMP)
	$(BIN)/ruff check workbench tests

clean:
	rm -rf $(VENV) reports/example
