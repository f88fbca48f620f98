# Two commands for a fresh machine:  make demo  and  make test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# torch first and pinned: an unpinned torch pulls gigabytes of CUDA wheels.
TORCH  := torch==2.13.0
EXTRAS := local,convert,eval,ui,llm,llamaindex,langchain,serve,mcp,distributed,bench,dev

.PHONY: install demo lint browser test test-fast bench clean

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

# The browser tests drive Debian's Chromium (Playwright's own download does not work offline).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)) \
	      && echo "installed chromium for the browser tests"; \
	  else \
	    echo "chromium is missing: the browser tests will be skipped (install it: sudo apt-get install chromium)"; \
	  fi; }

test: lint browser
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) ragloom-data .pytest_cache .hypothesis test-artifacts
