# tests/: programs used by the end-to-end tests (built against the REAL CUDA libraries; they run
# against the real ones with no GPU, or on the simulator through tests/simcuda/run).
TEST_PROGS := $(BUILD)/tests/progs/cudart_calls $(BUILD)/tests/progs/threads \
              $(BUILD)/tests/progs/signals $(BUILD)/tests/progs/nvcc_shared \
              $(BUILD)/tests/progs/forker $(BUILD)/tests/progs/execer $(BUILD)/tests/progs/poller

$(BUILD)/tests/progs/%: tests/progs/%.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread

$(BUILD)/tests/progs/%: tests/progs/%.cu | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) -cudart shared -O1 -g -o $@ $<

TEST_DEPS += $(TEST_PROGS)

# tests/record/: capture ranges and the GPU memory ledger
TEST_DEPS += $(BUILD)/tests/progs/capture $(BUILD)/tests/progs/memory

# tests/e2e/t_sim_graphs.sh: CUDA graphs (stream capture, explicit nodes, replays)
TEST_DEPS += $(BUILD)/tests/progs/graphs

# tests/advise/: planted causes for dlhook advise
TEST_DEPS += $(BUILD)/tests/progs/advise_loop $(BUILD)/tests/progs/advise_gpu
$(BUILD)/tests/progs/advise_gpu: tests/progs/advise_gpu.cu | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) -cudart shared -O1 -g -o $@ $< -lcublas -lnccl

# the settings table of docs/settings.md from the one table of settings
# (tests/cli/t_settings_doc.sh; `make settings-doc` writes it there)
$(BUILD)/tests/bin/settings_doc: tests/cli/settings_doc.c preload/dlh_settings.def
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -Wall -Ipreload -o $@ $<
TEST_DEPS += $(BUILD)/tests/bin/settings_doc
settings-doc: $(BUILD)/tests/bin/settings_doc
	$(Q)python3 scripts/update-readme-block docs/settings.md settings "$$($(BUILD)/tests/bin/settings_doc)"
.PHONY: settings-doc

# the class table of docs/advise.md from the finding classes' descriptors (command/lib/findings/,
# printed by `dlhook help --advise-classes`; tests/cli/t_advise_doc.sh)
advise-doc: $(BUILD)/dlhook
	$(Q)python3 scripts/update-readme-block docs/advise.md classes "$$($(BUILD)/dlhook help --advise-classes)"
.PHONY: advise-doc
