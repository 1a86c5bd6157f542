# unwind/: call stacks inside the profiled process (capture, interning, CPython frames, module
# map, symbols), linked into libdlhook.so by preload/build.mk.
# libunwind and elfutils are NOT linked: libdlhook.so loads libunwind.so.8 and libdw.so.1 at run
# time with dlopen(RTLD_LOCAL), so that neither joins the program's global symbol scope (Debian's
# libunwind.a is not PIC; its shared library exports _Unwind_* and backtrace). Their headers are
# used for types only.
UNWIND_SRCS   := $(wildcard unwind/*.c)
UNWIND_OBJS   := $(patsubst unwind/%.c,$(BUILD)/unwind/%.o,$(UNWIND_SRCS))
UNWIND_LIBS   := -ldl
UNWIND_CFLAGS := $(CFLAGS) -fPIC -fvisibility=hidden -Iunwind $(COMMON_CFLAGS) $(FORMAT_CFLAGS)

$(BUILD)/unwind/%.o: unwind/%.c $(BUILD)/format/dlhook.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(UNWIND_CFLAGS) -MMD -MP -c $< -o $@

# ---- test programs for tests/stacks/ (built against the real CUDA libraries) ----
STACK_PROGS := $(BUILD)/tests/stacks/cublas_nested $(BUILD)/tests/stacks/cxx_exceptions \
               $(BUILD)/tests/stacks/stack_bench

$(BUILD)/tests/stacks/cublas_nested: tests/stacks/cublas_nested.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O0 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcublas -Wl,-rpath,$(CUDA_LIB)

$(BUILD)/tests/stacks/cxx_exceptions: tests/stacks/cxx_exceptions.cc | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX) -O1 -g -Wall -rdynamic -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -Wl,-rpath,$(CUDA_LIB)

# bench: nested calls of cudaGetDevice at a chosen stack depth (bench/stacks-bench)
$(BUILD)/tests/stacks/stack_bench: tests/stacks/stack_bench.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O2 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -ldl -Wl,-rpath,$(CUDA_LIB)

TEST_DEPS  += $(STACK_PROGS)
BENCH_DEPS += $(BUILD)/tests/stacks/stack_bench

# preload/build.mk is read before this file: name the objects as prerequisites here too.
$(BUILD)/libdlhook.so: $(UNWIND_OBJS)

$(BUILD)/tests/stacks/threads_stacks: tests/stacks/threads_stacks.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread -Wl,-rpath,$(CUDA_LIB)
TEST_DEPS += $(BUILD)/tests/stacks/threads_stacks

# unit test of the symbol index (unwind/elfsym.c) on synthetic modules (tests/stacks/t_symtab_scale.sh)
$(BUILD)/tests/stacks/symtab_scale: tests/stacks/symtab_scale.c unwind/elfsym.c unwind/dlh_elfsym.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	$(Q)$(CC) -O2 -g -Wall -std=gnu11 -D_GNU_SOURCE -Iunwind -o $@ tests/stacks/symtab_scale.c unwind/elfsym.c -lelf
TEST_DEPS += $(BUILD)/tests/stacks/symtab_scale

# tests/stacks/t_stacks_bad_modules.sh: a loader of libraries (the libraries are built by the test)
$(BUILD)/tests/stacks/badmods: tests/stacks/badmods.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -o $@ $< -ldl
TEST_DEPS += $(BUILD)/tests/stacks/badmods

# tests/stacks/t_torch_default.sh: an independent counter of CUDA runtime calls (a preload)
$(BUILD)/tests/stacks/libcountcalls.so: tests/stacks/countcalls.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -shared -fPIC -o $@ $< -ldl
TEST_DEPS += $(BUILD)/tests/stacks/libcountcalls.so

# tests/stacks/t_symbols_idle.sh: a library's frames named, then the library left idle
$(BUILD)/tests/stacks/idlemod: tests/stacks/idlemod.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -Wl,-rpath,$(CUDA_LIB) -ldl
TEST_DEPS += $(BUILD)/tests/stacks/idlemod
