# A "compiled model" without torch: runs the generated module eagerly 5 times, then captures one
# run in a CUDA graph and replays it 20 times (what torch.compile's reduce-overhead does).
import ctypes, importlib.util, sys
sys.path.insert(0, sys.argv[1] + "/site-packages")
import fakeinductor
cu = fakeinductor.cu
ok = fakeinductor.ok
ok(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
spec = importlib.util.spec_from_file_location("cgen", sys.argv[1] + "/torchinductor_test/ab/cgen.py")
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
s = ctypes.c_void_p()
ok(cu.cuStreamCreate(ctypes.byref(s), 1), "cuStreamCreate")
for _ in range(5):
    gen.call(s)  # eager run
ok(cu.cuStreamBeginCapture_v2(s, 0), "cuStreamBeginCapture")
gen.call(s)  # captured run
g = ctypes.c_void_p()
ok(cu.cuStreamEndCapture(s, ctypes.byref(g)), "cuStreamEndCapture")
ge = ctypes.c_void_p()
ok(cu.cuGraphInstantiateWithFlags(ctypes.byref(ge), g, ctypes.c_ulonglong(0)), "cuGraphInstantiate")
for _ in range(20):
    ok(cu.cuGraphLaunch(ge, s), "cuGraphLaunch")  # replay
ok(cu.cuStreamSynchronize(s), "cuStreamSynchronize")
print("done")
