# Every target works on a fresh clone with nothing but Python 3.10+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup lab test lint unit demo execute exercises grade bench clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	touch $(STAMP)

lab: setup
	$(BIN)/jupyter lab notebooks/00_start_here.ipynb

lint: setup
	$(BIN)/ruff check lib tests scripts

unit: setup
	$(BIN)/python -m pytest -q

test: lint
	$(BIN)/python -m pytest -q

demo: setup
	$(BIN)/python -m vmem demo

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache .hypothesis
