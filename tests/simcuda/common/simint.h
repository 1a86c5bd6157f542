/* simint.h — internal interface between the simulated driver (libcuda.so.1) and the stand-in
 * runtime (libcudart.so.13) and CUPTI (libcupti.so.13). Like simcore.h, every function here is
 * exported from libcuda.so.1 under the version node SIMCUDA_PRIVATE; real programs never call
 * them. Handles: a CUstream / cudaStream_t is a `struct simi_stream *`, a CUevent / cudaEvent_t
 * a `struct simi_event *`, a CUcontext a `struct simi_ctx *`.
 */
#ifndef SIMINT_H
#define SIMINT_H
#include "simcore.h"
#include <stdint.h>
#include <stddef.h>

typedef int (*simi_impl_fn)(void *params);
typedef struct simi_sym { const char *name; void *fn; } simi_sym;

/* ---- API call frames (CUPTI callback domains: 1 driver, 2 runtime) ---- */
typedef struct simi_api {
  int domain;                 /* CUPTI_CB_DOMAIN_DRIVER_API or _RUNTIME_API */
  uint32_t cbid;
  const char *name;
  const void *params;         /* the real *_params struct, or NULL */
  const char *symbol;         /* kernel name for launches, else NULL */
  uint32_t corr;              /* correlation id, assigned by simi_api_enter */
  uint64_t start, end;        /* host timestamps (tool clock) */
  void *retp;                 /* points to the return value at exit */
  void *ctx;                  /* current context at entry */
  uint64_t corrdata;          /* CUpti_CallbackData.correlationData slot */
  void *tool_state;
  struct simi_api *outer;
} simi_api;

/* Initialises the simulation once (devices, primary contexts, CUDA_INJECTION64_PATH). */
SIMCU_API void simi_init(void);
/* Enters an API call: new correlation id, tool enter callback. Pair with simi_api_exit. */
SIMCU_API void simi_api_enter(simi_api *a);
SIMCU_API void simi_api_exit(simi_api *a, void *retval);
/* Correlation id of the innermost API call of this thread (0 outside calls). */
SIMCU_API uint32_t simi_current_corr(void);

/* ---- GPU operations as tools see them ---- */
/* SIMI_OP_EVENT: cudaEventRecord reached on the GPU (end = the event's timestamp) */
enum { SIMI_OP_KERNEL = 1, SIMI_OP_MEMCPY, SIMI_OP_MEMSET, SIMI_OP_MARKER, SIMI_OP_EVENT };
typedef struct simi_op_info {
  int kind;
  uint64_t start, end, queued, submitted; /* host clock (CLOCK_MONOTONIC ns) */
  uint32_t dev, ctx_id, stream_id, corr;
  uint32_t graph_id;
  uint64_t graph_node_id;
  /* kernel */
  const char *name;
  unsigned grid[3], block[3];
  unsigned dyn_smem, static_smem, regs;
  /* memcpy / memset */
  int copy_kind, src_kind, dst_kind; /* CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind */
  int async;
  uint64_t bytes;
  uint32_t value;
  uint32_t event_id;  /* SIMI_OP_EVENT */
} simi_op_info;

/* ---- tool (CUPTI stand-in) registration ---- */
typedef struct simi_tool {
  void (*api)(simi_api *a, int exit_site);                   /* enter (0) / exit (1) */
  void (*resource)(int cbid, void *ctx, void *stream);      /* CUPTI_CBID_RESOURCE_* */
  void (*sync)(int cbid, void *ctx, void *stream);          /* CUPTI_CBID_SYNCHRONIZE_* */
  void (*op_done)(const simi_op_info *op);                   /* a GPU op finished */
  uint64_t (*timestamp)(void);                               /* tool clock for API records */
  /* CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED (orig 0) or _CLONED: a node of `graph` made inside
   * the current API call; node handles are simi_graph_node_handle(id) */
  void (*graph_node)(int cbid, void *graph, uint64_t node, uint64_t orig, int type);
} simi_tool;
SIMCU_API void simi_set_tool(const simi_tool *t);
/* Reports finished GPU ops to the tool; force: also those whose end lies in the future. */
SIMCU_API void simi_poll(int force);
SIMCU_API uint32_t simi_ctx_id(void *ctx);
SIMCU_API int simi_ctx_device(void *ctx);
SIMCU_API uint32_t simi_stream_id(void *stream);
SIMCU_API void *simi_stream_ctx(void *stream);
SIMCU_API void *simi_current_ctx(void);
SIMCU_API void simi_emit_sync_record(int type, uint64_t start, uint64_t end, uint32_t corr,
                                     void *ctx, void *stream, uint32_t event_id);
typedef struct simi_sync_rec {
  int type; uint64_t start, end; uint32_t corr, ctx_id, stream_id, event_id;
} simi_sync_rec;
/* Set by the tool to receive SYNCHRONIZATION records. */
SIMCU_API void simi_set_sync_sink(void (*fn)(const simi_sync_rec *));

/* ---- devices and contexts ---- */
SIMCU_API int simi_get_device(void);            /* this thread's current device */
SIMCU_API int simi_set_device(int dev);
SIMCU_API void *simi_primary_ctx(int dev);
SIMCU_API void simi_set_current_ctx(void *ctx);
SIMCU_API int simi_dev_attr(int attr, int dev, int *value); /* CUdevice_attribute */
SIMCU_API size_t simi_dev_total_mem(int dev);
SIMCU_API void simi_dev_uuid(int dev, unsigned char uuid[16]);

/* ---- streams, events ---- */
SIMCU_API int simi_stream_create(void **out, unsigned flags, int prio);
SIMCU_API int simi_stream_destroy(void *s);
/* Maps a user handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, created) to a stream;
 * ptds: NULL means the per-thread default stream. */
SIMCU_API void *simi_stream_resolve(void *s, int ptds);
SIMCU_API int simi_stream_sync(void *s);        /* waits; returns 0 */
SIMCU_API int simi_stream_query(void *s);       /* 0 done, 600 (not ready) */
SIMCU_API int simi_stream_info(void *s, unsigned *flags, int *prio);
SIMCU_API int simi_device_sync(void);
SIMCU_API int simi_event_create(void **out, unsigned flags);
SIMCU_API int simi_event_destroy(void *e);
SIMCU_API int simi_event_record(void *e, void *stream);
SIMCU_API int simi_event_sync(void *e);
SIMCU_API int simi_event_query(void *e);
SIMCU_API int simi_event_elapsed(float *ms, void *a, void *b);
SIMCU_API int simi_stream_wait_event(void *stream, void *e);
SIMCU_API uint32_t simi_event_id(void *e);
/* Host function on a stream: runs when the stream reaches it (here: after waiting). */
SIMCU_API int simi_launch_host_func(void *stream, void (*fn)(void *), void *arg);

/* ---- memory ---- */
enum { SIMI_MEM_DEVICE = 1, SIMI_MEM_PINNED, SIMI_MEM_MANAGED, SIMI_MEM_PAGEABLE };
SIMCU_API int simi_mem_alloc(void **p, size_t size, int kind);
SIMCU_API int simi_mem_free(void *p, int kind);   /* kind 0: any */
SIMCU_API void simi_free_sync(void);                /* cudaFree's implicit device synchronization */
SIMCU_API int simi_mem_kind(const void *p, void **base, size_t *size, int *dev);
SIMCU_API void simi_mem_info(size_t *free_b, size_t *total_b);
/* kind: cudaMemcpyKind (0..4; 4 = default: inferred). Copies now, occupies the timeline. */
SIMCU_API int simi_memcpy(void *dst, const void *src, size_t bytes, int kind, void *stream, int async);
SIMCU_API int simi_memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                            size_t height, int kind, void *stream, int async);
SIMCU_API int simi_memset(void *dst, int value, size_t elem, size_t count, void *stream, int async);
SIMCU_API int simi_memset2d(void *dst, size_t pitch, int value, size_t width, size_t height,
                            void *stream, int async);

/* ---- kernels ---- */
/* Launches a kernel; corr 0 = current API call's. Does not report API callbacks. */
SIMCU_API int simi_launch(void *stream, const simcu_kernel *k);
SIMCU_API int simi_launch_ref(void *stream, const simcu_kernel *k, void **ref);

/* ---- graphs (stream capture) ---- */
SIMCU_API int simi_capture_begin(void *stream, int mode);
SIMCU_API int simi_capture_end(void *stream, void **graph);
SIMCU_API int simi_capture_status(void *stream, int *status, unsigned long long *id);
SIMCU_API int simi_graph_create(void **graph);
SIMCU_API int simi_graph_destroy(void *graph);
SIMCU_API int simi_graph_instantiate(void **exec, void *graph);
SIMCU_API int simi_graph_exec_destroy(void *exec);
SIMCU_API int simi_graph_launch(void *exec, void *stream);
SIMCU_API int simi_graph_node_count(void *graph, size_t *n);
/* A graph node's handle (CUgraphNode / cudaGraphNode_t) is its unique id (CUPTI's graphNodeId,
 * never 0) cast to a pointer; a graph's id (CUPTI's graphId) is simi_graph_id. */
#define simi_graph_node_handle(id) ((void *)(uintptr_t)(id))
#define simi_graph_node_of(h) ((uint64_t)(uintptr_t)(h))
SIMCU_API uint32_t simi_graph_id(const void *graph);
SIMCU_API uint32_t simi_graph_exec_id(const void *exec);
/* The handles of a graph's nodes (up to *n; *n set to the count written, or to the total when
 * nodes is NULL). */
SIMCU_API int simi_graph_nodes(void *graph, void **nodes, size_t *n);
/* Explicit node calls: a kernel or memset node appended to graph (replayed in the order nodes
 * were added; dependencies are not modelled). *node gets its handle. */
SIMCU_API int simi_graph_add_kernel(void *graph, const simcu_kernel *k, void **node);
SIMCU_API int simi_graph_add_memset(void *graph, void *dst, int value, size_t elem, size_t width,
                                    size_t height, size_t pitch, void **node);

/* ---- functions: CUfunction / CUkernel / cudaKernel_t / cudaFunction_t handles ---- */
/* Interned handle for a kernel name (never freed); simi_func_name: its name, NULL if h is not one. */
SIMCU_API void *simi_func_get(const char *name, const void *host_stub);
SIMCU_API const char *simi_func_name(const void *h);
SIMCU_API const void *simi_func_host(const void *h);

/* ---- error strings (CUresult / cudaError_t share codes) ---- */
SIMCU_API const char *simi_error_name(int code, int runtime);   /* NULL if unknown */
SIMCU_API const char *simi_error_string(int code);              /* NULL if unknown */

/* ---- driver entry points ---- */
SIMCU_API void *simi_driver_proc(const char *name, int version, int ptds);

#endif
