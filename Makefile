# dlrepro: reproduce deep-learning-framework benchmark studies. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON     ?= python3
HOST_ENV   := .venv/host
HOSTPY     := $(HOST_ENV)/bin/python

# What to run (override on the command line: make cpu-cnn FRAMEWORKS="pytorch keras" REPEATS=3)
FRAMEWORKS ?= tensorflow keras pytorch mxnet chainer theano
PROFILE    ?= paper
REPEATS    ?= 5
RUNNER     ?= local
DATA       ?= real
THREADS    ?=
TIMEOUT    ?=
MIRROR     ?=
DATASETS   ?= mnist imdb
WORKLOADS  ?=
DEVICE     ?= cpu
CAMPAIGN   ?=

CAMPAIGN_TARGETS := cpu-cnn gpu-cnn cpu-lstm gpu-lstm
RUN_ARGS = --frameworks "$(FRAMEWORKS)" --profile "$(PROFILE)" --repeats "$(REPEATS)" \
           --runner "$(RUNNER)" --data "$(DATA)" $(if $(THREADS),--threads "$(THREADS)") \
           $(if $(TIMEOUT),--timeout "$(TIMEOUT)")

.PHONY: help host demo test test-all lint lock download run analyze report bench-overhead $(CAMPAIGN_TARGETS)

help: ## list the targets and variables
	@echo "dlrepro: reproduce DLBench and related deep-learning-framework benchmark studies"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "  make cpu-cnn    (also gpu-cnn, cpu-lstm, gpu-lstm) a whole study campaign: data, runs, report"
	@echo
	@echo "variables: FRAMEWORKS=\"$(FRAMEWORKS)\" PROFILE=$(PROFILE) (paper|quick|smoke) REPEATS=$(REPEATS)"
	@echo "           RUNNER=$(RUNNER) DATA=$(DATA) (real|synthetic) THREADS CAMPAIGN MIRROR TIMEOUT"
	@echo "           run: WORKLOADS DEVICE; download: DATASETS=\"$(DATASETS)\""

# The host tools environment (download, campaigns, analysis, tests), built once from its lock.
$(HOST_ENV)/.complete: images/host/requirements.txt
	@echo "creating the host environment $(HOST_ENV) (first use, about a minute) ..."
	@rm -rf $(HOST_ENV)
	$(PYTHON) -m venv $(HOST_ENV)
	$(HOST_ENV)/bin/python -m pip install -q --require-hashes --no-deps -r $<
	@touch $@

host: $(HOST_ENV)/.complete

demo: FRAMEWORKS = pytorch keras
demo: PROFILE = quick
demo: REPEATS = 2
demo: DATA = synthetic
demo: host ## the main job on built-in synthetic data: CPU, quick profile, 2 repeats, no network
	$(HOSTPY) -m data synthetic --datasets mnist imdb
	$(HOSTPY) -m bench campaign --target demo --campaign demo $(RUN_ARGS)
	$(HOSTPY) -m analysis --campaign results/demo --out reports/demo

test: host ## lint and tests (fast ones; CI=true or 'make test-all' adds the slow ones)
	$(HOSTPY) -m ruff check .
	$(HOSTPY) -m pytest -q $(if $(filter true,$(CI)),,-m "not slow") tests

test-all: host ## every test, slow ones included
	$(HOSTPY) -m pytest -q tests

lint: host ## ruff
	$(HOSTPY) -m ruff check .

LOCK_ENV := .venv/lock
LOCK_FLAGS := --generate-hashes --allow-unsafe --no-emit-find-links --no-emit-index-url --strip-extras
lock: ## re-resolve every images/*/*/requirements.in into its hash-locked requirements.txt
	@rm -rf $(LOCK_ENV) && $(PYTHON) -m venv $(LOCK_ENV) && $(LOCK_ENV)/bin/python -m pip install -q pip-tools
	@# A folder with build-requirements.in (an sdist built at install time, e.g. chainer) locks its build
	@# tools first and resolves without build isolation, with those tools installed.
	@export CUSTOM_COMPILE_COMMAND="make lock"; for dir in images/*/*/; do \
	  iso=; \
	  if [ -f "$$dir/build-requirements.in" ]; then \
	    echo "locking $${dir}build-requirements.in"; \
	    $(LOCK_ENV)/bin/pip-compile -q $(LOCK_FLAGS) --output-file "$${dir}build-requirements.txt" \
	      "$${dir}build-requirements.in"; \
	    $(LOCK_ENV)/bin/pip install -q --require-hashes --no-deps -r "$${dir}build-requirements.txt"; \
	    iso=--no-build-isolation; \
	  fi; \
	  echo "locking $${dir}requirements.in"; \
	  $(LOCK_ENV)/bin/pip-compile -q $(LOCK_FLAGS) $$iso --output-file "$${dir}requirements.txt" "$${dir}requirements.in"; \
	done

bench-overhead: host ## measure the monitor's overhead, own cost and cadence (about 10 minutes)
	$(HOSTPY) -m data synthetic --datasets imdb
	$(HOSTPY) -m bench.overhead $(if $(PAIRS),--pairs "$(PAIRS)") $(if $(THREADS),--threads "$(THREADS)")

download: host ## download, verify and prepare DATASETS (MIRROR=URL to use your own copies first)
	$(HOSTPY) -m data download --datasets $(DATASETS) $(if $(MIRROR),--mirror "$(MIRROR)")

run: host ## run WORKLOADS on DEVICE for FRAMEWORKS into results/$(CAMPAIGN)
	$(HOSTPY) -m bench campaign --workloads "$(WORKLOADS)" --device "$(DEVICE)" \
	  --campaign "$(or $(CAMPAIGN),adhoc)" $(RUN_ARGS)

analyze: host ## turn results/$(CAMPAIGN) into reports/$(CAMPAIGN)
	$(HOSTPY) -m analysis --campaign "results/$(or $(CAMPAIGN),demo)" --out "reports/$(or $(CAMPAIGN),demo)"

report: analyze

# cpu-cnn, gpu-cnn, cpu-lstm, gpu-lstm: data, runs, report. GPU targets stop at once without a GPU.
$(CAMPAIGN_TARGETS):
	@$(if $(filter gpu-%,$@),$(PYTHON) -m bench check-gpu $@,true)
	@$(MAKE) --no-print-directory host
	@if [ "$(DATA)" = real ]; then \
	  $(HOSTPY) -m data download --datasets $$($(HOSTPY) -m bench datasets --target $@) \
	    $(if $(MIRROR),--mirror "$(MIRROR)"); \
	else \
	  $(HOSTPY) -m data synthetic --datasets $$($(HOSTPY) -m bench datasets --target $@); \
	fi
	$(HOSTPY) -m bench campaign --target $@ --campaign "$(or $(CAMPAIGN),$@)" $(RUN_ARGS)
	$(HOSTPY) -m analysis --campaign "results/$(or $(CAMPAIGN),$@)" --out "reports/$(or $(CAMPAIGN),$@)"
