# The two commands a newcomer needs: `make demo` and `make test`. Both set everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kops-installed

.PHONY: setup java maven jars mermaid bytecode demo test lint bench clean

setup: java $(STAMP) jars mermaid bytecode

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

# Maven fetches Apache ZooKeeper (kops/lab/zookeeper.pom.xml) and real Apache Kafka (kops/lab/kafka_dist/*.pom.xml)
# into ~/.cache/kops. Installed with apt when missing and we may; otherwise one line, and what needs no lab runs.
maven:
	@if ! command -v mvn >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Maven (to fetch Apache ZooKeeper's and Kafka's jars)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; \
	fi

jars: maven $(STAMP)
	@if command -v mvn >/dev/null 2>&1; then \
	  $(BIN)/kops lab install; \
	else \
	  echo "note: Maven is missing, so ZooKeeper and Kafka are not installed (apt-get install maven): no lab runs"; \
	fi

# The Mermaid CLI renders the charts of plans and rehearsal reports in a test (a syntax error fails it): npm's
# @mermaid-js/mermaid-cli driving Debian's Chromium (Puppeteer's own browser download cannot work here). Installed
# once per machine into ~/.cache/kops (as Kafka's jars are; 500 MB a clone need not copy), linked as .kops/mermaid.
MERMAID_VERSION := 11.17.0
MERMAID_HOME := $(HOME)/.cache/kops/mermaid/$(MERMAID_VERSION)
MMDC := .kops/mermaid/node_modules/.bin/mmdc
mermaid: $(MMDC)
$(MMDC):
	@if ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Chromium (for the Mermaid CLI)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	@if command -v npm >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1; then \
	  if [ ! -x "$(MERMAID_HOME)/node_modules/.bin/mmdc" ]; then \
	    echo "installing @mermaid-js/mermaid-cli@$(MERMAID_VERSION) into $(MERMAID_HOME)"; \
	    PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix "$(MERMAID_HOME)" --no-audit --no-fund --loglevel=error \
	      @mermaid-js/mermaid-cli@$(MERMAID_VERSION) >/dev/null; \
	  fi; \
	  mkdir -p .kops && { [ -L .kops/mermaid ] || rm -rf .kops/mermaid; } && ln -sfn "$(MERMAID_HOME)" .kops/mermaid; \
	else \
	  echo "note: npm or Chromium is missing, so the Mermaid rendering test is skipped"; \
	fi

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	@touch $(STAMP)

# kops's bytecode, written ahead. Where PYTHONDONTWRITEBYTECODE is set (CI images often set it; so does this
# machine's shell) Python never caches the bytecode of an editable install, and every `kops` process, lab broker and
# tool compiled kops from source (import kops.cli.apply: 1.67 CPU s, 1.49 with it). compileall rewrites only what
# changed since. (tests/conftest.py turns writing back on for the suite's own processes.)
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 kops spark tests bench > /dev/null

demo: setup
	$(BIN)/kops lab demo

# Three workers, a module at a time each (one real cluster per module stays one): many lab tests wait on brokers
# or on simulated time, so a third worker uses the CPU the waiting one leaves (docs/development.md).
test: setup lint
	$(BIN)/pytest -n 3 --dist loadfile

lint: setup
	$(BIN)/ruff check kops spark bench tests
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: setup
	$(BIN)/python bench/snapshot.py

clean:
	rm -rf $(VENV) .kops .pytest_cache .hypothesis
