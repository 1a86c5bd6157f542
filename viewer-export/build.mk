# viewer-export: the dlhook command ($(BUILD)/dlhook), one file per subcommand.
VX_SRCS := $(wildcard viewer-export/*.c)
VX_OBJS := $(patsubst viewer-export/%.c,$(BUILD)/viewer-export/%.o,$(VX_SRCS))

$(BUILD)/viewer-export/%.o: viewer-export/%.c $(BUILD)/format/dlhook.pb-c.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -Iviewer-export -MMD -MP -c -o $@ $<

$(BUILD)/dlhook: $(VX_OBJS) $(FORMAT_OBJS)
	@echo "  LD      $@"
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(FORMAT_LIBS) -lstdc++

# Test helper (not a test itself): writes traces with known contents for tests/cli/.
$(BUILD)/tests/bin/mktrace: viewer-export/tests/mktrace.c format/tests/fuzzgen.h $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -Iformat/tests -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)

dlhook: $(BUILD)/dlhook
.PHONY: dlhook
ALL_TARGETS += $(BUILD)/dlhook
TEST_DEPS += $(BUILD)/dlhook $(BUILD)/tests/bin/mktrace
