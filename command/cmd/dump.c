/* dump.c — `dlhook dump`: every event of traces as one JSON object per line, in file order. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>

#include "rd.h"
#include "rd_ncclev.h"
#include "rd_opts.h"
#include "rd_scan.h"

/* The types of the objects dump prints: the choices of --type. */
static const rd_choice known_types[] = {
    {"process", NULL, 0}, {"thread", NULL, 0},  {"api", NULL, 0},      {"nvtx", NULL, 0},
    {"kernel", NULL, 0},  {"memcpy", NULL, 0},  {"memset", NULL, 0},   {"sync", NULL, 0},
    {"event", NULL, 0},   {"overhead", NULL, 0}, {"gpu", NULL, 0},     {"device", NULL, 0},
    {"summary", NULL, 0}, {"function", NULL, 0}, {"string", NULL, 0},  {"stack", NULL, 0},
    {"module", NULL, 0},  {"symbol", NULL, 0},  {"pyframe", NULL, 0},  {"anchor", NULL, 0},
    {"counters", NULL, 0}, {"trailer", NULL, 0}, {"sample", NULL, 0}, {"graphnode", NULL, 0},
    {"inductor", NULL, 0}, {"flight", NULL, 0}, {"nccl", NULL, 0}, {"wait", NULL, 0}, {NULL, NULL, 0}};
/* shown without --all or --type */
static const char *const default_types[] = {
  "process", "thread", "api", "nvtx", "kernel", "memcpy", "memset", "sync", "event", "overhead", "gpu",
  "device", "summary", "graphnode", "inductor", "flight", "nccl", "wait", NULL};

typedef struct dump_opts {
  char **types; /* NULL-terminated; NULL = default set */
  size_t ntypes;
  int all;
  rd_opts ro;   /* --max-events (events_limited set) */
} dump_opts;

/* The event lines printed of the trace being dumped, its limit (rd_event_limit), and where
 * the limit stopped it (over: the event's time) */
static uint64_t ev_lines, ev_limit;
static int ev_over;
static uint64_t ev_over_at;

/* 1 when one more event line may be printed; else notes where the limit stopped the dump */
static int ev_room(uint64_t ts) {
  if (ev_over) return 0;
  if (ev_lines == ev_limit) {
    ev_over = 1;
    ev_over_at = ts;
    return 0;
  }
  ev_lines++;
  return 1;
}

static int in_list(const char *const *l, const char *s) {
  for (; *l; l++)
    if (!strcmp(*l, s)) return 1;
  return 0;
}

static int want(const dump_opts *o, const char *type) {
  if (o->ntypes) {
    for (size_t i = 0; i < o->ntypes; i++)
      if (!strcmp(o->types[i], type)) return 1;
    return 0;
  }
  return o->all || in_list(default_types, type);
}

enum { OPT_TYPE = RD_KEY(0), OPT_ALL, OPT_MAX_EVENTS };
static const rd_option options[] = {
    {"type", OPT_TYPE, "TYPE[,TYPE...]",
     "only objects of these types (repeatable or comma-separated):", known_types, RD_OPT_LIST},
    {"all", OPT_ALL, NULL,
     "also print definitions (function, string, stack, module, symbol, pyframe), clock "
     "anchors, counters and the trailer", NULL, 0},
    {"max-events", OPT_MAX_EVENTS, "N",
     "print at most N event lines of a trace (calls, GPU records, samples), say so and exit 1; "
     "0: no limit. Default: 2 Mi, or 4 per byte of the trace file when more (dlhook export "
     "--help)", NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_dump_spec = {
    .name = "dump",
    .synopsis = "[--type TYPE[,TYPE...]] [--all] TRACE...",
    .summary = "print the events of traces as JSON lines",
    .about = "Prints the events of each trace as JSON, one object per line, in file order: a "
             "\"process\" line, \"thread\" lines, \"api\" calls and \"nvtx\" ranges (name, "
             "domain, pid, tid, start_ns, dur_ns, ret, corr, depth, args, and when recorded "
             "\"stack\": the call stack, innermost frame first, each {function, file, line, "
             "module, pc} or, for Python frames, {function, file, line, python: true}), GPU "
             "activity (\"kernel\", \"memcpy\", \"memset\", \"sync\", ...) and a closing "
             "\"summary\" line (records, dropped, calls, folded; with host sampling also "
             "sample_events, samples and samples_lost).\n\n"
             "Host samples (DLHOOK_SAMPLE_HZ) print, with --all or --type sample, as \"sample\" "
             "lines: kind (cpu: the thread "
             "was running; wait: it was blocked), pid, tid, time_ns, weight_ns (the CPU or wall "
             "time the sample stands for), syscall and syscall_name (what a waiting thread was "
             "blocked in, x86-64 numbers), in_call (the CUDA call in flight) and stack.\n\n"
             "A folded event (consecutive identical calls of a thread recorded once) has "
             "\"count\" (its calls), \"span_ns\" (first call's start to last call's end) and "
             "dur_ns the sum of the calls' own durations.",
    .notes = "A damaged trace prints everything readable, then an error on stderr (exit 1).",
    .examples = " dlhook dump trace.dlh | head\n"
                " dlhook dump --type=kernel,memcpy traces/*.dlh | jq -s 'length'",
    .options = options,
};

static void print_arg(FILE *f, const rd_trace *t, uint32_t type, uint64_t v) {
  switch (type) {
    case 0: fprintf(f, "%" PRId64, (int64_t)v); break;
    case 2: fprintf(f, "\"0x%" PRIx64 "\"", v); break;
    case 3: {
      double d;
      memcpy(&d, &v, sizeof d);
      rd_json_double(f, d);
      break;
    }
    case 4: {
      const char *s = rd_trace_string(t, (uint32_t)v);
      if (v == 0) fputs("null", f); /* no string */
      else if (s) rd_json_str(f, s);
      else fprintf(f, "\"#%" PRIu64 "\"", v);
      break;
    }
    case 5: fputs(v ? "true" : "false", f); break;
    default: fprintf(f, "%" PRIu64, v); break;
  }
}

/* A stack as a JSON array of frames, innermost first. */
static void print_stack(FILE *f, const rd_trace *t, uint32_t id) {
  const rd_frame *fr;
  size_t n = rd_stack_frames(t, id, &fr);
  putc('[', f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",{\"function\":" : "{\"function\":", f);
    rd_json_str(f, fr[i].function);
    fputs(",\"file\":", f);
    rd_json_str(f, fr[i].file);
    fprintf(f, ",\"line\":%u", fr[i].line);
    if (fr[i].python) {
      fputs(",\"python\":true}", f);
    } else {
      fputs(",\"module\":", f);
      rd_json_str(f, fr[i].module);
      fprintf(f, ",\"pc\":\"0x%" PRIx64 "\"}", fr[i].pc);
    }
  }
  putc(']', f);
}

static void dump_api(FILE *f, const dump_opts *o, const rd_trace *t, const Dlh__ApiBatch *b,
                     int *bad) {
  dlh_api_iter it;
  dlh_api_event ev;
  dlh_api_iter_init(&it, b);
  while (dlh_api_iter_next(&it, &ev)) {
    const rd_func *fn = rd_trace_func(t, ev.fn);
    /* NVTX ranges and marks travel as calls of the NVTX domain; they print as "nvtx" */
    const char *type = fn && fn->domain == DLH__DOMAIN__DOMAIN_NVTX ? "nvtx" : "api";
    if (!want(o, type)) continue;
    if (!ev_room(ev.start_ns)) return;
    fprintf(f, "{\"type\":\"%s\",\"name\":", type);
    rd_json_str(f, rd_func_name(t, ev.fn));
    fprintf(f, ",\"domain\":\"%s\",\"pid\":%u,\"tid\":%u,\"start_ns\":%" PRIu64
               ",\"dur_ns\":%" PRIu64 ",\"ret\":%" PRId64,
            rd_domain_name(fn ? fn->domain : 0), t->pid, b->tid, ev.start_ns, ev.dur_ns, ev.ret);
    if (ev.corr) fprintf(f, ",\"corr\":%" PRIu64, ev.corr);
    /* a folded event: count identical calls, dur_ns their summed durations, span_ns from the
     * first call's start to the last call's end */
    if (dlh_api_calls(&ev) > 1)
      fprintf(f, ",\"count\":%" PRIu64 ",\"span_ns\":%" PRIu64, dlh_api_calls(&ev),
              dlh_api_span(&ev));
    fprintf(f, ",\"depth\":%u", ev.depth);
    if (ev.stack) {
      fprintf(f, ",\"stack_id\":%u,\"stack\":", ev.stack);
      print_stack(f, t, ev.stack);
    }
    fputs(",\"args\":{", f);
    for (uint32_t i = 0; i < ev.nargs; i++) {
      if (i) putc(',', f);
      if (fn && i < fn->nargs) {
        rd_json_str(f, fn->argname[i]);
        putc(':', f);
        print_arg(f, t, fn->argtype[i], ev.args[i]);
      } else {
        fprintf(f, "\"arg%u\":%" PRIu64, i, ev.args[i]);
      }
    }
    fputs("}}\n", f);
  }
  if (it.bad) *bad = 1;
}

static void dump_gpu(FILE *f, const dump_opts *o, const rd_trace *t, const Dlh__GpuBatch *b,
                     int *bad) {
  size_t n = b->n_kind;
  if ((b->n_start_delta && b->n_start_delta != n) || (b->n_dur && b->n_dur != n) ||
      (b->n_corr && b->n_corr != n) || (b->n_stream && b->n_stream != n) ||
      (b->n_name && b->n_name != n) || (b->n_nvals && b->n_nvals != n) ||
      (b->n_context && b->n_context != n) || (b->n_devices && b->n_devices != n) ||
      (b->n_graph && b->n_graph != n) || (b->n_graph_node && b->n_graph_node != n)) {
    *bad = 1;
    return;
  }
  uint64_t ts = b->base_start_ns;
  size_t vpos = 0;
  for (size_t i = 0; i < n; i++) {
    if (b->n_start_delta) ts += (uint64_t)b->start_delta[i];
    uint32_t nv = b->n_nvals ? b->nvals[i] : 0;
    if (nv > b->n_vals - vpos) { *bad = 1; return; }
    const char *type = rd_gpu_kind_name(b->kind[i]);
    if (want(o, type)) {
      if (!ev_room(ts)) return;
      fprintf(f, "{\"type\":\"%s\",", type);
      if (!strcmp(type, "gpu")) fprintf(f, "\"kind\":%u,", b->kind[i]);
      uint32_t name = b->n_name ? b->name[i] : 0;
      if (name) {
        const char *s = rd_trace_string(t, name);
        fputs("\"name\":", f);
        if (s) rd_json_str(f, s);
        else fprintf(f, "\"#%u\"", name);
        putc(',', f);
      }
      /* the record's own device (GpuBatch.devices); the batch's field is the old default */
      fprintf(f, "\"pid\":%u,\"device\":%u,\"stream\":%u,", t->pid,
              b->n_devices ? b->devices[i] : b->device, b->n_stream ? b->stream[i] : 0);
      if (b->n_context) fprintf(f, "\"context\":%u,", b->context[i]);
      if (b->n_corr && b->corr[i]) fprintf(f, "\"corr\":%" PRIu64 ",", b->corr[i]);
      if (b->n_graph && b->graph[i]) fprintf(f, "\"graph\":%u,", b->graph[i]);
      if (b->n_graph_node && b->graph_node[i])
        fprintf(f, "\"graph_node\":%" PRIu64 ",", b->graph_node[i]);
      fprintf(f, "\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64, ts, b->n_dur ? b->dur[i] : 0);
      if (nv) {
        fputs(",\"vals\":[", f);
        for (uint32_t k = 0; k < nv; k++)
          fprintf(f, "%s%" PRIu64, k ? "," : "", b->vals[vpos + k]);
        putc(']', f);
      }
      fputs("}\n", f);
    }
    vpos += nv;
  }
}

/* The host samples of a SampleBatch: kind (cpu, wait; a number for a kind this dump does not
 * know), time, weight, stack, the system call (state) and the CUDA call in flight. */
static void dump_samples(FILE *f, const rd_trace *t, const Dlh__SampleBatch *b, int *bad) {
  rd_sample_iter it;
  rd_sample s;
  rd_sample_iter_init(&it, b);
  while (rd_sample_iter_next(&it, &s)) {
    if (!ev_room(s.time)) return;
    fprintf(f, "{\"type\":\"sample\",\"kind\":");
    if (s.kind == RD_SAMPLE_CPU) fputs("\"cpu\"", f);
    else if (s.kind == RD_SAMPLE_WAIT) fputs("\"wait\"", f);
    else fprintf(f, "%u", s.kind);
    fprintf(f, ",\"pid\":%u,\"tid\":%u,\"time_ns\":%" PRIu64 ",\"weight_ns\":%" PRIu64, t->pid,
            s.tid, s.time, s.weight);
    if (s.state) {
      const char *nm = rd_syscall_name(s.state - 1);
      fprintf(f, ",\"syscall\":%u", s.state - 1);
      if (nm) fprintf(f, ",\"syscall_name\":\"%s\"", nm);
    }
    if (s.api_fn) {
      fputs(",\"in_call\":", f);
      rd_json_str(f, rd_func_name(t, s.api_fn));
    }
    if (s.stack) {
      fprintf(f, ",\"stack_id\":%u,\"stack\":", s.stack);
      print_stack(f, t, s.stack);
    }
    fputs("}\n", f);
  }
  if (it.bad) *bad = 1;
}

static void str_array(FILE *f, size_t n, char **v) {
  putc('[', f);
  for (size_t i = 0; i < n; i++) {
    if (i) putc(',', f);
    rd_json_str(f, v[i]);
  }
  putc(']', f);
}

/* The process packet: who, what, how it was recorded. */
static void dump_process(FILE *f, const rd_trace *t, const Dlh__ProcessInfo *pi) {
  fputs("{\"type\":\"process\",\"file\":", f);
  rd_json_str(f, t->path);
  fprintf(f, ",\"pid\":%u,\"ppid\":%u,\"host\":", pi->pid, pi->ppid);
  rd_json_str(f, pi->host);
  fprintf(f, ",\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,\"exe\":", pi->rank,
          pi->local_rank, pi->world_size);
  rd_json_str(f, pi->exe);
  fputs(",\"cmdline\":", f);
  str_array(f, pi->n_cmdline, pi->cmdline);
  fputs(",\"dlhook_version\":", f);
  rd_json_str(f, pi->dlhook_version);
  fprintf(f, ",\"format_version\":%u,\"stacks_mode\":", pi->format_version);
  rd_json_str(f, pi->stacks_mode);
  fprintf(f, ",\"start_ns\":%" PRIu64, pi->start_ns);
  if (pi->has_sample_hz) fprintf(f, ",\"sample_hz\":%u", pi->sample_hz);
  if (pi->has_attached && pi->attached) { /* dlhook attach */
    fputs(",\"attached\":true,\"not_hooked\":", f);
    str_array(f, pi->n_not_hooked, pi->not_hooked);
  }
  fputs("}\n", f);
}

/* A function the trace defines: its id, name, domain and arguments (fn may be NULL: nothing). */
static void dump_function(FILE *f, const rd_func *fn) {
  if (!fn) return;
  fprintf(f, "{\"type\":\"function\",\"id\":%u,\"name\":", fn->id);
  rd_json_str(f, fn->name);
  fprintf(f, ",\"domain\":\"%s\",\"args\":[", rd_domain_name(fn->domain));
  for (size_t i = 0; i < fn->nargs; i++) {
    fputs(i ? ",{\"name\":" : "{\"name\":", f);
    rd_json_str(f, fn->argname[i]);
    fprintf(f, ",\"type\":%u}", fn->argtype[i]);
  }
  fputs("]}\n", f);
}

/* A module of the module map: its path, address range and build-id. */
static void dump_module(FILE *f, const Dlh__ModuleDef *m) {
  fputs("{\"type\":\"module\",\"path\":", f);
  rd_json_str(f, m->path);
  fprintf(f, ",\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64 "\",\"offset\":%" PRIu64
             ",\"build_id\":\"",
          m->start, m->end, m->offset);
  for (size_t i = 0; i < m->build_id.len; i++) fprintf(f, "%02x", m->build_id.data[i]);
  fputs("\"}\n", f);
}

/* A batch of CUDA graph nodes: one line per node. */
static void dump_graph_nodes(FILE *f, const rd_trace *t, const Dlh__GraphNodeBatch *b) {
  for (size_t i = 0; i < b->n_node; i++) {
    fprintf(f, "{\"type\":\"graphnode\",\"pid\":%u,\"node\":%" PRIu64, t->pid, b->node[i]);
    if (i < b->n_graph) fprintf(f, ",\"graph\":%u", b->graph[i]);
    if (i < b->n_type) fprintf(f, ",\"node_type\":%u", b->type[i]);
    if (i < b->n_corr && b->corr[i]) fprintf(f, ",\"corr\":%" PRIu64, b->corr[i]);
    if (i < b->n_tid && b->tid[i]) fprintf(f, ",\"tid\":%u", b->tid[i]);
    if (i < b->n_origin && b->origin[i]) fprintf(f, ",\"origin\":%" PRIu64, b->origin[i]);
    fputs("}\n", f);
  }
}

/* What Inductor's generated code says about one of its Triton kernels. */
static void dump_inductor(FILE *f, const Dlh__InductorKernel *k) {
  fputs("{\"type\":\"inductor\",\"file\":", f);
  rd_json_str(f, k->file);
  fputs(",\"kernel\":", f);
  rd_json_str(f, k->kernel);
  fputs(",\"source_nodes\":", f);
  rd_json_str(f, k->source_nodes);
  fputs(",\"aten_ops\":", f);
  rd_json_str(f, k->aten_ops);
  fprintf(f, ",\"def_line\":%u,\"launch_lines\":[", k->def_line);
  for (size_t i = 0; i < k->n_launch_line; i++) fprintf(f, "%s%u", i ? "," : "", k->launch_line[i]);
  fputs("]}\n", f);
}

/* The periodic counters: records, drops, calls, dlhook's memory, samples, CPU times. */
static void dump_counters(FILE *f, const Dlh__Counters *c) {
  fprintf(f, "{\"type\":\"counters\",\"records\":%" PRIu64 ",\"dropped\":%" PRIu64
             ",\"threads\":%u", c->records, c->dropped, c->threads);
  if (c->has_calls) fprintf(f, ",\"calls\":%" PRIu64, c->calls);
  if (c->has_mem_bytes) fprintf(f, ",\"mem_bytes\":%" PRIu64, c->mem_bytes);
  if (c->has_samples) fprintf(f, ",\"samples\":%" PRIu64, c->samples);
  if (c->has_samples_lost) fprintf(f, ",\"samples_lost\":%" PRIu64, c->samples_lost);
  if (c->has_ring_waits)
    fprintf(f, ",\"ring_waits\":%" PRIu64 ",\"ring_wait_ns\":%" PRIu64, c->ring_waits,
            c->ring_wait_ns);
  if (c->has_calls_dropped) fprintf(f, ",\"calls_dropped\":%" PRIu64, c->calls_dropped);
  if (c->has_gpu_dropped) fprintf(f, ",\"gpu_dropped\":%" PRIu64, c->gpu_dropped);
  if (c->has_sample_cost_ns) fprintf(f, ",\"sample_cost_ns\":%" PRIu64, c->sample_cost_ns);
  if (c->has_process_cpu_ns) /* CPU time of dlhook's threads and of the process */
    fprintf(f, ",\"writer_cpu_ns\":%" PRIu64 ",\"sampler_cpu_ns\":%" PRIu64
               ",\"symbols_cpu_ns\":%" PRIu64 ",\"process_cpu_ns\":%" PRIu64,
            c->writer_cpu_ns, c->sampler_cpu_ns, c->symbols_cpu_ns, c->process_cpu_ns);
  fputs("}\n", f);
}

/* A thread's waits for dlhook's writer thread (RingWaitBatch), one line per folded event. */
static void dump_waits(FILE *f, const rd_trace *t, const Dlh__RingWaitBatch *b, int *bad) {
  size_t n = b->n_tid;
  if (b->n_start_ns != n || b->n_span_ns != n || b->n_wait_ns != n || b->n_count != n) {
    *bad = 1;
    return;
  }
  for (size_t i = 0; i < n; i++)
    fprintf(f, "{\"type\":\"wait\",\"pid\":%u,\"tid\":%u,\"start_ns\":%" PRIu64
               ",\"span_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64 ",\"count\":%" PRIu64 "}\n",
            t->pid, b->tid[i], b->start_ns[i], b->span_ns[i], b->wait_ns[i], b->count[i]);
}

/* The trailer: totals, why the process ended, symbolization and dlhook's memory. */
static void dump_trailer(FILE *f, const Dlh__Trailer *tr) {
  fprintf(f, "{\"type\":\"trailer\",\"records\":%" PRIu64 ",\"dropped\":%" PRIu64
             ",\"end_ns\":%" PRIu64 ",\"exit_reason\":%u,\"signal\":%u"
             ",\"pcs_unsymbolized\":%" PRIu64 ",\"pcs_no_symbol\":%" PRIu64
             ",\"stacks_lost\":%" PRIu64 ",\"symbol_index_bytes\":%" PRIu64,
          tr->records, tr->dropped, tr->end_ns, tr->exit_reason, tr->signal,
          tr->pcs_unsymbolized, tr->pcs_no_symbol, tr->stacks_lost, tr->symbol_index_bytes);
  /* format version 2: calls (folded repeats included), folded, dlhook's own memory */
  if (tr->has_calls) fprintf(f, ",\"calls\":%" PRIu64, tr->calls);
  if (tr->has_folded) fprintf(f, ",\"folded\":%" PRIu64, tr->folded);
  if (tr->has_mem_budget_bytes) fprintf(f, ",\"mem_budget_bytes\":%" PRIu64, tr->mem_budget_bytes);
  if (tr->has_mem_peak_bytes) fprintf(f, ",\"mem_peak_bytes\":%" PRIu64, tr->mem_peak_bytes);
  if (tr->n_mem_parts) {
    fputs(",\"mem_parts\":[", f);
    for (size_t i = 0; i < tr->n_mem_parts; i++) {
      const Dlh__MemPart *mp = tr->mem_parts[i];
      fputs(i ? ",{\"name\":" : "{\"name\":", f);
      rd_json_str(f, mp && mp->name ? mp->name : "");
      fprintf(f, ",\"peak_bytes\":%" PRIu64, mp ? mp->peak_bytes : 0);
      if (mp && mp->has_bytes) fprintf(f, ",\"bytes\":%" PRIu64, mp->bytes);
      putc('}', f);
    }
    putc(']', f);
  }
  fputs("}\n", f);
}

/* A flight recorder dump's FlightDump: why and when, each thread, each NCCL communicator. */
static void dump_flight(FILE *f, const rd_trace *t, const Dlh__FlightDump *d) {
  fprintf(f, "{\"type\":\"flight\",\"reason\":%u,\"signal\":%u,\"time_ns\":%" PRIu64
             ",\"window_ns\":%" PRIu64 ",\"first_ns\":%" PRIu64 ",\"frames\":%u"
             ",\"frames_evicted\":%" PRIu64 ",\"ring_bytes\":%" PRIu64 ",\"defs_bytes\":%" PRIu64
             ",\"dump_seq\":%u",
          d->reason, d->signal, d->time_ns, d->window_ns, d->first_ns, d->frames,
          d->frames_evicted, d->ring_bytes, d->defs_bytes, d->dump_seq);
  if (d->has_request_gen)
    fprintf(f, ",\"request_gen\":%u,\"request_pid\":%u,\"request_rank\":%d", d->request_gen,
            d->request_pid, d->request_rank);
  fputs(",\"detail\":", f);
  rd_json_str(f, d->detail ? d->detail : "");
  fputs(",\"threads\":[", f);
  for (size_t i = 0; i < d->n_threads; i++) {
    const Dlh__FlightThread *x = d->threads[i];
    fprintf(f, "%s{\"tid\":%u,\"depth\":%u", i ? "," : "", x->tid, x->depth);
    if (x->has_in_call_since_ns) fprintf(f, ",\"in_call_since_ns\":%" PRIu64, x->in_call_since_ns);
    if (x->has_sample_ns)
      fprintf(f, ",\"sample_ns\":%" PRIu64 ",\"sample_kind\":%u,\"stack_id\":%u,\"state\":%u",
              x->sample_ns, x->sample_kind, x->stack, x->state);
    if (x->has_cpu_sample_ns)
      fprintf(f, ",\"cpu_sample_ns\":%" PRIu64 ",\"cpu_stack_id\":%u", x->cpu_sample_ns,
              x->cpu_stack);
    if (x->has_last_fn) {
      fputs(",\"last_call\":", f);
      rd_json_str(f, rd_func_name(t, x->last_fn));
    }
    putc('}', f);
  }
  fputs("],\"comms\":[", f);
  for (size_t i = 0; i < d->n_comms; i++) {
    const Dlh__FlightComm *c = d->comms[i];
    fprintf(f, "%s{\"comm_hash\":\"0x%016" PRIx64 "\",\"rank\":%d,\"nranks\":%d,\"seq\":%" PRIu64
               ",\"ops\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"tid\":%u,\"name\":",
            i ? "," : "", c->comm_hash, c->rank, c->nranks, c->seq, c->ops, c->end_ns, c->tid);
    rd_json_str(f, rd_func_name(t, c->fn));
    putc('}', f);
  }
  fputs("]}\n", f);
}

/* One packet as JSON lines, when o asks for its kind (*bad set on a damaged batch). */
static void dump_packet(FILE *f, const dump_opts *o, const rd_trace *t, const Dlh__Packet *p,
                        int *bad) {
  switch (p->data_case) {
    case DLH__PACKET__DATA_PROCESS:
      if (want(o, "process")) dump_process(f, t, p->process);
      break;
    case DLH__PACKET__DATA_THREAD:
      if (!want(o, "thread")) break;
      fprintf(f, "{\"type\":\"thread\",\"pid\":%u,\"tid\":%u,\"name\":", t->pid, p->thread->tid);
      rd_json_str(f, p->thread->name);
      fputs("}\n", f);
      break;
    case DLH__PACKET__DATA_API:
      if (want(o, "api") || want(o, "nvtx")) dump_api(f, o, t, p->api, bad);
      break;
    case DLH__PACKET__DATA_GPU:
      dump_gpu(f, o, t, p->gpu, bad);
      break;
    case DLH__PACKET__DATA_SAMPLES:
      if (want(o, "sample")) dump_samples(f, t, p->samples, bad);
      break;
    case DLH__PACKET__DATA_DEVICE: {
      const Dlh__DeviceInfo *d = p->device;
      if (!want(o, "device")) break;
      fprintf(f, "{\"type\":\"device\",\"pid\":%u,\"id\":%u,\"name\":", t->pid, d->id);
      rd_json_str(f, d->name);
      fprintf(f, ",\"total_mem\":%" PRIu64 ",\"sm_count\":%u,\"cc\":\"%u.%u\"}\n", d->total_mem,
              d->sm_count, d->cc_major, d->cc_minor);
      break;
    }
    case DLH__PACKET__DATA_FUNCTION:
      if (want(o, "function")) dump_function(f, rd_trace_func(t, p->function->id));
      break;
    case DLH__PACKET__DATA_STRING:
      if (!want(o, "string")) break;
      fprintf(f, "{\"type\":\"string\",\"id\":%u,\"value\":", p->string->id);
      rd_json_str(f, p->string->value);
      fputs("}\n", f);
      break;
    case DLH__PACKET__DATA_STACK:
      if (!want(o, "stack")) break;
      fprintf(f, "{\"type\":\"stack\",\"id\":%u,\"pc\":[", p->stack->id);
      for (size_t i = 0; i < p->stack->n_pc; i++)
        fprintf(f, "%s\"0x%" PRIx64 "\"", i ? "," : "", p->stack->pc[i]);
      fprintf(f, "],\"truncated\":%s,\"frames\":", p->stack->truncated ? "true" : "false");
      print_stack(f, t, p->stack->id);
      fputs("}\n", f);
      break;
    case DLH__PACKET__DATA_MODULE:
      if (want(o, "module")) dump_module(f, p->module);
      break;
    case DLH__PACKET__DATA_SYMBOL: {
      const Dlh__SymbolDef *s = p->symbol;
      if (!want(o, "symbol")) break;
      fprintf(f, "{\"type\":\"symbol\",\"pc\":\"0x%" PRIx64 "\",\"function\":", s->pc);
      rd_json_str(f, s->function);
      fputs(",\"file\":", f);
      rd_json_str(f, s->file);
      fprintf(f, ",\"line\":%u,\"module\":%u}\n", s->line, s->module);
      break;
    }
    case DLH__PACKET__DATA_GRAPH_NODES:
      if (want(o, "graphnode")) dump_graph_nodes(f, t, p->graph_nodes);
      break;
    case DLH__PACKET__DATA_NCCL_EVENTS:
      if (want(o, "nccl")) rd_ncclev_dump(f, p->nccl_events, t->pid, rd_offset_of(t->path));
      break;
    case DLH__PACKET__DATA_INDUCTOR:
      if (want(o, "inductor")) dump_inductor(f, p->inductor);
      break;
    case DLH__PACKET__DATA_PY_FRAME:
      if (!want(o, "pyframe")) break;
      fprintf(f, "{\"type\":\"pyframe\",\"id\":%u,\"function\":", p->py_frame->id);
      rd_json_str(f, p->py_frame->function);
      fputs(",\"file\":", f);
      rd_json_str(f, p->py_frame->file);
      fprintf(f, ",\"line\":%u}\n", p->py_frame->line);
      break;
    case DLH__PACKET__DATA_ANCHOR: {
      const Dlh__ClockAnchor *a = p->anchor;
      if (!want(o, "anchor")) break;
      fprintf(f, "{\"type\":\"anchor\",\"kind\":%u,\"trace_ns\":%" PRIu64 ",\"realtime_ns\":%"
                 PRIu64 ",\"ticks\":%" PRIu64 "}\n", a->kind, a->trace_ns, a->realtime_ns,
              a->ticks);
      break;
    }
    case DLH__PACKET__DATA_COUNTERS:
      if (want(o, "counters")) dump_counters(f, p->counters);
      break;
    case DLH__PACKET__DATA_TRAILER:
      if (want(o, "trailer")) dump_trailer(f, p->trailer);
      break;
    case DLH__PACKET__DATA_FLIGHT:
      if (want(o, "flight")) dump_flight(f, t, p->flight);
      break;
    case DLH__PACKET__DATA_RING_WAITS:
      if (want(o, "wait")) dump_waits(f, t, p->ring_waits, bad);
      break;
    default:
      break;
  }
}

static int dump_one(const dump_opts *o, const char *path) {
  rd_trace t;
  if (rd_trace_open(&t, path) < 0) return RD_BAD_INPUT;
  FILE *f = stdout;
  const Dlh__Packet *p;
  int rc, bad = 0, skipping = 0;
  struct stat st;
  ev_lines = 0;
  ev_over = 0;
  ev_limit = rd_event_limit(&o->ro, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0);
  while ((rc = rd_trace_next(&t, &p)) == 1) {
    if (ev_over && !skipping) { /* the rest of the events are passed over undecoded */
      dlh_reader_skip(t.r, DLH_CASE_BIT(DLH__PACKET__DATA_API) | DLH_CASE_BIT(DLH__PACKET__DATA_GPU) |
                               DLH_CASE_BIT(DLH__PACKET__DATA_SAMPLES));
      skipping = 1;
    }
    if (ev_over && (p->data_case == DLH__PACKET__DATA_API || p->data_case == DLH__PACKET__DATA_GPU ||
                    p->data_case == DLH__PACKET__DATA_SAMPLES))
      continue;
    dump_packet(f, o, &t, p, &bad);
  }
  if (want(o, "summary")) {
    fputs("{\"type\":\"summary\",\"file\":", f);
    rd_json_str(f, path);
    /* calls: recorded calls (the trailer's, folded repeats included; a version 1 trace's
     * records); api_calls: the calls of the API events read (a folded event counts its calls) */
    fprintf(f, ",\"pid\":%u,\"records\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"api_events\":%"
               PRIu64 ",\"gpu_events\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"api_calls\":%" PRIu64
               ",\"folded\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"complete\":%s",
            t.pid, rd_trace_records(&t), rd_trace_dropped(&t), t.api_events, t.gpu_events,
            rd_trace_calls(&t), t.api_calls, rd_trace_folded(&t), dlh_reader_frames(t.r),
            rc == 0 && t.have_trailer ? "true" : "false");
    /* host sampling: the samples read, and what the recorder counted (written, lost) */
    if (t.sample_events || t.have_counters_samples)
      fprintf(f, ",\"sample_events\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"samples_lost\":%" PRIu64,
              t.sample_events, rd_trace_samples(&t), rd_trace_samples_lost(&t));
    fputs("}\n", f);
  }
  if (bad) rd_error("%s: inconsistent event batch (skipped its remaining events)", path);
  if (ev_over) {
    double at = (double)(ev_over_at - (t.have_start && ev_over_at >= t.start_ns ? t.start_ns : 0)) / 1e9;
    if (o->ro.have_max_events)
      rd_error("%s: more events than --max-events %" PRIu64 ": printed the first %" PRIu64
               " (up to %.6f s into the trace); --max-events 0 for all of them", path, ev_limit,
               ev_limit, at);
    else
      rd_error("%s: more than %" PRIu64 " events in a file of %" PRIu64 " bytes: over dump's "
               "limit (%llu Mi events, or %llu per byte of the file when more); printed the first %"
               PRIu64 " (up to %.6f s into the trace); --max-events N sets another limit (0: none)",
               path, ev_limit, (uint64_t)st.st_size, RD_EVENTS_BASE >> 20, RD_EVENTS_PER_BYTE,
               ev_limit, at);
  }
  rd_trace_close(&t);
  return rc < 0 || bad || ev_over ? RD_BAD_INPUT : RD_OK;
}

int cmd_dump(int argc, char **argv) {
  dump_opts o = {0};
  char **files = rd_xmalloc((size_t)argc * sizeof *files);
  size_t nfiles = 0;
  o.types = rd_xmalloc((size_t)argc * 20 * sizeof *o.types);
  rd_getopt g;
  int opt;
  rd_getopt_init(&g, &cmd_dump_spec, argc, argv);
  o.ro.events_limited = 1;
  while ((opt = rd_getopt_next(&g)) > 0) {
    if (opt == OPT_ALL) {
      o.all = 1;
    } else if (opt == OPT_MAX_EVENTS) {
      if (rd_parse_max_events("dump", g.arg, &o.ro) != RD_OK) {
        free(files); free(o.types);
        return RD_USAGE;
      }
    } else if (opt == OPT_TYPE) { /* the parser checked each type */
      for (char *save = NULL, *tok = strtok_r((char *)g.arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        for (size_t k = 0; known_types[k].name; k++)
          if (!strcasecmp(tok, known_types[k].name) && o.ntypes < (size_t)argc * 20)
            o.types[o.ntypes++] = (char *)known_types[k].name;
    } else {
      files[nfiles++] = (char *)g.arg;
    }
  }
  if (opt < 0) {
    free(files); free(o.types);
    return g.status;
  }
  if (nfiles == 0) {
    free(files); free(o.types);
    return rd_usage_error("dump", "no trace file given");
  }
  static char obuf[1 << 16];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  int rc = RD_OK;
  for (size_t i = 0; i < nfiles; i++)
    if (dump_one(&o, files[i]) != RD_OK) rc = RD_BAD_INPUT;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    rd_error("dump: write error on standard output");
    rc = RD_BAD_INPUT;
  }
  free(files);
  free(o.types);
  return rc;
}
