PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck docs bench browser clean zoo-test

$(BIN)/activate:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `make demo` runs a real (Opacus) training audit, so it installs the torch extra too.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e ".[torch]"
	touch $@

# The dev extra pulls every optional extra (torch/Opacus, Ray, pyarrow, Faker, Playwright).
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(VENV)/.installed $@

# The report's browser test drives the system Chromium (browser builds cannot be downloaded).
# Installed with apt when missing and we are root (as in CI); otherwise the test says why it skips.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
	  true; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (apt)"; \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium install failed"; \
	else \
	  echo "chromium not found and cannot be installed here: browser tests will be skipped"; \
	fi

demo: $(VENV)/.installed
	$(BIN)/dpaudit demo

test: $(VENV)/.installed-dev browser
	$(BIN)/ruff check .
	$(MAKE) typecheck
	$(BIN)/python -m pytest -n 2 -q --ignore=tests/zoo
	$(MAKE) docs
	$(MAKE) zoo-test

# The zoo's libraries (extra `zoo`, pinned) live in their own venv: diffprivlib 0.6.6 needs
# scikit-learn < 1.9 and smartnoise-sql pins opendp 0.14.x.
VENV_ZOO := .venv-zoo
$(VENV_ZOO)/.installed-zoo: pyproject.toml
	$(PY) -m venv $(VENV_ZOO)
	$(VENV_ZOO)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_ZOO)/bin/python -m pip install --quiet -e ".[zoo-test]"
	touch $@

zoo-test: $(VENV_ZOO)/.installed-zoo
	$(VENV_ZOO)/bin/python -m pytest -n 2 -q tests/zoo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

# mypy on src/dpaudit (configuration: [tool.mypy] in pyproject.toml).
typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# The documentation site (mkdocs.yml): warnings are errors; output in site/ (not committed).
docs: $(VENV)/.installed-dev
	$(BIN)/mkdocs build --strict --quiet

# Every timed benchmark with quick arguments (benchmarks/run_all.py; ~10 minutes on 2 cores); a
# failing script is reported and the others still run.  Studies: studies/ (run by hand).
bench: $(VENV)/.installed-dev
	PYTHONPATH=src $(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(VENV_ZOO) build site .mypy_cache *.egg-info src/*.egg-info
