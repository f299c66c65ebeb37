# Two commands on a fresh machine with python3 and make:
#   make report   set up .venv with the runtime (requirements.lock) and render the example report
#   make test     add the test tooling (requirements-dev.lock) and run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime-installed
STAMP := $(VENV)/.installed
# The installer: uv (pinned in requirements-uv.lock, itself installed with pip) unless
# INSTALLER=pip, or when uv cannot be installed. Either way the lock files are the only
# source of versions: `uv pip install -r requirements.lock` installs exactly those pins.
INSTALLER ?= uv

.PHONY: report test bench bench-scale bench-smoke lint example golden clean selftest calibrate

# install(lock files): uv when it is (or can be put) in the venv, else pip; pip also when uv
# fails. uv reads no pip.conf: point it at a mirror with UV_INDEX_URL / UV_EXTRA_INDEX_URL.
# --compile-bytecode: uv does not write .pyc files by default (pip does), and with
# PYTHONDONTWRITEBYTECODE set every process would recompile its libraries on import.
define install
	@if [ "$(INSTALLER)" = uv ] && { [ -x $(BIN)/uv ] || $(BIN)/python -m pip install --quiet \
	    --disable-pip-version-check -r requirements-uv.lock; }; then \
	  $(BIN)/uv pip install --compile-bytecode --python $(BIN)/python $(1) || { \
	    echo "make: uv could not install the lock files; trying pip"; \
	    $(BIN)/python -m pip install --progress-bar on $(1); }; \
	else \
	  echo "make: installing with pip (INSTALLER=$(INSTALLER), or uv could not be installed; slower)"; \
	  $(BIN)/python -m pip install --progress-bar on $(1); \
	fi
endef

# The runtime only (requirements.lock): what `make report` needs.
$(RUNTIME): requirements.lock requirements-uv.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "make: installing the runtime: $$(grep -c '==' requirements.lock) pinned packages from requirements.lock into $(VENV)"
	$(call install,-r requirements.lock)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $@

# Test, lint and browser tooling on top (requirements-dev.lock): what `make test` needs.
$(STAMP): $(RUNTIME) requirements-dev.lock
	@echo "make: installing the test tooling: $$(grep -c '==' requirements-dev.lock) pinned packages from requirements-dev.lock"
	$(call install,-r requirements.lock -r requirements-dev.lock)
	@touch $@

report: $(RUNTIME)
	$(BIN)/workbench report data/example/judge_rows.jsonl \
		--config data/example/config.yaml --plan data/example/plan.csv \
		--published data/example/published_scorecard.csv --claims data/example/claims.yaml \
		--out reports/example --no-gate

test: $(STAMP)
	@test -x /usr/bin/chromium || command -v chromium >/dev/null 2>&1 || echo "make: chromium not found: \
	the browser test (tests/test_browser.py) will be SKIPPED; apt-get install -y chromium (.ci/run does)"
	$(BIN)/python -m pytest -n 2 -q

selftest: $(STAMP)
	$(BIN)/workbench selftest

calibrate: $(STAMP)
	$(BIN)/workbench calibrate --out reports/calibration
	mkdir -p docs/calibration && cp reports/calibration/calibration.csv reports/calibration/power.csv \
		reports/calibration/coverage.png reports/calibration/sign_flip.csv \
		reports/calibration/sign_flip.png docs/calibration/

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_ingest.py

# issue 12: workbench vs DuckDB/polars/pandas, whole process, peak RSS (1M and 5M rows;
# BENCH_ARGS="--sizes 1000000 --resamples 2000" to narrow it); bench-smoke: 60k rows
bench-scale: $(STAMP)
	nice -n 19 $(BIN)/python benchmarks/bench_scale.py $(BENCH_ARGS)

bench-smoke: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py --smoke $(BENCH_ARGS)

example: $(RUNTIME)
	$(BIN)/python -m workbench.sim.example data/example

golden: $(STAMP)
	WORKBENCH_REGENERATE_GOLDEN=1 $(BIN)/python -m pytest -q tests/test_golden.py

lint: $(STAMP)
	$(BIN)/ruff check workbench tests

clean:
	rm -rf $(VENV) reports/example
