#!/usr/bin/env python3
"""gen_hooks.py — generates the LD_PRELOAD wrappers in hooks/gen/ from the real CUDA headers.

For each library in LIBS (one config entry per library) it
  1. lists the functions the real shared library exports (`nm -D --defined-only`),
  2. preprocesses the library's public headers with `cc -E` (C, not C++: `__dv(x)` default
     arguments vanish, `__host__`/`CUDARTAPI` expand to attributes or nothing; hooks/compat/
     supplies the few OpenGL/VDPAU/EGL types the interop headers need) and parses every
     top-level function declaration and typedef,
  3. writes hooks/gen/<lib>_hooks.c: one exported wrapper per exported function that has a
     prototype (from the headers, or from the config's hand-written `manual` table), and the
     descriptor table `const dlh_fn_desc dlh_fns_<lib>[]` (index = position in the table,
     fn id = DLH_FN_ID(domain, index)). Exported functions that cannot be wrapped are listed,
     with the reason, in a comment at the top of the generated file.

Recorded arguments (see preload/dlh_hook.h): every scalar parameter passed by value, in
declaration order, at most DLH_MAX_ARGS: signed integers and enums as DLH_ARG_INT, unsigned
integers as DLH_ARG_UINT, pointers/handles/function pointers as DLH_ARG_PTR, float/double as
DLH_ARG_DOUBLE (the bits of the double), _Bool as DLH_ARG_BOOL; structs in STRUCT_FIELDS (dim3,
cudaExtent, cudaPitchedPtr) as one arg per field named <param>_<field>; other by-value structs
are not recorded. A config's `extract` table replaces this for functions whose meaning is in a
struct or an out-parameter (see CUDART_EXTRACT for the format; hooks/README.md).

Recorded return value (`ret` of the record): the status for functions returning the library's
status type (cudaError_t, cublasStatus_t, ...), 0 for everything else.

When the real function cannot be found (dlh_resolve returns NULL) a wrapper returns the
config's `fail` value for the library's error type, 0/NULL for integers and pointers, an empty
string for `const char *`, a zeroed struct, or nothing for void (per-function: `fail_override`).

Usage:
  scripts/gen_hooks.py [--cuda-home DIR] [--out DIR] [--cc CC] [LIB...]   (default: all libs)
  scripts/gen_hooks.py --check [LIB...]  regenerates in memory and diffs with
      the committed files: exit 0 up to date, 1 different, 77 CUDA headers/libraries absent.
  scripts/gen_hooks.py --list LIB        prints the names of the wrapped functions.
Python 3 standard library only.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_ARGS = 16

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
        soname='libcudart.so.13', lib_enum='DLH_LIB_CUDART', domain='DLH_DOMAIN_CUDART',
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
        soname='libcublas.so.13', lib_enum='DLH_LIB_CUBLAS', domain='DLH_DOMAIN_CUBLAS',
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
        soname='libcublasLt.so.13', lib_enum='DLH_LIB_CUBLASLT', domain='DLH_DOMAIN_CUBLASLT',
        table='dlh_fns_cublasLt', err_type='cublasStatus_t', fail='CUBLAS_STATUS_NOT_INITIALIZED',
        version='CUBLAS_VERSION', variants=[], manual='', extract=CUBLASLT_EXTRACT,
        post_includes=['cublasLt_args.h'],
        fail_override={}, no_prototype_reason='no prototype in the cuBLAS headers (internal)'),
    'cudnn': dict(
        headers=['cudnn_version.h', 'cudnn_graph.h', 'cudnn_ops.h', 'cudnn_cnn.h', 'cudnn_adv.h',
                 'cudnn_backend.h'],
        pre_includes=[], defines=[], undefs=[],
        soname='libcudnn.so.9', lib_enum='DLH_LIB_CUDNN', domain='DLH_DOMAIN_CUDNN',
        table='dlh_fns_cudnn', err_type='cudnnStatus_t', fail='CUDNN_STATUS_NOT_INITIALIZED',
        version='CUDNN_VERSION', variants=[], manual='', extract=CUDNN_EXTRACT,
        post_includes=['cudnn_args.h'],
        fail_override={'cudnnGetErrorString': '"dlhook: libcudnn not found"'},
        no_prototype_reason='no prototype in the cuDNN headers'),
    'nccl': dict(
        headers=['nccl.h'], pre_includes=[], defines=[], undefs=[],
        soname='libnccl.so.2', lib_enum='DLH_LIB_NCCL', domain='DLH_DOMAIN_NCCL',
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

# ---------------------------------------------------------------------------------------------
# C declaration parsing (of `cc -E` output)
# ---------------------------------------------------------------------------------------------

C_KEYWORDS_TYPE = {'void', 'char', 'short', 'int', 'long', 'float', 'double', 'signed',
                   'unsigned', '_Bool', 'bool', '__int128', '_Complex', 'complex'}
QUALIFIERS = {'const', 'volatile', 'restrict', '__restrict', '__restrict__', 'extern', 'static',
              'inline', '__inline', '__inline__', '__extension__', 'register', '_Noreturn'}
IDENT = re.compile(r'[A-Za-z_]\w*')


def strip_balanced(text, keyword):
    """Removes `keyword ( ... )` with balanced parentheses from text."""
    out = []
    i = 0
    pat = re.compile(r'\b%s\b\s*\(' % re.escape(keyword))
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            return ''.join(out)
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            if text[j] == '(':
                depth += 1
            elif text[j] == ')':
                depth -= 1
            j += 1
        i = j


def clean(text):
    for kw in ('__attribute__', '__attribute', '__declspec', '__asm__', '__asm', 'asm',
               '__typeof__', '_Alignas'):
        text = strip_balanced(text, kw)
    text = re.sub(r'\b(__extension__|__inline__|__inline|inline|extern|static|_Noreturn)\b', ' ', text)
    return re.sub(r'\s+', ' ', text).strip()


def split_top(text, sep=','):
    """Splits at `sep` outside parentheses/brackets/braces."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append(''.join(cur))
    return [p.strip() for p in parts]


def statements(pre):
    """Yields (file, text) for each top-level declaration of preprocessed C source;
    function bodies and brace contents are collapsed to {}."""
    cur_file = ''
    buf = []
    depth = 0
    start_file = ''
    quote = None
    for line in pre.split('\n'):
        if line.startswith('#'):
            m = re.match(r'#\s*(?:line\s+)?\d+\s+"([^"]*)"', line)
            if m:
                cur_file = m.group(1)
            continue
        prev = ''
        for ch in line + ' ':
            if quote:  # inside a string or character literal
                if depth == 0:
                    buf.append(ch)
                if ch == quote and prev != '\\':
                    quote = None
                prev = '' if prev == '\\' else ch
                continue
            prev = ch
            if ch in '"\'':
                quote = ch
            if depth == 0 and not buf and ch.isspace():
                continue
            if not buf:
                start_file = cur_file
            if ch == '{':
                if depth == 0:
                    buf.append('{')
                depth += 1
                continue
            if ch == '}':
                depth -= 1
                if depth == 0:
                    buf.append('}')
                    before = ''.join(buf[:-2]).rstrip()
                    if before.endswith(')'):  # a function definition: the statement ends here
                        buf = []
                continue
            if depth > 0:
                continue
            if ch == ';':
                yield start_file, ''.join(buf)
                buf = []
                continue
            buf.append(ch)


class Param:
    def __init__(self, decl, name, typ, fnptr, array):
        self.decl = decl      # C text declaring the parameter, with its name
        self.name = name
        self.type = typ       # the type without the name
        self.fnptr = fnptr
        self.array = array


class Proto:
    def __init__(self, name, ret, params, variadic, origin):
        self.name, self.ret, self.params, self.variadic, self.origin = name, ret, params, variadic, origin

    def params_c(self):
        if not self.params:
            return 'void'
        s = ', '.join(p.decl for p in self.params)
        return s + (', ...' if self.variadic else '')


def norm_type(t):
    """`const char*` -> `const char *`, `void * *` -> `void **`."""
    t = re.sub(r'\s*\*\s*', '*', t.strip())
    return re.sub(r'(?<=[^*\s])\*', ' *', t)


def parse_param(text, idx):
    text = text.strip()
    m = re.search(r'\(\s*\*\s*(?:const\s+)?([A-Za-z_]\w*)?\s*\)\s*\(', text)
    if m:  # function pointer
        if m.group(1):
            name, decl = m.group(1), text
        else:
            name = 'a%d' % idx
            star = text.index('*', m.start())
            decl = text[:star + 1] + name + text[star + 1:]
        return Param(decl, name, decl, True, False)
    array = None
    am = re.search(r'(\[[^\]]*\])\s*$', text)
    if am:
        array = am.group(1)
        text = text[:am.start()].strip()
    toks = re.findall(r'[A-Za-z_]\w*|\*|[^\sA-Za-z_*]+', text)
    name = None
    if len(toks) >= 2 and IDENT.fullmatch(toks[-1]) and toks[-1] not in C_KEYWORDS_TYPE \
            and toks[-1] not in QUALIFIERS and toks[-2] not in ('struct', 'enum', 'union'):
        name = toks[-1]
        typ = text[:text.rfind(name)].strip()
    else:
        typ = text
    if not name:
        name = 'a%d' % idx
    typ = norm_type(typ)
    if array:
        decl = '%s %s%s' % (typ, name, array)
        typ = typ + ' *'
    else:
        decl = '%s%s%s' % (typ, '' if typ.endswith('*') else ' ', name)
    return Param(decl, name, typ, False, bool(array))


def parse_function(text, origin):
    """Parses `ret name(params)`; returns a Proto or None."""
    text = clean(text)
    if not text.endswith(')') or text.startswith('typedef') or '{' in text:
        return None
    depth, j = 0, len(text) - 1
    while j >= 0:
        if text[j] == ')':
            depth += 1
        elif text[j] == '(':
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if j <= 0:
        return None
    head, params = text[:j].rstrip(), text[j + 1:-1]
    m = re.search(r'([A-Za-z_]\w*)$', head)
    if not m:
        return None
    name, ret = m.group(1), norm_type(head[:m.start()])
    if not ret or '(' in ret or ret in QUALIFIERS:
        return None
    plist = [p for p in split_top(params) if p]
    variadic = False
    if plist and plist[-1] == '...':
        variadic = True
        plist = plist[:-1]
    if plist == ['void']:
        plist = []
    ps = [parse_param(p, i) for i, p in enumerate(plist)]
    return Proto(name, ret, ps, variadic, origin)


class Types:
    """Typedef table: name -> kind (int uint enum ptr double float bool void struct fn other),
    plus the struct tag for struct typedefs."""

    def __init__(self):
        self.kind = {}
        self.tag = {}

    def add_typedef(self, text):
        text = clean(text)
        if not text.startswith('typedef'):
            return
        text = text[len('typedef'):].strip()
        while True:  # collapse brace contents, innermost first
            t2 = re.sub(r'\{[^{}]*\}', '@@', text)
            if t2 == text:
                break
            text = t2
        text = text.replace('@@', '{}')
        if '{}' in text:
            i = text.index('{}') + 2
            base, decls = text[:i], split_top(text[i:])
        else:
            fm = re.search(r'\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(', text)
            if fm:
                self.kind[fm.group(1)] = 'ptr'
                return
            parts = split_top(text)
            m = re.match(r'(.*?)((?:[\s*]|\bconst\b)*)\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*|\(.*\))$',
                         parts[0])
            if not m or not m.group(1).strip():
                return
            base = m.group(1)
            decls = [parts[0][len(base):]] + parts[1:]
        for decl in decls:
            decl = decl.strip()
            nm = re.search(r'([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*|\(.*\))$', decl)
            if not nm:
                continue
            name, after = nm.group(1), nm.group(2).strip()
            if after.startswith('('):
                self.kind[name] = 'fn'
            elif '*' in decl[:nm.start()]:
                self.kind[name] = 'ptr'
            elif after.startswith('['):
                self.kind[name] = 'array'
            else:
                k, tag = self.classify_base(base)
                self.kind[name] = k
                if tag:
                    self.tag[name] = tag

    def classify_base(self, base):
        b = re.sub(r'\{\}', ' ', base)
        toks = [t for t in b.split() if t not in QUALIFIERS]
        if not toks:
            return 'other', None
        if toks[0] in ('struct', 'union'):
            return 'struct', (toks[1] if len(toks) > 1 else None)
        if toks[0] == 'enum':
            return 'enum', None
        if all(t in C_KEYWORDS_TYPE for t in toks):
            if 'void' in toks:
                return 'void', None
            if 'float' in toks:
                return 'float', None
            if 'double' in toks:
                return 'double', None
            if '_Bool' in toks or 'bool' in toks:
                return 'bool', None
            if 'unsigned' in toks:
                return 'uint', None
            if toks == ['char']:
                return 'int', None
            return 'int', None
        if len(toks) == 1:
            return 'alias:' + toks[0], None
        return 'other', None

    def resolve(self, name, seen=None):
        k = self.kind.get(name)
        if k is None:
            return 'other', None
        if k.startswith('alias:'):
            seen = seen or set()
            target = k[6:]
            if target in seen:
                return 'other', None
            seen.add(target)
            rk, rt = self.resolve(target, seen)
            return rk, self.tag.get(name) or rt
        return k, self.tag.get(name)

    def classify(self, typ):
        """Kind of a parameter or return type given as C text."""
        t = typ.strip()
        if '*' in t or '[' in t or '(' in t:
            return 'ptr', None
        k, tag = self.classify_base(t)
        if k.startswith('alias:'):
            k, tag = self.resolve(k[6:])
        if k in ('array', 'fn'):
            return 'ptr', None
        return k, tag


# ---------------------------------------------------------------------------------------------
# Library inputs
# ---------------------------------------------------------------------------------------------

def exported_functions(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] in ('T', 'W', 'i'):
            names.add(f[2].split('@')[0])
    return sorted(names)


def preprocess(cfg, cuda_inc, cc):
    src = ''.join('#define %s 1\n' % d for d in cfg['defines'])
    src += ''.join('#undef %s\n' % u for u in cfg['undefs'])
    src += ''.join('#include <%s>\n' % h for h in cfg['pre_includes'] + cfg['headers'])
    src += '\n#ifdef %s\nint dlh_version_probe = %s;\n#endif\n' % (cfg['version'], cfg['version'])
    with tempfile.NamedTemporaryFile('w', suffix='.c', delete=False) as f:
        f.write(src)
        name = f.name
    try:
        r = subprocess.run([cc, '-E', '-D_GNU_SOURCE', '-I', os.path.join(ROOT, 'hooks', 'compat'),
                            '-I', os.path.join(ROOT, 'hooks'), '-I', cuda_inc, name],
                           capture_output=True, text=True)
    finally:
        os.unlink(name)
    if r.returncode != 0:
        raise SystemExit('gen_hooks: preprocessing %s failed:\n%s' % (cfg['headers'], r.stderr))
    return r.stdout


def header_macro_names(cfg, cuda_inc):
    """Names the headers #define to something else (e.g. per-thread default stream aliases)."""
    names = set()
    for h in cfg['headers']:
        p = os.path.join(cuda_inc, h)
        if os.path.exists(p):
            with open(p, errors='replace') as f:
                names |= set(re.findall(r'^\s*#\s*define\s+([A-Za-z_]\w*)\s+\S', f.read(), re.M))
    return names


def raw_prototypes(cfg, cuda_inc, names):
    """Prototypes of `names` read from the raw text of cfg['raw']['headers'] (declarations the
    C preprocessor hides, e.g. behind `#if defined(__cplusplus)`), with cfg['raw']['strip'] macros
    removed and cfg['raw']['types'] substituted. Only declarations that come out as valid C with
    the substituted types used behind pointers are returned."""
    raw = cfg.get('raw')
    out = {}
    if not raw or not names:
        return out
    for h in raw['headers']:
        path = os.path.join(cuda_inc, h)
        if not os.path.exists(path):
            continue
        with open(path, errors='replace') as f:
            text = f.read()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        text = '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))
        for m in re.finditer(r'[^;{}]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*;', text):
            if m.group(1) not in names or m.group(1) in out:
                continue
            decl = m.group(0)[:-1]
            for mac in raw['strip']:
                decl = re.sub(r'\b%s\b' % re.escape(mac), ' ', decl)
            for old, new in sorted(raw['types'].items()):
                decl = re.sub(r'\b%s\b' % re.escape(old), new, decl)
            p = parse_function(decl, '%s (raw text; %s as void)' % (h, ', '.join(sorted(raw['types']))))
            if p and p.name == m.group(1) and \
                    not any(re.fullmatch(r'(const\s+)?void', q.type.strip()) for q in p.params):
                out[p.name] = p
    return out


def declared_in_headers(cuda_inc, names):
    """name -> first header (relative to cuda_inc) that has `name (`, for names the C parse
    did not find: declarations in C++-only headers. Scans *.h one directory deep (not cccl/)."""
    found = {}
    if not names:
        return found
    pat = re.compile(r'\b(%s)\s*\(' % '|'.join(sorted(re.escape(n) for n in names)))
    for dirpath, dirs, files in os.walk(cuda_inc):
        dirs[:] = sorted(d for d in dirs if d != 'cccl')
        for fn in sorted(files):
            if not fn.endswith(('.h', '.hpp')):
                continue
            path = os.path.join(dirpath, fn)
            with open(path, errors='replace') as f:
                text = f.read()
            for m in pat.finditer(text):
                found.setdefault(m.group(1), os.path.relpath(path, cuda_inc))
    return found


# ---------------------------------------------------------------------------------------------
# Code generation
# ---------------------------------------------------------------------------------------------

class Arg:
    def __init__(self, name, kind, expr):
        self.name, self.kind, self.expr = name, kind, expr


def auto_args(types, p):
    """Automatic recorded args of one parameter: a list of Arg (empty when not recordable)."""
    if p.fnptr or p.array:
        return [Arg(p.name, 'ptr', p.name)]
    k, tag = types.classify(p.type)
    if k in ('int', 'uint', 'enum', 'ptr', 'bool', 'double'):
        return [Arg(p.name, k, p.name)]
    if k == 'float':
        return [Arg(p.name, 'double', p.name)]
    if k == 'struct' and tag in STRUCT_FIELDS:
        return [Arg('%s_%s' % (p.name, f), fk, '%s.%s' % (p.name, f)) for f, fk in STRUCT_FIELDS[tag]]
    return []


def recorded_args(types, proto, spec):
    """(recorded args, args cut at MAX_ARGS, statements always run after the call ('!'),
    statements run before the args are evaluated when the call is recorded ('@'))."""
    byname = {p.name: p for p in proto.params}
    if spec is None:
        spec = ['*']
    args, always, onrec = [], [], []
    for e in spec:
        if isinstance(e, str) and e[:1] == '!':
            always.append(e[1:])
        elif isinstance(e, str) and e[:1] == '@':
            onrec.append(e[1:])
        elif e == '*':
            for p in proto.params:
                if not any(a.name == p.name or a.name.startswith(p.name + '_') for a in args):
                    args.extend(auto_args(types, p))
        elif isinstance(e, str):
            if e not in byname:
                raise SystemExit('gen_hooks: extractor of %s names unknown parameter %s' % (proto.name, e))
            args.extend(auto_args(types, byname[e]))
        else:
            args.append(Arg(e[0], e[1], e[2]))
    return args[:MAX_ARGS], args[MAX_ARGS:], always, onrec


def fail_value(types, cfg, proto):
    if proto.name in cfg['fail_override']:
        return cfg['fail_override'][proto.name]
    base = proto.name
    for v in cfg['variants']:
        if base.endswith(v):
            base = base[:-len(v)]
    if base in cfg['fail_override']:
        return cfg['fail_override'][base]
    ret = proto.ret
    if re.sub(r'\bconst\b', '', ret).strip() == cfg['err_type']:
        return cfg['fail']
    k, tag = types.classify(ret)
    if k == 'void':
        return ''
    if k == 'ptr':
        if re.fullmatch(r'(const\s+)?char\s*\*', ret.strip()):
            return '""'
        return '0'
    if k == 'struct':
        return '(%s){0}' % ret
    return '0'


def ret_record(types, cfg, proto):
    ret = proto.ret
    # Only a status return is a result that `dlhook stats` can count as an error; anything
    # else (versions, sizes, strings, handles) is recorded as 0.
    if re.sub(r'\bconst\b', '', ret).strip() == cfg['err_type']:
        return '(int64_t)dlh_r'
    return None  # recorded as 0


PREAMBLE = r'''#include "dlh_hook.h"
#include "dlh_hooks.h"

#include <stdint.h>
#include <string.h>

/* Argument encoders (see DLH_ARG_* in dlh_hook.h). */
static inline uint64_t dlh_dbl_bits(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }
#define DLH_A_INT(x) ((uint64_t)(int64_t)(x))
#define DLH_A_UINT(x) ((uint64_t)(x))
#define DLH_A_PTR(x) ((uint64_t)(uintptr_t)(x))
#define DLH_A_DBL(x) dlh_dbl_bits((double)(x))
#define DLH_A_BOOL(x) ((uint64_t)((x) != 0))

/* Loads the cached real function into `fn`, resolving it on first use; returns `fail` from the
 * wrapper when the real library does not have it. */
#define DLH_REAL(fn, cache, sym, lib, fail)                                   \
  __typeof__(cache) fn = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);           \
  if (DLH_UNLIKELY(!fn)) {                                                    \
    fn = (__typeof__(cache))dlh_resolve(sym, lib);                            \
    if (!fn) return fail;                                                     \
    __atomic_store_n(&cache, fn, __ATOMIC_RELEASE);                           \
  }
'''


def c_str_list(items):
    return ', '.join('"%s"' % i for i in items)


def lib_path(cfg, cuda_lib):
    """The real library whose exported set is wrapped: cfg['libpath'] when given (e.g. a
    driver's libcuda.so.1 outside the toolkit), else CUDA lib dir / soname."""
    return cfg.get('libpath') or os.path.join(cuda_lib, cfg['soname'])


def generate(lib, cfg, cuda_inc, cuda_lib, cc):
    libpath = lib_path(cfg, cuda_lib)
    exported = exported_functions(libpath)
    pre = preprocess(cfg, cuda_inc, cc)
    types = Types()
    protos = {}
    for origin, st in statements(pre):
        s = st.strip()
        if s.startswith('typedef') or s.startswith('__extension__ typedef'):
            types.add_typedef(s.replace('__extension__', '', 1) if s.startswith('__ext') else s)
            continue
        p = parse_function(s, os.path.basename(origin))
        if p and p.name not in protos:
            protos[p.name] = p
    vm = re.search(r'int dlh_version_probe = ([^;]*);', pre)
    version = re.sub(r'\s+', '', vm.group(1)) if vm else '?'
    if vm and re.fullmatch(r'[\d()+*\s]+', vm.group(1)):
        version = str(eval(vm.group(1)))  # a constant integer expression from the header
    manual = {}
    for _, st in statements(cfg['manual']):
        p = parse_function(st, 'hand-written (gen_hooks.py)')
        if p:
            manual[p.name] = p
    macros = header_macro_names(cfg, cuda_inc)
    protos.update(raw_prototypes(cfg, cuda_inc, set(exported) - manual.keys() - protos.keys()))
    cxx_decls = declared_in_headers(cuda_inc, set(exported) - manual.keys() - protos.keys())

    wrapped, skipped = [], []
    skip_prefix = cfg.get('skip_prefix')
    for name in exported:
        if skip_prefix and name.startswith(skip_prefix) and name[len('p'):] in exported:
            skipped.append((name, 'profiling alias of %s: wrappers wrap %s and call %s'
                            % (name[1:], name[1:], name)))
            continue
        proto, base = manual.get(name) or protos.get(name), name
        if proto is None:
            for v in cfg['variants']:
                if name.endswith(v) and name[:-len(v)] in (manual.keys() | protos.keys()):
                    base = name[:-len(v)]
                    proto = manual.get(base) or protos[base]
        if proto is None:
            where = cxx_decls.get(name)
            if where:
                skipped.append((name, 'declared only in %s, which is not parsed for this library '
                                      '(C++-only or conflicting with the parsed headers)' % where))
            else:
                skipped.append((name, cfg['no_prototype_reason']))
            continue
        if proto.variadic:
            skipped.append((name, 'variadic: arguments cannot be forwarded'))
            continue
        wrapped.append((name, base, proto))

    o = []
    hdrs = ', '.join(cfg['headers'])
    o.append('/* Generated by scripts/gen_hooks.py from %s (%s %s) and %s; do not edit: run `make regen`. */'
             % (hdrs, cfg['version'], version, cfg['soname']))
    o.append('/* hooks/gen/%s_hooks.c — LD_PRELOAD wrappers for the %d functions of %s that have a'
             % (lib, len(wrapped), cfg['soname']))
    o.append(' * prototype, and their descriptor table %s[] (index = position, fn id =' % cfg['table'])
    o.append(' * DLH_FN_ID(%s, index)). Exported by %s: %d functions; not wrapped: %d.'
             % (cfg['domain'], cfg['soname'], len(exported), len(skipped)))
    for n, why in skipped:
        o.append(' *   not wrapped: %s — %s' % (n, why))
    o.append(' */')
    for d in cfg['defines']:
        o.append('#define %s 1' % d)
    for u in cfg['undefs']:
        o.append('#undef %s' % u)
    for h in cfg['pre_includes'] + cfg['headers']:
        o.append('#include <%s>' % h)
    o.append('')
    o.append(PREAMBLE)
    for h in cfg.get('post_includes', []):
        o.append('#include "%s"  /* hand-written argument extractors */' % h)
    if cfg.get('post_includes'):
        o.append('')
    renamed = sorted(n for n, _, _ in wrapped if n in macros)
    if renamed:
        o.append('/* The headers #define these names to others; the wrappers define the exported names. */')
        for n in renamed:
            o.append('#undef %s' % n)
        o.append('')

    descs = []
    fwd = cfg.get('forward_prefix')
    for idx, (name, base, proto) in enumerate(wrapped):
        spec = cfg['extract'].get(name, cfg['extract'].get(base))
        if spec is None and cfg.get('extract_fn'):
            spec = cfg['extract_fn'](name, proto)
        args, dropped, always, onrec = recorded_args(types, proto, spec)
        target = name
        if fwd and (fwd + name) in exported:
            target = fwd + name
        ret = proto.ret
        void = types.classify(ret)[0] == 'void'
        params = proto.params_c()
        callargs = ', '.join(p.name for p in proto.params)
        rrec = ret_record(types, cfg, proto)
        fv = fail_value(types, cfg, proto)
        note = ''
        if dropped:
            note = '; args beyond %d not recorded: %s' % (MAX_ARGS, ', '.join(a.name for a in dropped))
        o.append('/* %d: %s — %s%s%s */' % (idx, name, proto.origin,
                                           (' (prototype of %s)' % base) if base != name else '',
                                           note))
        o.append('static %s (*real_%s)(%s);' % (ret, name, params))
        o.append('DLH_EXPORT %s %s(%s) {' % (ret, name, params))
        o.append('  DLH_REAL(dlh_fn, real_%s, "%s", %s, %s)' % (name, target, cfg['lib_enum'], fv))
        pre, post = cfg.get('around', {}).get(name, (None, None))
        if pre:
            o.append('  %s' % pre)
        o.append('  dlh_call dlh_c;')
        o.append('  int dlh_rec = dlh_call_begin(&dlh_c);')
        if void:
            o.append('  dlh_fn(%s);' % callargs)
        else:
            o.append('  %s dlh_r = dlh_fn(%s);' % (ret, callargs))
        for st in always:
            o.append('  ' + st)
        o.append('  if (dlh_rec) {')
        for st in onrec:
            o.append('    ' + st)
        fnid = 'DLH_FN_ID(%s, %d)' % (cfg['domain'], idx)
        rv = rrec if (rrec and not void) else '0'
        if args:
            o.append('    uint64_t dlh_a[%d] = {' % len(args))
            for a in args:
                o.append('      %s(%s),' % (ENCODE_C[a.kind], a.expr))
            o.append('    };')
            o.append('    dlh_call_end(&dlh_c, %s, %s, %d, dlh_a);' % (fnid, rv, len(args)))
        else:
            o.append('    dlh_call_end(&dlh_c, %s, %s, 0, NULL);' % (fnid, rv))
        o.append('  }')
        if post:
            o.append('  %s' % post)
        if not void:
            o.append('  return dlh_r;')
        o.append('}')
        o.append('')
        descs.append((name, args))

    o.append('/* ---- descriptor table ---- */')
    for name, args in descs:
        if args:
            o.append('static const char *const dlh_an_%s[] = {%s};' % (name, c_str_list(a.name for a in args)))
            o.append('static const uint8_t dlh_at_%s[] = {%s};'
                     % (name, ', '.join(ARGTYPE_C[a.kind] for a in args)))
    o.append('')
    o.append('const dlh_fn_desc %s[] = {' % cfg['table'])
    for name, args in descs:
        if args:
            o.append('  {"%s", %d, dlh_an_%s, dlh_at_%s},' % (name, len(args), name, name))
        else:
            o.append('  {"%s", 0, NULL, NULL},' % name)
    o.append('};')
    o.append('const unsigned %s_count = %d;' % (cfg['table'], len(descs)))
    o.append('')
    # name -> wrapper for dlsym() on a handle of this library (preload/dlsym.c), sorted by name
    syms = 'dlh_syms_' + lib
    o.append('/* ---- wrappers by name, sorted (strcmp), for dlsym on a handle of %s ---- */' % cfg['soname'])
    o.append('#pragma GCC diagnostic push')
    o.append('#pragma GCC diagnostic ignored "-Wdeprecated-declarations"')
    o.append('const dlh_sym %s[] = {' % syms)
    for name in sorted(n for n, _ in descs):
        o.append('  {"%s", (void *)%s, (void **)&real_%s},' % (name, name, name))
    o.append('};')
    o.append('#pragma GCC diagnostic pop')
    o.append('const unsigned %s_count = %d;' % (syms, len(descs)))
    o.append('')
    return '\n'.join(o), wrapped, skipped, exported


def main():
    ap = argparse.ArgumentParser(description='Generates hooks/gen/<lib>_hooks.c from the CUDA headers.')
    ap.add_argument('libs', nargs='*', help='libraries (default: all): %s' % ', '.join(LIBS))
    ap.add_argument('--cuda-home', default=os.environ.get('CUDA_HOME', '/usr/local/cuda'))
    ap.add_argument('--cuda-inc', help='default: CUDA_HOME/include')
    ap.add_argument('--cuda-lib', help='default: CUDA_HOME/lib64')
    ap.add_argument('--cc', default=os.environ.get('CC', 'cc'))
    ap.add_argument('--out', default=os.path.join(ROOT, 'hooks', 'gen'))
    ap.add_argument('--check', action='store_true', help='diff against the committed files')
    ap.add_argument('--list', action='store_true', help='print the wrapped names')
    a = ap.parse_args()
    libs = a.libs or list(LIBS)
    for l in libs:
        if l not in LIBS:
            ap.error('unknown library %s (known: %s)' % (l, ', '.join(LIBS)))
    cuda_inc = a.cuda_inc or os.path.join(a.cuda_home, 'include')
    cuda_lib = a.cuda_lib or os.path.join(a.cuda_home, 'lib64')
    rc = 0
    checked = 0
    for lib in libs:
        cfg = LIBS[lib]
        hdr = os.path.join(cuda_inc, cfg['headers'][0])
        so = lib_path(cfg, cuda_lib)
        if not os.path.exists(hdr) or not os.path.exists(so):
            msg = 'gen_hooks: %s: %s or %s not found' % (lib, hdr, so)
            if a.check:
                print(msg + ' (skipped)', file=sys.stderr)
                rc = rc or 77
                continue
            raise SystemExit(msg)
        text, wrapped, skipped, exported = generate(lib, cfg, cuda_inc, cuda_lib, a.cc)
        if a.list:
            for n, _, _ in wrapped:
                print(n)
            continue
        path = os.path.join(a.out, '%s_hooks.c' % lib)
        if a.check:
            checked += 1
            try:
                with open(path) as f:
                    old = f.read()
            except FileNotFoundError:
                old = ''
            if old != text:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), path, '(regenerated)', n=1))
                print('gen_hooks: %s is out of date: run `make regen`' % path, file=sys.stderr)
                rc = 1
            else:
                print('gen_hooks: %s is up to date (%d of %d exported functions wrapped)'
                      % (os.path.relpath(path, ROOT), len(wrapped), len(exported)))
            continue
        os.makedirs(a.out, exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
        print('gen_hooks: wrote %s: %d of %d exported functions wrapped, %d skipped'
              % (path, len(wrapped), len(exported), len(skipped)))
    if a.check and rc == 77 and checked:
        rc = 0  # the libraries that are installed are up to date
    return rc


if __name__ == '__main__':
    sys.exit(main())
