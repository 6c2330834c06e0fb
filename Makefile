# One command to set everything up and run the main job, one to run the tests.
#   make quickstart      create .venv, install memevo with the local model, run the quickstart evolution
#   make test            create .venv if needed, install, run the whole test suite
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
CONSTRAINTS := constraints.txt
LLAMA_VERSION := $(shell sed -n 's/^llama[-_]cpp[-_]python==//p' $(CONSTRAINTS))

.PHONY: install quickstart test ui reinstall-llama lock

$(STAMP): pyproject.toml setup.py $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) pip
	$(BIN)/python agents/llm/llama_build.py wheel --version $(LLAMA_VERSION) > $(VENV)/llama-wheel-folder
	$(BIN)/python -m pip install -c $(CONSTRAINTS) --find-links "$$(cat $(VENV)/llama-wheel-folder)" \
		--only-binary llama-cpp-python -e '.[local,test]'
	$(BIN)/python agents/llm/llama_build.py check
	touch $(STAMP)

install: $(STAMP)

quickstart: $(STAMP)
	$(BIN)/memevo evolve experiments/quickstart.yaml --resume

test: $(STAMP)
	$(BIN)/python -m pytest -q -ra

ui: $(STAMP)
	$(BIN)/memevo ui --run-dir runs/quickstart

reinstall-llama:
	$(BIN)/python agents/llm/llama_build.py install --version $(LLAMA_VERSION)
	$(BIN)/python agents/llm/llama_build.py check

lock: $(STAMP)
	$(BIN)/python -m pip list --format=freeze --exclude-editable | LC_ALL=C sort -f > $(CONSTRAINTS)
