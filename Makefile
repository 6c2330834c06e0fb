# One command to set everything up and run the main job, one to run the tests.
#   make quickstart   create .venv, install memevo with the local model, run the quickstart evolution
#   make test         create .venv if needed, install, run the whole test suite

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install quickstart test ui

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[local,test]'
	touch $(STAMP)

install: $(STAMP)

quickstart: $(STAMP)
	$(BIN)/memevo evolve experiments/quickstart.yaml --resume

test: $(STAMP)
	$(BIN)/python -m pytest -q -ra

ui: $(STAMP)
	$(BIN)/memevo ui --run-dir runs/quickstart
