# tests/sample/: host sampling must not change the program (EINTR, signals, timers, fork and
# vfork, threads coming and going) and must see where the CPU time goes; see
# tests/sample/README.md.
SAMPLE_DIR := $(BUILD)/tests/sample
SAMPLE_PROGS := $(SAMPLE_DIR)/eintr $(SAMPLE_DIR)/sigcases $(SAMPLE_DIR)/shares

$(SAMPLE_DIR)/%: tests/sample/%.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -fno-omit-frame-pointer -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread

TEST_DEPS += $(SAMPLE_PROGS)
