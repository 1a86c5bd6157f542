/* nvtx.c — NVTX ranges and marks from the program, PyTorch and NCCL, per thread with their
 * nesting. NVTX is header-only: each module's NVTX code reads NVTX_INJECTION64_PATH on its first
 * call and calls InitializeInjectionNvtx2 of that library, which fills NVTX's function tables.
 * The constructor points NVTX_INJECTION64_PATH at libdlhook.so when it is unset.
 *
 * The hot path stores one record (ticks, message copied, domain, color) in the thread's ring;
 * the writer thread pairs pushes with pops and writes one "nvtxRange" event per range. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "dlh_format.h"
#include "dlh_internal.h"

/* Domains and registered strings are handles the program keeps: never freed. */
typedef struct dom { char name[1]; } dom;

static _Atomic uint64_t next_range_id = 1;

/* ---------------------------------------------------------------- hot path */

#define TEXT_WORDS 12 /* message bytes kept: 95 + NUL */

static void store(int op, uint64_t aux, uint32_t color, uint32_t cat, const char *msg);

static void put(int op, uint64_t aux, uint32_t color, uint32_t cat, const char *msg) {
  if (!dlh_recording) return;
  if (DLH_UNLIKELY(dlh_capture_mode == DLH_CAPTURE_NVTX)) { /* nvtx:NAME capture range */
    int closes = dlh_capture_nvtx(op, aux, msg);
    if (!__atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED)) store(op, aux, color, cat, msg);
    if (closes) dlh_capture_nvtx_close();
    return;
  }
  if (__atomic_load_n(&dlh_capture_closed, __ATOMIC_RELAXED)) return;
  store(op, aux, color, cat, msg);
}

static void store(int op, uint64_t aux, uint32_t color, uint32_t cat, const char *msg) {
  struct dlh_thread *t = dlh_self;
  if (!t) t = dlh_thread_attach();
  if (!t || t->hot.blocked) return;
  uint64_t ticks = dlh_ticks();
  size_t len = msg ? strnlen(msg, TEXT_WORDS * 8 - 1) : 0;
  uint64_t words = len || op != DLH_NVTX_POP ? (len + 8) / 8 : 0;
  uint64_t n = 4 + words;
  uint64_t *w = dlh_ring_reserve(t, n);
  if (!w) return;
  w[0] = dlh_rec_header((uint32_t)op, 0, 0, DLH_REC_NVTX, 0, n);
  w[1] = ticks;
  w[2] = aux;
  w[3] = (uint64_t)color | (uint64_t)cat << 32;
  if (words) {
    w[3 + words] = 0; /* zero the last word: the NUL and padding */
    memcpy(w + 4, msg, len);
  }
  dlh_ring_publish(t, n);
}

/* The text of an event's message (ASCII, registered; wide strings are narrowed). */
static const char *message(const nvtxEventAttributes_t *a, char *buf, size_t cap) {
  if (!a) return "";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_REGISTERED: return a->message.registered ? (const char *)a->message.registered : "";
    case NVTX_MESSAGE_TYPE_UNICODE: {
      size_t i = 0;
      for (const wchar_t *p = a->message.unicode; p && *p && i + 1 < cap; p++)
        buf[i++] = (*p < 128 && *p > 0) ? (char)*p : '?';
      buf[i] = 0;
      return buf;
    }
    default: return "";
  }
}

static uint32_t color_of(const nvtxEventAttributes_t *a) {
  return a && a->colorType == NVTX_COLOR_ARGB ? a->color : 0;
}

static int NVTX_API push_ex_domain(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char buf[96];
  put(DLH_NVTX_PUSH, (uint64_t)(uintptr_t)d, color_of(a), a ? a->category : 0, message(a, buf, sizeof buf));
  return 0;
}
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { return push_ex_domain(NULL, a); }
static int NVTX_API push_a(const char *m) { put(DLH_NVTX_PUSH, 0, 0, 0, m ? m : ""); return 0; }
static int NVTX_API push_w(const wchar_t *m) {
  nvtxEventAttributes_t a = {0};
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = m;
  return push_ex_domain(NULL, &a);
}
static int NVTX_API pop_domain(nvtxDomainHandle_t d) { put(DLH_NVTX_POP, (uint64_t)(uintptr_t)d, 0, 0, NULL); return 0; }
static int NVTX_API pop(void) { return pop_domain(NULL); }

static void NVTX_API mark_ex_domain(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char buf[96];
  put(DLH_NVTX_MARK, (uint64_t)(uintptr_t)d, color_of(a), a ? a->category : 0, message(a, buf, sizeof buf));
}
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { mark_ex_domain(NULL, a); }
static void NVTX_API mark_a(const char *m) { put(DLH_NVTX_MARK, 0, 0, 0, m ? m : ""); }

/* Start/end ranges may end on another thread: the id carries the pairing. The domain is not
 * recorded for them (the id takes its place in the record). */
static nvtxRangeId_t NVTX_API start_ex_domain(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  char buf[96];
  nvtxRangeId_t id = atomic_fetch_add(&next_range_id, 1);
  put(DLH_NVTX_START, id, color_of(a), a ? a->category : 0, message(a, buf, sizeof buf));
  return id;
}
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) { return start_ex_domain(NULL, a); }
static nvtxRangeId_t NVTX_API start_a(const char *m) {
  nvtxRangeId_t id = atomic_fetch_add(&next_range_id, 1);
  put(DLH_NVTX_START, id, 0, 0, m ? m : "");
  return id;
}
static void NVTX_API end_domain(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; put(DLH_NVTX_END, id, 0, 0, NULL); }
static void NVTX_API end(nvtxRangeId_t id) { end_domain(NULL, id); }

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name) {
  size_t n = name ? strlen(name) : 0;
  dom *d = malloc(sizeof *d + n);
  if (!d) return NULL;
  memcpy(d->name, name ? name : "", n + 1);
  return (nvtxDomainHandle_t)d;
}
static void NVTX_API domain_destroy(nvtxDomainHandle_t d) { (void)d; /* records may still name it */ }
static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  return (nvtxStringHandle_t)strdup(s ? s : "");
}

/* ---------------------------------------------------------------- injection */

static int set_table(NvtxGetExportTableFunc_t get, NvtxCallbackModule module, const int *ids,
                     NvtxFunctionPointer const *fns, size_t n) {
  const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = NULL;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(module, &table, &size) || !table) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned)ids[i] < size && table[ids[i]]) *table[ids[i]] = fns[i];
  return 1;
}

#define FP(f) ((NvtxFunctionPointer)(void *)(f))

DLH_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (!get) return 0;
  static const int core_ids[] = {NVTX_CBID_CORE_MarkEx,       NVTX_CBID_CORE_MarkA,
                                 NVTX_CBID_CORE_RangeStartEx, NVTX_CBID_CORE_RangeStartA,
                                 NVTX_CBID_CORE_RangeEnd,     NVTX_CBID_CORE_RangePushEx,
                                 NVTX_CBID_CORE_RangePushA,   NVTX_CBID_CORE_RangePushW,
                                 NVTX_CBID_CORE_RangePop};
  NvtxFunctionPointer const core_fns[] = {FP(mark_ex), FP(mark_a), FP(start_ex), FP(start_a),
                                          FP(end),     FP(push_ex), FP(push_a), FP(push_w),
                                          FP(pop)};
  static const int core2_ids[] = {
      NVTX_CBID_CORE2_DomainMarkEx,       NVTX_CBID_CORE2_DomainRangeStartEx,
      NVTX_CBID_CORE2_DomainRangeEnd,     NVTX_CBID_CORE2_DomainRangePushEx,
      NVTX_CBID_CORE2_DomainRangePop,     NVTX_CBID_CORE2_DomainCreateA,
      NVTX_CBID_CORE2_DomainDestroy,      NVTX_CBID_CORE2_DomainRegisterStringA};
  NvtxFunctionPointer const core2_fns[] = {
      FP(mark_ex_domain), FP(start_ex_domain), FP(end_domain),     FP(push_ex_domain),
      FP(pop_domain),     FP(domain_create_a), FP(domain_destroy), FP(register_string_a)};
  int ok = set_table(get, NVTX_CB_MODULE_CORE, core_ids, core_fns, sizeof core_ids / sizeof *core_ids);
  set_table(get, NVTX_CB_MODULE_CORE2, core2_ids, core2_fns, sizeof core2_ids / sizeof *core2_ids);
  return ok;
}

void dlh_nvtx_setup_injection(void) {
  const char *cur = getenv("NVTX_INJECTION64_PATH");
  if (!dlh_cfg.nvtx || (cur && *cur)) return; /* respect another tool's */
  Dl_info info;
  if (dladdr((void *)dlh_nvtx_setup_injection, &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
}

/* ---------------------------------------------------------------- writer side */

#define NOPEN 4096 /* start/end ranges open at once, direct-mapped by id */
static struct { uint64_t id, t0; uint32_t msg, color, cat; } open_ranges[NOPEN];

static void emit(dlh_encoder *w, struct dlh_thread *t, uint32_t fn, uint64_t t0, uint64_t t1,
                 uint32_t depth, uint32_t msg, uint32_t domain, uint32_t color, uint32_t cat) {
  uint64_t args[4] = {msg, domain, color, cat};
  dlh_api_event ev = {0};
  ev.start_ns = t0;
  ev.dur_ns = t1 > t0 ? t1 - t0 : 0;
  ev.fn = DLH_FN_ID(DLH_DOMAIN_NVTX, fn);
  ev.depth = depth;
  ev.nargs = 4;
  ev.args = args;
  dlh_enc_api(w, t->os.tid, &ev);
  dlh_def_fn(w, ev.fn);
}

void dlh_nvtx_convert(struct dlh_encoder *enc, struct dlh_thread *t, const uint64_t *w, uint64_t nw) {
  unsigned op = (unsigned)(w[0] & 0xff);
  uint64_t ts = dlh_tick_ns(w[1]);
  const char *text = nw > 4 ? (const char *)(w + 4) : NULL;
  uint32_t msg = text ? dlh_intern(enc, text) : 0;
  uint32_t color = (uint32_t)w[3], cat = (uint32_t)(w[3] >> 32);
  uint32_t domain = 0;
  if ((op == DLH_NVTX_PUSH || op == DLH_NVTX_MARK) && w[2])
    domain = dlh_intern(enc, ((const dom *)(uintptr_t)w[2])->name);
  switch (op) {
    case DLH_NVTX_PUSH:
      if (t->writer.nvtx_depth < DLH_NVTX_MAX_DEPTH) {
        t->writer.nvtx[t->writer.nvtx_depth].t0 = ts;
        t->writer.nvtx[t->writer.nvtx_depth].msg = msg;
        t->writer.nvtx[t->writer.nvtx_depth].dom = domain;
        t->writer.nvtx[t->writer.nvtx_depth].color = color;
        t->writer.nvtx[t->writer.nvtx_depth].cat = cat;
      }
      t->writer.nvtx_depth++;
      break;
    case DLH_NVTX_POP:
      if (t->writer.nvtx_depth == 0) break; /* unbalanced pop: nothing to close */
      t->writer.nvtx_depth--;
      if (t->writer.nvtx_depth < DLH_NVTX_MAX_DEPTH) {
        typeof(t->writer.nvtx[0]) *r = &t->writer.nvtx[t->writer.nvtx_depth];
        emit(enc, t, DLH_NVTX_FN_RANGE, r->t0, ts, t->writer.nvtx_depth, r->msg, r->dom, r->color,
             r->cat);
      }
      break;
    case DLH_NVTX_MARK:
      emit(enc, t, DLH_NVTX_FN_MARK, ts, ts, t->writer.nvtx_depth, msg, domain, color, cat);
      break;
    case DLH_NVTX_START: {
      unsigned slot = (unsigned)(w[2] % NOPEN);
      open_ranges[slot].id = w[2];
      open_ranges[slot].t0 = ts;
      open_ranges[slot].msg = msg;
      open_ranges[slot].color = color;
      open_ranges[slot].cat = cat;
      break;
    }
    case DLH_NVTX_END: {
      unsigned slot = (unsigned)(w[2] % NOPEN);
      if (open_ranges[slot].id != w[2]) break;
      emit(enc, t, DLH_NVTX_FN_STARTEND, open_ranges[slot].t0, ts, 0, open_ranges[slot].msg, 0,
           open_ranges[slot].color, open_ranges[slot].cat);
      open_ranges[slot].id = 0;
      break;
    }
  }
}
