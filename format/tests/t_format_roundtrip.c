/* Round trip: every packet kind and many API events (several threads, several frames, batches
 * split at the internal limit) come back from the reader with equal values. */
#include "ftest.h"

#define NTHREADS 5
#define MAXARGS 6

typedef struct exp_ev {
  uint32_t tid;
  dlh_api_event ev;
  uint64_t args[MAXARGS];
} exp_ev;

static unsigned char *exp_pkt[64];
static size_t exp_len[64];
static size_t nexp;

static void put(dlh_encoder *w, const Dlh__Packet *p) {
  REQUIRE(nexp < 64);
  exp_pkt[nexp] = ft_pack(p, &exp_len[nexp]);
  nexp++;
  REQUIRE(dlh_enc_packet(w, p) == 0);
}

static void put_all_kinds(dlh_encoder *w) {
  Dlh__Packet p = DLH__PACKET__INIT;
  char *cmd[] = {"python3", "train.py", "--épochs=3"};
  Dlh__ProcessInfo pi = DLH__PROCESS_INFO__INIT;
  pi.has_pid = 1; pi.pid = 4242; pi.has_ppid = 1; pi.ppid = 1; pi.host = "node-7";
  pi.n_cmdline = 3; pi.cmdline = cmd; pi.exe = "/usr/bin/python3"; pi.has_rank = 1; pi.rank = 3;
  pi.dlhook_version = "0.1.0"; pi.has_format_version = 1; pi.format_version = 1;
  pi.has_start_ns = 1; pi.start_ns = 123456789012345ull;
  p.data_case = DLH__PACKET__DATA_PROCESS; p.process = &pi; put(w, &p);

  Dlh__ThreadInfo ti = DLH__THREAD_INFO__INIT;
  ti.has_tid = 1; ti.tid = 4243; ti.name = "worker \"1\"";
  p.data_case = DLH__PACKET__DATA_THREAD; p.thread = &ti; put(w, &p);

  Dlh__ArgDesc a0 = DLH__ARG_DESC__INIT, a1 = DLH__ARG_DESC__INIT;
  a0.name = "dst"; a0.has_type = 1; a0.type = 2;
  a1.name = "count"; a1.has_type = 1; a1.type = 1;
  Dlh__ArgDesc *args[] = {&a0, &a1};
  Dlh__FunctionDesc fd = DLH__FUNCTION_DESC__INIT;
  fd.has_id = 1; fd.id = 1; fd.name = "cudaMemcpy"; fd.has_domain = 1;
  fd.domain = DLH__DOMAIN__DOMAIN_CUDART; fd.n_args = 2; fd.args = args;
  p.data_case = DLH__PACKET__DATA_FUNCTION; p.function = &fd; put(w, &p);

  Dlh__ClockAnchor ca = DLH__CLOCK_ANCHOR__INIT;
  ca.has_trace_ns = 1; ca.trace_ns = 5; ca.has_realtime_ns = 1; ca.realtime_ns = UINT64_MAX;
  ca.has_ticks = 1; ca.ticks = 77; ca.has_kind = 1;
  ca.kind = DLH__CLOCK_ANCHOR_KIND__PERIODIC;
  p.data_case = DLH__PACKET__DATA_ANCHOR; p.anchor = &ca; put(w, &p);

  Dlh__StringDef sd = DLH__STRING_DEF__INIT;
  sd.has_id = 1; sd.id = 9; sd.value = "_Z6kernelPfi";
  p.data_case = DLH__PACKET__DATA_STRING; p.string = &sd; put(w, &p);

  uint32_t kind[] = {DLH__GPU_RECORD_KIND__KERNEL, DLH__GPU_RECORD_KIND__MEMCPY};
  uint32_t stream[] = {7, 7}, name[] = {9, 0}, nvals[] = {1, 0}, ctx[] = {1, 1};
  int64_t sdel[] = {100, -5};
  uint64_t dur[] = {10, 20}, corr[] = {3, 4}, vals[] = {256};
  Dlh__GpuBatch gb = DLH__GPU_BATCH__INIT;
  gb.has_device = 1; gb.device = 0;
  gb.n_kind = 2; gb.kind = kind; gb.n_start_delta = 2; gb.start_delta = sdel;
  gb.n_dur = 2; gb.dur = dur; gb.n_corr = 2; gb.corr = corr; gb.n_stream = 2; gb.stream = stream;
  gb.n_name = 2; gb.name = name; gb.n_nvals = 2; gb.nvals = nvals; gb.n_vals = 1; gb.vals = vals;
  gb.has_base_start_ns = 1; gb.base_start_ns = 1000; gb.n_context = 2; gb.context = ctx;
  p.data_case = DLH__PACKET__DATA_GPU; p.gpu = &gb; put(w, &p);

  uint64_t pcs[] = {0x401000, 0x7fff00001234ull};
  Dlh__StackDef st = DLH__STACK_DEF__INIT;
  st.has_id = 1; st.id = 1; st.n_pc = 2; st.pc = pcs;
  p.data_case = DLH__PACKET__DATA_STACK; p.stack = &st; put(w, &p);

  uint8_t bid[] = {0xde, 0xad, 0, 0xef};
  Dlh__ModuleDef md = DLH__MODULE_DEF__INIT;
  md.path = "/lib/libfoo.so"; md.has_start = 1; md.start = 0x400000; md.has_end = 1;
  md.end = 0x500000; md.has_offset = 1; md.offset = 0; md.has_build_id = 1;
  md.build_id.len = 4; md.build_id.data = bid;
  p.data_case = DLH__PACKET__DATA_MODULE; p.module = &md; put(w, &p);

  Dlh__SymbolDef sy = DLH__SYMBOL_DEF__INIT;
  sy.has_pc = 1; sy.pc = 0x401000; sy.function = "main"; sy.file = "a.c"; sy.has_line = 1;
  sy.line = 12; sy.has_module = 1; sy.module = 0;
  p.data_case = DLH__PACKET__DATA_SYMBOL; p.symbol = &sy; put(w, &p);

  Dlh__Counters co = DLH__COUNTERS__INIT;
  co.has_records = 1; co.records = 10; co.has_dropped = 1; co.dropped = 2; co.has_threads = 1;
  co.threads = 3;
  p.data_case = DLH__PACKET__DATA_COUNTERS; p.counters = &co; put(w, &p);

  Dlh__DeviceInfo di = DLH__DEVICE_INFO__INIT;
  di.has_id = 1; di.id = 0; di.name = "NVIDIA H200"; di.has_total_mem = 1;
  di.total_mem = 150ull << 30; di.has_sm_count = 1; di.sm_count = 132; di.has_cc_major = 1;
  di.cc_major = 9; di.has_cc_minor = 1; di.cc_minor = 0;
  p.data_case = DLH__PACKET__DATA_DEVICE; p.device = &di; put(w, &p);
}

static void put_trailer(dlh_encoder *w) {
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__Trailer tr = DLH__TRAILER__INIT;
  tr.has_records = 1; tr.records = 99; tr.has_dropped = 1; tr.dropped = 1; tr.has_end_ns = 1;
  tr.end_ns = 1ull << 50; tr.has_exit_reason = 1; tr.exit_reason = 1; tr.has_signal = 1;
  tr.signal = 15;
  p.data_case = DLH__PACKET__DATA_TRAILER; p.trailer = &tr; put(w, &p);
}

int main(void) {
  char *path = ft_path("roundtrip.dlh");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  dlh_encoder *w = dlh_enc_create(fd, 0);
  REQUIRE(w);
  CHECK(dlh_enc_bytes(w) == DLH_HEADER_SIZE);

  /* events: 5 threads, ~200K events in all (thread 0 crosses the 64K batch limit) */
  size_t nev = 200000;
  exp_ev *ev = calloc(nev, sizeof *ev);
  REQUIRE(ev);
  uint64_t seed = 88172645463325252ull, clock[NTHREADS] = {0}, corr = 1;
  size_t nframes = 0;
  put_all_kinds(w);
  for (size_t i = 0; i < nev; i++) {
    uint64_t r = ft_rand(&seed);
    uint32_t t = (i % 3 == 0) ? 0 : (uint32_t)(r % NTHREADS);
    exp_ev *e = &ev[i];
    e->tid = 1000 + t;
    clock[t] += (r >> 8) % 5000;
    if (r % 97 == 0 && clock[t] > 100) clock[t] -= 100; /* out of order starts: negative delta */
    e->ev.start_ns = clock[t] + (1ull << 40);
    e->ev.dur_ns = (r >> 20) % 100000;
    e->ev.fn = (uint32_t)(r % 13) + 1;
    e->ev.ret = (r % 11 == 0) ? -(int64_t)(r % 1000) : (int64_t)(r % 3 == 0);
    switch (r % 5) {
      case 0: e->ev.corr = 0; break;
      case 1: e->ev.corr = i > 0 ? ev[i - 1].ev.corr : 0; break; /* repeated id */
      default: e->ev.corr = corr += 1 + r % 3; break;
    }
    if (r % 7 == 0) e->ev.corr = UINT64_MAX - (r % 3); /* huge ids */
    e->ev.stack = (r % 4 == 0) ? (uint32_t)(r % 50) : 0;
    e->ev.depth = (r % 9 == 0) ? (uint32_t)(r % 3) : 0;
    e->ev.nargs = (uint32_t)(r % (MAXARGS + 1));
    for (uint32_t k = 0; k < e->ev.nargs; k++) e->args[k] = ft_rand(&seed) >> (k * 9);
    e->ev.args = e->ev.nargs ? e->args : NULL;
    if (r % 13 == 5) { /* a folded repeat: count calls, their span */
      e->ev.count = 2 + (r >> 30) % 100000;
      e->ev.span_ns = e->ev.dur_ns + (r >> 12) % 1000000;
    }
    REQUIRE(dlh_enc_api(w, e->tid, &e->ev) == 0);
    if (i % 30000 == 29999) { REQUIRE(dlh_enc_flush(w) == 0); nframes++; }
  }
  put_trailer(w);
  REQUIRE(dlh_enc_flush(w) == 0);
  nframes++;
  CHECK(dlh_enc_flush(w) == 0); /* nothing pending: no frame */
  uint64_t bytes = dlh_enc_bytes(w);
  CHECK(dlh_enc_lost(w) == 0);
  dlh_enc_free(w);
  close(fd);
  size_t flen;
  free(ft_read_file(path, &flen));
  CHECK(flen == bytes);

  char *err = NULL;
  dlh_reader *r = dlh_reader_open(path, &err);
  REQUIRE(r);
  CHECK(err == NULL);
  const Dlh__Packet *p;
  size_t other = 0, batches = 0, max_batch = 0;
  size_t *next = calloc(NTHREADS, sizeof *next); /* next expected event index per thread */
  int rc, trailer_seen = 0, after_trailer = 0;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (trailer_seen) after_trailer++;
    if (p->data_case == DLH__PACKET__DATA_API) {
      batches++;
      const Dlh__ApiBatch *b = p->api;
      if (b->n_start_delta > max_batch) max_batch = b->n_start_delta;
      uint32_t t = b->tid - 1000;
      REQUIRE(t < NTHREADS);
      dlh_api_iter it;
      dlh_api_iter_init(&it, b);
      dlh_api_event got;
      while (dlh_api_iter_next(&it, &got)) {
        size_t j = next[t];
        while (j < nev && ev[j].tid != b->tid) j++;
        REQUIRE(j < nev);
        const dlh_api_event *x = &ev[j].ev;
        CHECK(got.start_ns == x->start_ns);
        CHECK(got.dur_ns == x->dur_ns);
        CHECK(got.fn == x->fn);
        CHECK(got.ret == x->ret);
        CHECK(got.corr == x->corr);
        CHECK(got.stack == x->stack);
        CHECK(got.depth == x->depth);
        CHECK(got.nargs == x->nargs);
        CHECK(dlh_api_calls(&got) == dlh_api_calls(x));
        CHECK(dlh_api_span(&got) == dlh_api_span(x));
        if (got.nargs == x->nargs && x->nargs)
          CHECK(memcmp(got.args, x->args, x->nargs * sizeof *x->args) == 0);
        next[t] = j + 1;
      }
      CHECK(!it.bad);
    } else {
      REQUIRE(other < nexp);
      size_t len;
      unsigned char *b = ft_pack(p, &len);
      CHECK(len == exp_len[other] && memcmp(b, exp_pkt[other], len) == 0);
      free(b);
      if (p->data_case == DLH__PACKET__DATA_TRAILER) trailer_seen = 1;
      other++;
    }
  }
  CHECK(rc == 0);
  CHECK(dlh_reader_error(r) == NULL);
  CHECK(other == nexp);
  CHECK(trailer_seen && after_trailer == 0);
  CHECK(dlh_reader_frames(r) == nframes);
  CHECK(dlh_reader_offset(r) == bytes);
  CHECK(max_batch <= 65536);
  /* all events of every thread were seen */
  for (uint32_t t = 0; t < NTHREADS; t++) {
    size_t j = next[t];
    while (j < nev && ev[j].tid != 1000 + t) j++;
    CHECK(j == nev);
  }
  CHECK(dlh_reader_next(r, &p) == 0); /* stays at the end */
  dlh_reader_close(r);
  printf("%zu events, %zu batches, %zu frames, %llu bytes\n", nev, batches, nframes,
         (unsigned long long)bytes);

  /* iterator on inconsistent batches */
  Dlh__ApiBatch b = DLH__API_BATCH__INIT;
  int64_t sd[2] = {0, 1};
  uint32_t fn[2] = {1, 2}, na[2] = {1, 5};
  uint64_t args[3] = {1, 2, 3};
  b.n_start_delta = 2; b.start_delta = sd; b.n_fn = 1; b.fn = fn;
  dlh_api_iter it;
  dlh_api_event e;
  dlh_api_iter_init(&it, &b);
  CHECK(dlh_api_iter_next(&it, &e) == 0 && it.bad);
  b.n_fn = 2; b.n_nargs = 2; b.nargs = na; b.n_args = 3; b.args = args;
  dlh_api_iter_init(&it, &b);
  CHECK(dlh_api_iter_next(&it, &e) == 1 && e.nargs == 1 && e.args[0] == 1);
  CHECK(dlh_api_iter_next(&it, &e) == 0 && it.bad); /* args overrun */
  dlh_api_iter_init(&it, NULL);
  CHECK(dlh_api_iter_next(&it, &e) == 0);
  dlh_enc_free(NULL);
  dlh_reader_close(NULL);

  unlink(path);
  free(path);
  free(ev);
  free(next);
  for (size_t i = 0; i < nexp; i++) free(exp_pkt[i]);
  return ft_done("t_format_roundtrip");
}
