# command/: the dlhook command ($(BUILD)/dlhook), in layers (scripts/check-layering):
#   main.c    dispatches to the subcommands
#   cmd/      one file per subcommand (record, ctl, dump, stats, export, diff, merge, report,
#             symbolize)
#   export/   the exporters, one file per format, and what they share (links, the flame tree)
#   lib/      reading traces (trace.c, symbols.c, the streaming scan), the option parser every
#             command uses (opts.c: options, --help and manual pages from one table), helpers,
#             and the analyses that stats, report and the exporters share (library calls,
#             memory, ranks, steps, host samples)
CMD_SRCS := $(wildcard command/*.c command/cmd/*.c command/export/*.c command/lib/*.c command/lib/findings/*.c)
CMD_OBJS := $(patsubst command/%.c,$(BUILD)/command/%.o,$(CMD_SRCS))
CMD_CFLAGS = $(CFLAGS) $(COMMON_CFLAGS) $(FORMAT_CFLAGS) -Icommand/lib -Icommand/export -I$(BUILD)/command

$(BUILD)/command/%.o: command/%.c $(BUILD)/format/dlhook.pb-c.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CMD_CFLAGS) -MMD -MP -c -o $@ $<

# unwind/elfsym.c (the sorted symbol index) is compiled into the command too: `dlhook symbolize`
# resolves with the same code as the recorder, with libelf and libdw linked directly.
CMD_SHARED_OBJS := $(BUILD)/command/shared/elfsym.o
$(BUILD)/command/shared/%.o: unwind/%.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Iunwind -MMD -MP -c -o $@ $<
CMD_OBJS += $(CMD_SHARED_OBJS) $(COMMON_OBJS)
CMD_SHARED_SRCS := unwind/elfsym.c $(COMMON_SRCS)
CMD_LIBS := -ldw -lelf -lisal
$(BUILD)/command/cmd/symbolize.o: CFLAGS += -Iunwind

$(BUILD)/dlhook: $(CMD_OBJS) $(FORMAT_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) -o $@.tmp $^ $(LDFLAGS) $(FORMAT_LIBS) $(CMD_LIBS) -lz -lstdc++ && mv -f $@.tmp $@

# Test helper (not a test itself): writes traces with known contents for tests/cli/.
$(BUILD)/tests/bin/mktrace: command/tests/mktrace.c format/tests/fuzzgen.h $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -Iformat/tests -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)

# Unit test of command/lib/names.c (tests/cli/t_names.sh runs it).
$(BUILD)/tests/bin/names_test: command/tests/names_test.c command/lib/names.c command/lib/rd.h | $(FORMAT_OBJS) $(CMD_PROTO_H)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CMD_CFLAGS) -o $@ command/tests/names_test.c command/lib/names.c -lstdc++
TEST_DEPS += $(BUILD)/tests/bin/names_test

# Unit test of the sorts in command/lib/util.c (tests/cli/t_sort.sh runs it).
$(BUILD)/tests/bin/sort_test: command/tests/sort_test.c command/lib/util.c command/lib/rd.h common/dlh_msg.c | $(FORMAT_OBJS) $(CMD_PROTO_H)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CMD_CFLAGS) -o $@ command/tests/sort_test.c command/lib/util.c common/dlh_msg.c $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/sort_test

dlhook: $(BUILD)/dlhook
.PHONY: dlhook
ALL_TARGETS += $(BUILD)/dlhook
TEST_DEPS += $(BUILD)/dlhook $(BUILD)/tests/bin/mktrace

# ---- dlhook export: own subsets of the viewers' .proto files (pprof, Perfetto, xplane) ----
CMD_PROTOS   := $(wildcard command/proto/*.proto)
CMD_PROTO_C  := $(patsubst command/proto/%.proto,$(BUILD)/command/%.pb-c.c,$(CMD_PROTOS))
CMD_PROTO_H  := $(CMD_PROTO_C:.c=.h)
CMD_PROTO_O  := $(CMD_PROTO_C:.c=.o)
$(BUILD)/command/%.pb-c.c $(BUILD)/command/%.pb-c.h &: command/proto/%.proto | $(DEPS_STAMP)
	$(Q)mkdir -p $(BUILD)/command
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=command/proto --c_out=$(BUILD)/command $<
$(BUILD)/command/%.pb-c.o: $(BUILD)/command/%.pb-c.c $(BUILD)/command/%.pb-c.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -I$(BUILD)/command -MMD -MP -c -o $@ $<
$(CMD_OBJS): $(CMD_PROTO_H)
$(BUILD)/dlhook: $(CMD_PROTO_O)

# Test and bench helper: synthetic training-like traces (stacks, GPU records, NVTX steps, ranks).
$(BUILD)/tests/bin/gentrace: command/tests/gentrace.c $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/gentrace
BENCH_DEPS += $(BUILD)/dlhook $(BUILD)/tests/bin/gentrace

# Test and bench helper: N rank traces of one job from recordings of two ranks (tables at scale).
$(BUILD)/tests/bin/ranksgen: command/tests/ranksgen.c $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/ranksgen
BENCH_DEPS += $(BUILD)/tests/bin/ranksgen

# `make regen`: also the CUPTI callback ids of the Kineto export (command/export/cupti_cbids.c).
regen: regen-cbids
regen-cbids:
	$(Q)$(PYTHON) scripts/gen_cbids.py --cuda-home $(CUDA_HOME)
.PHONY: regen-cbids

# Test helper: a trace with host samples of known contents (tests/cli/t_cli_samples.sh).
$(BUILD)/tests/bin/mksamples: command/tests/mksamples.c $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/mksamples

# Test helper: traces built as an attacker would (tests/hostile/).
$(BUILD)/tests/bin/hostile: command/tests/hostile.c $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)
TEST_DEPS += $(BUILD)/tests/bin/hostile

# The script of `dlhook report` pages: command/report.js as a C string (report_js.h).
$(BUILD)/command/report_js.h: command/report.js
	$(Q)mkdir -p $(@D)
	@echo "  GEN     $@"
	$(Q)awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print "\"" $$0 "\\n\"" }' $< >$@.tmp && mv $@.tmp $@
$(BUILD)/command/cmd/report.o: $(BUILD)/command/report_js.h
# and the script of its memory section (command/report_mem.js).
$(BUILD)/command/report_mem_js.h: command/report_mem.js
	$(Q)mkdir -p $(@D)
	@echo "  GEN     $@"
	$(Q)awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); print "\"" $$0 "\\n\"" }' $< >$@.tmp && mv $@.tmp $@
$(BUILD)/command/cmd/report.o: $(BUILD)/command/report_mem_js.h

# `make man`: the manual pages in docs/man/ (committed, installed by `make install`), written by
# `dlhook help --man` from each command's option table and texts; tests/cli/t_man_pages.sh fails
# when they are out of step with the command.
MAN_PAGES := $(wildcard docs/man/*.1)
man: $(BUILD)/dlhook
	$(Q)mkdir -p docs/man
	$(Q)$(BUILD)/dlhook help --man dlhook >docs/man/dlhook.1
	$(Q)for c in $$($(BUILD)/dlhook help --commands); do \
	  $(BUILD)/dlhook help --man $$c >docs/man/dlhook-$$c.1 || exit 1; done
	@echo "  MAN     docs/man/*.1"
.PHONY: man
