PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The zoo's own venv (see the .installed-zoo rule).
VENV_ZOO := .venv-zoo
# Logs of the steps `make test` runs beside others (the zoo's venv, mypy, the docs build).
LOGS := .logs
# Held by every editable install of the project (the zoo venv's rule says why).
EDITABLE_LOCK := $(LOGS)/editable-install.lock
# pip's options for every install: no progress bar (CI logs), no byte-compiling of the installed
# packages (what an import needs is compiled when it is first imported).
PIP_INSTALL = -m pip install --quiet --progress-bar off --no-compile

# Python writes the bytecode of what it imports (into .venv and the tree, both ignored by git),
# whatever the calling environment says: the installs skip compiling (--no-compile), so with
# PYTHONDONTWRITEBYTECODE set (as on CI machines) every process of the test run -- each xdist
# worker, each CLI / process-pool / wheel subprocess -- compiled torch, SciPy and the rest from
# source again (~8 CPU s per process importing torch; 25% of the CPU of the training and engine
# tests).  Now the first import compiles and writes; the others read.
unexport PYTHONDONTWRITEBYTECODE

# $(call logged,STEP,COMMAND): COMMAND's output goes to $(LOGS)/STEP.log; a failure prints the
# log's last 80 lines and fails the build.
logged = mkdir -p $(LOGS) && { ( $(2) ) > $(LOGS)/$(1).log 2>&1 \
  && echo "$(1): ok ($(LOGS)/$(1).log)" \
  || { echo "$(1) FAILED; last lines of $(LOGS)/$(1).log:"; tail -n 80 $(LOGS)/$(1).log; exit 1; }; }

.PHONY: demo test lint typecheck docs bench browser clean zoo-test \
  test-steps test-lint test-typecheck test-docs test-main test-zoo

$(BIN)/activate:
	$(PY) -m venv $(VENV)
	$(BIN)/python $(PIP_INSTALL) --upgrade pip

# `make demo` runs a real (Opacus) training audit, so it installs the torch extra too.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	mkdir -p $(LOGS) && flock $(EDITABLE_LOCK) $(BIN)/python $(PIP_INSTALL) -e ".[torch]"
	touch $@

# The dev extra pulls every optional extra (torch/Opacus, Ray, pyarrow, Faker, Playwright).
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/activate
	mkdir -p $(LOGS) && flock $(EDITABLE_LOCK) $(BIN)/python $(PIP_INSTALL) -e ".[dev]"
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

# `make test` runs every check and every test.  On two cores its time is its CPU time over two,
# so nothing waits that need not: the zoo's venv and Chromium install while the main venv
# installs (pip and apt wait on the network and the disk); mypy and the docs build run beside
# the main suite, and so do the zoo's tests once their venv is ready (logs in .logs/: each
# suite's slowest tests -- a real training, a synthetic-data generator run 4,000 times -- then
# overlap instead of leaving a core idle at the end of each).  A failing step fails
# the build.  Timings: CONTRIBUTING.md, "The test loop".
test:
	@$(MAKE) --no-print-directory -j6 test-steps

test-steps: test-lint test-typecheck test-docs test-main test-zoo

test-lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

test-typecheck: $(VENV)/.installed-dev
	@$(call logged,mypy,$(BIN)/mypy)

test-docs: $(VENV)/.installed-dev
	@$(call logged,docs,$(BIN)/mkdocs build --strict --quiet)

test-main: $(VENV)/.installed-dev browser
	$(BIN)/python -m pytest -n 2 --dist worksteal -q --ignore=tests/zoo

test-zoo: $(VENV_ZOO)/.installed-zoo
	@$(call logged,zoo-tests,$(VENV_ZOO)/bin/python -m pytest -n 2 --dist worksteal -q tests/zoo)

# The zoo's libraries (extra `zoo`, pinned) live in their own venv: diffprivlib 0.6.6 needs
# scikit-learn < 1.9 and smartnoise-sql pins opendp 0.14.x.  Its install (several minutes,
# mostly waiting on downloads) is logged to .logs/zoo-install.log.
# Its dependencies install beside the main venv (tools/extra_requirements.py lists them);
# the project itself is added under $(EDITABLE_LOCK), which every editable install of the
# project holds: setuptools writes src/dpaudit.egg-info while it builds, so two builds at once
# could read each other's half-written metadata.
$(VENV_ZOO)/.installed-zoo: pyproject.toml
	@$(call logged,zoo-install,$(PY) -m venv $(VENV_ZOO) \
	  && $(VENV_ZOO)/bin/python $(PIP_INSTALL) --upgrade pip \
	  && $(PY) tools/extra_requirements.py zoo-test > $(LOGS)/zoo-requirements.txt \
	  && $(VENV_ZOO)/bin/python $(PIP_INSTALL) -r $(LOGS)/zoo-requirements.txt \
	  && flock $(EDITABLE_LOCK) $(VENV_ZOO)/bin/python $(PIP_INSTALL) --no-deps -e .)
	touch $@

zoo-test: $(VENV_ZOO)/.installed-zoo
	$(VENV_ZOO)/bin/python -m pytest -n 2 --dist worksteal -q tests/zoo

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
	rm -rf $(VENV) $(VENV_ZOO) $(LOGS) build site .mypy_cache .jax_cache *.egg-info src/*.egg-info
