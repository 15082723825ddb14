# Two commands do everything on a fresh machine:
#   make reproduce   install what is missing, build, run every study, write CSVs/tables/figures
#   make test        install what is missing, build, run the whole test suite
# PROFILE=quick (default, < 1 hour on 2 cores), PROFILE=full (the published numbers) or a
# study's own long profile: PROFILE=passkey (claim C6: 5 seeds per variant, several hours),
# PROFILE=c4-sweep (claim C4's head-dimension sweep) or PROFILE=lm-small (claim C5's small preset);
# synthetic/README.md and lm/README.md give their measured times. PROFILE=eval re-runs every
# published C5 and C6 evaluation from the published weights (results/weights/, which `make
# weights` fills from the repository's history), trains nothing, and checks the cells against
# the published CSVs; PROFILE=passkey-sweep runs the compression sweep on
# the published C6 and C6-scale weights, and the C6 study and sweep in natural filler (lm/passkey/README.md);
# PROFILE=passkey-natural trains the natural-filler recipe (issue 46; hours per run: for a GPU);
# PROFILE=lm-compress the language-model compression study on the published C5 weights (lm/compress/README.md).
# PROFILE=paper-smoke runs the paper preset's path (SentencePiece tokenizer, FPA, FoX, Transformer,
# C5's evaluation, C6's passkey evaluation in tokens with the cache policies, lm-compress of FPA)
# at a tiny scale in about a minute on a CPU, into runs/ (lm/README.md);
# LM_CORPUS=<folder of text files> trains on a corpus of one's own instead of Brown.
# PROFILE=paper trains the paper preset (110M parameters; FPA, FoX, Transformer, 3 seeds) on every
# visible GPU in bf16 with LM_CORPUS, then C5's evaluation, C6's passkey evaluation and lm-compress
# (both float32), into results/lm-paper/<GPU>/ (lm/README.md).

PROFILE ?= quick
BUILD   ?= build
JOBS    ?= 2
export PROFILE

STUDIES := theory bench synthetic lm passkey
# Studies only a profile of their own runs (never part of quick or full).
EXTRA_STUDIES := eval passkey-sweep lm-compress
# The studies a profile runs: a study's own profile runs that study alone.
STUDY_OF_PROFILE := passkey:passkey c4-sweep:synthetic lm-small:lm lm-medium:lm passkey-scale:passkey passkey-natural:passkey eval:eval passkey-sweep:passkey-sweep lm-compress:lm-compress paper-smoke:lm paper:lm
OWN_STUDY := $(patsubst $(PROFILE):%,%,$(filter $(PROFILE):%,$(STUDY_OF_PROFILE)))
RUN_STUDIES := $(or $(OWN_STUDY),$(STUDIES))

.PHONY: all deps build test reproduce figures clean data-brown weights $(addprefix reproduce-,$(STUDIES) $(EXTRA_STUDIES))

all: build

deps:
	@scripts/install-deps.sh

# Ninja when present (it compiles the objects of dependent targets in parallel); an existing
# build directory keeps the generator it was configured with.
GENERATOR := $(if $(wildcard $(BUILD)/CMakeCache.txt),,$(if $(shell command -v ninja),-G Ninja))

build: deps
	@cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Each study is a script that skips runs whose results are complete, so an interrupted
# `make reproduce` resumes. After the kernel benchmark, which runs first and alone so that its
# timings do not include the other studies' load, the studies run JOBS at a time (two
# single-threaded trainings on this 2-core machine ran at 1.55x the steps per second of one;
# `make -jN reproduce` sets the number instead). paper_figures/reproduce_meta.py says what each
# step does, times it, and writes results/reproduce_meta.json (profile, wall times, machine) for
# REPORT.md. A failed study does not stop the others (-k) nor the report (which then says so);
# `make reproduce` still exits non-zero.
STUDY_JOBS = $(if $(filter -j% j%,$(MAKEFLAGS)),,-j$(JOBS))
META := /usr/bin/python3 paper_figures/reproduce_meta.py --state $(BUILD)/reproduce-state

reproduce: build
	@$(META) start $(words $(RUN_STUDIES))
	@status=0; \
	$(if $(filter bench,$(RUN_STUDIES)),$(MAKE) --no-print-directory reproduce-bench || status=1;) \
	FPA_PROGRESS=plain $(MAKE) --no-print-directory -k $(STUDY_JOBS) $(addprefix reproduce-,$(filter-out bench,$(RUN_STUDIES))) || status=1; \
	$(META) finish || status=1; \
	$(MAKE) --no-print-directory figures || status=1; \
	if [ $$status -eq 0 ]; then echo "reproduce: done (PROFILE=$(PROFILE)); see results/REPORT.md"; \
	else echo "reproduce: finished WITH FAILURES (PROFILE=$(PROFILE)); see above and results/REPORT.md"; fi; \
	exit $$status

reproduce-theory: build
	@$(META) step theory -- theory/reproduce.sh $(BUILD)/bin
reproduce-bench: build
	@$(META) step bench -- kernels/reproduce.sh $(BUILD)/bin
reproduce-synthetic: build
	@$(META) step synthetic -- synthetic/reproduce.sh $(BUILD)/bin
reproduce-lm: $(if $(LM_CORPUS),build,data-brown)
	@$(META) step lm -- lm/reproduce.sh $(BUILD)/bin
reproduce-passkey: data-brown
	@$(META) step passkey -- lm/passkey/reproduce.sh $(BUILD)/bin
reproduce-eval: data-brown weights
	@$(META) step eval -- scripts/eval_from_weights.sh $(BUILD)/bin
reproduce-passkey-sweep: data-brown weights
	@SWEEP_STUDIES="passkey passkey-scale natural natural-sweep" $(META) step passkey-sweep -- lm/passkey/sweep.sh $(BUILD)/bin
reproduce-lm-compress: data-brown weights
	@$(META) step lm-compress -- lm/compress/reproduce.sh $(BUILD)/bin

# The Brown corpus (language models; passkey's training mixture), fetched and checked once.
data-brown: build
	@lm/fetch_brown.sh $(BUILD)/bin data/brown

# The published weights (results/weights/README.md): main tracks their list and checksums
# (SHA256SUMS); the files live in the repository's history, out of the working tree, and are
# filled in here and checked (the studies that read them depend on this).
weights:
	@/usr/bin/python3 scripts/fetch_weights.py

# Tables, figures and results/REPORT.md from the CSVs under results/ (nothing else).
figures:
	@/usr/bin/python3 paper_figures/make_all.py

clean:
	rm -rf $(BUILD)
