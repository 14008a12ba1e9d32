# Two commands for a fresh machine with only Python 3.11 on it:
#   make demo   creates .venv, installs ccp, runs configs/quickstart.yaml, says where the report is
#   make test   installs the test extras, then ruff, mypy on the whole package, and the test suite but the slow tests
# (.ci/run runs `make test` and then `make test-slow`, the tests marked slow: the notebooks and long fault runs)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test test-slow explore venv clean bench

# the venv's own pip is new enough to install uv (or, where uv cannot be had, ccp): upgrading it cost seconds
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv installs what pip would, from the same registry, in a fraction of the time: on a fresh clone pip took 116 s
# of make test's 504 s, uv 7-17 s with an empty cache. pip does it wherever uv cannot be had or cannot reach it.
install = { $(BIN)/python -m pip install --quiet uv 2>/dev/null \
            && $(BIN)/uv pip install --quiet --python $(BIN)/python $(1); } \
          || $(BIN)/python -m pip install --quiet $(1)

# Re-install whenever pyproject.toml changes (the stamp is older than it).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(call install,-e .)
	touch $@

TEST_EXTRAS := .[test,notebooks]
# One install run for ccp and the test extras (a second resolve would cost time in make test).
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(call install,-e '$(TEST_EXTRAS)')
	touch $(VENV)/.installed $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/ccp run configs/quickstart.yaml --out results/quickstart/demo
	@echo
	@echo "Open the report: $(CURDIR)/results/quickstart/demo/report.html"

# mypy (20 s of one core on a fresh clone) runs beside the tests, whose workers wait on their subprocesses much of
# the time; make test fails if either does, with mypy's report after the tests'
test: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy ccp > .mypy.log 2>&1 & mypy=$$!; \
	$(BIN)/python -m pytest -q -n auto -m 'not slow'; tests=$$?; \
	wait $$mypy; typed=$$?; cat .mypy.log; rm -f .mypy.log; \
	test $$tests -eq 0 && test $$typed -eq 0

test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto -m slow
	CCP_MODEL_EXAMPLES=150 $(BIN)/python -m pytest -q -n auto -m thorough

# new hypothesis draws (the suite's are fixed per test: tests/conftest.py): hunts latent gaps of the model against
# HDF5; EXAMPLES=2000 for the long runs ccp/model/LIMITS.md cites
EXAMPLES ?= 600
explore: $(VENV)/.installed-test
	CCP_HYPOTHESIS=explore CCP_MODEL_EXAMPLES=$(EXAMPLES) $(BIN)/python -m pytest -q -n auto -m thorough

clean:
	$(BIN)/ccp clean 2>/dev/null || rm -rf results/work
