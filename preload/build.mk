# preload/: the runtime inside the profiled process, linked with hooks/, unwind/ and format/
# into $(BUILD)/libdlhook.so.
PRELOAD_SRCS := $(wildcard preload/*.c)
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(BUILD)/%.o)
PRELOAD_CFLAGS := $(CFLAGS) -fPIC -fvisibility=hidden -Ipreload -Ihooks -Iunwind $(COMMON_CFLAGS) $(FORMAT_CFLAGS) -I$(CUDA_INC)

# dlsym.c and signals.c run inside the sanitizer runtimes' own start-up (they look up the real
# functions with dlsym and install their signal handlers with sigaction before they are
# initialised): never instrumented (ASAN=1, TSAN=1 builds).
$(BUILD)/preload/dlsym.o $(BUILD)/preload/signals.o: PRELOAD_CFLAGS := $(filter-out -fsanitize=%,$(PRELOAD_CFLAGS))

$(BUILD)/preload/%.o: preload/%.c $(BUILD)/format/dlhook.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(PRELOAD_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libdlhook.so: $(PRELOAD_OBJS) $(HOOKS_OBJS) $(UNWIND_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS) preload/libdlhook.map
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@.tmp $(PRELOAD_OBJS) $(HOOKS_OBJS) $(UNWIND_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS) \
	  -Wl,--version-script=preload/libdlhook.map -Wl,--exclude-libs,ALL -Wl,-z,nodelete \
	  $(LDFLAGS) $(UNWIND_LIBS) $(FORMAT_LIBS) -ldl -lpthread && mv -f $@.tmp $@

ALL_TARGETS += $(BUILD)/libdlhook.so
