# AOT ID: ['0_inference']
from fakeinductor import async_compile

# kernel path: /tmp/torchinductor_test/xy/cxy.py
# Topologically Sorted Source Nodes: [gelu, mul, add], Original ATen: [aten.gelu, aten.mul, aten.add]
# Source node to ATen node mapping:
#   add => add
#   gelu => add_1, erf, mul_1
triton_poi_fused_add_gelu_mul_0 = async_compile.triton('triton_poi_fused_add_gelu_mul_0', '''
import triton
@triton.jit
def triton_poi_fused_add_gelu_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK):
    # Source Nodes: [bogus], Original ATen: [aten.bogus]
    xnumel = 512
''', device_str='cuda')


# kernel path: /tmp/torchinductor_test/zw/czw.py
# Unsorted Source Nodes: [relu], Original ATen: [aten.relu]
triton_poi_fused_relu_1 = async_compile.triton('triton_poi_fused_relu_1', '''
import triton
''', device_str='cuda')


def call(stream):
    # Topologically Sorted Source Nodes: [gelu, mul, add], Original ATen: [aten.gelu, aten.mul, aten.add]
    triton_poi_fused_add_gelu_mul_0.run(1, 2,
        3, stream=stream)
    # Unsorted Source Nodes: [relu], Original ATen: [aten.relu]
    triton_poi_fused_relu_1.run(1, stream=stream)
