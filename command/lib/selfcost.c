/* selfcost.c — what dlhook cost the traced programs or lost of them (rd_selfcost.h), over
 * traces: their threads' waits for the writer thread (each trace's own account: waits.c),
 * dropped calls, GPU records CUPTI dropped, lost host samples.
 *
 * A thread waits when its ring is full and cannot grow: it runs at the writer's pace instead of
 * losing calls (DLHOOK_RING_WAIT_MS). The trace has every wait (RingWaitBatch: one event per
 * thread and writer pass); a thread's share is its waits over its time in the trace, from its
 * first call or wait to its last, so that a timeline stretched by dlhook is not read as the
 * program's own. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd_selfcost.h"

/* ---------------------------------------------------------------- across traces */

typedef struct sthread {
  uint32_t pid, tid;
  uint64_t waits, wait_ns, time_ns;
} sthread;

struct rd_selfcost {
  sthread *th;
  size_t nth;
  uint64_t waits, wait_ns, thread_ns;
  uint64_t dropped, calls_dropped, gpu_dropped;
  int split;          /* every trace said calls and GPU records apart (Counters' cost fields) */
  uint64_t traces;
  uint64_t samples, samples_lost, sample_cost_ns;
  /* dlhook's threads and the processes (rd_trace_own_cpu), over the traces that said them */
  uint64_t cpu_traces, cpu[4], cpu_handler;
};

rd_selfcost *rd_selfcost_new(void) {
  rd_selfcost *x = rd_xmalloc(sizeof *x);
  memset(x, 0, sizeof *x);
  x->split = 1;
  return x;
}

void rd_selfcost_free(rd_selfcost *x) {
  if (!x) return;
  free(x->th);
  free(x);
}

void rd_selfcost_trace_end(rd_selfcost *x, const rd_trace *t) {
  const rd_waits *w = t->waits;
  x->traces++;
  x->dropped += rd_trace_dropped(t);
  x->samples += rd_trace_samples(t);
  x->samples_lost += rd_trace_samples_lost(t);
  x->sample_cost_ns += rd_trace_sample_cost_ns(t);
  uint64_t cpu[4];
  if (rd_trace_own_cpu(t, cpu)) {
    x->cpu_traces++;
    for (int i = 0; i < 4; i++) x->cpu[i] += cpu[i];
    x->cpu_handler += rd_trace_sample_cost_ns(t);
  }
  if (w && w->have_counters) {
    x->calls_dropped += w->c_calls_dropped;
    x->gpu_dropped += w->c_gpu_dropped;
  } else {
    x->split = 0;
  }
  if (!w) return;
  x->th = rd_xrealloc(x->th, (x->nth + w->nth + 1) * sizeof *x->th);
  for (size_t i = 0; i < w->nth; i++) {
    const rd_twait *h = &w->th[i];
    sthread *s = &x->th[x->nth++];
    *s = (sthread){t->pid, h->tid, h->waits, h->wait_ns, rd_twait_time(h)};
    x->waits += h->waits;
    x->wait_ns += h->wait_ns;
    x->thread_ns += s->time_ns;
  }
}

void rd_selfcost_waits(const rd_selfcost *x, uint64_t *waits, uint64_t *wait_ns,
                       uint64_t *thread_ns, uint64_t *nthreads) {
  *waits = x ? x->waits : 0;
  *wait_ns = x ? x->wait_ns : 0;
  *thread_ns = x ? x->thread_ns : 0;
  *nthreads = x ? x->nth : 0;
}

int rd_selfcost_cpu(const rd_selfcost *x, uint64_t *own, uint64_t *process) {
  int have = x && x->cpu_traces && x->cpu[3];
  *own = have ? x->cpu[0] + x->cpu[1] + x->cpu[2] + x->cpu_handler : 0;
  *process = have ? x->cpu[3] : 0;
  return have;
}

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0;
}

const char *rd_selfcost_wait_line(const rd_selfcost *x, char *buf, size_t n) {
  buf[0] = 0;
  if (!x || !x->waits) return buf;
  snprintf(buf, n, "threads waited %" PRIu64 " times, %.1f ms (%.1f %% of their time) for "
                   "dlhook's writer", x->waits, (double)x->wait_ns / 1e6,
           pct(x->wait_ns, x->thread_ns));
  return buf;
}

static int by_wait(const void *a, const void *b) {
  const sthread *p = a, *q = b;
  if (p->wait_ns != q->wait_ns) return p->wait_ns < q->wait_ns ? 1 : -1;
  return p->tid < q->tid ? -1 : p->tid > q->tid;
}

void rd_selfcost_table(FILE *f, const rd_selfcost *x) {
  char line[160];
  fprintf(f, "\nWhat dlhook cost or lost\n");
  if (x->waits) {
    fprintf(f, "  %s\n", rd_selfcost_wait_line(x, line, sizeof line));
    fprintf(f, "    (%zu thread%s; their rings were full and could not grow: they ran at the "
               "writer's pace\n     instead of losing calls. DLHOOK_RING_WAIT_MS=0 drops calls "
               "instead, DLHOOK_MEM_MB\n     gives rings more room, --stacks none makes "
               "records smaller)\n", x->nth, x->nth == 1 ? "" : "s");
    sthread *v = rd_xmalloc(x->nth * sizeof *v);
    memcpy(v, x->th, x->nth * sizeof *v);
    rd_qsort(v, x->nth, sizeof *v, by_wait);
    size_t show = x->nth < 5 ? x->nth : 5;
    fprintf(f, "  %7s %8s %8s %12s %12s %7s\n", "pid", "tid", "waits", "waited", "its time", "share");
    for (size_t i = 0; i < show; i++)
      fprintf(f, "  %7u %8u %8" PRIu64 " %9.1f ms %9.1f ms %6.1f%%\n", v[i].pid, v[i].tid,
              v[i].waits, (double)v[i].wait_ns / 1e6, (double)v[i].time_ns / 1e6,
              pct(v[i].wait_ns, v[i].time_ns));
    if (x->nth > show) fprintf(f, "  ... %zu more threads (stats --json: all)\n", x->nth - show);
    free(v);
  } else {
    fprintf(f, "  no thread waited for dlhook's writer\n");
  }
  if (x->split)
    fprintf(f, "  calls dropped: %" PRIu64 "; GPU records dropped by CUPTI: %" PRIu64 "\n",
            x->calls_dropped, x->gpu_dropped);
  else
    fprintf(f, "  records dropped (calls and GPU records): %" PRIu64 "\n", x->dropped);
  if (x->samples || x->samples_lost)
    fprintf(f, "  host samples lost: %" PRIu64 " of %" PRIu64 " (%.2f %%); the sampler's handler "
               "took %.1f ms of CPU\n", x->samples_lost, x->samples + x->samples_lost,
            pct(x->samples_lost, x->samples + x->samples_lost), (double)x->sample_cost_ns / 1e6);
  if (x->cpu_traces) {
    uint64_t own = x->cpu[0] + x->cpu[1] + x->cpu[2] + x->cpu_handler;
    fprintf(f, "  dlhook's CPU time: %.1f ms, %.2f %% of the process%s %.1f ms\n"
               "    (writer %.1f ms, sampler %.1f + its handler %.1f, symbolizer %.1f)\n",
            (double)own / 1e6, pct(own, x->cpu[3]), x->cpu_traces == 1 ? "'s" : "es'",
            (double)x->cpu[3] / 1e6, (double)x->cpu[0] / 1e6, (double)x->cpu[1] / 1e6,
            (double)x->cpu_handler / 1e6, (double)x->cpu[2] / 1e6);
  }
}

void rd_selfcost_json(FILE *f, const rd_selfcost *x) {
  fprintf(f, ",\n\"dlhook_cost\":{\"ring_waits\":%" PRIu64 ",\"ring_wait_ns\":%" PRIu64
             ",\"waiting_threads\":%zu,\"waiting_threads_ns\":%" PRIu64 ",\"ring_wait_pct\":",
          x->waits, x->wait_ns, x->nth, x->thread_ns);
  rd_json_double(f, pct(x->wait_ns, x->thread_ns));
  fprintf(f, ",\"dropped\":%" PRIu64, x->dropped);
  if (x->split)
    fprintf(f, ",\"calls_dropped\":%" PRIu64 ",\"gpu_dropped\":%" PRIu64, x->calls_dropped,
            x->gpu_dropped);
  fprintf(f, ",\"samples\":%" PRIu64 ",\"samples_lost\":%" PRIu64 ",\"sample_cost_ns\":%" PRIu64,
          x->samples, x->samples_lost, x->sample_cost_ns);
  if (x->cpu_traces) {
    uint64_t own = x->cpu[0] + x->cpu[1] + x->cpu[2] + x->cpu_handler;
    fprintf(f, ",\"cpu\":{\"writer_ns\":%" PRIu64 ",\"sampler_ns\":%" PRIu64
               ",\"handler_ns\":%" PRIu64 ",\"symbols_ns\":%" PRIu64 ",\"dlhook_ns\":%" PRIu64
               ",\"process_ns\":%" PRIu64 ",\"pct\":",
            x->cpu[0], x->cpu[1], x->cpu_handler, x->cpu[2], own, x->cpu[3]);
    rd_json_double(f, pct(own, x->cpu[3]));
    putc('}', f);
  }
  fputs(",\"threads\":[", f);
  for (size_t i = 0; i < x->nth; i++) {
    const sthread *s = &x->th[i];
    fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"waits\":%" PRIu64 ",\"wait_ns\":%" PRIu64
               ",\"time_ns\":%" PRIu64 ",\"pct\":",
            i ? "," : "", s->pid, s->tid, s->waits, s->wait_ns, s->time_ns);
    rd_json_double(f, pct(s->wait_ns, s->time_ns));
    putc('}', f);
  }
  fputs("]}", f);
}
