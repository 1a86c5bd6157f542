# scripts/bundle.mk — `make gpu-bundle`: a self-contained folder to copy onto a GPU machine
# (CUDA 13, PyTorch, Python 3.12, no compilers, no network) and run scripts/gpu-acceptance there.
#
#   $(BUILD)/gpu-bundle/            the same layout as $(BUILD), so that dlhook finds its pieces:
#     dlhook, libdlhook.so          linked with libunwind, elfutils (libdw, libelf), zstd,
#                                   protobuf-c, zlib (and dlhook with libstdc++, ISA-L) from static
#                                   archives, their symbols hidden; NEEDED: libc.so.6 and
#                                   ld-linux only (scripts/bundle/check-bundle: BUNDLE.txt)
#     simcuda/                      the simulated CUDA stack (for --sim)
#     examples/train, train-static  the example program (shared and static cudart)
#     tests/progs/*                 the end-to-end test programs, and the planted-cause programs of
#                                   dlhook advise (advise_loop, advise_gpu) with their sources (the
#                                   planted lines are read from them)
#     scripts/gpu-acceptance, scripts/gpu/*.py
#                                   the acceptance script and what it runs: train_torch.py,
#                                   torch_graphs.py (CUDA graphs, torch.compile), calibrate.py and
#                                   calib_torch.py (the simulator against the GPU), features.py, and
#                                   from tests/: op_agreement.py, hta_analyses.py, slow_dataset.py,
#                                   advise_py.py, workload.py and the memory snapshot checks
#                                   (memcmp_py.py, memsnap_check.py, memcmp_check.py), the model
#                                   zoo (zoo.py, judge.py)
#     common/dlh_cuda_libs.def      the CUDA libraries dlhook wraps (read by scripts/gpu/acceptance.py)
#     BUNDLE.txt                    what was built where, and the dependency check
#   $(BUILD)/gpu-bundle.tar.gz      the same folder as one file
#
# The static archives come from scripts/build-static-deps ($(BUILD)/deps, built once, a few
# minutes; cached). unwind/ loads libunwind and libdw with dlopen: in the bundle those calls are
# answered from the linked-in archives by scripts/bundle/dlstatic.c (-Wl,--wrap=dlopen,...).
# The objects are the ones `make` builds for $(BUILD)/libdlhook.so and $(BUILD)/dlhook; only
# the final links differ.

BUNDLE      := $(BUILD)/gpu-bundle
BUNDLE_TGZ  := $(BUILD)/gpu-bundle.tar.gz
BUNDLE_OBJ  := $(BUILD)/bundle-obj
DEPS_DIR    := $(BUILD)/deps
DEPS_LIB    := $(DEPS_DIR)/lib
DEPS_DONE   := $(DEPS_DIR)/stamp

# static PIC archives: libdlhook.so takes all; dlhook only what format/, common/ and command/ use
BUNDLE_SO_ARCHIVES  := $(DEPS_LIB)/libunwind.a $(DEPS_LIB)/libdw.a $(DEPS_LIB)/libelf.a \
                       $(DEPS_LIB)/libprotobuf-c.a $(DEPS_LIB)/libzstd.a $(DEPS_LIB)/libz.a
BUNDLE_BIN_ARCHIVES := $(DEPS_LIB)/libdw.a $(DEPS_LIB)/libelf.a $(DEPS_LIB)/libprotobuf-c.a \
                       $(DEPS_LIB)/libzstd.a $(DEPS_LIB)/libz.a $(DEPS_LIB)/libisal.a
# what unwind/ links besides the libraries above (e.g. -ldl), whatever it names them
BUNDLE_UNWIND_OTHER := $(filter-out -lunwind -lunwind-x86_64 -lunwind-generic -ldw -lelf -lzstd \
                       -lprotobuf-c -lz %.a,$(UNWIND_LIBS))

.PHONY: gpu-bundle static-deps
static-deps: $(DEPS_DONE)
$(DEPS_DONE): scripts/build-static-deps | $(DEPS_STAMP)
	$(Q)sh scripts/build-static-deps $(DEPS_DIR)
	$(Q)touch $@
# the archives are made by the script; make only needs to know they follow from the stamp
$(BUNDLE_SO_ARCHIVES) $(BUNDLE_BIN_ARCHIVES): $(DEPS_DONE)

$(BUNDLE_OBJ)/dlstatic_table.h: scripts/bundle/gen-dlstatic $(UNWIND_SRCS) $(DEPS_DONE)
	@mkdir -p $(dir $@)
	$(Q)sh scripts/bundle/gen-dlstatic $@ $(DEPS_LIB) $(UNWIND_SRCS) /dev/null
$(BUNDLE_OBJ)/dlstatic.o: scripts/bundle/dlstatic.c $(BUNDLE_OBJ)/dlstatic_table.h
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -I$(BUNDLE_OBJ) -c $< -o $@

# The same objects as preload/build.mk's link of $(BUILD)/libdlhook.so (keep the two in step);
# -z defs: a library the regular link names and this one lacks fails here, not on the GPU machine.
BUNDLE_SO_OBJS := $(PRELOAD_OBJS) $(HOOKS_OBJS) $(UNWIND_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS) $(BUNDLE_OBJ)/dlstatic.o
$(BUNDLE)/libdlhook.so: $(BUNDLE_SO_OBJS) $(BUNDLE_SO_ARCHIVES) preload/libdlhook.map
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (static deps)"
	$(Q)$(CC) -shared -o $@ $(BUNDLE_SO_OBJS) \
	  -Wl,--version-script=preload/libdlhook.map -Wl,--exclude-libs,ALL -Wl,-z,nodelete \
	  -Wl,--wrap=dlopen -Wl,--wrap=dlsym -Wl,--wrap=dlclose -Wl,--as-needed -Wl,-z,defs \
	  $(LDFLAGS) -Wl,--start-group $(BUNDLE_SO_ARCHIVES) -Wl,--end-group \
	  $(BUNDLE_UNWIND_OTHER) -static-libgcc -ldl -lpthread -lm

# The same objects as command/build.mk's link of $(BUILD)/dlhook (keep the two in step).
BUNDLE_BIN_OBJS := $(CMD_OBJS) $(CMD_PROTO_O) $(FORMAT_OBJS)
$(BUNDLE)/dlhook: $(BUNDLE_BIN_OBJS) $(BUNDLE_BIN_ARCHIVES)
	@mkdir -p $(dir $@)
	@echo "  LD      $@ (static deps)"
	$(Q)$(CC) -o $@ $(BUNDLE_BIN_OBJS) -Wl,--as-needed $(LDFLAGS) \
	  -Wl,--start-group $(BUNDLE_BIN_ARCHIVES) -Wl,--end-group \
	  -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lm -lpthread -ldl

# Everything else is copied as built. The programs keep their RUNPATH to the CUDA toolkit's
# usual place (/usr/local/cuda/lib64); gpu-acceptance also puts the CUDA libraries it finds
# (toolkit, PyTorch's nvidia-* wheels) on LD_LIBRARY_PATH.
# Python scripts of scripts/gpu/ and tests/ that go to the bundle's scripts/gpu/
BUNDLE_GPU_PY  := scripts/gpu/train_torch.py scripts/gpu/acceptance.py scripts/gpu/torch_graphs.py \
                  scripts/gpu/calibrate.py scripts/gpu/calib_torch.py scripts/gpu/features.py \
                  tests/export/hta_analyses.py tests/torch/op_agreement.py tests/torch/slow_dataset.py \
                  tests/torch/advise_py.py tests/torch/workload.py tests/torch/memcmp_py.py \
                  tests/torch/memsnap_check.py tests/torch/memcmp_check.py tests/zoo/zoo.py tests/zoo/judge.py \
                  tests/torch/exit_race.py
BUNDLE_ADVISE  := $(BUILD)/tests/progs/advise_loop $(BUILD)/tests/progs/advise_gpu
BUNDLE_SCRIPTS := scripts/gpu-acceptance $(BUNDLE_GPU_PY) common/dlh_cuda_libs.def \
                  tests/progs/advise_loop.c tests/progs/advise_gpu.cu
BUNDLE_INPUTS  := $(BUNDLE)/libdlhook.so $(BUNDLE)/dlhook $(SIM_CORE_LIBS) $(SIM_LIBS) \
                  $(EX_DIR)/train $(EX_DIR)/train-static $(TEST_PROGS) $(BUNDLE_ADVISE) $(BUNDLE_SCRIPTS)

$(BUNDLE)/BUNDLE.txt: $(BUNDLE_INPUTS) $(BUILD)/libdlhook.so scripts/bundle/check-bundle scripts/bundle.mk
	$(Q)rm -rf $(BUNDLE)/simcuda $(BUNDLE)/examples $(BUNDLE)/tests $(BUNDLE)/scripts $(BUNDLE)/common
	$(Q)mkdir -p $(BUNDLE)/simcuda $(BUNDLE)/examples $(BUNDLE)/tests/progs $(BUNDLE)/scripts/gpu \
	  $(BUNDLE)/common
	$(Q)cp -P $(SIM_DIR)/*.so* $(BUNDLE)/simcuda/
	$(Q)cp $(EX_DIR)/train $(EX_DIR)/train-static $(BUNDLE)/examples/
	$(Q)cp $(TEST_PROGS) $(BUNDLE_ADVISE) tests/progs/advise_loop.c tests/progs/advise_gpu.cu $(BUNDLE)/tests/progs/
	$(Q)cp scripts/gpu-acceptance $(BUNDLE)/scripts/
	$(Q)cp $(BUNDLE_GPU_PY) $(BUNDLE)/scripts/gpu/
	$(Q)cp common/dlh_cuda_libs.def $(BUNDLE)/common/  # the CUDA libraries (scripts/gpu/acceptance.py)
	@echo "  CHECK   $(BUNDLE)"
	$(Q)sh scripts/bundle/check-bundle $(BUNDLE) $(BUILD)/libdlhook.so > $@.tmp && mv -f $@.tmp $@

$(BUNDLE_TGZ): $(BUNDLE)/BUNDLE.txt
	@echo "  TAR     $@"
	$(Q)tar -C $(BUILD) -czf $@.tmp gpu-bundle && mv -f $@.tmp $@

gpu-bundle: $(BUNDLE_TGZ)
	@echo "gpu-bundle: $(BUNDLE)/ and $(BUNDLE_TGZ) ($$(du -k $(BUNDLE_TGZ) | cut -f1) KiB);" \
	  "on a GPU machine: tar xzf gpu-bundle.tar.gz && gpu-bundle/scripts/gpu-acceptance OUTDIR"

# Built only by `make gpu-bundle` (it downloads and compiles libunwind and elfutils once): the
# tests of tests/bundle/ run where $(BUNDLE_TGZ) exists (CI builds it before `make test`) and skip
# elsewhere, saying so.

# `make wheel`: dist/dlhook-VERSION-py3-none-manylinux_X_Y_x86_64.whl (scripts/mkwheel): the
# Python package, and the bundle's dlhook and libdlhook.so (static deps) in dlhook/_bin/, with a
# `dlhook` console script; pip install pulls numpy, pyarrow and duckdb (pyspark: dlhook[spark]).
WHEEL_DIR := dist
.PHONY: wheel
wheel: $(BUNDLE)/dlhook $(BUNDLE)/libdlhook.so scripts/mkwheel $(wildcard command/python/dlhook/*.py command/python/dlhook/sql/*.sql)
	$(Q)rm -f $(WHEEL_DIR)/dlhook-*.whl
	$(Q)python3 scripts/mkwheel $(WHEEL_DIR) $(BUNDLE)/dlhook $(BUNDLE)/libdlhook.so $(VERSION)
