# dlhook — top-level build. `make help` lists the targets.
# Each folder contributes its rules through its own build.mk, included below.

BUILD     ?= build
ifdef O
BUILD     := $(O)
endif
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
MANDIR    ?= $(PREFIX)/share/man/man1
DESTDIR   ?=
CC        ?= cc
CXX       ?= c++
NVCC      ?= $(CUDA_HOME)/bin/nvcc
PYTHON    ?= python3
VERSION   := 0.1.0

# one job per CPU unless -j is given (make -j1 for a sequential build); not with clean, so that
# `make clean all` still cleans first
ifeq ($(filter -j%,$(MAKEFLAGS))$(filter clean,$(MAKECMDGOALS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

CUDA_INC  := $(CUDA_HOME)/include
CUDA_LIB  := $(CUDA_HOME)/lib64

WARN      := -Wall -Wextra -Wno-unused-parameter -Wno-deprecated-declarations
OPT       ?= -O2 -g
CFLAGS_COMMON := $(OPT) $(WARN) -std=gnu11 -D_GNU_SOURCE -fno-strict-aliasing -DDLHOOK_VERSION=\"$(VERSION)\"
SAN_FLAGS :=
ifeq ($(ASAN),1)
SAN_FLAGS += -fsanitize=address -fno-omit-frame-pointer
endif
ifeq ($(UBSAN),1)
SAN_FLAGS += -fsanitize=undefined -fno-sanitize-recover=undefined
endif
ifeq ($(TSAN),1)
SAN_FLAGS += -fsanitize=thread
endif
CFLAGS    := $(CFLAGS_COMMON) $(SAN_FLAGS) $(EXTRA_CFLAGS)
LDFLAGS   := $(SAN_FLAGS) $(EXTRA_LDFLAGS)

# Everything `make` builds; build.mk files append to these.
ALL_TARGETS :=
TEST_DEPS   :=
BENCH_DEPS  :=
CLEAN_EXTRA :=

.PHONY: all test bench install uninstall clean help deps test-tools bench-tools fuzz-tools venv regen check-cuda demo
all:

# ---- dependencies ----
# `make` installs nothing: scripts/check-deps (once per build dir) names whatever the build lacks
# and the command that installs it. `make deps` installs the build's Debian packages
# (scripts/bootstrap-deps build). The goals below install what they need themselves, before
# anything is built: demo (the build's packages), test (+ the test tools and the Python venv of
# the conformance tests), bench (+ uftrace), fuzz (+ clang); each is a no-op once installed.
DEPS_STAMP := $(BUILD)/.deps-ok
$(DEPS_STAMP): scripts/check-deps
	$(Q)mkdir -p $(BUILD)
	$(Q)CC="$(CC)" CXX="$(CXX)" CUDA_HOME="$(CUDA_HOME)" PROTOC_C="$(PROTOC_C)" sh scripts/check-deps
	$(Q)touch $@
deps:
	$(Q)sh scripts/bootstrap-deps build
ifneq ($(filter deps demo test test-tools venv bench bench-tools fuzz fuzz-tools,$(MAKECMDGOALS)),)
$(DEPS_STAMP): | deps
endif
# the test suite's tools (protoc, go, xmllint, mpirun, chromium, python3-venv), then the venv
# with the Python packages of scripts/py-requirements/ ($(BUILD)/venv, scripts/bootstrap-py)
test-tools: | deps
	$(Q)sh scripts/bootstrap-deps test
venv: | test-tools
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) sh scripts/bootstrap-py || \
	  echo "make: warning: $(BUILD)/venv is incomplete (above); the tests that need it skip" >&2
bench-tools: | deps
	$(Q)sh scripts/bootstrap-deps bench
fuzz-tools: | deps
	$(Q)sh scripts/bootstrap-deps fuzz

check-cuda:
	$(Q)test -f "$(CUDA_INC)/cuda_runtime_api.h" || { echo "error: CUDA toolkit not found at CUDA_HOME=$(CUDA_HOME) (need include/cuda_runtime_api.h); set CUDA_HOME" >&2; exit 1; }
CUDA_STAMP := $(BUILD)/.cuda-ok
$(CUDA_STAMP): | $(DEPS_STAMP)
	$(Q)test -f "$(CUDA_INC)/cuda_runtime_api.h" || { echo "error: CUDA toolkit not found at CUDA_HOME=$(CUDA_HOME) (need include/cuda_runtime_api.h); set CUDA_HOME" >&2; exit 1; }
	$(Q)touch $@

include common/build.mk
include format/build.mk
include preload/build.mk
include hooks/build.mk
include unwind/build.mk
include command/build.mk
include tests/simcuda/build.mk
include examples/build.mk
include tests/build.mk
include tests/host/build.mk
include tests/sample/build.mk
include tests/reliability/build.mk
include tests/attach/build.mk
include bench/build.mk
include scripts/bundle.mk

all: $(ALL_TARGETS)

# TESTS=PATTERN runs only the tests whose path matches (tests/run-tests PATTERN); TEST_JOBS,
# TEST_TIMEOUT from the environment
test: all $(TEST_DEPS) test-tools venv
	$(Q)BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) sh tests/run-tests "$(TESTS)"

# Everything the tests need, without running them (.ci/run-sanitizers builds with this); here,
# after every build.mk has added to TEST_DEPS
test-deps: all $(TEST_DEPS)
.PHONY: test-deps

bench: all $(BENCH_DEPS) bench-tools
	$(Q)BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) sh bench/run-bench

# The main job on the bundled example: record it on the simulated CUDA stack, summarise, export.
DEMO := $(BUILD)/demo
demo: all
	$(Q)rm -rf $(DEMO)
	$(BUILD)/dlhook record --sim -o $(DEMO) -- $(BUILD)/examples/train --steps 20
	$(BUILD)/dlhook stats $(DEMO)/*.dlh
	$(BUILD)/dlhook dump $(DEMO)/*.dlh > $(DEMO)/trace.jsonl
	$(BUILD)/dlhook export --format kineto -o $(DEMO)/kineto $(DEMO)/*.dlh
	$(BUILD)/dlhook export --format perfetto -o $(DEMO)/train.pftrace $(DEMO)/*.dlh
	$(BUILD)/dlhook export --format svg -o $(DEMO)/gpu-flame.svg $(DEMO)/*.dlh
	@echo "demo: trace in $(DEMO)/; JSON events: trace.jsonl; Kineto/HTA: kineto/;"
	@echo "      Perfetto: train.pftrace (ui.perfetto.dev); GPU-time flame graph: gpu-flame.svg"

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)
	install -m 0755 $(BUILD)/libdlhook.so $(DESTDIR)$(PREFIX)/lib/libdlhook.so
	install -m 0755 $(BUILD)/dlhook $(DESTDIR)$(PREFIX)/bin/dlhook
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)
	install -d $(DESTDIR)$(PREFIX)/share/dlhook/python/dlhook/sql
	install -m 0644 command/python/dlhook/*.py $(DESTDIR)$(PREFIX)/share/dlhook/python/dlhook
	install -m 0644 command/python/dlhook/sql/*.sql $(DESTDIR)$(PREFIX)/share/dlhook/python/dlhook/sql

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libdlhook.so $(DESTDIR)$(PREFIX)/bin/dlhook
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/,$(notdir $(MAN_PAGES)))
	rm -rf $(DESTDIR)$(PREFIX)/share/dlhook/python

clean:
	rm -rf $(BUILD) $(CLEAN_EXTRA)

help:
	@echo "dlhook $(VERSION) — targets:"
	@echo "  make             build $(BUILD)/libdlhook.so, $(BUILD)/dlhook, the simulated CUDA stack and examples"
	@echo "                   (installs nothing: a missing dependency stops it with the command that installs it)"
	@echo "  make demo        install the build's packages, build, record the bundled example on the simulator, summarise"
	@echo "  make test        install the test tools and $(BUILD)/venv, build, run the whole suite"
	@echo "                   (closing line 'N passed, N failed, N skipped'; TESTS=pattern, TEST_JOBS=n, TEST_TIMEOUT=s)"
	@echo "  make test-deps   build everything the tests need, without running them or installing anything"
	@echo "  make bench       install uftrace, run the overhead benchmarks"
	@echo "  make fuzz        install clang, run libFuzzer on the trace reader and exporters (FUZZ_SECONDS=60)"
	@echo "  make install     install lib/libdlhook.so, bin/dlhook and the manual pages under DESTDIR/PREFIX ($(PREFIX))"
	@echo "  make uninstall   remove them"
	@echo "  make deps        install the missing Debian packages the build needs (scripts/bootstrap-deps; root or sudo)"
	@echo "  make test-tools  install the test suite's Debian packages (go, Open MPI, protoc, xmllint, chromium, a JDK)"
	@echo "  make venv        create $(BUILD)/venv with the conformance tests' Python packages (scripts/bootstrap-py)"
	@echo "  make bench-tools install uftrace (the benchmarks' baseline)"
	@echo "  make fuzz-tools  install clang and its sanitizer runtimes"
	@echo "  make check-cuda  check that the CUDA toolkit is at CUDA_HOME ($(CUDA_HOME))"
	@echo "  make gpu-bundle  $(BUILD)/gpu-bundle(.tar.gz): dlhook with static deps, examples, tests, gpu-acceptance"
	@echo "  make wheel       dist/dlhook-*.whl: the Python package with the bundle's dlhook and libdlhook.so (pip install)"
	@echo "                   (downloads and builds libunwind and elfutils once: $(BUILD)/deps)"
	@echo "  make static-deps only those static archives ($(BUILD)/deps, scripts/build-static-deps)"
	@echo "  make regen       regenerate the API wrappers in hooks/ and the simulator's stubs from the CUDA headers"
	@echo "  make regen-hooks, make regen-simcuda   only one of the two"
	@echo "  make settings-doc  rewrite the settings table of docs/settings.md from preload/dlh_settings.def"
	@echo "  make man         rewrite docs/man/*.1 from the commands' option tables (dlhook help --man)"
	@echo "  scripts/check-layering   the import graph against docs/LAYOUT.md's table (also in make test)"
	@echo "  scripts/check-fnlen      no hand-written function longer than 150 lines (also in make test)"
	@echo "  make dlhook, make format, make hooks, make simcuda   build only that part"
	@echo "  make clean       remove $(BUILD)/ (the venv and the static deps too)"
	@echo "  make help        this list"
	@echo "switches: O=dir (build dir), V=1 (verbose), ASAN=1, UBSAN=1, TSAN=1, CUDA_HOME=path, PREFIX=, DESTDIR=, PYTHON="
	@echo "CI (.ci/run): make deps, make, make gpu-bundle, make test, then the sanitizer runs (.ci/run-sanitizers)"

# header dependencies
-include $(shell find $(BUILD) -name '*.d' -type f -not -path '*/venv/*' 2>/dev/null)

# The link lines of the two products, for scripts/check-layering (tests/cli/t_layering.sh):
# one line per product, "NAME: objects...". Keep in step with preload/build.mk and
# command/build.mk.
print-link-units:
	@echo "libdlhook.so: $(PRELOAD_OBJS) $(HOOKS_OBJS) $(UNWIND_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS)"
	@echo "dlhook: $(CMD_OBJS) $(CMD_PROTO_O) $(FORMAT_OBJS)"
.PHONY: print-link-units
