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
