# tests/host/: programs for the "never change the program" scenarios (signals, vfork, fds,
# _exit, exec, privileges): one t_*.sh per hazard, see tests/host/README.md.
HOST_DIR := $(BUILD)/tests/host

$(HOST_DIR)/hostprog: tests/host/hostprog.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread -ldl
$(HOST_DIR)/limitsprog: tests/host/limitsprog.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread -ldl
$(HOST_DIR)/libfakepreload.so: tests/host/fakepreload.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -shared -fPIC -o $@ $<

TEST_DEPS += $(HOST_DIR)/hostprog $(HOST_DIR)/libfakepreload.so $(HOST_DIR)/limitsprog

# Calls dlhook used to lose without a word: signals, daemon(3), a removed trace directory.
$(HOST_DIR)/silentprog: tests/host/silentprog.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart
TEST_DEPS += $(HOST_DIR)/silentprog

# The interposer chain (t_interposer_chain.sh): a program linked with the runtime, one that
# opens it with dlopen, one linked whose first call goes through a handle, and a shim of the
# program's own on cudaMalloc, built for each way of finding the real function.
$(HOST_DIR)/chainprog-linked: tests/host/chainprog.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart
$(HOST_DIR)/chainprog-mixed: tests/host/chainprog.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -DCHAIN_MIXED -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -ldl
$(HOST_DIR)/chainprog-dlopen: tests/host/chainprog.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -DCHAIN_DLOPEN -o $@ $< -ldl
$(HOST_DIR)/libchainshim-handle.so: tests/host/chainshim.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -shared -fPIC -DCHAIN_HANDLE -o $@ $< -ldl
$(HOST_DIR)/libchainshim-next.so: tests/host/chainshim.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -shared -fPIC -DCHAIN_NEXT -o $@ $< -ldl

TEST_DEPS += $(HOST_DIR)/chainprog-linked $(HOST_DIR)/chainprog-dlopen $(HOST_DIR)/chainprog-mixed \
  $(HOST_DIR)/libchainshim-handle.so $(HOST_DIR)/libchainshim-next.so
