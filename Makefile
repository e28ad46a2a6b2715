# protolab: the entry point. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV     := .venv
PY       := $(VENV)/bin/python
PROTOLAB := $(VENV)/bin/protolab
NAME     ?= smoke
PROFILE  ?= quick
INVENTORY ?= ansible/inventory/local.yml
export GOTOOLCHAIN := local
export PATH := $(PATH):/usr/local/go/bin
export ANSIBLE_CONFIG := $(CURDIR)/ansible/ansible.cfg

.PHONY: help setup venv images experiment test lint unit go-test integration bench bench-smoke clean up down nightly schema rules-test fuzz

help: ## list the targets
	@echo "protolab -- containerized protocol-performance lab"
	@echo "usage: make experiment NAME=smoke [PROFILE=quick|full]"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: requirements.txt pyproject.toml
	@dpkg -s python3-venv >/dev/null 2>&1 || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv; }
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps -e .
	@touch $@

venv: $(VENV)/.installed ## the Python venv (Debian python3 + pinned packages)

setup: venv ## provision the testbed hosts of INVENTORY=file with Ansible (idempotent; default: this machine)
	@$(PROTOLAB) place --inventory $(INVENTORY)
	@start=$$(date +%s); \
	$(VENV)/bin/ansible-playbook -i $(INVENTORY) ansible/site.yml -e testbed_compose_binary=$(CURDIR)/$(VENV)/bin/docker-compose \
	  | grep -vE '^\s*$$' ; \
	echo "[setup] done in $$(( $$(date +%s) - start ))s"

images: setup ## build the container images that are missing or stale
	$(PROTOLAB) images

experiment: images ## run experiments/$(NAME).yaml with profile $(PROFILE)
	$(PROTOLAB) run $(NAME) --profile $(PROFILE)

schema: venv ## regenerate experiments/schema.json from the spec models
	$(PROTOLAB) schema

lint: venv ## ruff, mypy (the lab, its contract and what drives it), gofmt, go vet, schema and dashboards freshness
	$(VENV)/bin/ruff check protolab mininet-topologies bench
	$(VENV)/bin/ruff format --check protolab mininet-topologies bench
	$(VENV)/bin/mypy --python-executable $(PY)
	@test -z "$$(cd agents && gofmt -l .)" || { echo "gofmt needed:"; cd agents && gofmt -l .; exit 1; }
	cd agents && go vet ./...
	$(PROTOLAB) schema --check
	$(PROTOLAB) dashboards --check

unit: venv ## fast rootless tests (Python)
	$(PY) -m pytest -q --durations=10 protolab/tests/unit

go-test: ## Go tests of the agents module
	cd agents && go test ./...

FUZZTIME ?= 10s
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded" as a
# failure when -fuzztime runs out while a worker is mid-call (golang/go#75804,
# fixed in 1.27; CI hit it). The fuzzer alone runs on the fixed toolchain, which
# the go command fetches from the module proxy (76 MB, once per machine).
FUZZ_GOTOOLCHAIN ?= go1.27.3
# The transfer-syntax decoders (issue 15: "each decoder fuzzed, 30 s per
# target"), raw's (agents/dis FuzzDecode) among them, get FUZZTIME_SYNTAX
# each. Targets are matched by name: agents/tp4's FuzzDecode gets it too,
# so 6 x 30 s, 120 s more than FUZZTIME would give them.
FUZZTIME_SYNTAX ?= 30s
FUZZ_SYNTAX_TARGETS := FuzzDecode FuzzDecodeBER FuzzDecodeDER FuzzDecodeUPER FuzzDecodePER FuzzDecodeSkinny
fuzz: venv ## every Go fuzz target (func FuzzX in agents/) for FUZZTIME (10s) each, the transfer-syntax decoders for FUZZTIME_SYNTAX (30s), on Go $(FUZZ_GOTOOLCHAIN), then the SPIMS parser (Hypothesis) for 30s
	@cd agents && for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
	    ft=$(FUZZTIME); case " $(FUZZ_SYNTAX_TARGETS) " in *" $$t "*) ft=$(FUZZTIME_SYNTAX);; esac; \
	    echo "fuzz: $$t in $$(dirname "$$f") for $$ft"; \
	    GOTOOLCHAIN=$(FUZZ_GOTOOLCHAIN) go test -run '^$$' -fuzz "^$$t\$$" -fuzztime $$ft "$$(dirname "$$f")" || exit 1; \
	  done; \
	done
	SPIMS_FUZZ_SECONDS=30 $(VENV)/bin/python -m pytest -q protolab/tests/fuzz

integration: images ## tests on a real lab (root, Docker, Mininet)
	$(PY) -m pytest -q --durations=0 --durations-min=1 -m integration protolab/tests/integration

# promtool: the host's, else the monitor image's (paths are the same inside: the repo is mounted at itself)
PROMTOOL ?= $(shell command -v promtool || echo docker run --rm --entrypoint promtool -v $(CURDIR):$(CURDIR):ro protolab/monitor:latest)
rules-test: images ## promtool check of the configuration and the rules + unit tests of the recording rules
	$(PROMTOOL) check config --syntax-only $(CURDIR)/images/monitor/prometheus.yml
	$(PROMTOOL) check rules $(CURDIR)/images/monitor/rules/*.rules.yml
	$(PROMTOOL) test rules $(CURDIR)/images/monitor/rules/tests/*.test.yml

test: images lint unit rules-test go-test fuzz bench-smoke integration ## everything: lint, unit, rules, Go, fuzz, benchmarks in smoke mode, integration (what CI runs)

bench: images ## benchmarks (figures, not gates), then one table of each figure, its target and the last committed result: deploy/teardown per node and against a floor, deploy over k hosts (model), impairment apply/restore, linkem pps + added delay, SPIMS vs iperf3 and a ping-pong, DIS host PDUs/s, transfer syntaxes, converter C_2 msgs/s + added delay, a large lab (256 and 512 hosts)
	$(PY) -m bench

# Every benchmark at tiny sizes (seconds each), written to a temporary folder: the figures mean nothing, but a
# change that breaks a benchmark fails `make test`.
bench-smoke: images ## every benchmark at tiny sizes, results thrown away: a check that none has rotted (part of make test)
	$(PY) -m bench --smoke

nightly: images ## every experiment's nightly (else quick) profile, compared with experiments/references/
	$(PROTOLAB) nightly

up: images ## start the monitoring stack alone
	$(PROTOLAB) up

down: venv ## stop the monitoring stack
	$(PROTOLAB) down

clean: ## remove everything protolab created on this machine (also after a killed run)
	@if [ -x $(PROTOLAB) ]; then $(PROTOLAB) clean; else echo "no venv: nothing was ever set up here"; fi
