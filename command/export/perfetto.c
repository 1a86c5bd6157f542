/* perfetto.c — `dlhook export --format perfetto`: Perfetto's native protobuf trace
 * (proto/perfetto_trace.proto, a subset with Perfetto's field numbers), written as a stream of
 * TracePackets on one packet sequence:
 *   - a track per process (ProcessDescriptor), per thread (ThreadDescriptor), per GPU device of
 *     a process and per stream of a device (named tracks under the device);
 *   - each API call and GPU record is a SLICE_BEGIN / SLICE_END pair on its track;
 *   - names (functions, kernels, NVTX messages) and debug-annotation names are interned: sent
 *     once in interned_data, then referred to by iid;
 *   - processes are named "rank N" (their command line in the descriptor), devices "GPU D (rank
 *     N)"; processes without GPU work are left out (--keep-gpuless keeps them);
 *   - flows connect a call to the GPU work it launched (flow id from the correlation id), only
 *     from calls that launched work and to work whose call is in the export (links.c:
 *     a first scan of each trace; then the calls, then the GPU records);
 *   - library calls (cuBLAS, cuBLASLt, cuDNN, NCCL) carry their recorded arguments as slice args
 *     (m, n, k, dtype, flops; N C H W K R S; count, datatype, nranks, comm_hash, bytes...);
 *   - counter tracks: the live device memory of each process (bytes, after every allocation and
 *     free) and, per stream, whether it is busy (1 while a kernel, copy or memset runs);
 *   - a folded event (count identical calls of a thread recorded once) is one slice named
 *     "NAME ×COUNT" from the first call's start to the last call's end, with debug annotations
 *     calls (COUNT) and calls_dur_ns (the calls' summed durations);
 *   - the call stack of each call is a PerfSample at the call's start whose callstack (frames,
 *     function names) is interned, so Perfetto's flame graph of a selection shows the stacks;
 *   - host samples (SampleBatch) are slices on a track "host samples" under their thread, each
 *     ending at the sample's time and as long as its weight (cut at the thread's previous
 *     sample, so that they never overlap), named by rd_sample_label ("step", "load [wait:
 *     futex]"), with annotations sample (cpu or wait), weight_ns and source (FILE:LINE);
 *   - NCCL's profiler plugin events (rd_ncclev.h): each kernel channel (KernelCh) is a slice
 *     named by its collective on a track "NCCL channel C" under the GPU that ran the NCCL
 *     kernels, and each proxy operation (ProxyOp: a send or receive of a channel) a slice
 *     "send" or "recv" on a track "NCCL proxy" under the process; slices that overlap without
 *     nesting go on further tracks of the same name ("NCCL proxy (2)", ...), with annotations
 *     seq, channel, peer and algorithm.
 * Memory: the interning and track tables only (names, threads, streams). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "perfetto_trace.pb-c.h"
#include "rd_ncclev.h"

#define SEQ 1
#define DLH_MAX_EXPORT_ARGS 24  /* library call args written as slice args, at most */

typedef struct pctx {
  const rd_opts *o;
  ex_links *L;
  char pname[64];            /* "rank N" or the program's name */
  FILE *f;
  const char *path;
  uint32_t trace_ix, pid;
  int first;                 /* next packet clears incremental state */
  uint64_t next_iid;
  rd_u64map names;           /* (trace, kind, id) -> iid */
  rd_u64map tracks;          /* uuids already described */
  rd_u64map uuids;           /* track key -> uuid */
  uint64_t next_uuid;
  rd_u64map frames;          /* hash of a frame name -> frame iid (= its function name iid) */
  rd_u64map stacks;          /* trace << 32 | StackDef id -> callstack iid */
  rd_map last_sample;        /* tid -> the time of the thread's last host sample + 1 (a pointer) */
  uint64_t next_frame, next_stack;
  uint8_t *buf;
  size_t cap;
  uint64_t packets;
  char **fixed;              /* names repaired to UTF-8 (kept until the end) */
  size_t nfixed;
  uint32_t nccl_dev;         /* the device of the trace's NCCL kernels + 1 (0: none seen) */
} pctx;

/* name as valid UTF-8 for the trace's string fields: itself, or a repaired copy owned by c. */
static const char *utf8_name(pctx *c, const char *name) {
  const unsigned char *q = (const unsigned char *)name;
  size_t k;
  while (*q && (k = rd_utf8_seq(q))) q += k;
  if (!*q) return name;
  c->fixed = rd_xrealloc(c->fixed, (c->nfixed + 1) * sizeof *c->fixed);
  return c->fixed[c->nfixed++] = rd_utf8_dup(name);
}

enum { IID_CORR = 1, IID_STREAM, IID_BYTES, IID_RESULT, IID_DEVICE, IID_GRID, IID_BLOCK,
       IID_FUNCTION, IID_CALLS, IID_CALLS_DUR, IID_SAMPLE, IID_WEIGHT, IID_SOURCE, IID_SEQ,
       IID_CHANNEL, IID_PEER, IID_ALGO, IID_FIRST_FREE };

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h & 0x0fffffffffffffffull;
}

static void emit(pctx *c, Dlhperfetto__TracePacket *tp) {
  tp->has_trusted_packet_sequence_id = 1;
  tp->trusted_packet_sequence_id = SEQ;
  if (c->first) {
    tp->has_sequence_flags = 1;
    tp->sequence_flags = 1 | 2;
    c->first = 0;
  } else if ((tp->track_event && tp->track_event->has_name_iid) || tp->interned_data ||
             tp->perf_sample) {
    tp->has_sequence_flags = 1;
    tp->sequence_flags = 2;
  }
  size_t n = dlhperfetto__trace_packet__get_packed_size(tp);
  if (n > c->cap) {
    c->cap = n * 2;
    c->buf = rd_xrealloc(c->buf, c->cap);
  }
  dlhperfetto__trace_packet__pack(tp, c->buf);
  putc(0x0a, c->f); /* Trace.packet, field 1, length-delimited */
  rd_put_varint(c->f, n);
  fwrite(c->buf, 1, n, c->f);
  c->packets++;
}

/* The iid of a name; key identifies it (so a name is interned once per trace and id). */
static uint64_t intern(pctx *c, uint64_t key, const char *name, Dlhperfetto__InternedData *id,
                       Dlhperfetto__EventName *slot) {
  uint32_t v;
  if (rd_m_get(&c->names, key, &v)) return v;
  uint64_t iid = c->next_iid++;
  rd_m_put(&c->names, key, (uint32_t)iid);
  dlhperfetto__event_name__init(slot);
  slot->has_iid = 1;
  slot->iid = iid;
  slot->name = (char *)utf8_name(c, name);
  id->n_event_names = 1;
  return iid;
}

static void describe_full(pctx *c, uint64_t uuid, uint64_t parent, const char *name, int pid,
                          int tid, int force, char **cmdline, size_t ncmd, int counter_unit) {
  uint32_t v;
  if (!force && rd_m_get(&c->tracks, uuid, &v)) return;
  rd_m_put(&c->tracks, uuid, 1);
  Dlhperfetto__TrackDescriptor td = DLHPERFETTO__TRACK_DESCRIPTOR__INIT;
  Dlhperfetto__ProcessDescriptor pd = DLHPERFETTO__PROCESS_DESCRIPTOR__INIT;
  Dlhperfetto__ThreadDescriptor th = DLHPERFETTO__THREAD_DESCRIPTOR__INIT;
  td.has_uuid = 1;
  td.uuid = uuid;
  name = utf8_name(c, name);
  if (parent) { td.has_parent_uuid = 1; td.parent_uuid = parent; }
  if (tid) {
    th.has_pid = th.has_tid = 1;
    th.pid = pid;
    th.tid = tid;
    th.thread_name = (char *)name;
    td.thread = &th;
  } else if (pid) {
    pd.has_pid = 1;
    pd.pid = pid;
    pd.process_name = (char *)name;
    pd.n_cmdline = ncmd;
    pd.cmdline = cmdline;
    td.process = &pd;
  } else {
    td.name = (char *)name;
  }
  Dlhperfetto__CounterDescriptor cd = DLHPERFETTO__COUNTER_DESCRIPTOR__INIT;
  if (counter_unit >= 0) {
    cd.has_unit = 1;
    cd.unit = (Dlhperfetto__CounterDescriptor__Unit)counter_unit;
    td.counter = &cd;
  }
  Dlhperfetto__TracePacket tp = DLHPERFETTO__TRACE_PACKET__INIT;
  tp.track_descriptor = &td;
  emit(c, &tp);
}

static void describe(pctx *c, uint64_t uuid, uint64_t parent, const char *name, int pid, int tid,
                     int force) {
  describe_full(c, uuid, parent, name, pid, tid, force, NULL, 0, -1);
}

/* A counter value on a counter track. */
static void counter(pctx *c, uint64_t track, uint64_t ts, int64_t v) {
  Dlhperfetto__TrackEvent te = DLHPERFETTO__TRACK_EVENT__INIT;
  te.has_type = 1;
  te.type = DLHPERFETTO__TRACK_EVENT__TYPE__TYPE_COUNTER;
  te.has_track_uuid = 1;
  te.track_uuid = track;
  te.has_counter_value = 1;
  te.counter_value = v;
  Dlhperfetto__TracePacket tp = DLHPERFETTO__TRACE_PACKET__INIT;
  tp.has_timestamp = 1;
  tp.timestamp = ts;
  tp.track_event = &te;
  emit(c, &tp);
}

/* Track uuids: small numbers (short varints on every event), one per process, thread, device
 * and stream of each trace. */
static uint64_t uuid_of(pctx *c, uint64_t key) {
  uint32_t v;
  if (!rd_m_get(&c->uuids, key, &v)) {
    v = (uint32_t)c->next_uuid++;
    rd_m_put(&c->uuids, key, v);
  }
  return v;
}
static uint64_t proc_uuid(pctx *c) { return uuid_of(c, 1ull << 62 | (uint64_t)c->trace_ix << 32 | c->pid); }
static uint64_t thread_uuid(pctx *c, uint32_t tid) {
  return uuid_of(c, 2ull << 62 | (uint64_t)c->trace_ix << 32 | tid);
}
static uint64_t dev_uuid(pctx *c, uint32_t dev) {
  return uuid_of(c, 3ull << 62 | (uint64_t)c->trace_ix << 40 | (uint64_t)(c->pid & 0xffffff) << 16 | (dev & 0xffff));
}
static uint64_t stream_uuid(pctx *c, uint32_t dev, uint32_t st) {
  return uuid_of(c, (uint64_t)(c->trace_ix & 0x3fff) << 48 | (uint64_t)(dev & 0xffff) << 32 | st);
}
static uint64_t busy_uuid(pctx *c, uint32_t dev, uint32_t st) {
  return uuid_of(c, 1ull << 63 | (uint64_t)(c->trace_ix & 0x3fff) << 48 | (uint64_t)(dev & 0xffff) << 32 | st);
}
static uint64_t mem_uuid(pctx *c) { return uuid_of(c, 5ull << 60 | (uint64_t)c->trace_ix << 32 | c->pid); }
static uint64_t flow_id(const pctx *c, uint64_t corr) {
  return ((uint64_t)c->trace_ix << 56 | (uint64_t)c->pid << 32) ^ corr;
}

static void p_packet(void *ctx, const rd_trace *t, const Dlh__Packet *p) {
  pctx *c = ctx;
  if (p->data_case == DLH__PACKET__DATA_PROCESS) {
    const Dlh__ProcessInfo *pi = p->process;
    c->pid = pi->pid;
    const char *e = pi->exe ? pi->exe : pi->n_cmdline ? pi->cmdline[0] : "process";
    const char *b = strrchr(e, '/');
    if (c->L->rank >= 0) snprintf(c->pname, sizeof c->pname, "rank %d", c->L->rank);
    else snprintf(c->pname, sizeof c->pname, "%s", b ? b + 1 : e);
    describe_full(c, proc_uuid(c), 0, c->pname, (int)c->pid, 0, 1, pi->cmdline, pi->n_cmdline, -1);
  } else if (p->data_case == DLH__PACKET__DATA_THREAD) {
    describe(c, thread_uuid(c, p->thread->tid), proc_uuid(c),
             p->thread->name ? p->thread->name : "", (int)c->pid, (int)p->thread->tid, 1);
  }
  (void)t;
}

static Dlhperfetto__DebugAnnotation *ann(Dlhperfetto__DebugAnnotation *a, uint64_t name_iid) {
  dlhperfetto__debug_annotation__init(a);
  a->has_name_iid = 1;
  a->name_iid = name_iid;
  return a;
}

static void slice(pctx *c, uint64_t track, uint64_t ts, uint64_t dur, uint64_t name_iid,
                  Dlhperfetto__InternedData *id, Dlhperfetto__DebugAnnotation **anns, size_t nann,
                  uint64_t *flow, uint64_t *term) {
  Dlhperfetto__TrackEvent te = DLHPERFETTO__TRACK_EVENT__INIT;
  te.has_type = 1;
  te.type = DLHPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
  te.has_track_uuid = 1;
  te.track_uuid = track;
  te.has_name_iid = 1;
  te.name_iid = name_iid;
  te.n_debug_annotations = nann;
  te.debug_annotations = anns;
  if (flow) { te.n_flow_ids = 1; te.flow_ids = flow; }
  if (term) { te.n_terminating_flow_ids = 1; te.terminating_flow_ids = term; }
  Dlhperfetto__TracePacket tp = DLHPERFETTO__TRACE_PACKET__INIT;
  tp.has_timestamp = 1;
  tp.timestamp = ts;
  tp.track_event = &te;
  if (id->n_event_names) tp.interned_data = id;
  emit(c, &tp);
  Dlhperfetto__TrackEvent end = DLHPERFETTO__TRACK_EVENT__INIT;
  end.has_type = 1;
  end.type = DLHPERFETTO__TRACK_EVENT__TYPE__TYPE_SLICE_END;
  end.has_track_uuid = 1;
  end.track_uuid = track;
  Dlhperfetto__TracePacket tp2 = DLHPERFETTO__TRACE_PACKET__INIT;
  tp2.has_timestamp = 1;
  tp2.timestamp = ts + dur;
  tp2.track_event = &end;
  emit(c, &tp2);
}

/* A PerfSample at the start of a call, with the call's stack interned (function names,
 * frames and the callstack are sent once, then referred to by iid). */
static void stack_sample(pctx *c, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  uint64_t key = (uint64_t)c->trace_ix << 32 | ev->stack;
  uint32_t cs;
  Dlhperfetto__InternedData id = DLHPERFETTO__INTERNED_DATA__INIT;
  Dlhperfetto__InternedString *strs = NULL, **strp = NULL;
  Dlhperfetto__Frame *frs = NULL, **frp = NULL;
  Dlhperfetto__Callstack cst = DLHPERFETTO__CALLSTACK__INIT, *cstp = &cst;
  uint64_t *ids = NULL;
  char (*bufs)[64] = NULL;
  if (!rd_m_get(&c->stacks, key, &cs)) {
    const rd_frame *fr;
    size_t n = rd_stack_frames(t, ev->stack, &fr);
    if (!n) return;
    strs = rd_xmalloc(n * sizeof *strs);
    strp = rd_xmalloc(n * sizeof *strp);
    frs = rd_xmalloc(n * sizeof *frs);
    frp = rd_xmalloc(n * sizeof *frp);
    ids = rd_xmalloc(n * sizeof *ids);
    bufs = rd_xmalloc(n * sizeof *bufs);
    size_t nnew = 0;
    for (size_t i = 0; i < n; i++) {
      const char *name = rd_frame_name(&fr[n - 1 - i], bufs[i], sizeof bufs[i]);
      uint64_t h = hash_name(name);
      uint32_t fid;
      if (!rd_m_get(&c->frames, h, &fid)) {
        fid = (uint32_t)c->next_frame++;
        rd_m_put(&c->frames, h, fid);
        dlhperfetto__interned_string__init(&strs[nnew]);
        strs[nnew].has_iid = 1;
        strs[nnew].iid = fid;
        strs[nnew].has_str = 1;
        const char *ok = utf8_name(c, name);
        strs[nnew].str.data = (uint8_t *)ok;
        strs[nnew].str.len = strlen(ok);
        strp[nnew] = &strs[nnew];
        dlhperfetto__frame__init(&frs[nnew]);
        frs[nnew].has_iid = frs[nnew].has_function_name_id = 1;
        frs[nnew].iid = frs[nnew].function_name_id = fid;
        frp[nnew] = &frs[nnew];
        nnew++;
      }
      ids[i] = fid;
    }
    cs = (uint32_t)c->next_stack++;
    rd_m_put(&c->stacks, key, cs);
    cst.has_iid = 1;
    cst.iid = cs;
    cst.n_frame_ids = n;
    cst.frame_ids = ids;
    id.n_function_names = id.n_frames = nnew;
    id.function_names = strp;
    id.frames = frp;
    id.n_callstacks = 1;
    id.callstacks = &cstp;
  }
  Dlhperfetto__PerfSample ps = DLHPERFETTO__PERF_SAMPLE__INIT;
  ps.has_pid = ps.has_tid = ps.has_callstack_iid = 1;
  ps.pid = c->pid;
  ps.tid = tid;
  ps.callstack_iid = cs;
  Dlhperfetto__TracePacket tp = DLHPERFETTO__TRACE_PACKET__INIT;
  tp.has_timestamp = 1;
  tp.timestamp = ev->start_ns;
  tp.perf_sample = &ps;
  if (id.n_callstacks) tp.interned_data = &id;
  emit(c, &tp);
  free(strs);
  free(strp);
  free(frs);
  free(frp);
  free(ids);
  free(bufs);
}

static void p_api(void *ctx, const rd_trace *t, uint32_t tid, const dlh_api_event *ev) {
  pctx *c = ctx;
  describe(c, thread_uuid(c, tid), proc_uuid(c), "", (int)c->pid, (int)tid, 0);
  const rd_func *fn = rd_trace_func(t, ev->fn);
  Dlhperfetto__InternedData id = DLHPERFETTO__INTERNED_DATA__INIT;
  Dlhperfetto__EventName en, *enp = &en;
  id.event_names = &enp;
  uint64_t msg, iid;
  const char *label = NULL;
  char *folded = NULL;
  uint64_t calls = dlh_api_calls(ev);
  if (fn && fn->domain == DLH__DOMAIN__DOMAIN_NVTX && rd_arg(t, ev, "message|name", &msg))
    label = rd_trace_string(t, (uint32_t)msg);
  if (calls > 1) { /* a folded event: its own name, "NAME ×COUNT" */
    folded = rd_folded_name(label ? label : rd_func_name(t, ev->fn), calls);
    iid = intern(c, 5ull << 60 | hash_name(folded), folded, &id, &en);
  } else if (label) {
    iid = intern(c, 2ull << 60 | (uint64_t)c->trace_ix << 32 | (uint32_t)msg, label, &id, &en);
  } else {
    iid = intern(c, 1ull << 60 | (uint64_t)c->trace_ix << 32 | ev->fn, rd_func_name(t, ev->fn),
                 &id, &en);
  }
  Dlhperfetto__DebugAnnotation a[4 + DLH_MAX_EXPORT_ARGS], *ap[4 + DLH_MAX_EXPORT_ARGS];
  size_t na = 0;
  if (ev->corr) { ap[na] = ann(&a[na], IID_CORR); a[na].has_uint_value = 1; a[na].uint_value = ev->corr; na++; }
  if (ev->ret) { ap[na] = ann(&a[na], IID_RESULT); a[na].has_int_value = 1; a[na].int_value = ev->ret; na++; }
  if (calls > 1) {
    ap[na] = ann(&a[na], IID_CALLS); a[na].has_uint_value = 1; a[na].uint_value = calls; na++;
    ap[na] = ann(&a[na], IID_CALLS_DUR); a[na].has_uint_value = 1; a[na].uint_value = ev->dur_ns; na++;
  }
  if (fn && (fn->domain == DLH__DOMAIN__DOMAIN_CUBLAS || fn->domain == DLH__DOMAIN__DOMAIN_CUBLASLT ||
             fn->domain == DLH__DOMAIN__DOMAIN_CUDNN || fn->domain == DLH__DOMAIN__DOMAIN_NCCL)) {
    /* the library call's recorded arguments (shapes, types, counts), by name */
    for (size_t i = 0; i < fn->nargs && i < ev->nargs && na < 4 + DLH_MAX_EXPORT_ARGS; i++) {
      Dlhperfetto__DebugAnnotation *d = &a[na];
      dlhperfetto__debug_annotation__init(d);
      d->name = fn->argname[i];
      uint64_t v = ev->args[i];
      switch (fn->argtype[i]) {
        case 0: d->has_int_value = 1; d->int_value = (int64_t)v; break;
        case 2: d->has_pointer_value = 1; d->pointer_value = v; break;
        case 3: d->has_double_value = 1; memcpy(&d->double_value, &v, sizeof v); break;
        case 4: d->string_value = (char *)(rd_trace_string(t, (uint32_t)v) ? rd_trace_string(t, (uint32_t)v) : ""); break;
        case 5: d->has_bool_value = 1; d->bool_value = v != 0; break;
        default: d->has_uint_value = 1; d->uint_value = v; break;
      }
      ap[na] = d;
      na++;
    }
  }
  if (ev->stack) stack_sample(c, t, tid, ev);
  uint64_t fl = flow_id(c, ev->corr);
  ex_link *l = fn && fn->domain != DLH__DOMAIN__DOMAIN_NVTX ? ex_links_get(c->L, ev->corr) : NULL;
  if (l && l->fn && l->fn != ev->fn) l = NULL; /* a nested call with the outer call's id */
  if (l) l->fn = ev->fn;
  /* on the timeline a folded event spans its calls: first start to last end */
  slice(c, thread_uuid(c, tid), ev->start_ns, dlh_api_span(ev), iid, &id, ap, na, l ? &fl : NULL,
        NULL);
  free(folded);
}

static uint64_t samples_uuid(pctx *c, uint32_t tid) {
  return uuid_of(c, 6ull << 60 | (uint64_t)c->trace_ix << 32 | tid);
}

static void p_sample(void *ctx, const rd_trace *t, const rd_sample *s) {
  pctx *c = ctx;
  describe(c, thread_uuid(c, s->tid), proc_uuid(c), "", (int)c->pid, (int)s->tid, 0);
  uint64_t su = samples_uuid(c, s->tid);
  describe(c, su, thread_uuid(c, s->tid), "host samples", 0, 0, 0);
  char label[512], src[1024], buf[256];
  rd_sample_label(t, s, label, sizeof label);
  Dlhperfetto__InternedData id = DLHPERFETTO__INTERNED_DATA__INIT;
  Dlhperfetto__EventName en, *enp = &en;
  id.event_names = &enp;
  uint64_t iid = intern(c, 6ull << 60 | hash_name(label), label, &id, &en);
  /* the slice ends at the sample; it starts weight ns earlier, but not before the thread's
   * previous sample's end */
  uintptr_t prev = (uintptr_t)rd_map_get(&c->last_sample, s->tid);
  if (prev && prev - 1 > s->time) return; /* out of order (a hostile file): left out */
  uint64_t dur = s->weight;
  if (prev && s->time - (prev - 1) < dur) dur = s->time - (prev - 1);
  /* nor before the process's start */
  uint64_t floor = t->have_start ? t->start_ns + (uint64_t)rd_offset_of(t->path) : 0;
  if (floor > s->time) floor = s->time;
  if (dur > s->time - floor) dur = s->time - floor;
  uint64_t start = s->time - dur;
  rd_map_put(&c->last_sample, s->tid, (void *)(uintptr_t)(s->time + 1));
  Dlhperfetto__DebugAnnotation a[3], *ap[3];
  size_t na = 0;
  ap[na] = ann(&a[na], IID_SAMPLE); a[na].string_value = s->kind == RD_SAMPLE_WAIT ? "wait" : "cpu"; na++;
  ap[na] = ann(&a[na], IID_WEIGHT); a[na].has_uint_value = 1; a[na].uint_value = s->weight; na++;
  const char *fn, *file;
  uint32_t line;
  rd_sample_where(t, s->stack, &fn, &file, &line, buf, sizeof buf);
  if (file) {
    if (line) snprintf(src, sizeof src, "%s:%u", file, line);
    else snprintf(src, sizeof src, "%s", file);
    ap[na] = ann(&a[na], IID_SOURCE); a[na].string_value = (char *)utf8_name(c, src); na++;
  }
  slice(c, su, start, dur, iid, &id, ap, na, NULL, NULL);
}

static void p_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  pctx *c = ctx;
  if (!rd_gpu_work(g->kind)) return;
  char nm[64];
  uint64_t du = dev_uuid(c, g->device), su = stream_uuid(c, g->device, g->stream);
  uint32_t v;
  if (!rd_m_get(&c->tracks, du, &v)) {
    if (c->L->rank >= 0) snprintf(nm, sizeof nm, "GPU %u (rank %d)", g->device, c->L->rank);
    else snprintf(nm, sizeof nm, "GPU %u (pid %u)", g->device, c->pid);
    describe(c, du, 0, nm, 0, 0, 0);
  }
  if (!rd_m_get(&c->tracks, su, &v)) {
    snprintf(nm, sizeof nm, "Stream %u", g->stream);
    describe(c, su, du, nm, 0, 0, 0);
  }
  uint64_t bu = g->kind != RD_SYNC ? busy_uuid(c, g->device, g->stream) : 0;
  if (bu && !rd_m_get(&c->tracks, bu, &v)) {
    snprintf(nm, sizeof nm, "Stream %u busy", g->stream);
    describe_full(c, bu, du, nm, 0, 0, 0, NULL, 0, DLHPERFETTO__COUNTER_DESCRIPTOR__UNIT__UNIT_COUNT);
  }
  Dlhperfetto__InternedData id = DLHPERFETTO__INTERNED_DATA__INIT;
  Dlhperfetto__EventName en, *enp = &en;
  id.event_names = &enp;
  const char *name = rd_gpu_name(t, g, nm, sizeof nm);
  if (!c->nccl_dev && g->kind == RD_KERNEL && strstr(name, "nccl")) c->nccl_dev = g->device + 1;
  uint64_t key = g->name ? 3ull << 60 | (uint64_t)c->trace_ix << 32 | g->name
                         : 4ull << 60 | hash_name(name);
  uint64_t iid = intern(c, key, name, &id, &en);
  Dlhperfetto__DebugAnnotation a[6], *ap[6];
  char grid[64], block[64];
  size_t na = 0;
  ap[na] = ann(&a[na], IID_CORR); a[na].has_uint_value = 1; a[na].uint_value = g->corr; na++;
  if (g->kind == RD_KERNEL && g->nvals >= 6) { /* launch geometry, as "x,y,z" */
    snprintf(grid, sizeof grid, "%" PRIu64 ",%" PRIu64 ",%" PRIu64, g->vals[0], g->vals[1], g->vals[2]);
    snprintf(block, sizeof block, "%" PRIu64 ",%" PRIu64 ",%" PRIu64, g->vals[3], g->vals[4], g->vals[5]);
    ap[na] = ann(&a[na], IID_GRID); a[na].string_value = grid; na++;
    ap[na] = ann(&a[na], IID_BLOCK); a[na].string_value = block; na++;
  }
  ap[na] = ann(&a[na], IID_STREAM); a[na].has_uint_value = 1; a[na].uint_value = g->stream; na++;
  ap[na] = ann(&a[na], IID_DEVICE); a[na].has_uint_value = 1; a[na].uint_value = g->device; na++;
  if ((g->kind == RD_MEMCPY || g->kind == RD_MEMSET) && g->nvals) {
    ap[na] = ann(&a[na], IID_BYTES); a[na].has_uint_value = 1; a[na].uint_value = g->vals[0]; na++;
  }
  uint64_t corr = ex_links_corr(c->L, g->corr);
  ex_link *l = g->kind != RD_SYNC ? ex_links_get(c->L, corr) : NULL;
  uint64_t fl = flow_id(c, corr);
  slice(c, su, g->start, g->dur, iid, &id, ap, na, NULL, l && l->fn ? &fl : NULL);
  if (bu) {
    counter(c, bu, g->start, 1);
    counter(c, bu, g->start + g->dur, 0);
  }
}

/* Tracks that slices of one kind go on (a channel's, the proxy's): the first whose last slice
 * ended by the start, or holds the new one (a group's kernel channels share their times), else
 * a new one. Returns the lane: 0 the track itself, 1 its "(2)", ... */
typedef struct lane { uint32_t key, lane; uint64_t s, e; } lane;
static uint32_t lane_of(lane **ls, size_t *n, uint32_t key, uint64_t s, uint64_t e) {
  uint32_t next = 0;
  for (size_t i = 0; i < *n; i++) {
    lane *l = &(*ls)[i];
    if (l->key != key) continue;
    if (l->e <= s || (l->s <= s && e <= l->e)) {
      if (l->e <= s) l->s = s, l->e = e;
      return l->lane;
    }
    next = l->lane + 1;
  }
  *ls = rd_xrealloc(*ls, (*n + 1) * sizeof **ls);
  (*ls)[(*n)++] = (lane){key, next, s, e};
  return next;
}

/* The track of lane `ln` of a kind: key channel + 1 a channel's, 0x10000 | channel << 1 |
 * is_send a channel's proxy sends or receives. */
static uint64_t nccl_track(pctx *c, uint32_t key, uint32_t ln) {
  uint64_t u = uuid_of(c, 6ull << 60 | (uint64_t)(c->trace_ix & 0xffff) << 40 |
                              (uint64_t)(key & 0xfffff) << 20 | (ln & 0xfffff));
  uint32_t v;
  if (rd_m_get(&c->tracks, u, &v)) return u;
  char nm[64], lnm[16] = "";
  if (ln) snprintf(lnm, sizeof lnm, " (%u)", ln + 1);
  uint32_t dev = c->nccl_dev ? c->nccl_dev - 1 : 0;
  uint64_t parent = proc_uuid(c);
  if (key < 0x10000) {
    parent = dev_uuid(c, dev);
    if (!rd_m_get(&c->tracks, parent, &v)) {
      if (c->L->rank >= 0) snprintf(nm, sizeof nm, "GPU %u (rank %d)", dev, c->L->rank);
      else snprintf(nm, sizeof nm, "GPU %u (pid %u)", dev, c->pid);
      describe(c, parent, 0, nm, 0, 0, 0);
    }
    snprintf(nm, sizeof nm, "NCCL channel %u%s", key - 1, lnm);
  } else {
    snprintf(nm, sizeof nm, "NCCL proxy channel %u %s%s", (key & 0xffff) >> 1,
             key & 1 ? "send" : "recv", lnm);
  }
  describe(c, u, parent, nm, 0, 0, 0);
  return u;
}

/* A slice to come: the parts of one kind (track key) that one kernel ran, merged (a group's
 * collectives share the kernel's channels and their proxy operations run together). */
typedef struct npend { uint32_t key, n; uint64_t s, e; const rd_nccl_op *o; int32_t peer; } npend;

static void nccl_slice(pctx *c, lane **ls, size_t *nl, const npend *q) {
  uint64_t tr = nccl_track(c, q->key, lane_of(ls, nl, q->key, q->s, q->e));
  const rd_nccl_op *o = q->o;
  const char *name = q->key < 0x10000 ? o->func : q->key & 1 ? "send" : "recv";
  Dlhperfetto__InternedData id = DLHPERFETTO__INTERNED_DATA__INIT;
  Dlhperfetto__EventName en, *enp = &en;
  id.event_names = &enp;
  uint64_t iid = intern(c, 7ull << 60 | hash_name(name), name, &id, &en);
  Dlhperfetto__DebugAnnotation a[5], *ap[5];
  char algo[48];
  size_t na = 0;
  if (o->type == DLH__NCCL_EVENT_TYPE__NCCL_COLL) { /* the first collective's, and how many */
    ap[na] = ann(&a[na], IID_SEQ); a[na].has_uint_value = 1; a[na].uint_value = o->seq; na++;
  }
  ap[na] = ann(&a[na], IID_CALLS); a[na].has_uint_value = 1; a[na].uint_value = q->n; na++;
  ap[na] = ann(&a[na], IID_CHANNEL); a[na].has_uint_value = 1;
  a[na].uint_value = q->key < 0x10000 ? q->key - 1 : (q->key & 0xffff) >> 1; na++;
  if (q->peer >= 0) { ap[na] = ann(&a[na], IID_PEER); a[na].has_int_value = 1; a[na].int_value = q->peer; na++; }
  if (o->algo[0]) {
    snprintf(algo, sizeof algo, "%s/%s", o->algo, o->proto);
    ap[na] = ann(&a[na], IID_ALGO); a[na].string_value = algo; na++;
  }
  slice(c, tr, q->s, q->e - q->s, iid, &id, ap, na, NULL, NULL);
}

/* The trace's NCCL kernel channels and proxy operations (in [lo, hi] of the common clock). */
static void nccl_parts(pctx *c, const rd_trace *t, int64_t off, uint64_t lo, uint64_t hi) {
  const rd_nccl_part *p;
  const rd_nccl_op *ops;
  size_t n = rd_nccl_parts(t, &p), nl = 0, nq = 0;
  rd_nccl_ops(t, &ops);
  lane *ls = NULL;
  npend *q = NULL;
  for (size_t i = 0; i < n; i++) {
    const rd_nccl_op *o = &ops[p[i].op];
    int kch = p[i].type == DLH__NCCL_EVENT_TYPE__NCCL_KERNEL_CH;
    if (!p[i].end_ns || p[i].end_ns < p[i].start_ns) continue;
    uint64_t s = p[i].start_ns + (uint64_t)off, e = p[i].end_ns + (uint64_t)off;
    if (e < lo || s > hi) continue;
    uint32_t key = kch ? p[i].channel + 1u : 0x10000u | (uint32_t)p[i].channel << 1 | p[i].is_send;
    int32_t peer = kch ? (o->type == DLH__NCCL_EVENT_TYPE__NCCL_COLL ? -1 : o->peer) : p[i].peer;
    size_t k = 0;
    while (k < nq && q[k].key != key) k++;
    if (k < nq && q[k].o->tid == o->tid && q[k].o->gpu_start_ns == o->gpu_start_ns &&
        q[k].o->gpu_end_ns == o->gpu_end_ns && o->gpu_end_ns && q[k].peer == peer) {
      if (e > q[k].e) q[k].e = e; /* the same kernel's */
      q[k].n++;
      continue;
    }
    if (k < nq) nccl_slice(c, &ls, &nl, &q[k]);
    else q = rd_xrealloc(q, ++nq * sizeof *q);
    q[k] = (npend){key, 1, s, e, o, peer};
  }
  for (size_t k = 0; k < nq; k++) nccl_slice(c, &ls, &nl, &q[k]);
  free(q);
  free(ls);
}

/* One trace into the common output: its second pass, then its live device memory. */
static int perfetto_one(void *ctx, ex_input *in, size_t index, size_t n) {
  pctx *cp = ctx, c_unused;
  (void)c_unused;
  (void)n;
  const rd_opts *o = cp->o;
  int rc = RD_OK;
  cp->trace_ix = (uint32_t)index;
  cp->path = in->path;
  cp->L = &in->L;
  cp->nccl_dev = 0;
  rd_sink all = {cp, p_packet, p_api, p_gpu, 0, p_sample};
  if (ex_input_pass(in, o, &all) != RD_OK) rc = RD_BAD_INPUT;
  /* the live device memory of the process (memory.c replays its allocations and frees) */
  const rd_mem_sample *mem = in->samples;
  long nmem = in->nmem;
  int64_t off = rd_offset_of(in->path);
  uint64_t lo = in->L.start_ns + (uint64_t)off + o->win_start,
           hi = o->win_end == UINT64_MAX ? UINT64_MAX : in->L.start_ns + (uint64_t)off + o->win_end;
  if (nmem > 0) describe_full(cp, mem_uuid(cp), proc_uuid(cp), "GPU memory (live bytes)", 0, 0, 0,
                              NULL, 0, DLHPERFETTO__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES);
  for (long m = 0; m < nmem; m++) {
    uint64_t ts = mem[m].ts_ns + (uint64_t)off;
    if (o->have_window && (ts < lo || ts > hi)) continue;
    counter(cp, mem_uuid(cp), ts, (int64_t)mem[m].live_bytes);
  }
  nccl_parts(cp, &in->t, off, o->have_window ? lo : 0, o->have_window ? hi : UINT64_MAX);
  cp->L = NULL;
  rd_map_free(&cp->last_sample, NULL);
  return rc;
}

int ex_perfetto(const rd_opts *o, char **files, size_t n) {
  pctx c = {0};
  c.o = o;
  c.f = rd_create(o->out, 0);
  if (!c.f) return RD_BAD_INPUT;
  /* a buffer of ours: setvbuf(f, NULL, ...) keeps glibc's (4 KiB writes); one export at a time */
  static char iobuf[1 << 20];
  setvbuf(c.f, iobuf, _IOFBF, sizeof iobuf);
  c.first = 1;
  c.next_iid = 1;
  c.next_frame = 1;
  c.next_uuid = 1;
  c.next_stack = 1;
  /* debug annotation names, interned once */
  static const char *const dn[] = {NULL, "correlation", "stream", "bytes", "result", "device",
                                   "grid", "block", "function", "calls", "calls_dur_ns",
                                   "sample", "weight_ns", "source", "seq", "channel", "peer",
                                   "algorithm"};
  Dlhperfetto__DebugAnnotationName d[IID_FIRST_FREE], *dp[IID_FIRST_FREE];
  for (int i = 1; i < IID_FIRST_FREE; i++) {
    dlhperfetto__debug_annotation_name__init(&d[i]);
    d[i].has_iid = 1;
    d[i].iid = (uint64_t)i;
    d[i].name = (char *)dn[i];
    dp[i - 1] = &d[i];
  }
  Dlhperfetto__InternedData id = DLHPERFETTO__INTERNED_DATA__INIT;
  id.n_debug_annotation_names = IID_FIRST_FREE - 1;
  id.debug_annotation_names = dp;
  Dlhperfetto__TracePacket tp = DLHPERFETTO__TRACE_PACKET__INIT;
  tp.interned_data = &id;
  emit(&c, &tp);
  int rc = ex_each(o, files, n, perfetto_one, &c);
  if (rd_close(c.f, o->out) < 0) rc = RD_BAD_INPUT;
  rd_m_free(&c.names);
  rd_m_free(&c.tracks);
  rd_m_free(&c.frames);
  rd_m_free(&c.uuids);
  rd_m_free(&c.stacks);
  free(c.buf);
  for (size_t i = 0; i < c.nfixed; i++) free(c.fixed[i]);
  free(c.fixed);
  return rc;
}
