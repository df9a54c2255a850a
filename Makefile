# The single entry point: make dev | demo | test | bench | lint
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
ENGINE_SRC := $(shell find engine/src -name '*.rs') engine/Cargo.toml engine/Cargo.lock pyproject.toml

.PHONY: dev demo test bench lint rust-test clippy py-test fmt clean

dev: $(VENV)/.stamp-dev

# A venv with caplab installed editable, the engine compiled in release mode, and the dev tools.
$(VENV)/.stamp-dev: $(ENGINE_SRC)
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'maturin>=1.7,<2'
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin develop --release --extras dev
	@touch $@

# The quick cut of the BizTalk scale-out study (about 3 minutes); `make demo DEMO_ARGS=` runs the
# whole study (about 15).
DEMO_ARGS ?= --quick
demo: dev
	$(BIN)/caplab demo $(DEMO_ARGS)

test: dev rust-test clippy lint py-test

rust-test:
	cd engine && cargo test --quiet

clippy:
	cd engine && PYO3_PYTHON=$(abspath $(PY)) cargo clippy --quiet --all-targets --all-features -- -D warnings

lint: dev
	cd engine && cargo fmt --check
	$(BIN)/ruff check python tests bench
	$(BIN)/ruff format --check python tests bench
	$(BIN)/mypy

py-test: dev
	$(BIN)/pytest -q

fmt: dev
	cd engine && cargo fmt
	$(BIN)/ruff format python tests bench
	$(BIN)/ruff check --fix python tests bench

# Peers (wrk, oha, nginx) are benchmark tools installed here, not dependencies. Both scripts
# exit non-zero when a run was disturbed by other work; the figures are written regardless.
bench: dev
	bash bench/install.sh
	-$(PY) bench/run.py --caplab $(BIN)/caplab --out bench/RESULTS.md
	$(PY) bench/capacity.py --caplab $(BIN)/caplab >> bench/RESULTS.md

clean:
	rm -rf $(VENV) engine/target target python/caplab/_engine*.so
