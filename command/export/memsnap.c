/* memsnap.c — `dlhook export -f memory-snapshot -o snapshot.pickle TRACE`: the GPU memory of
 * one process as the snapshot `torch.cuda.memory._snapshot()` returns after
 * `_record_memory_history(stacks="all")`, a pickled dict that torch.cuda._memory_viz
 * (trace_plot, segment_plot, segsum, memory, segments) and pytorch.org/memory_viz open:
 *
 *   segments        what is allocated at the end of the trace: per segment its device, address,
 *                   sizes, stream and blocks (address, size, requested_size, state, frames)
 *   device_traces   per device, in time order, each action (alloc, free_requested,
 *                   free_completed, segment_alloc, segment_free) with addr, size, stream,
 *                   time_us and frames (innermost first; Python and native frames, as the trace
 *                   recorded them, dlhook's own left out)
 *   dlhook          (ours) the level of the snapshot and what it means, the trace's path
 *
 * The events are the memory ledger's (memory.c: every allocation and free a trace recorded,
 * matched by pointer). Their level depends on how the program was recorded:
 *   tensor    `dlhook record --torch-memory`: PyTorch allocates each tensor with
 *             cudaMallocAsync. Each allocation is a block that fills a segment of its own (the
 *             stream-ordered pool's reservations are the driver's, not seen), so an allocation
 *             is segment_alloc + alloc and its free free_requested + free_completed +
 *             segment_free: torch's Active Memory Timeline shows every tensor, reserved equals
 *             allocated.
 *   segment   without it: the caching allocator asks CUDA for segments only (cudaMalloc), so
 *             the snapshot has segment_alloc and segment_free and segments whose one block is
 *             "inactive" (their use inside is not recorded): the Active Cached Segment Timeline
 *             and the segment view work, the Active Memory Timeline is empty.
 * A trace is one process; several traces are refused (one snapshot each). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "pickle.h"

/* The dict keys, each written once and then referred to by memo. */
enum { K_ACTION, K_ADDR, K_SIZE, K_STREAM, K_TIME, K_FRAMES, K_FILENAME, K_LINE, K_NAME,
       K_DEVICE, K_ADDRESS, K_TOTAL, K_ALLOCATED, K_ACTIVE, K_REQUESTED, K_SEGTYPE, K_POOL,
       K_EXPANDABLE, K_BLOCKS, K_STATE, NKEYS };
static const char *const key_names[NKEYS] = {
    "action", "addr", "size", "stream", "time_us", "frames", "filename", "line", "name", "device",
    "address", "total_size", "allocated_size", "active_size", "requested_size", "segment_type",
    "segment_pool_id", "is_expandable", "blocks", "state"};
enum { A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_ALLOC, A_SEG_FREE, A_ACTIVE, A_INACTIVE, A_LARGE,
       A_SMALL, NVALS };
static const char *const val_names[NVALS] = {"alloc", "free_requested", "free_completed",
    "segment_alloc", "segment_free", "active_allocated", "inactive", "large", "small"};

typedef struct snap {
  pk_writer w;
  rd_trace *t;
  uint32_t key[NKEYS], val[NVALS]; /* memo numbers + 1 */
  rd_u64map stacks;                /* stack id -> memo number of its frames list */
  int tensor;                      /* 1: tensor level, 0: segment level */
  uint64_t actions[NVALS];         /* written, by action */
} snap;

static void key(snap *s, int k) { pk_str_once(&s->w, key_names[k], &s->key[k]); }
static void val(snap *s, int v) { pk_str_once(&s->w, val_names[v], &s->val[v]); }

/* dlhook's own frames (the wrapper that recorded the call) are not the program's. */
static int ours(const rd_frame *f) {
  const char *m = f->module;
  if (!m) return 0;
  const char *b = strrchr(m, '/') ? strrchr(m, '/') + 1 : m;
  return !strncmp(b, "libdlhook", 9);
}

/* The frames of a stack, innermost first, as torch's Frame dicts (filename, line, name); a
 * native frame without source says its module as filename and its address as name when it has
 * no symbol. Each stack's list is written once, then referred to. */
static void frames(snap *s, uint32_t stack) {
  uint32_t id;
  if (stack && rd_m_get(&s->stacks, stack, &id)) { pk_get(&s->w, id); return; }
  const rd_frame *fr;
  size_t n = rd_stack_frames(s->t, stack, &fr);
  id = pk_list_begin_memo(&s->w);
  if (stack) rd_m_put(&s->stacks, stack, id);
  char buf[32];
  for (size_t i = 0; i < n; i++) {
    const rd_frame *f = &fr[i];
    if (ours(f)) continue;
    pk_list_item(&s->w);
    pk_dict_begin(&s->w);
    key(s, K_FILENAME);
    pk_str(&s->w, f->file ? f->file : f->module ? f->module : "??");
    key(s, K_LINE);
    pk_uint(&s->w, f->line);
    key(s, K_NAME);
    if (f->function) pk_str(&s->w, f->function);
    else {
      snprintf(buf, sizeof buf, "0x%" PRIx64, f->pc);
      pk_str(&s->w, buf);
    }
    pk_dict_end(&s->w);
  }
  pk_list_end(&s->w);
}

/* One TraceEntry of a device trace. */
static void action(snap *s, int what, const rd_mem_sample *m, uint64_t bytes) {
  pk_list_item(&s->w);
  pk_dict_begin(&s->w);
  key(s, K_ACTION);
  val(s, what);
  key(s, K_ADDR);
  pk_uint(&s->w, m->ptr);
  key(s, K_SIZE);
  pk_uint(&s->w, bytes);
  key(s, K_STREAM);
  pk_uint(&s->w, m->stream);
  key(s, K_TIME);
  pk_uint(&s->w, m->ts_ns / 1000);
  key(s, K_FRAMES);
  frames(s, m->stack);
  pk_dict_end(&s->w);
  s->actions[what]++;
}

/* The actions of device d, in time order. */
static void device_trace(snap *s, const rd_mem_sample *ms, long n, uint32_t d) {
  pk_list_item(&s->w);
  pk_list_begin(&s->w);
  for (long i = 0; i < n; i++) {
    const rd_mem_sample *m = &ms[i];
    if (m->device != d) continue;
    if (m->bytes > 0) {
      action(s, A_SEG_ALLOC, m, (uint64_t)m->bytes);
      if (s->tensor) action(s, A_ALLOC, m, (uint64_t)m->bytes);
    } else {
      uint64_t b = (uint64_t)-m->bytes;
      if (s->tensor) {
        action(s, A_FREE_REQ, m, b);
        action(s, A_FREE_DONE, m, b);
      }
      action(s, A_SEG_FREE, m, b);
    }
  }
  pk_list_end(&s->w);
}

/* One Segment of what is live at the end: allocation m (a sample with bytes > 0). */
static void segment(snap *s, const rd_mem_sample *m) {
  uint64_t b = (uint64_t)m->bytes, used = s->tensor ? b : 0;
  pk_list_item(&s->w);
  pk_dict_begin(&s->w);
  key(s, K_DEVICE);
  pk_uint(&s->w, m->device);
  key(s, K_ADDRESS);
  pk_uint(&s->w, m->ptr);
  key(s, K_TOTAL);
  pk_uint(&s->w, b);
  key(s, K_ALLOCATED);
  pk_uint(&s->w, used);
  key(s, K_ACTIVE);
  pk_uint(&s->w, used);
  key(s, K_REQUESTED);
  pk_uint(&s->w, used);
  key(s, K_STREAM);
  pk_uint(&s->w, m->stream);
  key(s, K_SEGTYPE);
  val(s, b > (1u << 20) ? A_LARGE : A_SMALL);
  key(s, K_POOL);
  pk_tuple2_int(&s->w, 0, 0);
  key(s, K_EXPANDABLE);
  pk_bool(&s->w, 0);
  key(s, K_FRAMES);
  frames(s, m->stack);
  key(s, K_BLOCKS);
  pk_list_begin(&s->w);
  pk_list_item(&s->w);
  pk_dict_begin(&s->w);
  key(s, K_ADDRESS);
  pk_uint(&s->w, m->ptr);
  key(s, K_SIZE);
  pk_uint(&s->w, b);
  key(s, K_REQUESTED);
  pk_uint(&s->w, used);
  key(s, K_STATE);
  val(s, s->tensor ? A_ACTIVE : A_INACTIVE);
  key(s, K_FRAMES);
  if (s->tensor) frames(s, m->stack);
  else frames(s, 0);
  pk_dict_end(&s->w);
  pk_list_end(&s->w);
  pk_dict_end(&s->w);
}

/* Whether the trace's allocations are PyTorch's tensors: any through cudaMallocAsync (the
 * allocator backend `dlhook record --torch-memory` sets). */
static int tensor_level(const rd_trace *t, const rd_mem_sample *ms, long n) {
  for (long i = 0; i < n; i++) {
    if (ms[i].bytes <= 0) continue;
    const char *f = rd_func_name(t, ms[i].fn);
    if (f && (!strncmp(f, "cudaMallocAsync", 15) || !strncmp(f, "cudaMallocFromPoolAsync", 23)))
      return 1;
  }
  return 0;
}

static const char *level_note(int tensor) {
  return tensor ? "tensor level: recorded with dlhook record --torch-memory, every tensor "
                  "allocated with cudaMallocAsync; each allocation is a block filling a "
                  "segment of its own (reserved = allocated)"
                : "segment level: recorded without --torch-memory, PyTorch's caching allocator "
                  "asked CUDA for segments only; their blocks (the tensors) are not in the "
                  "trace: record with dlhook record --torch-memory to see every tensor";
}

/* The whole snapshot dict. live[i]: sample i is an allocation still live at the end. */
static void write_snapshot(snap *s, const char *path, const rd_mem_sample *ms, long n,
                           const char *live) {
  uint32_t ndev = 1;
  for (long i = 0; i < n; i++)
    if (ms[i].device + 1 > ndev) ndev = ms[i].device + 1;
  pk_dict_begin(&s->w);
  pk_str(&s->w, "segments");
  pk_list_begin(&s->w);
  for (long i = 0; i < n; i++)
    if (live[i]) segment(s, &ms[i]);
  pk_list_end(&s->w);
  pk_str(&s->w, "device_traces");
  pk_list_begin(&s->w);
  for (uint32_t d = 0; d < ndev; d++) device_trace(s, ms, n, d);
  pk_list_end(&s->w);
  pk_str(&s->w, "dlhook");
  pk_dict_begin(&s->w);
  pk_str(&s->w, "level");
  pk_str(&s->w, s->tensor ? "tensor" : "segment");
  pk_str(&s->w, "note");
  pk_str(&s->w, level_note(s->tensor));
  pk_str(&s->w, "trace");
  pk_str(&s->w, path);
  pk_dict_end(&s->w);
  pk_dict_end(&s->w);
}

/* live[i] = 1 for each allocation sample not freed later (malloc'd). */
static char *live_at_end(const rd_mem_sample *ms, long n) {
  char *live = rd_xcalloc(n ? (size_t)n : 1, 1);
  rd_u64map at = {0};
  for (long i = 0; i < n; i++) {
    uint32_t k;
    if (ms[i].bytes > 0) {
      live[i] = 1;
      rd_m_put(&at, ms[i].ptr, (uint32_t)i);
    } else if (rd_m_get(&at, ms[i].ptr, &k)) {
      live[k] = 0;
      rd_m_del(&at, ms[i].ptr);
    }
  }
  rd_m_free(&at);
  return live;
}

int ex_memsnap(const rd_opts *o, char **files, size_t nfiles) {
  if (nfiles != 1)
    return rd_usage_error("export", "--format memory-snapshot takes one trace (one process's "
                          "memory; export each trace to its own snapshot)");
  if (o->have_window)
    return rd_usage_error("export", "--format memory-snapshot takes no --window (the memory "
                          "ledger replays every allocation)");
  rd_trace t;
  if (rd_trace_open(&t, files[0]) < 0) return RD_BAD_INPUT;
  rd_memcol *c = rd_memcol_new();
  rd_sink sink = rd_memory_sink(c);
  int rc = rd_pass(&t, o, "memory", &sink);
  rd_mem_sample *ms = NULL;
  long n = rd_memcol_samples(c, &ms, 0);
  char *live = live_at_end(ms, n);
  FILE *f = rd_create(o->out, 0);
  if (!f) { rc = RD_BAD_INPUT; goto out; }
  snap s;
  memset(&s, 0, sizeof s);
  s.t = &t;
  s.tensor = tensor_level(&t, ms, n);
  pk_begin(&s.w, f);
  write_snapshot(&s, files[0], ms, n, live);
  pk_end(&s.w);
  rd_m_free(&s.stacks);
  if (rd_close(f, o->out) < 0) { rc = RD_BAD_INPUT; goto out; }
  if (!o->quiet)
    rd_error("export: %s: %s level, %" PRIu64 " allocation%s, %" PRIu64 " free%s%s", o->out,
             s.tensor ? "tensor" : "segment", s.actions[A_SEG_ALLOC],
             s.actions[A_SEG_ALLOC] == 1 ? "" : "s", s.actions[A_SEG_FREE],
             s.actions[A_SEG_FREE] == 1 ? "" : "s",
             s.tensor ? "" : " (recorded without --torch-memory: segments only, no tensors)");
out:
  free(live);
  free(ms);
  rd_trace_close(&t);
  return rc;
}
