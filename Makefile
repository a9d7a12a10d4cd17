# Every target works on a fresh clone with nothing but Python 3.10+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
LOCOMO := ../shared/data/locomo/locomo10.json
SITE_ENV := build/site-env
SITE_STAMP := $(SITE_ENV)/.installed

.PHONY: setup lab test lint unit notebooks browser site site-test demo chat execute exercises lessons grade release bench eval \
	fuzz mutants clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt requirements-dense.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-dense.txt
	@# build matplotlib's font cache now: its first-run notice on stderr would fail nbval
	$(BIN)/python -c "import matplotlib.pyplot"
	touch $(STAMP)

lab: setup
	$(BIN)/python scripts/lab.py notebooks/00_start_here.ipynb

lint: setup
	$(BIN)/ruff check lib tests scripts benchmarks

unit: setup
	$(BIN)/python -m pytest -q -m "not slow"

notebooks: setup
	$(BIN)/python -m pytest -q $(NBVAL) -p no:cacheprovider notebooks $(wildcard solutions/*.ipynb) $(wildcard solutions/lessons/*.ipynb)

# ruff, every test (slow ones included), nbval strict over the committed notebooks, then the
# browser course's tests (timed apart: they build the site and run it in Pyodide). Those need
# Node.js and npm: without them they are skipped with a line saying so (under CI they fail).
test: lint
	$(BIN)/python -m pytest -q -m "not site"
	$(BIN)/python -m pytest -q $(NBVAL) -p no:cacheprovider notebooks $(wildcard solutions/*.ipynb) $(wildcard solutions/lessons/*.ipynb)
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		$(MAKE) site-test; \
	elif [ -n "$$CI" ]; then \
		echo "the browser course's tests need Node.js and npm (.ci/run installs them)"; exit 1; \
	else \
		echo "SKIPPED the browser course's tests (make site-test): they need Node.js 18+ and npm, to fetch Pyodide and run it (apt-get install nodejs npm)"; \
	fi

browser: setup
	$(BIN)/python -m pytest -q -m browser tests/viz/browser

# The course in the browser (JupyterLite, Pyodide kernel) in build/site, from pinned npm and
# PyPI packages only; its own environment, so it needs neither `make setup` nor a CDN.
$(SITE_STAMP): lite/requirements.txt
	$(PYTHON) -m venv $(SITE_ENV)
	$(SITE_ENV)/bin/python -m pip install --quiet -r lite/requirements.txt
	touch $(SITE_STAMP)

site: $(SITE_STAMP)
	$(SITE_ENV)/bin/python scripts/build_site.py

site-test: setup site
	$(BIN)/python -m pytest -q -m site -p no:cacheprovider tests

demo: setup
	$(BIN)/python -m vmem demo

chat: setup
	$(BIN)/python -m vmem chat

# the complete lessons and the solutions, in place; `make lessons` runs the learner versions
execute: setup
	$(BIN)/python scripts/execute_notebooks.py solutions/lessons/*.ipynb solutions/*.ipynb

exercises: setup
	$(BIN)/python scripts/make_exercises.py

# notebooks/ from solutions/lessons/: the learner's parts stubbed, each run for its outputs
lessons: setup
	$(BIN)/python scripts/make_lessons.py

grade: setup
	$(BIN)/python -m vmem grade exercises

release: setup
	@test -n "$(DEST)" || (echo "usage: make release DEST=../vmem-student" && exit 2)
	$(BIN)/python scripts/release.py "$(DEST)"

bench: setup
	$(BIN)/python benchmarks/archival.py archival
	$(BIN)/python benchmarks/backends.py
	$(BIN)/python benchmarks/recall.py --data $(LOCOMO)
	$(BIN)/python benchmarks/recall_pool.py --data $(LOCOMO)

eval: setup
	$(BIN)/python -m vmem eval synthetic --tokens 100000
	@if [ -f $(LOCOMO) ]; then $(BIN)/python -m vmem eval locomo --data $(LOCOMO); \
	else echo "LoCoMo not found at $(LOCOMO): skipped (see README)"; fi

fuzz: setup
	$(BIN)/python -m pytest -q -m slow tests/lib/test_tools_fuzz.py

# every check run on small changes of its reference answer (under a minute; not part of `make test`)
mutants: setup
	$(BIN)/python scripts/mutants.py

clean:
	rm -rf $(VENV) build lite/node_modules .pytest_cache .ruff_cache .hypothesis
