# Two commands do everything on a fresh machine:
#   make reproduce   install what is missing, build, run every study, write CSVs/tables/figures
#   make test        install what is missing, build, run the whole test suite
# PROFILE=quick (default, < 1 hour on 2 cores) or PROFILE=full (the published numbers).

PROFILE ?= quick
BUILD   ?= build
JOBS    ?= 2
export PROFILE

STUDIES := theory bench synthetic lm passkey

.PHONY: all deps build test reproduce figures clean $(addprefix reproduce-,$(STUDIES))

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Each study is a script that skips runs whose results are complete, so an interrupted
# `make reproduce` resumes; `make -j reproduce` runs the studies in parallel.
reproduce: build
	@$(MAKE) --no-print-directory $(addprefix reproduce-,$(STUDIES))
	@$(MAKE) --no-print-directory figures
	@echo "reproduce: done (PROFILE=$(PROFILE)); see results/REPORT.md"

reproduce-theory: build
	@theory/reproduce.sh $(BUILD)/bin
reproduce-bench: build
	@kernels/reproduce.sh $(BUILD)/bin
reproduce-synthetic: build
	@synthetic/reproduce.sh $(BUILD)/bin
reproduce-lm: build
	@lm/reproduce.sh $(BUILD)/bin
reproduce-passkey: reproduce-lm
	@lm/passkey/reproduce.sh $(BUILD)/bin

figures:
	@/usr/bin/python3 paper_figures/make_all.py

clean:
	rm -rf $(BUILD)
