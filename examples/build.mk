# examples: the bundled CUDA training program (examples/train.cu), the program the README's
# main command profiles. Built twice from one object: with the shared cudart (symbol
# interposition sees it) and with nvcc's default static cudart (only CUPTI sees it).
EX_DIR      := $(BUILD)/examples
EX_OBJ      := $(EX_DIR)/train.o
EX_ARCH     := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
EX_NVFLAGS  := -std=c++17 -O2 -g -lineinfo $(EX_ARCH) -I$(CUDA_INC) \
               -Xcompiler -Wall,-Wextra,-Wno-unused-parameter
EX_LDLIBS   := -L$(CUDA_LIB) -lcublas -lcublasLt -lcudnn -lnccl -ldl -lpthread \
               -Xlinker --enable-new-dtags -Xlinker -rpath=$(CUDA_LIB)

$(EX_OBJ): examples/train.cu examples/build.mk | $(CUDA_STAMP)
	@mkdir -p $(EX_DIR)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) $(EX_NVFLAGS) -MD -MF $(EX_DIR)/train.d -MT $@ -c $< -o $@

$(EX_DIR)/train: $(EX_OBJ)
	@echo "  LINK    $@"
	$(Q)$(NVCC) -cudart shared -O2 -g -lineinfo $(EX_ARCH) $< -o $@ $(EX_LDLIBS)

$(EX_DIR)/train-static: $(EX_OBJ)
	@echo "  LINK    $@"
	$(Q)$(NVCC) -O2 -g -lineinfo $(EX_ARCH) $< -o $@ $(EX_LDLIBS)

ALL_TARGETS += $(EX_DIR)/train $(EX_DIR)/train-static
