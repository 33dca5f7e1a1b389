# Two entry points for a fresh machine: `make demo` (main job) and `make test` (the test suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The labelled sets of a clone's ../shared/data, when they are there (hallumeasure.runs.datasets reads this).
ifneq ($(wildcard ../shared/data),)
export HALLUMEASURE_DATA ?= $(abspath ../shared/data)
endif

.PHONY: demo test lint docs install reports clean

# The demo needs the core package only (its three commands import no extra): no test, docs or trace tools.
$(BIN)/.demo-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

# Tests, lint and docs need the full install: the dev, nli, serve and docs extras.
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,nli,serve,docs,ray]'
	touch $@ $(BIN)/.demo-installed

install: $(BIN)/.installed

# Measure the examples (prints the summary), list the claims one line each, write the viewer page.
demo: $(BIN)/.demo-installed
	$(BIN)/hallumeasure measure examples/samples.jsonl --out runs/demo --overwrite
	$(BIN)/hallumeasure show runs/demo --claims --no-summary
	$(BIN)/hallumeasure view runs/demo --out runs/demo/view.html

# Progress as pytest prints it (a dot per test, the share done at each line's end) and the counts at the end;
# -rfE lists the failures and errors once more in the short summary.
test: $(BIN)/.installed
	@$(BIN)/pytest --no-header -rfE --durations=10; status=$$?; \
	if [ $$status -eq 5 ]; then echo 'pytest ran no test: treat as a failure' >&2; fi; exit $$status

# Lint, import order and format (ruff), types (mypy, strict on hallumeasure/), layering (import-linter).
lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The docs site into site/ (mkdocs-material + mkdocstrings); --strict fails on any warning (broken link, missing page).
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf runs site $(VENV)

reports: $(BIN)/.installed
	$(BIN)/python scripts/make_reports.py
