# format: the trace file library (protobuf-c schema + framed zstd encoder/reader).
# Defines for other folders:
#   FORMAT_OBJS    all objects (PIC), link them into libdlhook.so or dlhook
#   FORMAT_CFLAGS  include flags for dlh_format.h and the generated dlhook.pb-c.h
#   FORMAT_LIBS    libraries to link with
# protoc-c generates $(BUILD)/format/dlhook.pb-c.[ch] from format/dlhook.proto at build time.

FORMAT_GEN    := $(BUILD)/format/dlhook.pb-c.c $(BUILD)/format/dlhook.pb-c.h
FORMAT_SRCS   := $(wildcard format/*.c)
FORMAT_OBJS   := $(BUILD)/format/dlhook.pb-c.o $(patsubst format/%.c,$(BUILD)/format/%.o,$(FORMAT_SRCS))
FORMAT_CFLAGS := -Iformat -I$(BUILD)/format
FORMAT_LIBS   := -lprotobuf-c -lzstd
PROTOC_C      ?= protoc-c

# One rule produces both files (grouped target).
$(BUILD)/format/dlhook.pb-c.c $(BUILD)/format/dlhook.pb-c.h &: format/dlhook.proto | $(DEPS_STAMP)
	$(Q)mkdir -p $(BUILD)/format
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=format --c_out=$(BUILD)/format $<

$(BUILD)/format/dlhook.pb-c.o: $(BUILD)/format/dlhook.pb-c.c $(BUILD)/format/dlhook.pb-c.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -fPIC $(FORMAT_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/format/%.o: format/%.c $(BUILD)/format/dlhook.pb-c.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -fPIC $(FORMAT_CFLAGS) -MMD -MP -c -o $@ $<

# ---- unit tests: format/tests/t_format_*.c -> $(BUILD)/tests/bin/t_format_* ----
FORMAT_TEST_SRCS := $(wildcard format/tests/t_format_*.c)
FORMAT_TESTS     := $(patsubst format/tests/%.c,$(BUILD)/tests/bin/%,$(FORMAT_TEST_SRCS))

$(BUILD)/tests/bin/t_format_%: format/tests/t_format_%.c format/tests/ftest.h format/tests/fuzzgen.h $(FORMAT_OBJS)
	$(Q)mkdir -p $(@D)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CFLAGS) $(FORMAT_CFLAGS) -Iformat/tests -MMD -MP -o $@ $< $(FORMAT_OBJS) $(LDFLAGS) $(FORMAT_LIBS)

format: $(FORMAT_OBJS)
.PHONY: format
TEST_DEPS += $(FORMAT_TESTS)
