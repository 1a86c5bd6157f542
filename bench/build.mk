# bench/: overhead benchmarks (`make bench`, bench/run-bench).
#   tight_loop   a tight loop of cudaGetDevice (C, shared libcudart)
#   poll_threads worker threads calling cudaGetDevice flat out + a thread polling
#                cudaStreamQuery (C, shared libcudart)
#   launch_loop  kernel launches, cudaMemcpyAsync, cublasSgemm (nvcc -cudart shared)
#   micro        the pieces of a recorded call, linked with the objects of libdlhook.so
#   runstat      runs a command, appends its wall time, CPU time and peak RSS to a file
BENCH_DIR   := $(BUILD)/bench
BENCH_PROGS := $(BENCH_DIR)/tight_loop $(BENCH_DIR)/poll_threads $(BENCH_DIR)/launch_loop \
               $(BENCH_DIR)/micro $(BENCH_DIR)/runstat
BENCH_ARCH  := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
# tests/flight/ drive tight_loop too: `make test` builds it
TEST_DEPS   += $(BENCH_DIR)/tight_loop

$(BENCH_DIR)/tight_loop: bench/tight_loop.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O2 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -Wl,--enable-new-dtags,-rpath,$(CUDA_LIB)

$(BENCH_DIR)/poll_threads: bench/poll_threads.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O2 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread \
	  -Wl,--enable-new-dtags,-rpath,$(CUDA_LIB)

$(BENCH_DIR)/runstat: bench/runstat.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O2 -g -Wall -o $@ $<

$(BENCH_DIR)/launch_loop: bench/launch_loop.cu | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) -cudart shared -O2 -g $(BENCH_ARCH) -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcublas \
	  -Xlinker --enable-new-dtags -Xlinker -rpath=$(CUDA_LIB)

# The runtime's objects linked into an executable (the link line of libdlhook.so): the hot
# path called without a wrapper. A link that fails (the runtime needs a new library) warns and
# leaves no program: bench/run-bench then skips the microbenchmarks, `make bench` still runs.
BENCH_MICRO_OBJS = $(PRELOAD_OBJS) $(HOOKS_OBJS) $(UNWIND_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS)
$(BENCH_DIR)/micro: bench/micro.c $(BENCH_MICRO_OBJS) | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(PRELOAD_CFLAGS) -Iunwind -o $@ $< $(BENCH_MICRO_OBJS) $(LDFLAGS) \
	  $(UNWIND_LIBS) $(FORMAT_LIBS) -ldl -lpthread -lstdc++ || \
	  { rm -f $@; echo "bench: warning: $@ not linked; make bench runs without it" >&2; }

# bench/nccl-bench: host time of an NCCL collective with and without the profiler plugin
$(BENCH_DIR)/nccl_loop: bench/nccl_loop.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O2 -g -Wall -Icommon -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lnccl -lcudart -ldl \
	  -Wl,--enable-new-dtags,-rpath,$(CUDA_LIB)
BENCH_PROGS += $(BENCH_DIR)/nccl_loop

BENCH_DEPS += $(BENCH_PROGS)
