# bench/: overhead benchmarks (`make bench`).
BENCH_PROGS := $(BUILD)/bench/tight_loop
$(BUILD)/bench/%: bench/%.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O2 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart
BENCH_DEPS += $(BENCH_PROGS)
