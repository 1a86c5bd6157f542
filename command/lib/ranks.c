/* ranks.c — what several traces of one job say together: clock alignment between traces
 * (ranks, hosts) and collective arrival skew, used by `dlhook stats` over several traces.
 *
 * Clocks: each trace carries (trace clock, realtime) anchors; a trace's events are put on the
 * common (realtime) timeline with offset = realtime - trace clock of its first anchor. Ranks on
 * one host share the trace clock, so their offsets agree; across hosts, realtime is what NTP
 * keeps close, and the collectives refine it: the n-th collective kernel ends at the same moment
 * on every rank (it ends when the last rank has arrived), so the median difference of end times
 * against the lowest rank corrects each trace's offset.
 *
 * Collectives are matched by order: the n-th NCCL kernel of each rank is the same collective
 * (NCCL requires every rank to issue its collectives in the same order). A rank's arrival is the
 * start of its collective kernel; it waited for the last arrival. A rank's delay at a collective
 * is its arrival minus the latest arrival of the other ranks: how long it held the others up
 * (negative: it was itself waiting). The mean delay is a 10%-trimmed mean over the collectives,
 * which keeps start-up (ranks starting seconds apart) from dominating it.
 *
 * The straggler is the rank that arrived last at the most collectives (ties: the larger mean
 * delay). Its delay is the trimmed mean of its delays at the collectives it arrived last at:
 * how long the others waited for it there, positive by construction. (A rank's mean delay over
 * all collectives is negative whenever the last arrival moves between ranks, so the largest
 * mean delay can name a rank that was mostly waiting itself.) */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rd.h"
#include "rd_scan.h"

typedef struct coll { int64_t start, end; } coll;
typedef struct rtrace {
  const char *path;
  int rank;
  uint32_t pid;
  int64_t offset;          /* add to trace-clock times for the common timeline */
  coll *c;
  size_t n, cap;
} rtrace;

/* The collectives of one trace, gathered by a sink during a pass (raw trace-clock times). */
static void r_gpu(void *ctx, const rd_trace *t, const rd_gpu *g) {
  rtrace *r = ctx;
  r->rank = t->rank;
  r->pid = t->pid;
  if (g->kind != RD_KERNEL || !(rd_gpu_kflags(g) & RD_KF_NCCL_DEV)) return;
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 256;
    r->c = rd_xrealloc(r->c, r->cap * sizeof *r->c);
  }
  int64_t off = rd_offset_of(t->path); /* gathered before offsets are set: 0 */
  r->c[r->n++] = (coll){(int64_t)g->start - off, (int64_t)(g->start + g->dur) - off};
}

rd_ranks_in *rd_ranks_in_new(const char *path) {
  rtrace *r = rd_xmalloc(sizeof *r);
  memset(r, 0, sizeof *r);
  r->path = path;
  r->rank = -1;
  return (rd_ranks_in *)r;
}

rd_sink rd_ranks_in_sink(rd_ranks_in *x) { return (rd_sink){x, NULL, NULL, r_gpu, 0, NULL}; }

void rd_ranks_in_end(rd_ranks_in *x, const rd_trace *t) {
  rtrace *r = (rtrace *)x;
  r->rank = t->rank;
  r->pid = t->pid;
  r->offset = t->have_anchor ? (int64_t)t->anchor_real_ns - (int64_t)t->anchor_trace_ns : 0;
}

static int by_start(const void *a, const void *b) {
  const coll *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static int by_rank(const void *a, const void *b) {
  const rtrace *x = a, *y = b;
  return x->rank - y->rank;
}

typedef struct rd_ranks {
  rtrace *r;
  size_t n;
  size_t ncoll;             /* collectives matched across all ranks */
  double *mean_delay;       /* per rank: arrival minus the latest arrival of the others */
  double *last_delay;       /* per rank: the same, over the collectives it arrived last at */
  double *mean_wait;        /* per rank: time from its arrival to the last arrival */
  uint64_t *last_count;     /* per rank: collectives it arrived last at */
  double mean_skew, max_skew;
} rd_ranks;

static rd_ranks R;

/* The analysis of the gathered traces (rd.h). */
int rd_ranks_finish(rd_ranks_in **in, size_t n) {
  rd_ranks_free();
  R.r = rd_xmalloc((n ? n : 1) * sizeof *R.r);
  memset(R.r, 0, (n ? n : 1) * sizeof *R.r);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    rtrace *t = (rtrace *)in[i];
    if (!t) continue;
    if (n >= 2 && t->rank >= 0 && t->n) {
      rd_qsort(t->c, t->n, sizeof *t->c, by_start);
      R.r[k++] = *t;
    } else {
      free(t->c);
    }
    free(t);
    in[i] = NULL;
  }
  R.n = k;
  if (k < 2) return 0;
  rd_qsort(R.r, R.n, sizeof *R.r, by_rank);
  size_t m = R.r[0].n;
  for (size_t i = 1; i < R.n; i++) if (R.r[i].n < m) m = R.r[i].n;
  R.ncoll = m;
  /* refine offsets: median of end-time differences against the first rank */
  int64_t *d = rd_xmalloc((m ? m : 1) * sizeof *d);
  for (size_t i = 1; i < R.n && m; i++) {
    for (size_t c = 0; c < m; c++)
      d[c] = (R.r[0].c[c].end + R.r[0].offset) - (R.r[i].c[c].end + R.r[i].offset);
    rd_qsort(d, m, sizeof *d, cmp_i64);
    R.r[i].offset += d[m / 2];
  }
  free(d);
  R.mean_delay = rd_xmalloc(R.n * sizeof *R.mean_delay);
  R.mean_wait = rd_xmalloc(R.n * sizeof *R.mean_wait);
  R.last_count = rd_xmalloc(R.n * sizeof *R.last_count);
  R.last_delay = rd_xmalloc(R.n * sizeof *R.last_delay);
  memset(R.last_delay, 0, R.n * sizeof *R.last_delay);
  memset(R.mean_delay, 0, R.n * sizeof *R.mean_delay);
  memset(R.mean_wait, 0, R.n * sizeof *R.mean_wait);
  memset(R.last_count, 0, R.n * sizeof *R.last_count);
  double skew_sum = 0;
  R.max_skew = 0;
  double *dl = rd_xmalloc(R.n * (m ? m : 1) * sizeof *dl); /* delay[rank][collective] */
  for (size_t c = 0; c < m; c++) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    size_t last_i = 0;
    for (size_t i = 0; i < R.n; i++) {
      int64_t a = R.r[i].c[c].start + R.r[i].offset;
      if (a < first) first = a;
      if (a > last) { last = a; last_i = i; }
    }
    R.last_count[last_i]++;
    skew_sum += (double)(last - first);
    if ((double)(last - first) > R.max_skew) R.max_skew = (double)(last - first);
    for (size_t i = 0; i < R.n; i++) {
      int64_t a = R.r[i].c[c].start + R.r[i].offset, latest_other = INT64_MIN;
      for (size_t j = 0; j < R.n; j++) {
        int64_t b = R.r[j].c[c].start + R.r[j].offset;
        if (j != i && b > latest_other) latest_other = b;
      }
      dl[i * m + c] = (double)(a - latest_other);
      R.mean_wait[i] += (double)(last - a);
    }
  }
  for (size_t i = 0; i < R.n && m; i++) {
    double *v = dl + i * m;
    rd_qsort(v, m, sizeof *v, cmp_double);
    /* positive delays are the collectives it arrived last at: the top of the sorted row */
    size_t npos = 0;
    while (npos < m && v[m - 1 - npos] > 0) npos++;
    if (npos) {
      size_t pcut = npos / 10, pkept = 0;
      double psum = 0;
      for (size_t c = m - npos + pcut; c < m - pcut; c++, pkept++) psum += v[c];
      R.last_delay[i] = pkept ? psum / (double)pkept : 0;
    }
    size_t cut = m / 10, kept = 0;
    double sum = 0;
    for (size_t c = cut; c < m - cut; c++, kept++) sum += v[c];
    R.mean_delay[i] = kept ? sum / (double)kept : 0;
    R.mean_wait[i] /= (double)m;
  }
  free(dl);
  R.mean_skew = m ? skew_sum / (double)m : 0;
  return m > 0;
}

void rd_ranks_free(void) {
  for (size_t i = 0; i < R.n; i++) free(R.r[i].c);
  free(R.r);
  free(R.mean_delay);
  free(R.mean_wait);
  free(R.last_count);
  free(R.last_delay);
  memset(&R, 0, sizeof R);
}

int rd_ranks_offset(const char *path, int64_t *offset) {
  for (size_t i = 0; i < R.n; i++)
    if (R.r[i].path && !strcmp(R.r[i].path, path)) {
      *offset = R.r[i].offset;
      return 1;
    }
  return 0;
}

static size_t straggler(void) {
  size_t s = 0;
  for (size_t i = 1; i < R.n; i++)
    if (R.last_count[i] > R.last_count[s] ||
        (R.last_count[i] == R.last_count[s] && R.mean_delay[i] > R.mean_delay[s]))
      s = i;
  return s;
}

int rd_ranks_straggler(rd_straggler *out) {
  if (!R.ncoll || R.n < 2) return 0;
  size_t s = straggler();
  out->path = R.r[s].path;
  out->rank = R.r[s].rank;
  out->last_count = R.last_count[s];
  out->ncoll = R.ncoll;
  out->delay_ns = R.last_delay[s];
  out->nranks = R.n;
  return 1;
}

int rd_ranks_straggler_in(rd_straggler_wait *out, int (*in_steps)(void *ctx, const char *path, int64_t t),
                          void *ctx) {
  if (!R.ncoll || R.n < 2) return 0;
  double *caused = rd_xmalloc(R.n * sizeof *caused);
  uint64_t *last = rd_xmalloc(R.n * sizeof *last);
  memset(caused, 0, R.n * sizeof *caused);
  memset(last, 0, R.n * sizeof *last);
  size_t counted = 0;
  for (size_t c = 0; c < R.ncoll; c++) {
    int in = 1;
    for (size_t i = 0; i < R.n && in; i++) in = in_steps(ctx, R.r[i].path, R.r[i].c[c].start);
    if (!in) continue;
    counted++;
    int64_t a1 = INT64_MIN, a2 = INT64_MIN; /* the latest arrival and the one before it */
    size_t li = 0;
    for (size_t i = 0; i < R.n; i++) {
      int64_t a = R.r[i].c[c].start + R.r[i].offset;
      if (a > a1) { a2 = a1; a1 = a; li = i; }
      else if (a > a2) a2 = a;
    }
    caused[li] += (double)(a1 - a2);
    last[li]++;
  }
  size_t s = 0;
  for (size_t i = 1; i < R.n; i++) if (caused[i] > caused[s]) s = i;
  double other = 0;
  for (size_t i = 0; i < R.n; i++) if (i != s && caused[i] > other) other = caused[i];
  *out = (rd_straggler_wait){R.r[s].path, R.r[s].rank, last[s], counted, R.n,
                             last[s] ? caused[s] / (double)last[s] : 0, caused[s], other};
  free(caused);
  free(last);
  return counted > 0;
}

/* `"ranks":[...],"collectives":{...},"straggler":{...}` members (leading comma included). */
void rd_ranks_json(FILE *f) {
  if (!R.ncoll) return;
  fputs(",\n\"ranks\":[", f);
  for (size_t i = 0; i < R.n; i++)
    fprintf(f, "%s{\"rank\":%d,\"pid\":%u,\"collectives\":%zu,\"mean_delay_ns\":%.0f,"
               "\"mean_wait_ns\":%.0f,\"arrived_last\":%" PRIu64 ",\"clock_offset_ns\":%" PRId64 "}",
            i ? "," : "", R.r[i].rank, R.r[i].pid, R.r[i].n, R.mean_delay[i], R.mean_wait[i],
            R.last_count[i], R.r[i].offset);
  size_t s = straggler();
  fprintf(f, "],\n\"collective_skew\":{\"matched\":%zu,\"mean_skew_ns\":%.0f,\"max_skew_ns\":%.0f}",
          R.ncoll, R.mean_skew, R.max_skew);
  fprintf(f, ",\n\"straggler\":{\"rank\":%d,\"mean_delay_ns\":%.0f,\"arrived_last\":%" PRIu64
             ",\"collectives\":%zu}",
          R.r[s].rank, R.last_delay[s], R.last_count[s], R.ncoll);
}

void rd_ranks_table(FILE *f) {
  if (!R.ncoll) return;
  fprintf(f, "\n%-6s %8s %12s %14s %14s %13s\n", "Rank", "pid", "collectives", "mean delay",
          "mean wait", "arrived last");
  for (size_t i = 0; i < R.n; i++)
    fprintf(f, "%-6d %8u %12zu %11.3f ms %11.3f ms %13" PRIu64 "\n", R.r[i].rank, R.r[i].pid,
            R.r[i].n, R.mean_delay[i] / 1e6, R.mean_wait[i] / 1e6, R.last_count[i]);
  size_t s = straggler();
  fprintf(f, "%zu collectives matched across %zu ranks; arrival skew mean %.3f ms, max %.3f ms\n",
          R.ncoll, R.n, R.mean_skew / 1e6, R.max_skew / 1e6);
  fprintf(f, "straggler: rank %d, last at %" PRIu64 " of %zu collectives, %.3f ms after the "
             "others\n",
          R.r[s].rank, R.last_count[s], R.ncoll, R.last_delay[s] / 1e6);
}
