# tests/attach/: `dlhook attach` / `dlhook detach` (issue 24). attachee.cu is the target program
# (cudart shared, cuBLAS), started without dlhook on the simulator.
$(BUILD)/tests/attach/attachee: tests/attach/attachee.cu | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) -cudart shared -O1 -g -o $@ $< -L$(CUDA_LIB) -lcublas -ldl \
	  -Xlinker -z -Xlinker now

TEST_DEPS += $(BUILD)/tests/attach/attachee

# a library the attachee loads with dlopen while attached (--plugin)
$(BUILD)/tests/attach/libattach_plugin.so: tests/attach/plugin.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -fPIC -shared -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcublas -Wl,-z,lazy

TEST_DEPS += $(BUILD)/tests/attach/libattach_plugin.so

# a program that measures its own sleep while attached to (t_attach_sleep.sh)
$(BUILD)/tests/attach/sleeper: tests/attach/sleeper.c | $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart

TEST_DEPS += $(BUILD)/tests/attach/sleeper
