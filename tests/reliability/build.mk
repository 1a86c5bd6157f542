# tests/reliability/: programs for the reliability suite (crash safety, host safety, no
# deadlock, files) and the fuzz replay of the trace reader and exporters (fuzz/).
REL_DIR   := $(BUILD)/tests/reliability
REL_PROGS := $(REL_DIR)/victim $(REL_DIR)/runner $(REL_DIR)/throw $(REL_DIR)/stress \
             $(REL_DIR)/dlstorm $(REL_DIR)/setid $(REL_DIR)/threadload

$(REL_DIR)/victim $(REL_DIR)/stress $(REL_DIR)/setid $(REL_DIR)/threadload: $(REL_DIR)/%: tests/reliability/%.c | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart -lpthread -ldl
$(REL_DIR)/runner $(REL_DIR)/dlstorm: $(REL_DIR)/%: tests/reliability/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -Wall -o $@ $< -lpthread -ldl
$(REL_DIR)/throw: tests/reliability/throw.cc | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CXX     $<"
	$(Q)$(CXX) -O1 -g -Wall -I$(CUDA_INC) -o $@ $< -L$(CUDA_LIB) -lcudart

TEST_DEPS += $(REL_PROGS)
include fuzz/build.mk

# TSan: a stress program for the rings and the writer, linked against the TSan-built library
# (make TSAN=1 O=build-tsan ...; .ci/run-sanitizers). Not built otherwise.
ifeq ($(TSAN),1)
$(REL_DIR)/tsan_stress: tests/reliability/tsan_stress.c $(BUILD)/libdlhook.so | $(CUDA_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) -O1 -g -fsanitize=thread -I$(CUDA_INC) -o $@ $< -L$(BUILD) -ldlhook -Wl,-rpath,$(abspath $(BUILD)) \
	  -L$(CUDA_LIB) -lcudart -lpthread
TEST_DEPS += $(REL_DIR)/tsan_stress
endif
