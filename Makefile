# Two commands for a fresh machine:  make demo  and  make test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# torch first and pinned: an unpinned torch pulls gigabytes of CUDA wheels.
TORCH  := torch==2.13.0
EXTRAS := local,convert,eval,ui,llm,llamaindex,bench,dev

.PHONY: install demo lint test test-fast bench clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ragloom demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) ragloom-data .pytest_cache .hypothesis
