# fuzz/: the trace reader and the exporters under damaged input.
#   $(BUILD)/fuzz/replay       make test: corpus + 10,000 deterministic mutations through the
#                              dlhook command's code (forked per run; tests/reliability/t_fuzz_replay.sh)
#   make fuzz                  libFuzzer (clang, -fsanitize=fuzzer,address) on the same code,
#                              clang installed first (make fuzz-tools); FUZZ_SECONDS (default 60)
#                              from the corpus in $(BUILD)/fuzz/corpus
FUZZ_DIR := $(BUILD)/fuzz
# dlhook's main() under another name, so the driver can call the whole command in-process
$(FUZZ_DIR)/rd_main.o: command/main.c $(BUILD)/format/dlhook.pb-c.h $(CMD_PROTO_H) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(COMMON_CFLAGS) $(FORMAT_CFLAGS) -Icommand/lib -Icommand/export -I$(BUILD)/command -Dmain=dlh_cmd_main -c -o $@ $<
FUZZ_CMD_OBJS = $(filter-out $(BUILD)/command/main.o,$(CMD_OBJS)) $(CMD_PROTO_O) $(FUZZ_DIR)/rd_main.o
$(FUZZ_DIR)/replay: fuzz/replay.c fuzz/mutate.h $(FUZZ_CMD_OBJS) $(FORMAT_OBJS)
	@mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) -o $@ fuzz/replay.c $(FUZZ_CMD_OBJS) $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS) $(CMD_LIBS) -lz -lstdc++
TEST_DEPS += $(FUZZ_DIR)/replay

# ---- libFuzzer: every source of the dlhook command rebuilt with clang and the fuzzer runtime
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=gnu11 -D_GNU_SOURCE \
                -DDLHOOK_VERSION=\"$(VERSION)\" -fno-strict-aliasing -w
FUZZ_SRCS     = $(filter-out command/main.c,$(CMD_SRCS)) $(CMD_SHARED_SRCS) $(FORMAT_SRCS) $(filter %.c,$(FORMAT_GEN)) $(CMD_PROTO_C)
$(FUZZ_DIR)/fuzz_trace: fuzz/fuzz_trace.c fuzz/mutate.h command/main.c $(FUZZ_SRCS) $(FORMAT_GEN) $(CMD_PROTO_H) | fuzz-tools
	@mkdir -p $(@D)
	@echo "  FUZZ    $@"
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $(COMMON_CFLAGS) $(FORMAT_CFLAGS) -Icommand/lib -Icommand/export -Iunwind -I$(BUILD)/command -o $@ \
	  fuzz/fuzz_trace.c $(filter %.c,$(FUZZ_SRCS)) command/main.c -Dmain=dlh_cmd_main \
	  $(FORMAT_LIBS) $(CMD_LIBS) -lz -lstdc++
fuzz: $(FUZZ_DIR)/fuzz_trace all $(TEST_DEPS)
	$(Q)BUILD=$(BUILD) sh fuzz/run-fuzz $(FUZZ_SECONDS)
.PHONY: fuzz
