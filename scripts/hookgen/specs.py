"""hookgen.specs — the per-library specifications of the generated wrappers: headers to parse,
error type and failure value, hand-written prototypes (`manual`), argument extractors
(`extract`), and the tables of types. The sonames come from common/dlh_cuda_libs.def, the one
table of CUDA libraries."""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_ARGS = 16


def _cuda_sonames():
    """NAME -> SONAME of common/dlh_cuda_libs.def."""
    text = open(os.path.join(ROOT, 'common', 'dlh_cuda_libs.def')).read()
    return dict(re.findall(r'^DLH_CUDA_LIB\((\w+), \w+, "([^"]+)"\)', text, re.M))


SONAMES = _cuda_sonames()

# ---------------------------------------------------------------------------------------------
# Per-library configuration
# ---------------------------------------------------------------------------------------------

# Prototypes of nvcc-internal cudart entry points, which the C headers do not declare (they live
# in C++-only crt/host_runtime.h and crt/device_functions.h). Parameter names follow those headers.
CUDART_MANUAL = r"""
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress, const char *deviceName, int ext, size_t size, int constant, int global);
char __cudaInitModule(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream);
"""

# Hand-written argument extractors. name -> list of entries, recorded in order:
#   '*'                     all automatic args of the function (as if there were no entry)
#   'param'                 the automatic arg(s) of one parameter
#   (argname, type, expr)   a C expression evaluated after the real call; it may use the
#                           parameters and `dlh_r`, the return value. type: int uint ptr double bool
# Variants (name_ptsz, name_ptds) use the entry of their base name. To add one: add an entry
# here, run `make regen`, commit the regenerated file.
_OK = 'dlh_r == cudaSuccess'
def _malloc_out(p):
    return ('ptr', 'ptr', '(%s && %s) ? (void *)*%s : (void *)0' % (_OK, p, p))
_M3D = [('width', 'uint', 'p ? p->extent.width : 0'), ('height', 'uint', 'p ? p->extent.height : 0'),
        ('depth', 'uint', 'p ? p->extent.depth : 0')]
_M3D_PTRS = [('src', 'ptr', 'p ? p->srcPtr.ptr : 0'), ('srcArray', 'ptr', 'p ? (void *)p->srcArray : 0'),
             ('dst', 'ptr', 'p ? p->dstPtr.ptr : 0'), ('dstArray', 'ptr', 'p ? (void *)p->dstArray : 0')]
_BYTES2D = ('bytes', 'uint', '(uint64_t)width * height')
CUDART_EXTRACT = {
    'cudaLaunchKernelExC': [
        'func',
        ('gridDim_x', 'uint', 'config ? config->gridDim.x : 0'),
        ('gridDim_y', 'uint', 'config ? config->gridDim.y : 0'),
        ('gridDim_z', 'uint', 'config ? config->gridDim.z : 0'),
        ('blockDim_x', 'uint', 'config ? config->blockDim.x : 0'),
        ('blockDim_y', 'uint', 'config ? config->blockDim.y : 0'),
        ('blockDim_z', 'uint', 'config ? config->blockDim.z : 0'),
        ('dynamicSmemBytes', 'uint', 'config ? config->dynamicSmemBytes : 0'),
        ('stream', 'ptr', 'config ? (void *)config->stream : 0'),
        ('numAttrs', 'uint', 'config ? config->numAttrs : 0'),
        'args'],
    '__cudaPopCallConfiguration': [
        ('gridDim_x', 'uint', '(%s && gridDim) ? gridDim->x : 0' % _OK),
        ('gridDim_y', 'uint', '(%s && gridDim) ? gridDim->y : 0' % _OK),
        ('gridDim_z', 'uint', '(%s && gridDim) ? gridDim->z : 0' % _OK),
        ('blockDim_x', 'uint', '(%s && blockDim) ? blockDim->x : 0' % _OK),
        ('blockDim_y', 'uint', '(%s && blockDim) ? blockDim->y : 0' % _OK),
        ('blockDim_z', 'uint', '(%s && blockDim) ? blockDim->z : 0' % _OK),
        ('sharedMem', 'uint', '(%s && sharedMem) ? *sharedMem : 0' % _OK),
        ('stream', 'ptr', '(%s && stream) ? *(void **)stream : 0' % _OK)],
    '__cudaGetKernel': [('kernel', 'ptr', '(%s && kernel) ? (void *)*kernel : 0' % _OK), 'hostFun'],
    # allocations: the returned pointer as `ptr`, then the sizes
    'cudaMalloc': [_malloc_out('devPtr'), 'size'],
    'cudaMallocHost': [_malloc_out('ptr'), 'size'],
    'cudaHostAlloc': [_malloc_out('pHost'), 'size', 'flags'],
    'cudaMallocManaged': [_malloc_out('devPtr'), 'size', 'flags'],
    'cudaMallocAsync': [_malloc_out('devPtr'), 'size', 'hStream'],
    'cudaMallocFromPoolAsync': [_malloc_out('ptr'), 'size', 'memPool', 'stream'],
    'cudaMallocPitch': [_malloc_out('devPtr'),
                        ('pitch', 'uint', '(%s && pitch) ? *pitch : 0' % _OK), 'width', 'height',
                        ('size', 'uint', '(%s && pitch) ? (uint64_t)*pitch * height : 0' % _OK)],
    'cudaMalloc3D': [('ptr', 'ptr', '(%s && pitchedDevPtr) ? pitchedDevPtr->ptr : 0' % _OK),
                     ('pitch', 'uint', '(%s && pitchedDevPtr) ? pitchedDevPtr->pitch : 0' % _OK),
                     'extent'],
    'cudaMallocArray': [('ptr', 'ptr', '(%s && array) ? (void *)*array : 0' % _OK), '*'],
    'cudaMalloc3DArray': [('ptr', 'ptr', '(%s && array) ? (void *)*array : 0' % _OK), '*'],
    'cudaMallocMipmappedArray': [('ptr', 'ptr', '(%s && mipmappedArray) ? (void *)*mipmappedArray : 0' % _OK), '*'],
    # 2D copies and sets: every scalar, plus the byte count width*height
    'cudaMemcpy2D': ['*', _BYTES2D], 'cudaMemcpy2DAsync': ['*', _BYTES2D],
    'cudaMemcpy2DToArray': ['*', _BYTES2D], 'cudaMemcpy2DToArrayAsync': ['*', _BYTES2D],
    'cudaMemcpy2DFromArray': ['*', _BYTES2D], 'cudaMemcpy2DFromArrayAsync': ['*', _BYTES2D],
    'cudaMemcpy2DArrayToArray': ['*', _BYTES2D],
    'cudaMemset2D': ['*', _BYTES2D], 'cudaMemset2DAsync': ['*', _BYTES2D],
    # 3D copies: the extent, the kind and the endpoints from the parameter struct
    'cudaMemcpy3D': _M3D + [('kind', 'int', 'p ? (int)p->kind : 0')] + _M3D_PTRS,
    'cudaMemcpy3DAsync': _M3D + [('kind', 'int', 'p ? (int)p->kind : 0')] + _M3D_PTRS + ['stream'],
    'cudaMemcpy3DPeer': _M3D + _M3D_PTRS + [('srcDevice', 'int', 'p ? p->srcDevice : 0'),
                                            ('dstDevice', 'int', 'p ? p->dstDevice : 0')],
    'cudaMemcpy3DPeerAsync': _M3D + _M3D_PTRS + [('srcDevice', 'int', 'p ? p->srcDevice : 0'),
                                                 ('dstDevice', 'int', 'p ? p->dstDevice : 0'), 'stream'],
    'cudaMemset3D': ['*', ('bytes', 'uint', '(uint64_t)extent.width * extent.height * extent.depth')],
    'cudaMemset3DAsync': ['*', ('bytes', 'uint', '(uint64_t)extent.width * extent.height * extent.depth')],
}

# ---- cuBLAS GEMMs: every gemm flavour gets the same keys (hooks/cublas_args.h) -------------------
# m, n, k, transa, transb, lda, ldb, ldc, batch, dtype (cudaDataType_t of A), flops = 2·m·n·k·batch
# (×4 for complex types); the Ex flavours add ctype, compute_type and algo.
_GEMM_DTYPE = {'S': 'CUDA_R_32F', 'D': 'CUDA_R_64F', 'C': 'CUDA_C_32F', 'Z': 'CUDA_C_64F',
               'H': 'CUDA_R_16F'}


def cublas_extract(name, proto):
    """Extractor spec of a cuBLAS GEMM (None: automatic args)."""
    g = re.fullmatch(r'cublas(S|D)?[gG]emmGroupedBatched(Ex)?(_64)?', name)
    if g:  # arrays of m, n, k and group sizes: first group's shape, every GEMM's flops
        pn = [p.name for p in proto.params]
        if 'Atype' in pn:
            dtype, cplx = 'Atype', 'dlh_cuda_type_complex(Atype)'
        else:
            dtype, cplx = _GEMM_DTYPE[g.group(1)], '0'
        spec = ['handle', ('transa', 'int', 'dlh_first(transa_array, group_count)'),
                ('transb', 'int', 'dlh_first(transb_array, group_count)'),
                ('m', 'int', 'dlh_first(m_array, group_count)'),
                ('n', 'int', 'dlh_first(n_array, group_count)'),
                ('k', 'int', 'dlh_first(k_array, group_count)'), 'group_count',
                ('batch', 'int', 'dlh_grouped_count(group_count, group_size)'),
                ('dtype', 'int', '(int)(%s)' % dtype)]
        if 'computeType' in pn:
            spec.append(('compute_type', 'int', '(int)computeType'))
        spec.append(('flops', 'double', 'dlh_grouped_flops(m_array, n_array, k_array, group_count, '
                                        'group_size, %s)' % cplx))
        return spec
    m = re.fullmatch(r'cublas(S|D|C|Z|H)?[gG]emm(3m)?(Ex)?(Batched|StridedBatched)?(Ex)?(_v2)?(_64)?', name)
    if not m:
        return None
    pn = [p.name for p in proto.params]
    need = {'transa', 'transb', 'm', 'n', 'k', 'lda', 'ldb', 'ldc'}
    if not need <= set(pn):
        return None
    legacy = 'handle' not in pn
    batch = 'batchCount' if 'batchCount' in pn else '1'
    if legacy:
        ta, tb = ('transa', 'int', 'dlh_op_char(transa)'), ('transb', 'int', 'dlh_op_char(transb)')
    else:
        ta, tb = 'transa', 'transb'
    if 'Atype' in pn:
        dtype, cplx = 'Atype', 'dlh_cuda_type_complex(Atype)'
    else:
        dtype = _GEMM_DTYPE.get(m.group(1) or '', '-1')
        cplx = '1' if m.group(1) in ('C', 'Z') else '0'
    spec = [] if legacy else ['handle']
    spec += [ta, tb, 'm', 'n', 'k']
    if 'Atype' not in pn and 'A' in pn:
        spec += ['A', 'lda', 'B', 'ldb', 'C', 'ldc']
    else:
        spec += ['lda', 'ldb', 'ldc']
    spec += [('batch', 'int', batch), ('dtype', 'int', '(int)(%s)' % dtype)]
    if 'Ctype' in pn:
        spec.append(('ctype', 'int', '(int)Ctype'))
    if 'computeType' in pn:
        spec.append(('compute_type', 'int', '(int)computeType'))
    if 'algo' in pn:
        spec.append('algo')
    spec.append(('flops', 'double', 'dlh_gemm_flops(m, n, k, %s, %s)' % (batch, cplx)))
    return spec


CUBLASLT_EXTRACT = {
    # m, n, k, transposes, types, batch, ld* from the descriptor and layouts (hooks/cublasLt_args.h)
    'cublasLtMatmul': [
        '@struct dlh_lt_info dlh_li; dlh_lt_read(&dlh_li, computeDesc, Adesc, Bdesc, Cdesc);',
        'lightHandle', ('m', 'int', 'dlh_li.m'), ('n', 'int', 'dlh_li.n'), ('k', 'int', 'dlh_li.k'),
        ('transa', 'int', 'dlh_li.transa'), ('transb', 'int', 'dlh_li.transb'),
        ('lda', 'int', 'dlh_li.lda'), ('ldb', 'int', 'dlh_li.ldb'), ('ldc', 'int', 'dlh_li.ldc'),
        ('batch', 'int', 'dlh_li.batch'), ('dtype', 'int', 'dlh_li.atype'),
        ('ctype', 'int', 'dlh_li.ctype'), ('compute_type', 'int', 'dlh_li.compute'),
        ('flops', 'double', 'dlh_li.flops'), 'workspaceSizeInBytes', 'stream'],
}

# ---- cuDNN convolutions (hooks/cudnn_args.h): the same keys for every direction ------------
def _conv(x, w, y):
    return ['@struct dlh_conv_info dlh_ci; dlh_conv_read(&dlh_ci, %s, %s, convDesc, %s);' % (x, w, y),
            ('N', 'int', 'dlh_ci.N'), ('C', 'int', 'dlh_ci.C'), ('H', 'int', 'dlh_ci.H'),
            ('W', 'int', 'dlh_ci.W'), ('K', 'int', 'dlh_ci.K'), ('R', 'int', 'dlh_ci.R'),
            ('S', 'int', 'dlh_ci.S'), ('pad', 'int', 'dlh_ci.pad'), ('stride', 'int', 'dlh_ci.stride'),
            ('dilation', 'int', 'dlh_ci.dilation'), ('groups', 'int', 'dlh_ci.groups'),
            ('dtype', 'int', 'dlh_ci.dtype'), 'algo', ('workspace', 'uint', 'workSpaceSizeInBytes'),
            ('flops', 'double', 'dlh_ci.flops')]


CUDNN_EXTRACT = {
    'cudnnConvolutionForward': _conv('xDesc', 'wDesc', 'yDesc'),
    'cudnnConvolutionBiasActivationForward': _conv('xDesc', 'wDesc', 'yDesc'),
    'cudnnConvolutionBackwardData': _conv('dxDesc', 'wDesc', 'dyDesc'),
    'cudnnConvolutionBackwardFilter': _conv('xDesc', 'dwDesc', 'dyDesc'),
    # backend graph (hooks/cudnn_args.h): descriptors are noted as the program builds them; an
    # execution records the plan's workspace and its first convolution or matmul
    'cudnnBackendCreateDescriptor': ['!dlh_bk_create(dlh_r, (int)descriptorType, descriptor);', '*',
                                     ('desc', 'ptr', '(dlh_r == CUDNN_STATUS_SUCCESS && descriptor) ? (void *)*descriptor : 0')],
    'cudnnBackendSetAttribute': ['!dlh_bk_set(dlh_r, descriptor, (int)attributeName, (int)attributeType, elementCount, arrayOfElements);', '*'],
    'cudnnBackendGetAttribute': ['!dlh_bk_get(dlh_r, descriptor, (int)attributeName, (int)attributeType, requestedElementCount, elementCount, arrayOfElements);', '*'],
    'cudnnBackendDestroyDescriptor': ['!dlh_bk_destroy(descriptor);', '*'],
    'cudnnBackendExecute': [
        '@struct dlh_bk_info dlh_bi; dlh_bk_plan(&dlh_bi, executionPlan);',
        'executionPlan', ('workspace', 'uint', 'dlh_cudnn_plan_workspace(executionPlan)'),
        ('op', 'int', 'dlh_bi.op'),
        ('N', 'int', 'dlh_bi.c.N'), ('C', 'int', 'dlh_bi.c.C'), ('H', 'int', 'dlh_bi.c.H'),
        ('W', 'int', 'dlh_bi.c.W'), ('K', 'int', 'dlh_bi.c.K'), ('R', 'int', 'dlh_bi.c.R'),
        ('S', 'int', 'dlh_bi.c.S'), ('pad', 'int', 'dlh_bi.c.pad'), ('stride', 'int', 'dlh_bi.c.stride'),
        ('dilation', 'int', 'dlh_bi.c.dilation'), ('groups', 'int', 'dlh_bi.c.groups'),
        ('dtype', 'int', 'dlh_bi.c.dtype'), ('flops', 'double', 'dlh_bi.c.flops')],
}

# ---- NCCL (hooks/nccl_args.h) ---------------------------------------------------------------
_NCCL_COMM = ['!struct dlh_nccl_c dlh_nc; dlh_nccl_op(&dlh_nc, comm, dlh_nccl_accepted(dlh_r));',
              ('comm_hash', 'uint', 'dlh_nc.hash'), ('rank', 'int', 'dlh_nc.rank'),
              ('nranks', 'int', 'dlh_nc.nranks'), ('seq', 'uint', 'dlh_nc.seq'),
              ('group', 'int', 'dlh_nccl_group')]


def _nccl_op(count, per_rank=False):
    b = '(uint64_t)%s * dlh_nccl_type_size(datatype)' % count
    if per_rank:
        b += ' * (uint64_t)(dlh_nc.nranks > 0 ? dlh_nc.nranks : 1)'
    return ['*'] + _NCCL_COMM + [('bytes', 'uint', b)]


NCCL_EXTRACT = {
    'ncclAllReduce': _nccl_op('count'), 'ncclBroadcast': _nccl_op('count'),
    'ncclBcast': _nccl_op('count'), 'ncclReduce': _nccl_op('count'),
    'ncclAllGather': _nccl_op('sendcount', True), 'ncclReduceScatter': _nccl_op('recvcount', True),
    'ncclAlltoAll': _nccl_op('count', True), 'ncclGather': _nccl_op('count', True),
    'ncclScatter': _nccl_op('count', True), 'ncclSend': _nccl_op('count'),
    'ncclRecv': _nccl_op('count'),
    'ncclCommInitRank': [
        '!if (dlh_r == ncclSuccess && comm) dlh_nccl_comm_add(*comm, dlh_nccl_id_hash(&commId), rank, nranks);',
        ('newcomm', 'ptr', '(dlh_r == ncclSuccess && comm) ? (void *)*comm : 0'), 'nranks', 'rank',
        ('comm_hash', 'uint', 'dlh_nccl_id_hash(&commId)')],
    'ncclCommInitRankConfig': [
        '!if (dlh_nccl_accepted(dlh_r) && comm) dlh_nccl_comm_add(*comm, dlh_nccl_id_hash(&commId), rank, nranks);',
        ('newcomm', 'ptr', '(dlh_nccl_accepted(dlh_r) && comm) ? (void *)*comm : 0'), 'nranks', 'rank',
        'config', ('comm_hash', 'uint', 'dlh_nccl_id_hash(&commId)')],
    'ncclCommInitRankScalable': [
        '!if (dlh_nccl_accepted(dlh_r) && newcomm) dlh_nccl_comm_add(*newcomm, dlh_nccl_id_hash(nId > 0 ? commIds : 0), myrank, nranks);',
        ('newcomm', 'ptr', '(dlh_nccl_accepted(dlh_r) && newcomm) ? (void *)*newcomm : 0'), 'nranks',
        ('rank', 'int', 'myrank'), 'nId', 'config',
        ('comm_hash', 'uint', 'dlh_nccl_id_hash(nId > 0 ? commIds : 0)')],
    'ncclCommInitAll': [
        '!if (dlh_r == ncclSuccess) dlh_nccl_comm_all(comm, ndev);', 'comm', 'ndev', 'devlist'],
    'ncclCommSplit': [
        '!if (dlh_nccl_accepted(dlh_r) && newcomm) dlh_nccl_comm_child(comm, *newcomm, (uint64_t)(uint32_t)color);',
        'comm', 'color', 'key', ('newcomm', 'ptr', '(dlh_nccl_accepted(dlh_r) && newcomm) ? (void *)*newcomm : 0'),
        'config'],
    'ncclCommShrink': [
        '!if (dlh_nccl_accepted(dlh_r) && newcomm) dlh_nccl_comm_child(comm, *newcomm, dlh_fnv(0x5348524eull, excludeRanksList, excludeRanksList && excludeRanksCount > 0 ? (size_t)excludeRanksCount * sizeof(int) : 0));',
        'comm', 'excludeRanksCount', ('newcomm', 'ptr', '(dlh_nccl_accepted(dlh_r) && newcomm) ? (void *)*newcomm : 0'),
        'config', 'shrinkFlags'],
    'ncclCommDestroy': ['!dlh_nccl_comm_del(comm);', '*'],
    'ncclCommAbort': ['!dlh_nccl_comm_del(comm);', '*'],
    'ncclGroupStart': ['!if (dlh_r == ncclSuccess) dlh_nccl_group++;', ('group', 'int', 'dlh_nccl_group')],
    'ncclGroupEnd': ['!int dlh_g = dlh_nccl_group; if (dlh_nccl_group > 0) dlh_nccl_group--;',
                     ('group', 'int', 'dlh_g')],
}

# Hand-written hook points around the real call: (before dlh_call_begin, after the record).
# cudaProfilerStart/Stop open and close the cudaProfilerApi capture range (preload/capture.c).
CUDART_AROUND = {
    'cudaProfilerStart': ('dlh_capture_profiler(1);', None),
    'cudaProfilerStop': (None, 'dlh_capture_profiler(0);'),
}

INTEROP_INCLUDES = ['GL/gl.h']  # from hooks/compat, before cuda_gl_interop.h

LIBS = {
    'cudart': dict(
        headers=['cuda_runtime_api.h', 'cuda_profiler_api.h', 'cuda_gl_interop.h',
                 'cuda_vdpau_interop.h', 'cuda_egl_interop.h'],
        pre_includes=INTEROP_INCLUDES,
        defines=['CUDA_ENABLE_DEPRECATED'],
        undefs=['CUDA_API_PER_THREAD_DEFAULT_STREAM', '__CUDA_API_VERSION_INTERNAL'],
        soname=SONAMES['cudart'], lib_enum='DLH_LIB_CUDART', domain='DLH_DOMAIN_CUDART',
        table='dlh_fns_cudart', err_type='cudaError_t', fail='cudaErrorInitializationError',
        version='CUDART_VERSION',
        variants=['_ptsz', '_ptds'], manual=CUDART_MANUAL, extract=CUDART_EXTRACT,
        around=CUDART_AROUND,
        fail_override={'__cudaPushCallConfiguration': '1',  # nonzero: the <<<>>> launch is skipped
                       'cudaGetErrorName': '"cudaErrorInitializationError"',
                       'cudaGetErrorString': '"dlhook: libcudart not found"'},
        no_prototype_reason='no prototype in the CUDA headers (nvcc-internal, undocumented)'),
    'cublas': dict(
        # cublas.h (not cublas_v2.h) declares the legacy API (cublasSgemm, exported without the
        # _v2 suffix) and includes cublas_api.h (cublasSgemm_v2 ...).
        headers=['cublas.h'], pre_includes=[], defines=[], undefs=[],
        soname=SONAMES['cublas'], lib_enum='DLH_LIB_CUBLAS', domain='DLH_DOMAIN_CUBLAS',
        table='dlh_fns_cublas', err_type='cublasStatus_t', fail='CUBLAS_STATUS_NOT_INITIALIZED',
        version='CUBLAS_VERSION', variants=[], manual='', extract={}, extract_fn=cublas_extract,
        post_includes=['cublas_args.h'],
        fail_override={}, no_prototype_reason='no prototype in the cuBLAS headers',
        # cublasHgemm & co. are declared only for C++ (they take __half / __nv_bfloat16, always by
        # pointer): read from the raw header with those types as void, which has the same ABI.
        raw=dict(headers=['cublas_api.h'], strip=['CUBLASWINAPI', 'CUBLASAPI'],
                 types={'__half': 'void', '__nv_bfloat16': 'void'})),
    'cublasLt': dict(
        headers=['cublasLt.h'], pre_includes=[], defines=[], undefs=[],
        soname=SONAMES['cublasLt'], lib_enum='DLH_LIB_CUBLASLT', domain='DLH_DOMAIN_CUBLASLT',
        table='dlh_fns_cublasLt', err_type='cublasStatus_t', fail='CUBLAS_STATUS_NOT_INITIALIZED',
        version='CUBLAS_VERSION', variants=[], manual='', extract=CUBLASLT_EXTRACT,
        post_includes=['cublasLt_args.h'],
        fail_override={}, no_prototype_reason='no prototype in the cuBLAS headers (internal)'),
    'cudnn': dict(
        headers=['cudnn_version.h', 'cudnn_graph.h', 'cudnn_ops.h', 'cudnn_cnn.h', 'cudnn_adv.h',
                 'cudnn_backend.h'],
        pre_includes=[], defines=[], undefs=[],
        soname=SONAMES['cudnn'], lib_enum='DLH_LIB_CUDNN', domain='DLH_DOMAIN_CUDNN',
        table='dlh_fns_cudnn', err_type='cudnnStatus_t', fail='CUDNN_STATUS_NOT_INITIALIZED',
        version='CUDNN_VERSION', variants=[], manual='', extract=CUDNN_EXTRACT,
        post_includes=['cudnn_args.h'],
        fail_override={'cudnnGetErrorString': '"dlhook: libcudnn not found"'},
        no_prototype_reason='no prototype in the cuDNN headers'),
    'nccl': dict(
        headers=['nccl.h'], pre_includes=[], defines=[], undefs=[],
        soname=SONAMES['nccl'], lib_enum='DLH_LIB_NCCL', domain='DLH_DOMAIN_NCCL',
        table='dlh_fns_nccl', err_type='ncclResult_t', fail='ncclSystemError',
        version='NCCL_VERSION_CODE', variants=[], manual='', extract=NCCL_EXTRACT,
        post_includes=['nccl_args.h'],
        fail_override={'ncclGetErrorString': '"dlhook: libnccl not found"',
                       'ncclGetLastError': '"dlhook: libnccl not found"'},
        # NCCL exports a strong pncclX and a weak ncclX: wrap ncclX, call pncclX.
        forward_prefix='p', skip_prefix='pnccl',
        no_prototype_reason='no prototype in the NCCL headers'),
}

# By-value structs recorded field by field: struct tag -> [(field, type)].
STRUCT_FIELDS = {
    'dim3': [('x', 'uint'), ('y', 'uint'), ('z', 'uint')],
    'uint3': [('x', 'uint'), ('y', 'uint'), ('z', 'uint')],
    'cudaExtent': [('width', 'uint'), ('height', 'uint'), ('depth', 'uint')],
    'cudaPitchedPtr': [('ptr', 'ptr'), ('pitch', 'uint'), ('xsize', 'uint'), ('ysize', 'uint')],
    'cudaMemLocation': [('type', 'enum'), ('id', 'int')],
}

ARGTYPE_C = {'int': 'DLH_ARG_INT', 'uint': 'DLH_ARG_UINT', 'ptr': 'DLH_ARG_PTR',
             'double': 'DLH_ARG_DOUBLE', 'bool': 'DLH_ARG_BOOL', 'enum': 'DLH_ARG_INT'}
ENCODE_C = {'int': 'DLH_A_INT', 'enum': 'DLH_A_INT', 'uint': 'DLH_A_UINT', 'ptr': 'DLH_A_PTR',
            'double': 'DLH_A_DBL', 'bool': 'DLH_A_BOOL'}
