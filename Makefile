# dlhook — top-level build. `make help` lists the targets.
# Each folder contributes its rules through its own build.mk, included below.

BUILD     ?= build
ifdef O
BUILD     := $(O)
endif
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
DESTDIR   ?=
CC        ?= cc
CXX       ?= c++
NVCC      ?= $(CUDA_HOME)/bin/nvcc
PYTHON    ?= python3
VERSION   := 0.1.0

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

.PHONY: all test bench install uninstall clean help deps regen check-cuda demo
all:

# ---- dependencies: installed by scripts/bootstrap-deps when missing (Debian packages) ----
DEPS_STAMP := $(BUILD)/.deps-ok
$(DEPS_STAMP): scripts/bootstrap-deps
	$(Q)mkdir -p $(BUILD)
	$(Q)sh scripts/bootstrap-deps
	$(Q)touch $@
deps: $(DEPS_STAMP)

check-cuda:
	$(Q)test -f "$(CUDA_INC)/cuda_runtime_api.h" || { echo "error: CUDA toolkit not found at CUDA_HOME=$(CUDA_HOME) (need include/cuda_runtime_api.h); set CUDA_HOME" >&2; exit 1; }
CUDA_STAMP := $(BUILD)/.cuda-ok
$(CUDA_STAMP): | $(DEPS_STAMP)
	$(Q)test -f "$(CUDA_INC)/cuda_runtime_api.h" || { echo "error: CUDA toolkit not found at CUDA_HOME=$(CUDA_HOME) (need include/cuda_runtime_api.h); set CUDA_HOME" >&2; exit 1; }
	$(Q)touch $@

include format/build.mk
include preload/build.mk
include hooks/build.mk
include unwind/build.mk
include viewer-export/build.mk
include tests/simcuda/build.mk
include examples/build.mk
include tests/build.mk
include tests/host/build.mk
include tests/reliability/build.mk
include bench/build.mk
include scripts/bundle.mk

all: $(ALL_TARGETS)

test: all $(TEST_DEPS)
	$(Q)BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) sh tests/run-tests

bench: all $(BENCH_DEPS)
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
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/libdlhook.so $(DESTDIR)$(PREFIX)/lib/libdlhook.so
	install -m 0755 $(BUILD)/dlhook $(DESTDIR)$(PREFIX)/bin/dlhook

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libdlhook.so $(DESTDIR)$(PREFIX)/bin/dlhook

clean:
	rm -rf $(BUILD) $(CLEAN_EXTRA)

help:
	@echo "dlhook $(VERSION) — targets:"
	@echo "  make             build $(BUILD)/libdlhook.so, $(BUILD)/dlhook, the simulated CUDA stack and examples"
	@echo "  make demo        record the bundled example on the simulator and summarise the trace"
	@echo "  make test        build and run the whole test suite (prints 'N passed, N failed')"
	@echo "  make bench       run the overhead benchmarks"
	@echo "  make install     install lib/libdlhook.so and bin/dlhook under DESTDIR/PREFIX ($(PREFIX))"
	@echo "  make regen       regenerate the API wrappers in hooks/ from the CUDA headers"
	@echo "  make gpu-bundle  $(BUILD)/gpu-bundle(.tar.gz): dlhook with static deps, examples, tests, gpu-acceptance"
	@echo "  make deps        install missing system dependencies (Debian packages)"
	@echo "  make clean       remove $(BUILD)/"
	@echo "switches: O=dir (build dir), V=1 (verbose), ASAN=1, UBSAN=1, TSAN=1, CUDA_HOME=path, PREFIX=, DESTDIR="

# header dependencies
-include $(shell find $(BUILD) -name '*.d' -type f -not -path '*/venv/*' 2>/dev/null)
