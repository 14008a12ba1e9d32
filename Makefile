# Two commands for a fresh machine with only Python 3.11 on it:
#   make demo   creates .venv, installs ccp, runs configs/quickstart.yaml, says where the report is
#   make test   installs the test extras, then ruff, mypy on the whole package, and the test suite but the slow tests
# (.ci/run runs `make test` and then `make test-slow`, the tests marked slow: the notebooks and long fault runs)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test test-slow venv clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes (the stamp is older than it).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# One pip run for ccp and the test extras (a second resolve would cost half a minute of make test).
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,notebooks]'
	touch $(VENV)/.installed $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/ccp run configs/quickstart.yaml --out results/quickstart/demo
	@echo
	@echo "Open the report: $(CURDIR)/results/quickstart/demo/report.html"

test: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy ccp
	$(BIN)/python -m pytest -q -n auto -m 'not slow'

test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto -m slow
	CCP_MODEL_EXAMPLES=150 $(BIN)/python -m pytest -q -n auto -m thorough

clean:
	$(BIN)/ccp clean 2>/dev/null || rm -rf results/work
