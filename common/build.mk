# common/: what libdlhook.so and the dlhook command both use (messages, signal names, the table
# of CUDA libraries), compiled once (PIC) and linked into both. It depends on nothing of dlhook.
# Defines COMMON_OBJS (link them in) and COMMON_CFLAGS (include flags).
COMMON_SRCS   := $(wildcard common/*.c)
COMMON_OBJS   := $(patsubst common/%.c,$(BUILD)/common/%.o,$(COMMON_SRCS))
COMMON_CFLAGS := -Icommon

$(BUILD)/common/%.o: common/%.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -fPIC $(COMMON_CFLAGS) -MMD -MP -c -o $@ $<
