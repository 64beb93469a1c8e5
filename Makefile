# The two commands a newcomer needs: `make demo` and `make test`. Both set everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kops-installed

.PHONY: setup java maven kafka demo test lint bench clean

setup: java $(STAMP) kafka

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

# Maven fetches real Apache Kafka (the versions pinned in kops/lab/kafka_dist/*.pom.xml). Installed with apt when
# missing and we may; otherwise one line, and everything that needs no real Kafka still runs.
maven:
	@if ! command -v mvn >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Maven (to fetch Apache Kafka's jars)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; \
	fi

kafka: maven $(STAMP)
	@if command -v mvn >/dev/null 2>&1; then \
	  $(BIN)/kops lab install; \
	else \
	  echo "note: Maven is missing, so real Kafka is not installed (apt-get install maven); the kops engine still runs"; \
	fi

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: setup
	$(BIN)/kops lab demo

# Two workers, a module at a time each (one real cluster per module stays one): the lab tests mostly wait on
# brokers, so two run side by side on two cores.
test: setup lint
	$(BIN)/pytest -n 2 --dist loadfile

lint: setup
	$(BIN)/ruff check kops spark bench tests
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: setup
	$(BIN)/python bench/snapshot.py

clean:
	rm -rf $(VENV) .kops .pytest_cache .hypothesis
