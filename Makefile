# One command to set everything up and run the main job, one to run the tests.
#   make quickstart      create .venv, install memevo with the local model, run the quickstart evolution
#   make test            create .venv if needed, install (with the test extras), run the whole test suite
#   make reinstall-llama replace llama-cpp-python by memevo's portable build (the fix for a crashing server)
#   make lock            record the installed versions in constraints.txt (after a green test run)
#
# Installs take the versions in constraints.txt, the set CI last passed with. llama-cpp-python is built
# from source by agents/llm/llama_build.py with GGML_NATIVE=OFF and at most AVX2, into its own wheel
# folder (~/.cache/memevo/wheels), never from pip's cache: a native build crashed on AVX-512/AMX CPUs.

PYTHON      ?= python3
VENV        := .venv
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.installed
TEST_STAMP  := $(VENV)/.installed-test
CONSTRAINTS := constraints.txt
LLAMA_VERSION := $(shell sed -n 's/^llama[-_]cpp[-_]python==//p' $(CONSTRAINTS))
WHEELS      = --find-links "$$(cat $(VENV)/llama-wheel-folder)" --only-binary llama-cpp-python

.PHONY: install quickstart test ui reinstall-llama lock

# The llama.cpp build (minutes of compiling) runs beside the install of every other dependency.
$(STAMP): pyproject.toml setup.py $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) pip
	@echo "building llama-cpp-python $(LLAMA_VERSION) in the background (log: $(VENV)/llama-build.log)"
	$(BIN)/python agents/llm/llama_build.py wheel --version $(LLAMA_VERSION) \
		> $(VENV)/llama-wheel-folder 2> $(VENV)/llama-build.log & build=$$!; \
	$(BIN)/python -m pip install -c $(CONSTRAINTS) -e .; installed=$$?; \
	if ! wait $$build; then tail -n 30 $(VENV)/llama-build.log; exit 1; fi; exit $$installed
	$(BIN)/python -m pip install -c $(CONSTRAINTS) $(WHEELS) -e '.[local]'
	$(BIN)/python agents/llm/llama_build.py check
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -c $(CONSTRAINTS) $(WHEELS) -e '.[local,test]'
	touch $(TEST_STAMP)

install: $(STAMP)

quickstart: $(STAMP)
	$(BIN)/memevo evolve experiments/quickstart.yaml --resume

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -ra

ui: $(STAMP)
	$(BIN)/memevo ui --run-dir runs/quickstart

reinstall-llama:
	$(BIN)/python agents/llm/llama_build.py install --version $(LLAMA_VERSION)
	$(BIN)/python agents/llm/llama_build.py check

lock: $(TEST_STAMP)
	$(BIN)/python -m pip list --format=freeze --exclude-editable | LC_ALL=C sort -f > $(CONSTRAINTS)
