/* hostile — writes traces built the way an attacker would, for the tests of tests/hostile/ (the
 * dlhook command must give a clear error or a correct result, in bounded time and memory).
 * usage: hostile KIND OUT [--host NAME] [--pid N] [--start-ms MS]
 *
 * Every trace starts with a good frame (process info, one function "cudaLaunchKernel" (id 1),
 * kernel name string 1, GOOD_EVENTS API calls with GPU kernels, and for the kinds with stacks a
 * 3-frame stack 1 with symbols) and ends with another good frame (GOOD_EVENTS more calls and
 * kernels): what a reader must still report around the damage. KIND puts between them:
 *   plain        nothing (a valid trace; --host/--pid/--start-ms set the process info)
 *   zeros        one zstd frame of 1 GiB of zeros (its header states the size): ~33 KB
 *   zeros-nosize the same without the size in the frame header
 *   zeros-max    a frame of exactly DLH_MAX_FRAME_CONTENT zeros (64 Mi empty packets)
 *   tiny-many    150 frames of 64 MiB each of 2-byte packets (an empty ApiBatch): < 1 MiB
 *   widepcs      a StackDef of 60 Mi one-byte pcs (decoded: 480 MiB) in a frame under the limit
 *   deepstack    a StackDef (id 2) of 200,000 frames, and calls using it
 *   stack256     a StackDef (id 2) of exactly DLH_MAX_STACK_DEPTH frames, and calls using it
 *   flood        46,000 functions and strings whose ids share one slot of the old fixed hash
 *                (id << 16), each called once and naming a kernel
 *   defs         3 Mi string definitions (over DLH_MAX_DEFINITIONS), all of one id
 *   manydefs     2 Mi distinct string definitions of 100 bytes each (memory kept by the command)
 *   bigdefs      6,000 string definitions of one 64 KiB text under distinct ids (375 MiB kept)
 *   badstr       names with invalid UTF-8, terminal control sequences (CR, erase line, OSC),
 *                XML markup, a module path cut by %.60s inside a multi-byte character
 *   devices      GPU records on devices 0..3 in one batch (GpuBatch.devices)
 *   mangled      kernel and function names that demangle through deep nesting (60,000 levels
 *                of pointers, of template arguments), under the 64 KiB string limit
 *   samples      a SampleBatch of 60,000 host samples out of time order (deltas of +-2^62),
 *                of kinds 0, 1 and 7 (unknown), weights near 2^62, undefined stack and
 *                function ids (the good stack 1 now and then), system call numbers up to
 *                UINT32_MAX, each sample's (state, function) its own; then a SampleBatch
 *                whose weight_ns column is shorter than the others (written by
 *                "samples-short": the command reports the batch, exit 1)
 *   manycalls    26 Mi API calls (400 batches of 65,536 alike, unfolded: ~7 B each decoded) in
 *                a file of ~15 KB, inside the reader's decompressed-bytes budget
 *   manykernels  6.5 Mi API calls with correlation ids (4 ids, over and over), each with its
 *                kernel
 *   folded       the same batches as manycalls with every event folded (count 1,000,000 and
 *                a span): 26 Mi events standing for 2.6e13 calls
 *   modules      100,000 module definitions (distinct paths and ranges) and 20,000 stacks of
 *                256 frames over them, each used by a call
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "dlh_format.h"

#define GOOD_EVENTS 5

static dlh_encoder *w;
static int fd;
static uint64_t clk = 1000000000, corr;

static void die(const char *m) {
  fprintf(stderr, "hostile: %s\n", m);
  exit(1);
}

static void pkt(Dlh__Packet *p) {
  if (dlh_enc_packet(w, p) < 0) die("packet failed");
}

static void flush(void) {
  if (dlh_enc_flush(w) < 0) die("flush failed");
}

static void func(uint32_t id, const char *name) {
  Dlh__FunctionDesc f = DLH__FUNCTION_DESC__INIT;
  f.has_id = 1; f.id = id; f.name = (char *)name; f.has_domain = 1;
  f.domain = DLH__DOMAIN__DOMAIN_DRIVER;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_FUNCTION; p.function = &f;
  pkt(&p);
}

static void str(uint32_t id, const char *s) {
  Dlh__StringDef d = DLH__STRING_DEF__INIT;
  d.has_id = 1; d.id = id; d.value = (char *)s;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_STRING; p.string = &d;
  pkt(&p);
}

static void stack(uint32_t id, size_t n, const uint64_t *pcs) {
  Dlh__StackDef d = DLH__STACK_DEF__INIT;
  d.has_id = 1; d.id = id; d.n_pc = n; d.pc = (uint64_t *)pcs;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_STACK; p.stack = &d;
  pkt(&p);
}

static void symbol(uint64_t pc, const char *fn) {
  Dlh__SymbolDef d = DLH__SYMBOL_DEF__INIT;
  d.has_pc = 1; d.pc = pc; d.function = (char *)fn;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_SYMBOL; p.symbol = &d;
  pkt(&p);
}

static void module(uint32_t id, const char *path, uint64_t start, uint64_t end) {
  Dlh__ModuleDef d = DLH__MODULE_DEF__INIT;
  d.has_id = 1; d.id = id; d.path = (char *)path; d.has_start = 1; d.start = start;
  d.has_end = 1; d.end = end;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_MODULE; p.module = &d;
  pkt(&p);
}

/* An API call of function fn with stack st, and the kernel it launched (name string kname). */
static void call(uint32_t fn, uint32_t st, uint32_t kname, uint32_t device) {
  corr++;
  dlh_api_event ev = {.start_ns = clk, .dur_ns = 1000, .fn = fn, .corr = corr, .stack = st};
  if (dlh_enc_api(w, 100, &ev) < 0) die("event failed");
  dlh_gpu_event g = {.kind = DLH__GPU_RECORD_KIND__KERNEL, .start_ns = clk + 500, .dur_ns = 2000,
                     .corr = corr, .device = device, .stream = 7, .name = kname};
  if (dlh_enc_gpu(w, &g) < 0) die("gpu event failed");
  clk += 5000;
}

/* Compresses `len` bytes into one zstd frame (content size stated, checksum) and appends it. */
static void raw_frame(const void *data, size_t len) {
  flush();
  size_t cap = ZSTD_compressBound(len);
  void *out = malloc(cap);
  if (!out) die("out of memory");
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  size_t z = ZSTD_compress2(c, out, cap, data, len);
  if (ZSTD_isError(z)) die(ZSTD_getErrorName(z));
  if (write(fd, out, z) != (ssize_t)z) die("write failed");
  ZSTD_freeCCtx(c);
  free(out);
}

/* A frame of `len` zero bytes made of RLE blocks (RFC 8878), written by hand: no buffer of that
 * size is needed. stated: whether the header gives the content size. */
static void zero_frame(uint64_t len, int stated) {
  flush();
  uint8_t h[16];
  size_t n = 0;
  h[n++] = 0x28; h[n++] = 0xb5; h[n++] = 0x2f; h[n++] = 0xfd;
  if (stated) {
    h[n++] = 0xe0; /* FCS 8 bytes, single segment, no checksum, no dictionary */
    for (int i = 0; i < 8; i++) h[n++] = (uint8_t)(len >> (8 * i));
  } else {
    h[n++] = 0x00; /* no FCS, not single segment: a window descriptor follows */
    h[n++] = 0x58; /* window 2^(10+11) = 2 MiB */
  }
  if (write(fd, h, n) != (ssize_t)n) die("write failed");
  const uint64_t blk = 128u << 10;
  uint8_t *buf = malloc(4 * 8192);
  if (!buf) die("out of memory");
  size_t k = 0;
  for (uint64_t done = 0; done < len;) {
    uint64_t sz = len - done < blk ? len - done : blk;
    done += sz;
    uint32_t v = (uint32_t)(done == len) | 1u << 1 | (uint32_t)sz << 3; /* last, RLE, size */
    buf[k++] = (uint8_t)v; buf[k++] = (uint8_t)(v >> 8); buf[k++] = (uint8_t)(v >> 16);
    buf[k++] = 0; /* the byte repeated */
    if (k == 4 * 8192 || done == len) {
      if (write(fd, buf, k) != (ssize_t)k) die("write failed");
      k = 0;
    }
  }
  free(buf);
}

/* Nothing more: the good events only. */
static void kind_plain(const char *kind) { (void)kind; }

/* A frame that decodes to 1 GiB of zeros, its size in the frame header. */
static void kind_zeros(const char *kind) {
  (void)kind;
  zero_frame(1ull << 30, 1);
}

/* The same without the size in the header. */
static void kind_zeros_nosize(const char *kind) {
  (void)kind;
  zero_frame(1ull << 30, 0);
}

/* A frame of zeros exactly as large as the reader allows. */
static void kind_zeros_max(const char *kind) {
  (void)kind;
  zero_frame(DLH_MAX_FRAME_CONTENT, 1);
}

/* 150 frames, each of the most packets of two bytes a frame may hold. */
static void kind_tiny_many(const char *kind) {
  (void)kind;
  size_t len = DLH_MAX_FRAME_CONTENT;
  uint8_t *b = malloc(len);
  if (!b) die("out of memory");
  for (size_t i = 0; i + 2 <= len; i += 3) { b[i] = 2; b[i + 1] = 0x22; b[i + 2] = 0; }
  for (size_t i = len / 3 * 3; i < len; i++) b[i] = 0;
  size_t cap = ZSTD_compressBound(len);
  void *out = malloc(cap);
  if (!out) die("out of memory");
  size_t z = ZSTD_compress(out, cap, b, len / 3 * 3, 19);
  if (ZSTD_isError(z)) die(ZSTD_getErrorName(z));
  flush();
  for (int i = 0; i < 150; i++)
    if (write(fd, out, z) != (ssize_t)z) die("write failed");
  free(out);
  free(b);
}

/* A stack of 60 Mi pcs. */
static void kind_widepcs(const char *kind) {
  (void)kind;
  /* Packet { stack(9) = StackDef { id(1) = 2, pc(2) = 60 Mi bytes of 0x01 } } by hand */
  size_t npc = 60u << 20;
  uint8_t *b = malloc(npc + 32);
  if (!b) die("out of memory");
  size_t n = 0;
  uint8_t tmp[32];
  size_t t = 0;
  tmp[t++] = 0x08; tmp[t++] = 0x02;     /* id = 2 */
  tmp[t++] = 0x12;                      /* pc, packed */
  for (uint64_t v = npc; ; v >>= 7) { tmp[t++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0); if (v < 0x80) break; }
  uint64_t sub = t + npc;
  uint8_t hdr[32];
  size_t hn = 0;
  uint64_t total = 0;
  hdr[hn++] = 0x4a; /* Packet.stack = 9, length-delimited */
  for (uint64_t v = sub; ; v >>= 7) { hdr[hn++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0); if (v < 0x80) break; }
  total = hn + sub;
  for (uint64_t v = total; ; v >>= 7) { b[n++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0); if (v < 0x80) break; }
  memcpy(b + n, hdr, hn); n += hn;
  memcpy(b + n, tmp, t); n += t;
  memset(b + n, 0x01, npc); n += npc;
  raw_frame(b, n);
  free(b);
}

/* A stack of 200000 frames (deepstack) or of the deepest allowed (stack256). */
static void kind_deepstack(const char *kind) {
  size_t n = !strcmp(kind, "deepstack") ? 200000 : DLH_MAX_STACK_DEPTH;
  uint64_t *pcs = malloc(n * sizeof *pcs);
  if (!pcs) die("out of memory");
  for (size_t i = 0; i < n; i++) pcs[i] = 0x410000 + 16 * (i % 4000); /* distinct frames */
  for (size_t i = 0; i < 4000 && i < n; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "frame_%zu", i);
    symbol(0x410000 + 16 * i, nm);
  }
  stack(2, n, pcs);
  free(pcs);
  for (int i = 0; i < 3; i++) call(1, 2, 1, 0);
}

/* 46000 functions and kernel names whose ids (id << 16) shared one slot of an old fixed hash. */
static void kind_flood(const char *kind) {
  (void)kind;
  for (uint32_t i = 1; i <= 46000; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "fn_%u", i);
    func(i << 16, nm);
    snprintf(nm, sizeof nm, "kernel_%u", i);
    str(i << 16, nm);
  }
  for (uint32_t i = 1; i <= 46000; i++) call(i << 16, 1, i << 16, 0);
}

/* 6000 strings of the largest size. */
static void kind_bigdefs(const char *kind) {
  (void)kind;
  char *v = malloc(DLH_MAX_STRING + 1);
  if (!v) die("out of memory");
  memset(v, 'b', DLH_MAX_STRING);
  v[DLH_MAX_STRING] = 0;
  for (uint32_t i = 0; i < 6000; i++) str(16 + i, v);
  free(v);
}

/* 2 Mi distinct strings. */
static void kind_manydefs(const char *kind) {
  (void)kind;
  char v[128];
  memset(v, 'n', 100);
  v[100] = 0;
  for (uint32_t i = 0; i < (2u << 20); i++) {
    snprintf(v, 12, "%010u", i);
    v[10] = 'n';
    str(16 + i, v);
  }
}

/* 3 Mi definitions of one string. */
static void kind_defs(const char *kind) {
  (void)kind;
  for (uint32_t i = 0; i < (3u << 20); i++) str(9, "x");
}

/* Names with broken UTF-8, terminal escapes and markup. */
static void kind_badstr(const char *kind) {
  (void)kind;
  func(2, "cudaBad\xff\xfe name");
  func(3, "evil\r\x1b[2K\x1b]0;pwned\x07 call");
  func(4, "markup <svg onload=\"alert(1)\"> & \xc2\x9b" "31m");
  str(2, "_Z3badv\xc3");                  /* cut 2-byte sequence at the end */
  str(3, "kernel\x80\xbf\xed\xa0\x80 surrogate");
  /* a module whose base name has a 3-byte character (U+20AC) across byte 60 */
  char mpath[128] = "/opt/lib/lib";
  memset(mpath + strlen(mpath), 'x', 56);   /* "lib" + 56: the euro sign starts at byte 59 */
  strcpy(mpath + 12 + 56, "\xe2\x82\xac\xe2\x82\xac.so");
  module(3, mpath, 0x600000, 0x700000);
  static const uint64_t pcs[2] = {0x600100, 0x401000};
  stack(3, 2, pcs);
  call(2, 1, 2, 0);
  call(3, 3, 3, 0);
  call(4, 1, 3, 0);
}

/* Mangled names that demangle to very long or deeply nested ones. */
static void kind_mangled(const char *kind) {
  (void)kind;
  size_t n = 60000;
  char *a = malloc(n + 16), *b = malloc(2 * n + 16);
  if (!a || !b) die("out of memory");
  strcpy(a, "_Z1f");
  memset(a + 4, 'P', n);
  strcpy(a + 4 + n, "v");
  strcpy(b, "_Z1f");
  size_t k = 4;
  for (size_t i = 0; i < n / 4; i++) { memcpy(b + k, "1AIL", 4); k += 4; } /* A<...A<...>> */
  strcpy(b + k, "v");
  str(2, a);
  str(3, b);
  func(2, a);
  func(3, b);
  call(2, 1, 2, 0);
  call(3, 1, 3, 0);
  free(a);
  free(b);
}

/* A sample batch with extreme times and values (samples-short: a short weight column). */
static void kind_samples(const char *kind) {
  enum { NS = 60000 };
  int64_t *dt = calloc(NS, sizeof *dt);
  uint64_t *wt = calloc(NS, sizeof *wt);
  uint32_t *kd = calloc(NS, sizeof *kd), *st = calloc(NS, sizeof *st), *sk = calloc(NS, sizeof *sk),
           *fn = calloc(NS, sizeof *fn);
  if (!dt || !wt || !kd || !st || !sk || !fn) die("out of memory");
  for (uint32_t i = 0; i < NS; i++) {
    dt[i] = i % 2 ? (int64_t)1 << 62 : -((int64_t)1 << 62) + 7;
    wt[i] = ((uint64_t)1 << 62) + i;
    kd[i] = i % 3 == 2 ? 7 : i % 3;
    st[i] = UINT32_MAX - i;
    sk[i] = i % 5 ? i : 1;
    fn[i] = i % 2 ? 0 : 1000 + i;
  }
  Dlh__SampleBatch sb = DLH__SAMPLE_BATCH__INIT;
  sb.has_tid = 1; sb.tid = 1; sb.has_base_ns = 1; sb.base_ns = clk;
  sb.n_time_delta = NS; sb.time_delta = dt; sb.n_kind = NS; sb.kind = kd;
  sb.n_weight_ns = !strcmp(kind, "samples") ? NS : NS / 2; sb.weight_ns = wt;
  sb.n_stack = NS; sb.stack = sk; sb.n_state = NS; sb.state = st; sb.n_api_fn = NS; sb.api_fn = fn;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_SAMPLES; p.samples = &sb;
  pkt(&p);
  flush();
  free(dt); free(wt); free(kd); free(st); free(sk); free(fn);
}

/* Millions of alike calls in a small file (folded: each a fold of a million). */
static void kind_manycalls(const char *kind) {
  int fold = !strcmp(kind, "folded");
  for (int b = 0; b < 400; b++) {
    for (uint32_t i = 0; i < DLH_MAX_BATCH_EVENTS; i++) {
      dlh_api_event ev = {.start_ns = clk, .dur_ns = 1000, .fn = 1};
      if (fold) { ev.count = 1000000; ev.span_ns = 2000; }
      if (dlh_enc_api(w, 100, &ev) < 0) die("event failed");
      clk += 5000;
    }
    /* a new frame every 16 batches (~7 MiB decoded): within the frame limits */
    if (b % 16 == 15) flush();
  }
  flush();
}

/* Millions of calls and kernels with a few correlation ids. */
static void kind_manykernels(const char *kind) {
  (void)kind;
  for (int b = 0; b < 100; b++) {
    for (uint32_t i = 0; i < DLH_MAX_BATCH_EVENTS; i++) {
      corr = 1000 + i % 4; /* a few ids over and over: the file stays small */
      call(1, 0, 1, 0);
    }
    if (b % 4 == 3) flush();
  }
  flush();
}

/* 100000 modules and 20000 stacks of the deepest allowed. */
static void kind_modules(const char *kind) {
  (void)kind;
  for (uint32_t i = 0; i < 100000; i++) {
    char path[96];
    snprintf(path, sizeof path, "/opt/app/lib/libmodule_number_%06u.so", i);
    module(16 + i, path, 0x10000000ull + 0x10000ull * i, 0x10000000ull + 0x10000ull * i + 0x8000);
  }
  static uint64_t pcs[DLH_MAX_STACK_DEPTH];
  for (uint32_t s = 0; s < 20000; s++) {
    for (uint32_t k = 0; k < DLH_MAX_STACK_DEPTH; k++)
      pcs[k] = 0x10000000ull + 0x10000ull * ((s + k) % 100000) + 0x100;
    stack(16 + s, DLH_MAX_STACK_DEPTH, pcs);
  }
  for (uint32_t s = 0; s < 20000; s++) call(1, 16 + s, 1, 0);
  flush();
}

/* Calls on four devices. */
static void kind_devices(const char *kind) {
  (void)kind;
  for (uint32_t d = 0; d < 4; d++) call(1, 1, 1, d);
}

/* The kinds of trace, by name (the first argument): what each writes between the good events
 * at the start and those at the end (main). */
static const struct {
  const char *name;
  void (*write)(const char *kind);
} kinds[] = {
    {"plain", kind_plain},
    {"zeros", kind_zeros},
    {"zeros-nosize", kind_zeros_nosize},
    {"zeros-max", kind_zeros_max},
    {"tiny-many", kind_tiny_many},
    {"widepcs", kind_widepcs},
    {"deepstack", kind_deepstack},
    {"stack256", kind_deepstack},
    {"flood", kind_flood},
    {"bigdefs", kind_bigdefs},
    {"manydefs", kind_manydefs},
    {"defs", kind_defs},
    {"badstr", kind_badstr},
    {"mangled", kind_mangled},
    {"samples", kind_samples},
    {"samples-short", kind_samples},
    {"manycalls", kind_manycalls},
    {"folded", kind_manycalls},
    {"manykernels", kind_manykernels},
    {"modules", kind_modules},
    {"devices", kind_devices},
};

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: hostile KIND OUT [--host NAME] [--pid N] [--start-ms MS]\n");
    return 2;
  }
  const char *kind = argv[1], *host = "goodhost";
  uint32_t pid = 4242;
  uint64_t start_ms = 1700000000000ull;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--host") && i + 1 < argc) host = argv[++i];
    else if (!strcmp(argv[i], "--pid") && i + 1 < argc) pid = (uint32_t)strtoul(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--start-ms") && i + 1 < argc) start_ms = strtoull(argv[++i], NULL, 0);
    else die("bad argument");
  }
  fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(argv[2]); return 1; }
  /* the expanding kinds take the strongest compression, as an attacker would, to make the file
   * small; the others the recorder's default */
  int small = !strcmp(kind, "manycalls") || !strcmp(kind, "manykernels") ||
              !strcmp(kind, "folded") || !strcmp(kind, "modules");
  w = dlh_enc_create(fd, small ? 19 : 0);
  if (!w) die("writer");

  Dlh__ProcessInfo pi = DLH__PROCESS_INFO__INIT;
  pi.has_pid = 1; pi.pid = pid; pi.host = (char *)host; pi.has_start_ns = 1; pi.start_ns = clk;
  pi.has_format_version = 1; pi.format_version = DLH_FORMAT_VERSION;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_PROCESS; p.process = &pi;
  pkt(&p);
  Dlh__ClockAnchor an = DLH__CLOCK_ANCHOR__INIT;
  an.has_trace_ns = 1; an.trace_ns = clk; an.has_realtime_ns = 1;
  an.realtime_ns = start_ms * 1000000ull;
  p.data_case = DLH__PACKET__DATA_ANCHOR; p.anchor = &an;
  pkt(&p);
  func(1, "cudaLaunchKernel");
  str(1, "_Z10goodKernelv");
  static const uint64_t good[3] = {0x401000, 0x402000, 0x403000};
  module(1, "/opt/app/bin/app", 0x400000, 0x500000);
  symbol(0x401000, "launch_inner");
  symbol(0x402000, "train_step");
  symbol(0x403000, "main");
  stack(1, 3, good);
  for (int i = 0; i < GOOD_EVENTS; i++) call(1, 1, 1, 0);
  flush();

  size_t ki = 0;
  while (ki < sizeof kinds / sizeof *kinds && strcmp(kinds[ki].name, kind)) ki++;
  if (ki == sizeof kinds / sizeof *kinds) die("unknown kind");
  kinds[ki].write(kind);

  for (int i = 0; i < GOOD_EVENTS; i++) call(1, 1, 1, 0);
  Dlh__Trailer tr = DLH__TRAILER__INIT;
  p.data_case = DLH__PACKET__DATA_TRAILER; p.trailer = &tr;
  pkt(&p);
  dlh_enc_free(w);
  close(fd);
  return 0;
}
