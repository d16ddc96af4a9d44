# The two commands a newcomer runs (README.md):  make demo   and   make test
# make demo builds only the tools the demo runs; make test and make setup build every tool set.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
CLUSTER ?= dev
export PULUMI_BACKEND_URL ?= file://$(CURDIR)/.state/pulumi

.PHONY: help setup toolchain venv demo-tools demo test python-tests unit go-test bench faults cluster-up cluster-down cluster-status

help:
	@echo "make demo    set up what the demo runs, start the embedded cluster, migrate legacy -> migrated, print the verification table"
	@echo "make test    set everything up and run the whole test suite (unit + integration on embedded clusters)"
	@echo "make bench   benchmarks P1-P3 on fresh embedded clusters (about 40 min; .state/bench/results.json, timeline.png)"
	@echo "make faults  the full fault suite (crash/resume at every kill point, rollback from every phase; about 1 h)"
	@echo "make setup   every tool set (make demo builds the demo's alone; the rest is built on first use)"
	@echo "make unit | go-test | cluster-up | cluster-down | cluster-status"

setup: venv toolchain

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

toolchain:
	tools/build-toolchain.sh all >/dev/null

# What every embedded cluster runs; the version-jump tests' second Istio minor is built on first use or by setup.
demo-tools:
	tools/build-toolchain.sh demo >/dev/null

# The virtualenv installs while the Go tools build (they need nothing from each other).
demo:
	$(MAKE) --no-print-directory -j2 venv demo-tools
	$(PY) -m demo $(if $(STATE),--state $(STATE))

# The virtualenv installs while the Go tools build, and the Go tests run beside the Python suite: on a new machine
# each saves about a minute of a run that is CPU-bound anyway.
test:
	$(MAKE) --no-print-directory -j2 venv toolchain
	$(MAKE) --no-print-directory -j2 go-test python-tests

# Three workers, one test file each at a time (module fixtures stay in one worker), in the order tests/conftest.py
# gives: the integration and fault tests wait on their embedded clusters much of the time, so three run side by side
# on 2 cores (measured in README and docs/benchmarks.md).
python-tests:
	$(PY) -m pytest tests -n 3 --dist loadfile --no-loadscope-reorder --durations=12

# Our own Go programs (the Command provider, the language host, the proxy simulator in the istio wrapper), with the
# toolchain build's flags so the packages it compiled are reused; the other tools/go modules only wrap upstream.
go-test:
	tools/build-toolchain.sh --go-test

bench: venv demo-tools
	$(PY) -m bench

faults: setup
	$(PY) -m pytest tests/faults --all-faults

# No toolchain, no cluster: recorded istioctl output (tests/fixtures), Pulumi mocks, pure functions.
unit: venv
	$(PY) -m pytest tests/unit

cluster-up: venv demo-tools
	$(PY) -m devcluster up --name $(CLUSTER)

cluster-down: venv
	$(PY) -m devcluster down --name $(CLUSTER)

cluster-status: venv
	$(PY) -m devcluster status --name $(CLUSTER)
