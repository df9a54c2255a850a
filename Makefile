# The single entry point: make dev | demo | check | test | bench | lint | docs | results
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# Python keeps each module it compiles in __pycache__ unless PYTHONDONTWRITEBYTECODE is set, as
# container images often set it; and uv installs without compiling. With it set, every process —
# each `caplab` command, each test worker, each system under test written in Python, each Ray
# worker — compiles every module it imports from source again: `caplab ls --help` took 3.0 s of
# CPU instead of 0.5-0.8 s, and tests/study/test_study_bad_files.py (26 tests, each a `caplab`
# process) 87 s instead of 29 s. Unset, the first process to import a module caches it.
unexport PYTHONDONTWRITEBYTECODE
ENGINE_SRC := $(shell find engine/src -name '*.rs') engine/Cargo.toml engine/Cargo.lock pyproject.toml

.PHONY: dev dev-test dev-debug demo results check test bench lint lint-python rust-test clippy docs py-test py-test-fast fmt clean

dev: $(VENV)/.stamp-release

# The engine is built into the venv by one cargo profile at a time; each build drops the others'
# stamps, so the next `make dev` rebuilds in release mode: the figures caplab prints, in the demo
# and the benchmarks, always come from the optimised engine.
ENGINE_STAMPS := $(VENV)/.stamp-release $(VENV)/.stamp-release-nolto $(VENV)/.stamp-debug
define build_engine
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin develop --profile $(1) --uv --extras dev
	@rm -f $(filter-out $@,$(ENGINE_STAMPS))
	@touch $@
endef

# A venv with caplab installed editable, the engine compiled in release mode (fat LTO, one codegen
# unit: demo, bench), and the dev tools.
$(VENV)/.stamp-release: $(ENGINE_SRC) | $(VENV)/.stamp-tools
	$(call build_engine,release)

# `make test`'s engine: release without LTO (engine/Cargo.toml), compiled in under half the time.
dev-test: $(VENV)/.stamp-release-nolto

$(VENV)/.stamp-release-nolto: $(ENGINE_SRC) | $(VENV)/.stamp-tools
	$(call build_engine,release-nolto)

# The venv and the two tools that fill it: uv installs the dependencies (from its cache, in seconds
# where pip took two minutes: Ray, pyarrow and SciPy are large wheels), maturin builds the engine.
$(VENV)/.stamp-tools:
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check 'uv>=0.5,<1'
	$(BIN)/uv pip install --quiet --python $(PY) 'maturin>=1.7,<2'
	@touch $@

# The edit loop's engine: a debug build compiles in a fraction of the time.
dev-debug: $(VENV)/.stamp-debug

$(VENV)/.stamp-debug: $(ENGINE_SRC) | $(VENV)/.stamp-tools
	$(call build_engine,dev)

# What lint, docs and py-test run on: the release build, or `make test`'s own when that is the goal.
ENGINE_BUILD := dev
ifneq ($(filter test,$(MAKECMDGOALS)),)
ENGINE_BUILD := dev-test
endif

# The quick cut of the BizTalk scale-out study (about 3 minutes); `make demo DEMO_ARGS=` runs the
# whole study (about 40, each cell searched 3 times).
DEMO_ARGS ?= --quick
# Its MessageBox stores sit on a device model of the paper's SAN, served through FUSE (fuse3).
demo: dev
	@command -v fusermount3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3; }
	$(BIN)/caplab demo $(DEMO_ARGS)

# Every built-in study in full, one after another, into results/caplab.db (hours: `caplab studies
# list` says how long each takes), then their pages in docs/studies/results/ written from the store
# (`caplab studies publish`). `make results RESULTS_RUN=quick` runs the quick cuts (minutes).
RESULTS_RUN ?= whole
results: dev
	mkdir -p results
	$(BIN)/caplab studies publish --run $(RESULTS_RUN) --db sqlite:///$(abspath results)/caplab.db

# The edit loop (about a minute and a quarter once built): debug engine, lint, every test not marked slow.
check: dev-debug lint-python py-test-fast
	cd engine && cargo fmt --check

# Everything, as CI runs it.
test: $(ENGINE_BUILD) rust-test clippy lint docs py-test

# One test at a time: several of the engine's tests hold a schedule to a bound (a refusing target's
# connects at once, sends' spacing), and two running side by side make each other's dispatcher late.
rust-test:
	cd engine && cargo test --quiet -- --test-threads=1

clippy:
	cd engine && PYO3_PYTHON=$(abspath $(PY)) cargo clippy --quiet --all-targets --all-features -- -D warnings

lint: $(ENGINE_BUILD) lint-python
	cd engine && cargo fmt --check

# The documentation site (docs/, mkdocs.yml) into site/. --strict: every warning — a link to a page
# or an anchor that does not exist — fails the build. NO_MKDOCS_2_WARNING quiets Material's notice
# about its own end of life, which says nothing about these pages.
docs: $(ENGINE_BUILD)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# ruff, mypy --strict over the package, the tests and the benchmarks, and the engine's stub
# checked against the compiled module.
lint-python:
	$(BIN)/ruff check python tests bench
	$(BIN)/ruff format --check python tests bench
	$(BIN)/mypy
	MYPYPATH=bench $(BIN)/mypy bench/*.py
	$(BIN)/python -m mypy.stubtest caplab._engine

# -ra: every skipped test's reason (and every failure) in the summary, as pyproject.toml's addopts.
# Two passes (tests/support/parallel.py says which test goes where, and why): the suite on two
# pytest-xdist workers, then the tests that measure the machine, one at a time. On this 2-core
# machine the first pass took 27 min on two workers against 54 serially (most of a test's time is
# waiting on servers, trials and timers, not a core). A test that fails in the first pass is run
# again, alone, before the verdict, and so is one that fails in the alone pass (a `sleep 1` phase
# once took 21 ms more to start on a busy machine): its first failure stays in the log above the
# re-run; one that fails again fails the target. PYTEST_WORKERS=0 runs the first pass serially.
# PYTEST_ARGS adds to the first pass (`PYTEST_ARGS=--junitxml=/tmp/t.xml make test` keeps every
# test's time, to see where the suite's time goes).
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
# The serial pass collects only the files that hold its tests (collecting all 1,400 to keep 41 took
# 8-10 s); `-m alone` then picks its tests in them.
ALONE_FILES = $(shell $(PY) tests/support/parallel.py)
py-test: $(ENGINE_BUILD)
	$(BIN)/pytest -q -ra -n $(PYTEST_WORKERS) --dist loadgroup -m "not alone" --durations=25 $(PYTEST_ARGS) \
		|| { echo "== failed in the first pass: run again, alone"; \
		     $(BIN)/pytest -q -ra --last-failed --last-failed-no-failures none --durations=10; }
	$(BIN)/pytest -q -ra -m alone --durations=10 $(ALONE_FILES) \
		|| { echo "== failed in the alone pass: run again"; \
		     $(BIN)/pytest -q -ra --last-failed --last-failed-no-failures none --durations=10; }

py-test-fast:
	$(BIN)/pytest -q -ra -m "not slow"

fmt: dev
	cd engine && cargo fmt
	$(BIN)/ruff format python tests bench
	$(BIN)/ruff check --fix python tests bench

# Peers (wrk, oha, nginx) are benchmark tools installed here, not dependencies. Both scripts
# exit non-zero when a run was disturbed by other work; the figures are written regardless.
bench: dev
	bash bench/install.sh
	-$(PY) bench/run.py --caplab $(BIN)/caplab --out bench/RESULTS.md
	$(PY) bench/goals.py --caplab $(BIN)/caplab --out bench/RESULTS.md
	$(PY) bench/capacity.py --caplab $(BIN)/caplab --out bench/RESULTS.md
	$(PY) bench/cluster.py --out bench/RESULTS.md
	$(PY) bench/pgbench.py --caplab $(BIN)/caplab --out bench/RESULTS.md
	$(PY) bench/devices.py --out bench/RESULTS.md

clean:
	rm -rf $(VENV) engine/target target python/caplab/_engine*.so site
