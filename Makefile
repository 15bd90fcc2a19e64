# dlrepro: reproduce deep-learning-framework benchmark studies. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON     ?= python3
HOST_ENV   := .venv/host
# RUNNER=system runs everything on $(PYTHON) as it is, the host stages too, and builds no
# environment (a machine that reaches no package index); otherwise the host stages run in the host
# environment, built once from its lock.
HOSTPY      = $(if $(filter system,$(RUNNER)),$(PYTHON),$(HOST_ENV)/bin/python)

# What to run (override on the command line: make cpu-cnn FRAMEWORKS="pytorch keras" REPEATS=3)
FRAMEWORKS ?= tensorflow keras pytorch mxnet chainer theano
PROFILE    ?= paper
REPEATS    ?= 5
RUNNER     ?= auto
DATA       ?= real
THREADS    ?=
TIMEOUT    ?=
# RETRY_FAILED=yes runs the campaign's failed runs again (runs that failed for their setup always are).
RETRY_FAILED ?= no
MIRROR     ?=
DATASETS   ?= mnist imdb
WORKLOADS  ?=
DEVICE     ?= cpu
CAMPAIGN   ?=
# GPU campaigns run one run per GPU at a time on GPUS (all, or NVML indices: GPUS=0,2), a run over k ranks on k
# GPUs at once; CPU campaigns run PARALLEL runs at once (1: the studies' protocol).
GPUS       ?= all
PARALLEL   ?= 1
# Bounds on each container run (RUNNER=docker; recorded in run.json): memory (e.g. 16g; default the host's
# memory less a tenth, at least 1 GiB left) and processes/threads at once (default 4096).
MEMORY     ?=
PIDS       ?=
# Where runs are carried out: local (this machine), slurm (one job array; WAIT=no returns once
# submitted, and the same command later collects and resumes) or kubernetes (Indexed Jobs).
EXECUTOR   ?= local
WAIT       ?= yes
SLURM_PARTITION ?=
SLURM_ACCOUNT   ?=
SLURM_EXCLUSIVE ?= no
SLURM_OPTS      ?=
K8S_NAMESPACE   ?= default
K8S_DATA_CLAIM  ?= dlrepro-data
K8S_RESULTS_CLAIM ?= dlrepro-results
# The software era of images and runs: current (today's releases) or paper (the study's versions).
ERA        ?= current
# Images (make images/push/pull/verify-lock): variant, registry, and a base pinned by digest
# or a local tag (make base); empty = the Dockerfiles' own pinned base.
VARIANT    ?= cpu
REGISTRY   ?=
BASE_IMAGE ?=
export BASE_IMAGE
# make base ERA=paper: the CPython 3.6.15 source, python.org's file (at its published digest) or a
# stand-in trusted on first use (versions.local.lock); neither: fetched from python.org.
PYTHON_SOURCE  ?=
PYTHON_STANDIN ?=

# The make targets of the study files, generated, never listed here (campaign/targets.py: the naming rule):
# targets.mk (committed: the kit's own studies; a test checks it is current) defines CAMPAIGN_TARGETS (every
# experiment), GPU_TARGETS, STUDY_TARGETS and GPU_STUDY_TARGETS (each study's <study>-cpu/-gpu), STUDIES and HELP.*;
# with DLREPRO_STUDIES_PATH set, a file per path value under .targets/ (git-ignored) adds the studies there. make
# remakes either, and restarts, when a study file, a studies folder or the generator is newer: a new study folder
# gets its targets with no other file edited. The generator reads the study files with $(PYTHON) (3.11: tomllib).
TARGETS_FROM := campaign/targets.py campaign/study.py
targets.mk: studies $(wildcard studies/*/study.toml) $(TARGETS_FROM)
	@$(PYTHON) -m campaign targets --out $@
include targets.mk
ifneq ($(strip $(DLREPRO_STUDIES_PATH)),)
STUDY_ROOTS := $(wildcard $(subst :, ,$(DLREPRO_STUDIES_PATH)))
PATH_TARGETS := .targets/$(firstword $(shell printf '%s' '$(subst ','\'',$(DLREPRO_STUDIES_PATH))' | cksum)).mk
$(PATH_TARGETS): targets.mk $(STUDY_ROOTS) $(wildcard $(addsuffix /*/study.toml,$(STUDY_ROOTS))) $(TARGETS_FROM)
	@$(PYTHON) -m campaign targets --path --out $@
include $(PATH_TARGETS)
endif
RUN_ARGS = --frameworks "$(FRAMEWORKS)" --era "$(ERA)" --profile "$(PROFILE)" --repeats "$(REPEATS)" \
           --runner "$(RUNNER)" --data "$(DATA)" $(if $(THREADS),--threads "$(THREADS)") \
           $(if $(TIMEOUT),--timeout "$(TIMEOUT)") --retry-failed "$(RETRY_FAILED)" --gpus "$(GPUS)" --parallel "$(PARALLEL)" \
           --executor "$(EXECUTOR)" --wait "$(WAIT)" --slurm-partition "$(SLURM_PARTITION)" \
           --slurm-account "$(SLURM_ACCOUNT)" --slurm-exclusive "$(SLURM_EXCLUSIVE)" --slurm-opts "$(SLURM_OPTS)" \
           --k8s-namespace "$(K8S_NAMESPACE)" --k8s-data-claim "$(K8S_DATA_CLAIM)" --k8s-results-claim "$(K8S_RESULTS_CLAIM)" \
           --memory "$(MEMORY)" --pids "$(PIDS)"
# A campaign handed to a scheduler exits 3 while runs are still queued: report once they are back.
QUEUED_EXIT := 3

.PHONY: help host envs demo test test-slow test-paper test-all lint lock download run analyze report bench-overhead bench-lstm $(CAMPAIGN_TARGETS) $(STUDY_TARGETS)
.PHONY: base images push pull verify-lock slurm-up slurm-down

help: ## list the targets and variables
	@echo "dlrepro: reproduce DLBench and related deep-learning-framework benchmark studies"
	@echo
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "  make <experiment>  one experiment of a study file: data, runs, report (in campaign <experiment>)"
	@echo "  make <study>-cpu   a study's CPU experiments (-gpu: GPU ones) in one campaign and one report: always"
	@echo "                     <study>-all-cpu (-all-gpu), and <study>-cpu (-gpu) where no experiment has that name"
	@$(foreach s,$(STUDIES),printf '    %-9s %s\n' '$(s)' '$(HELP.$(s))';)
	@echo
	@echo "variables: FRAMEWORKS=\"$(FRAMEWORKS)\" PROFILE=$(PROFILE) (paper|quick|smoke) REPEATS=$(REPEATS)"
	@echo "           RUNNER=$(RUNNER) (auto|docker|local|system) DATA=$(DATA) (real|synthetic) THREADS CAMPAIGN MIRROR TIMEOUT RETRY_FAILED"
	@echo "           ERA=$(ERA) (current|paper); images: VARIANT=$(VARIANT) (cpu|gpu) REGISTRY BASE_IMAGE"
	@echo "           base ERA=paper: PYTHON_SOURCE (python.org's Python-3.6.15.tar.xz/.tgz) or PYTHON_STANDIN (another copy)"
	@echo "           GPUS=$(GPUS) (all|0,2: one run per GPU at a time) PARALLEL=$(PARALLEL) (CPU runs at once)"
	@echo "           container runs: MEMORY (e.g. 16g; default the host's less a tenth) PIDS (default 4096)"
	@echo "           EXECUTOR=$(EXECUTOR) (local|slurm|kubernetes) WAIT=$(WAIT) SLURM_PARTITION SLURM_ACCOUNT SLURM_EXCLUSIVE SLURM_OPTS"
	@echo "           kubernetes: K8S_NAMESPACE K8S_DATA_CLAIM K8S_RESULTS_CLAIM (RUNNER=docker, images pushed)"
	@echo "           run: WORKLOADS DEVICE; download: DATASETS=\"$(DATASETS)\""

# The host tools environment (download, campaigns, analysis, tests), built once from its lock.
$(HOST_ENV)/.complete: images/host/requirements.txt
	@echo "creating the host environment $(HOST_ENV) (first use, about a minute) ..."
	@rm -rf $(HOST_ENV)
	$(PYTHON) -m venv $(HOST_ENV)
	$(HOST_ENV)/bin/python -m pip install -q --require-hashes --no-deps -r $<
	@touch $@

# With RUNNER=system: only check that $(PYTHON) has what the host stages need (campaign/hostcheck.py).
host: $(if $(filter system,$(RUNNER)),,$(HOST_ENV)/.complete)
	@$(if $(filter system,$(RUNNER)),$(PYTHON) -m campaign.hostcheck,:)

envs: host ## build (or check) the local runner's environment of each of FRAMEWORKS for ERA
	$(HOSTPY) -m images.envs --era "$(ERA)" $(FRAMEWORKS)

demo: FRAMEWORKS = pytorch keras
demo: PROFILE = quick
demo: REPEATS = 2
demo: DATA = synthetic
# The quick look runs in virtual environments: no image builds, no registry (RUNNER=docker to change).
demo: RUNNER = local
# demo is an experiment of studies/dlbench/study.toml: its recipe is every experiment's (below), with these settings.
demo: host ## the main job on built-in synthetic data: CPU, quick profile, 2 repeats, no network

# Test tiers (docs/testing.md): lint (ruff and the payload's CPython 3.6 gate), the fast tests (no
# framework training, no image build; a few minutes) and the slow ones (real training in every
# framework environment, Docker images and containers, the demo end to end); the paper-image tests
# (marked paper_image, slow too: the paper-era modules trained in their CPython 3.6 images) are their own
# stage, test-paper, after those images are built. Each stage prints its wall time.
test: host ## lint and the fast tests (CI=true or 'make test-all' adds the slow ones)
	@t=$$SECONDS; $(MAKE) --no-print-directory lint; echo "stage lint: $$((SECONDS - t)) s"
	@t=$$SECONDS; $(HOSTPY) -m pytest -q -m "not slow" tests; echo "stage fast tests: $$((SECONDS - t)) s"
	@$(if $(filter true,$(CI)),$(MAKE) --no-print-directory test-slow,true)

test-slow: host envs ## the slow tests only (after building or checking the framework environments)
	@t=$$SECONDS; $(HOSTPY) -m pytest -q -m "slow and not paper_image" --durations=25 tests; \
	  echo "stage slow tests: $$((SECONDS - t)) s"

# The paper images build on the era's own base (dlrepro/base:paper from make base ERA=paper, else the
# Dockerfile's registry image); PyTorch's needs torch 0.4.1 from PyTorch's archive and is not among them.
PAPER_TEST_FRAMEWORKS = tensorflow keras mxnet chainer theano
test-paper: host ## the paper-image tests (pytest -m paper_image), after building or reusing the paper images
	$(MAKE) --no-print-directory images ERA=paper FRAMEWORKS="$(PAPER_TEST_FRAMEWORKS)"
	@t=$$SECONDS; $(HOSTPY) -m pytest -q -m paper_image --durations=25 tests; \
	  echo "stage paper-image tests: $$((SECONDS - t)) s"

test-all: host ## every test, slow ones included
	$(HOSTPY) -m pytest -q tests

lint: host ## ruff, and the CPython 3.6 gate on the in-image payload and the paper tests' in-image script (images/compat.py)
	$(HOSTPY) -m ruff check .
	$(HOSTPY) -m images.compat
	$(HOSTPY) -m images.compat tests/bench/frameworks/paper/inimage.py

LOCK_ENV := .venv/lock
LOCK_FLAGS := --generate-hashes --allow-unsafe --no-emit-find-links --no-emit-index-url --strip-extras
# GPU locks name CUDA wheels of GBs: they are resolved from the wheels' metadata alone (fast-deps reads
# it with HTTP range requests; pip >= 25.3 fetches nothing more in a resolve), wheels only, from the
# index (a find-links folder holding a CPU torch would shadow the CUDA build: pip drops an empty
# PIP_FIND_LINKS, so a blank clears the configured ones), and hashed by
# `images.lockfile hash` from the index's file listing (pip-compile --generate-hashes downloads files).
GPU_LOCK_ENV := PIP_ONLY_BINARY=:all: PIP_USE_FEATURE=fast-deps PIP_FIND_LINKS=' '
GPU_LOCK_FLAGS := --allow-unsafe --no-emit-find-links --no-emit-index-url --no-emit-options --strip-extras
lock: ## re-resolve every images/*/*/requirements.in (-gpu.in) and paper pins.in (pins-gpu.in) into hash-locked .txt
	@rm -rf $(LOCK_ENV) && $(PYTHON) -m venv $(LOCK_ENV) && $(LOCK_ENV)/bin/python -m pip install -q "pip>=25.3" pip-tools
	@# A folder with build-requirements.in (an sdist built at install time, e.g. chainer) locks its build
	@# tools first and resolves without build isolation, with those tools installed.
	@# Paper-era folders have no requirements.in: images.lockfile resolves their pins.in and pins-gpu.in
	@# for CPython 3.6 (wheels' metadata only) in a scratch environment with the hash-locked pip of
	@# images/common/lock-tools.txt, and python -m images.indexcheck checks the result against the index.
	@export CUSTOM_COMPILE_COMMAND="make lock"; for dir in images/*/*/; do \
	  [ -f "$${dir}requirements.in" ] || continue; \
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
	  [ -f "$${dir}requirements-gpu.in" ] || continue; \
	  echo "locking $${dir}requirements-gpu.in (metadata only)"; \
	  $(GPU_LOCK_ENV) $(LOCK_ENV)/bin/pip-compile -q $(GPU_LOCK_FLAGS) \
	    --output-file "$${dir}requirements-gpu.txt" "$${dir}requirements-gpu.in" && \
	  $(GPU_LOCK_ENV) $(LOCK_ENV)/bin/python -m images.lockfile hash "$${dir}requirements-gpu.txt" || exit 1; \
	done
	$(MAKE) --no-print-directory host
	$(HOSTPY) -m images.lockfile write
	$(HOSTPY) -m images.indexcheck

verify-lock: host ## check versions.lock against the locks, and pip freeze in each built image against it
	$(HOSTPY) -m images.lockfile verify $(if $(filter docker,$(RUNNER)),--images,--images-if-engine) \
	  --frameworks "$(FRAMEWORKS)" --era "$(ERA)" --variant "$(VARIANT)"

base: $(if $(filter paper,$(ERA)),host) ## make a base image locally, no registry: Debian 12; ERA=paper: Debian 11 + CPython 3.6.15 built here
	$(if $(filter paper,$(ERA)),HOSTPY=$(HOSTPY) PYTHON_SOURCE="$(PYTHON_SOURCE)" PYTHON_STANDIN="$(PYTHON_STANDIN)" \
	  images/base/make-paper-base.sh,images/base/make-base.sh $(or $(BASE_IMAGE),dlrepro/base:bookworm))

images: host ## build (or reuse) the images of FRAMEWORKS for ERA and VARIANT
	$(HOSTPY) -m images build --frameworks "$(FRAMEWORKS)" --era "$(ERA)" --variant "$(VARIANT)"

push: host ## push the images of FRAMEWORKS to REGISTRY (tags keep their content hash)
	$(HOSTPY) -m images push --frameworks "$(FRAMEWORKS)" --era "$(ERA)" --variant "$(VARIANT)" \
	  --registry "$(REGISTRY)"

pull: host ## pull the images of FRAMEWORKS from REGISTRY instead of building them
	$(HOSTPY) -m images pull --frameworks "$(FRAMEWORKS)" --era "$(ERA)" --variant "$(VARIANT)" \
	  --registry "$(REGISTRY)"

slurm-up: ## start a one-node Slurm cluster on this machine (root; Debian's slurm-wlm and munge) to try EXECUTOR=slurm
	campaign/executors/slurm-one-node.sh

slurm-down: ## stop the one-node Slurm cluster slurm-up started
	campaign/executors/slurm-one-node.sh stop

bench-overhead: host ## the monitor's overhead, own cost and cadence; docker vs local runner (10 min or more)
	$(HOSTPY) -m data synthetic --datasets imdb
	$(HOSTPY) -m campaign.overhead $(if $(PAIRS),--pairs "$(PAIRS)") $(if $(THREADS),--threads "$(THREADS)") \
	  $(if $(RUNNER_PAIRS),--runner-pairs "$(RUNNER_PAIRS)") $(if $(MIN_SECONDS),--min-seconds "$(MIN_SECONDS)")

bench-lstm: PROFILE = bench
bench-lstm: REPEATS = 1
bench-lstm: BENCH_CAMPAIGN := bench-lstm-imdb-$(shell date -u +%Y%m%dT%H%M%SZ)
bench-lstm: host ## lstm-imdb seconds per epoch of every framework side by side, measured in one fresh campaign
	@$(HOSTPY) -m campaign check --workloads lstm-imdb --device cpu --campaign "$(BENCH_CAMPAIGN)" $(RUN_ARGS)
	@if [ "$(DATA)" = real ]; then $(HOSTPY) -m data download --datasets imdb $(if $(MIRROR),--mirror "$(MIRROR)"); \
	else $(HOSTPY) -m data synthetic --datasets imdb; fi
	$(HOSTPY) -m campaign run --workloads lstm-imdb --device cpu --campaign "$(BENCH_CAMPAIGN)" $(RUN_ARGS)
	$(HOSTPY) -m campaign.epochtimes --campaign "results/$(BENCH_CAMPAIGN)" --workload lstm-imdb

download: host ## download, verify and prepare DATASETS (MIRROR=URL to use your own copies first)
	$(HOSTPY) -m data download --datasets $(DATASETS) $(if $(MIRROR),--mirror "$(MIRROR)")

run: host ## run WORKLOADS on DEVICE for FRAMEWORKS into results/$(CAMPAIGN)
	$(HOSTPY) -m campaign run --workloads "$(WORKLOADS)" --device "$(DEVICE)" \
	  --campaign "$(or $(CAMPAIGN),adhoc)" $(RUN_ARGS)

analyze: host ## turn results/$(CAMPAIGN) into reports/$(CAMPAIGN)
	@$(HOSTPY) -m campaign check --campaign "$(or $(CAMPAIGN),demo)"
	$(HOSTPY) -m analysis --campaign "results/$(or $(CAMPAIGN),demo)" --out "reports/$(or $(CAMPAIGN),demo)"

report: analyze

# A study's CPU (GPU) experiments in one campaign and one report, one after the other (targets.mk gives each of
# STUDY_TARGETS its STUDY_EXPERIMENTS). A GPU one stops at once without a GPU, naming STUDY_INSTEAD, the study's
# CPU target; one with no experiment (a study without a GPU experiment) stops in one line, STUDY_NONE.
$(STUDY_TARGETS):
	@$(if $(STUDY_NONE),echo "error: $(STUDY_NONE)" >&2; exit 2,true)
	@$(if $(filter $(GPU_STUDY_TARGETS),$@),$(PYTHON) -m campaign check-gpu $(firstword $(STUDY_EXPERIMENTS)) \
	  --instead $(STUDY_INSTEAD),true)
	@for target in $(STUDY_EXPERIMENTS); do \
	  $(MAKE) --no-print-directory $$target CAMPAIGN="$(or $(CAMPAIGN),$@)" || exit $$?; done

# Every experiment (CAMPAIGN_TARGETS): data, runs, report. A target whose experiment runs on the GPU (GPU_TARGETS)
# stops at once without one, naming the CPU target its study file gives it (`cpu = ...`; check-gpu needs only the
# standard library, so it runs before the host environment is built). `campaign check` then validates every setting
# (CAMPAIGN, the numbers, FRAMEWORKS, PROFILE, ERA, WORKLOADS, ...) before any data is downloaded or environment
# built. WORKLOADS=... runs those instead of the target's (e.g. make cpu-cnn WORKLOADS=cnn-svhn).
$(CAMPAIGN_TARGETS):
	@$(if $(filter $(GPU_TARGETS),$@),$(PYTHON) -m campaign check-gpu $@,true)
	@$(MAKE) --no-print-directory host
	@$(HOSTPY) -m campaign check --target $@ --workloads "$(WORKLOADS)" --campaign "$(or $(CAMPAIGN),$@)" $(RUN_ARGS)
	@if [ "$(DATA)" = real ]; then \
	  $(HOSTPY) -m data download --datasets $$($(HOSTPY) -m campaign datasets --target $@ --workloads "$(WORKLOADS)") \
	    $(if $(MIRROR),--mirror "$(MIRROR)"); \
	else \
	  $(HOSTPY) -m data synthetic --datasets $$($(HOSTPY) -m campaign datasets --target $@ --workloads "$(WORKLOADS)"); \
	fi
	@rc=0; $(HOSTPY) -m campaign run --target $@ --workloads "$(WORKLOADS)" --campaign "$(or $(CAMPAIGN),$@)" \
	  $(RUN_ARGS) || rc=$$?; \
	if [ $$rc -eq $(QUEUED_EXIT) ]; then echo "report not made yet: runs are still queued"; exit 0; fi; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; \
	$(HOSTPY) -m analysis --campaign "results/$(or $(CAMPAIGN),$@)" --out "reports/$(or $(CAMPAIGN),$@)"
