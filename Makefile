# The two commands a newcomer needs: `make demo` and `make test`. Both set everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kops-installed

.PHONY: setup java demo test lint bench clean

setup: java $(STAMP)

# Java runs ZooKeeper (and Spark). Install a JRE when missing and we may (root + apt).
java:
	@if ! command -v java >/dev/null 2>&1 && [ -z "$$JAVA_HOME" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing a Java runtime (openjdk-17-jre-headless)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
	  else \
	    echo "error: Java 11+ is required (Debian/Ubuntu: apt-get install openjdk-17-jre-headless)" >&2; exit 1; \
	  fi; \
	fi

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: setup
	$(BIN)/kops lab demo

test: setup lint
	$(BIN)/pytest

lint: setup
	$(BIN)/lint-imports --no-cache

bench: setup
	$(BIN)/python bench/snapshot.py

clean:
	rm -rf $(VENV) .kops .pytest_cache .hypothesis
