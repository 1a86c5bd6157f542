# viewer-export: the dlhook command ($(BUILD)/dlhook), one file per subcommand.
VX_SRCS := $(wildcard viewer-export/*.c)
VX_OBJS := $(patsubst viewer-export/%.c,$(BUILD)/viewer-export/%.o,$(VX_SRCS))

$(BUILD)/viewer-export/%.o: viewer-export/%.c $(BUILD)/format/dlhook.pb-c.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(COMMON_CFLAGS) $(FORMAT_CFLAGS) -Iviewer-export -I$(BUILD)/viewer-export -MMD -MP -c -o $@ $<

# unwind/elfsym.c (the sorted symbol index) is compiled into the command too: `dlhook symbolize`
# resolves with the same code as the recorder, with libelf and libdw linked directly.
VX_SHARED_OBJS := $(BUILD)/viewer-export/shared/elfsym.o
$(BUILD)/viewer-export/shared/%.o: unwind/%.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Iunwind -MMD -MP -c -o $@ $<
VX_OBJS += $(VX_SHARED_OBJS) $(COMMON_OBJS)
VX_SHARED_SRCS := unwind/elfsym.c $(COMMON_SRCS)
VX_LIBS := -ldw -lelf
$(BUILD)/viewer-export/symbolize.o: CFLAGS += -Iunwind

$(BUILD)/dlhook: $(VX_OBJS) $(FORMAT_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(FORMAT_LIBS) $(VX_LIBS) -lz -lstdc++

# Test helper (not a test itself): writes traces with known contents for tests/cli/.
$(BUILD)/tests/bin/mktrace: viewer-export/tests/mktrace.c format/tests/fuzzgen.h $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -Iformat/tests -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)

dlhook: $(BUILD)/dlhook
.PHONY: dlhook
ALL_TARGETS += $(BUILD)/dlhook
TEST_DEPS += $(BUILD)/dlhook $(BUILD)/tests/bin/mktrace

# ---- dlhook export: own subsets of the viewers' .proto files (pprof, Perfetto, xplane) ----
VX_PROTOS   := $(wildcard viewer-export/proto/*.proto)
VX_PROTO_C  := $(patsubst viewer-export/proto/%.proto,$(BUILD)/viewer-export/%.pb-c.c,$(VX_PROTOS))
VX_PROTO_H  := $(VX_PROTO_C:.c=.h)
VX_PROTO_O  := $(VX_PROTO_C:.c=.o)
$(BUILD)/viewer-export/%.pb-c.c $(BUILD)/viewer-export/%.pb-c.h &: viewer-export/proto/%.proto | $(DEPS_STAMP)
	$(Q)mkdir -p $(BUILD)/viewer-export
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=viewer-export/proto --c_out=$(BUILD)/viewer-export $<
$(BUILD)/viewer-export/%.pb-c.o: $(BUILD)/viewer-export/%.pb-c.c $(BUILD)/viewer-export/%.pb-c.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -I$(BUILD)/viewer-export -MMD -MP -c -o $@ $<
$(VX_OBJS): $(VX_PROTO_H)
$(BUILD)/dlhook: $(VX_PROTO_O)

# Test and bench helper: synthetic training-like traces (stacks, GPU records, NVTX steps, ranks).
$(BUILD)/tests/bin/gentrace: viewer-export/tests/gentrace.c $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/gentrace
BENCH_DEPS += $(BUILD)/dlhook $(BUILD)/tests/bin/gentrace

# `make regen`: also the CUPTI callback ids of the Kineto export (viewer-export/cupti_cbids.c).
regen: regen-cbids
regen-cbids:
	$(Q)$(PYTHON) scripts/gen_cbids.py --cuda-home $(CUDA_HOME)
.PHONY: regen-cbids

# Test helper: traces built as an attacker would (tests/hostile/).
$(BUILD)/tests/bin/hostile: viewer-export/tests/hostile.c $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/hostile

# The script of `dlhook report` pages: viewer-export/report.js as a C string (report_js.h).
$(BUILD)/viewer-export/report_js.h: viewer-export/report.js
	$(Q)mkdir -p $(@D)
	@echo "  GEN     $@"
	$(Q)awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print "\"" $$0 "\\n\"" }' $< >$@.tmp && mv $@.tmp $@
$(BUILD)/viewer-export/report.o: $(BUILD)/viewer-export/report_js.h
