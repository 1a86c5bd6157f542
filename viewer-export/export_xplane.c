/* export_xplane.c — `dlhook export --format tensorboard`: an xprof run that TensorBoard's
 * profile plugin (and xprof) open: OUT/plugins/profile/<run>/<host>.xplane.pb, one XSpace per
 * trace (proto/xplane.proto, a subset with xprof's field numbers).
 *
 * Planes:
 *   /host:CPU         a line per thread (id = tid, name = thread name); API calls as events with
 *                     stat correlation_id (and result when not 0);
 *   /device:GPU:N     a line per stream ("Stream #S"); kernels, copies and memsets as events
 *                     with stats correlation_id, device_id, context_id, stream, kernel_details
 *                     ("regs:R static_shared:S dynamic_shared:D grid:X,Y,Z block:X,Y,Z"),
 *                     memcpy_details / Memset_details; plane stats for the device properties
 *                     (core_count, memory_size, compute_cap_major, compute_cap_minor).
 * Events are packed one by one (protobuf-c) into a spill file per line as the trace streams
 * past; the XSpace is then assembled from the pieces (a message is the concatenation of its
 * fields), so memory holds only the metadata tables. */
#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"
#include "xplane.pb-c.h"

enum { S_CORR = 1, S_KERNEL, S_MEMCPY, S_MEMSET, S_DEVICE, S_CONTEXT, S_STREAM, S_CLOCK,
       S_CORES, S_BANDWIDTH, S_MEMSIZE, S_CC_MAJOR, S_CC_MINOR, S_RESULT, S_NSTATS };
static const char *const stat_names[S_NSTATS] = {
  NULL, "correlation_id", "kernel_details", "memcpy_details", "Memset_details", "device_id",
  "context_id", "stream", "clock_rate", "core_count", "memory_bandwidth", "memory_size",
  "compute_cap_major", "compute_cap_minor", "result"};

typedef struct xl {
  int64_t id;
  char *name;
  FILE *spill;
  uint64_t bytes;
} xl;

typedef struct xp {
  int64_t id;
  char name[48];
  int have_dev;
  uint32_t device;
  Dlh__DeviceInfo props;
  xl *lines;
  size_t nlines;
  ex_u64map line_ix;     /* key -> line index */
  ex_u64map meta_ix;     /* key -> metadata id */
  char **meta;           /* metadata id - 1 -> name */
  size_t nmeta;
} xp;

typedef struct xctx {
  const ex_opts *o;
  xp *planes;            /* [0] = host */
  size_t nplanes;
  vx_map plane_ix;       /* device id -> index into planes (as a pointer-sized value) */
  uint64_t base;         /* line timestamp_ns */
  int have_base;
  uint64_t real_ns;
  char host[128];
  uint32_t pid;
  uint8_t *buf;
  size_t cap;
  int io_error;
} xctx;

static size_t vlen(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}

static xp *plane_for_device(xctx *c, uint32_t dev) {
  uintptr_t ix = (uintptr_t)vx_map_get(&c->plane_ix, dev); /* device ids come from the trace */
  if (ix) return &c->planes[ix];
  vx_map_put(&c->plane_ix, dev, (void *)(uintptr_t)c->nplanes);
  c->planes = vx_xrealloc(c->planes, (c->nplanes + 1) * sizeof *c->planes);
  xp *p = &c->planes[c->nplanes++];
  memset(p, 0, sizeof *p);
  p->id = (int64_t)c->nplanes;
  p->device = dev;
  snprintf(p->name, sizeof p->name, "/device:GPU:%u", dev);
  return p;
}

static xl *line_for(xctx *c, xp *p, uint64_t key, const char *name) {
  uint32_t i;
  if (ex_m_get(&p->line_ix, key, &i)) return &p->lines[i];
  p->lines = vx_xrealloc(p->lines, (p->nlines + 1) * sizeof *p->lines);
  xl *l = &p->lines[p->nlines];
  l->id = (int64_t)key;
  l->name = vx_utf8_dup(name); /* xplane.proto is proto3 upstream: strings must be UTF-8 */
  l->spill = tmpfile();
  l->bytes = 0;
  if (!l->spill) {
    vx_error("export: cannot create a temporary file: %s", strerror(errno));
    exit(VX_BAD_INPUT);
  }
  ex_m_put(&p->line_ix, key, (uint32_t)p->nlines++);
  return l;
}

static int64_t meta_for(xp *p, uint64_t key, const char *name) {
  uint32_t id;
  if (ex_m_get(&p->meta_ix, key, &id)) return id;
  p->meta = vx_xrealloc(p->meta, (p->nmeta + 1) * sizeof *p->meta);
  p->meta[p->nmeta++] = vx_utf8_dup(name);
  ex_m_put(&p->meta_ix, key, (uint32_t)p->nmeta);
  return (int64_t)p->nmeta;
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void put_event(xctx *c, xl *l, int64_t meta, uint64_t ts, uint64_t dur, Dlhxplane__XStat **st,
                      size_t nst) {
  Dlhxplane__XEvent e = DLHXPLANE__XEVENT__INIT;
  e.has_metadata_id = 1;
  e.metadata_id = meta;
  e.data_case = DLHXPLANE__XEVENT__DATA_OFFSET_PS;
  e.offset_ps = ts > c->base ? (int64_t)(ts - c->base) * 1000 : 0;
  e.has_duration_ps = 1;
  e.duration_ps = (int64_t)dur * 1000;
  e.n_stats = nst;
  e.stats = st;
  size_t n = dlhxplane__xevent__get_packed_size(&e);
  if (n > c->cap) { c->cap = n * 2; c->buf = vx_xrealloc(c->buf, c->cap); }
  dlhxplane__xevent__pack(&e, c->buf);
  putc(0x22, l->spill); /* XLine.events, field 4 */
  ex_put_varint(l->spill, n);
  fwrite(c->buf, 1, n, l->spill);
  l->bytes += 1 + vlen(n) + n;
}

static Dlhxplane__XStat *ustat(Dlhxplane__XStat *s, int64_t id, uint64_t v) {
  dlhxplane__xstat__init(s);
  s->has_metadata_id = 1;
  s->metadata_id = id;
  s->value_case = DLHXPLANE__XSTAT__VALUE_UINT64_VALUE;
  s->uint64_value = v;
  return s;
}

static Dlhxplane__XStat *sstat(Dlhxplane__XStat *s, int64_t id, char *v) {
  dlhxplane__xstat__init(s);
  s->has_metadata_id = 1;
  s->metadata_id = id;
  s->value_case = DLHXPLANE__XSTAT__VALUE_STR_VALUE;
  s->str_value = v;
  return s;
}

static void x_packet(void *ctx, const vx_trace *t, const Dlh__Packet *p) {
  xctx *c = ctx;
  switch (p->data_case) {
    case DLH__PACKET__DATA_PROCESS:
      if (!c->have_base && p->process->has_start_ns) {
        c->base = p->process->start_ns > 1000000000ull ? p->process->start_ns - 1000000000ull : 0;
        c->have_base = 1;
      }
      break;
    case DLH__PACKET__DATA_THREAD: {
      xl *l = line_for(c, &c->planes[0], p->thread->tid, "");
      free(l->name);
      l->name = vx_utf8_dup(p->thread->name && *p->thread->name ? p->thread->name : "thread");
      break;
    }
    case DLH__PACKET__DATA_ANCHOR:
      if (!c->real_ns && p->anchor->has_realtime_ns) c->real_ns = p->anchor->realtime_ns;
      break;
    case DLH__PACKET__DATA_DEVICE: {
      xp *d = plane_for_device(c, p->device->id);
      d->have_dev = 1;
      d->props = *p->device;
      d->props.name = NULL;
      break;
    }
    default:
      break;
  }
  (void)t;
}

static void x_api(void *ctx, const vx_trace *t, uint32_t tid, const dlh_api_event *ev) {
  xctx *c = ctx;
  if (!c->have_base) { c->base = ev->start_ns; c->have_base = 1; }
  char nm[32];
  snprintf(nm, sizeof nm, "Thread %u", tid);
  xl *l = line_for(c, &c->planes[0], tid, nm);
  const vx_func *fn = vx_trace_func(t, ev->fn);
  uint64_t msg;
  const char *label = NULL;
  if (fn && fn->domain == DLH__DOMAIN__DOMAIN_NVTX && ex_arg(t, ev, "message|name", &msg))
    label = vx_trace_string(t, (uint32_t)msg);
  int64_t meta = label ? meta_for(&c->planes[0], 1ull << 62 | hash_name(label) >> 2, label)
                       : meta_for(&c->planes[0], ev->fn, vx_func_name(t, ev->fn));
  Dlhxplane__XStat s[2], *sp[2];
  size_t ns = 0;
  if (ev->corr) { sp[ns] = ustat(&s[ns], S_CORR, ev->corr); ns++; }
  if (ev->ret) {
    sp[ns] = &s[ns];
    dlhxplane__xstat__init(&s[ns]);
    s[ns].has_metadata_id = 1;
    s[ns].metadata_id = S_RESULT;
    s[ns].value_case = DLHXPLANE__XSTAT__VALUE_INT64_VALUE;
    s[ns].int64_value = ev->ret;
    ns++;
  }
  put_event(c, l, meta, ev->start_ns, ev->dur_ns, sp, ns);
}

static const char *mem_kind(uint64_t k) {
  static const char *const n[] = {"unknown", "pageable", "pinned", "device", "array", "managed",
                                  "device_static", "managed_static"};
  return k < sizeof n / sizeof *n ? n[k] : "unknown";
}

static void x_gpu(void *ctx, const vx_trace *t, const ex_gpu *g) {
  xctx *c = ctx;
  if (g->kind < 1 || g->kind > 3) return;
  if (!c->have_base) { c->base = g->start; c->have_base = 1; }
  xp *p = plane_for_device(c, g->device);
  char nm[64], det[192];
  snprintf(nm, sizeof nm, "Stream #%u", g->stream);
  xl *l = line_for(c, p, g->stream, nm);
  const char *name = ex_gpu_name(t, g, nm, sizeof nm);
  int64_t meta = meta_for(p, g->name ? g->name : 1ull << 62 | hash_name(name) >> 2, name);
  Dlhxplane__XStat s[6], *sp[6];
  size_t ns = 0;
  sp[ns] = ustat(&s[ns], S_CORR, g->corr); ns++;
  sp[ns] = ustat(&s[ns], S_DEVICE, g->device); ns++;
  sp[ns] = ustat(&s[ns], S_CONTEXT, g->context); ns++;
  sp[ns] = ustat(&s[ns], S_STREAM, g->stream); ns++;
  const uint64_t *v = g->vals;
  det[0] = 0;
  if (g->kind == 1 && g->nvals >= 9) {
    snprintf(det, sizeof det, "regs:%" PRIu64 " static_shared:%" PRIu64 " dynamic_shared:%"
             PRIu64 " grid:%" PRIu64 ",%" PRIu64 ",%" PRIu64 " block:%" PRIu64 ",%" PRIu64 ",%"
             PRIu64 " occ_pct:0", v[6], v[7], v[8], v[0], v[1], v[2], v[3], v[4], v[5]);
    sp[ns] = sstat(&s[ns], S_KERNEL, det); ns++;
  } else if (g->kind == 2 && g->nvals >= 4) {
    snprintf(det, sizeof det, "kind_src:%s kind_dst:%s size:%" PRIu64 " dest:%u async:%u",
             mem_kind(v[2]), mem_kind(v[3]), v[0], g->device,
             g->nvals >= 5 ? (unsigned)(v[4] & 1) : 0);
    sp[ns] = sstat(&s[ns], S_MEMCPY, det); ns++;
  } else if (g->kind == 3 && g->nvals >= 1) {
    snprintf(det, sizeof det, "num_bytes:%" PRIu64 " async:%u", v[0],
             g->nvals >= 4 ? (unsigned)(v[3] & 1) : 0);
    sp[ns] = sstat(&s[ns], S_MEMSET, det); ns++;
  }
  put_event(c, l, meta, g->start, g->dur, sp, ns);
}

/* ---------------------------------------------------------------- assembling the XSpace */

static void put_bytes(FILE *f, int tag, const uint8_t *b, size_t n) {
  putc(tag, f);
  ex_put_varint(f, n);
  fwrite(b, 1, n, f);
}

static uint8_t *pack_line_header(const xl *l, uint64_t base, size_t *n) {
  Dlhxplane__XLine h = DLHXPLANE__XLINE__INIT;
  h.has_id = h.has_display_id = 1;
  h.id = h.display_id = l->id;
  h.name = h.display_name = l->name;
  h.has_timestamp_ns = 1;
  h.timestamp_ns = (int64_t)base;
  *n = dlhxplane__xline__get_packed_size(&h);
  uint8_t *b = vx_xmalloc(*n ? *n : 1);
  dlhxplane__xline__pack(&h, b);
  return b;
}

static void write_plane(xctx *c, FILE *out, xp *p) {
  /* header: id, name, plane stats */
  Dlhxplane__XPlane h = DLHXPLANE__XPLANE__INIT;
  h.has_id = 1;
  h.id = p->id;
  h.name = p->name;
  Dlhxplane__XStat st[4], *stp[4];
  if (p->have_dev) {
    stp[0] = ustat(&st[0], S_CORES, p->props.sm_count);
    stp[1] = ustat(&st[1], S_MEMSIZE, p->props.total_mem);
    stp[2] = ustat(&st[2], S_CC_MAJOR, p->props.cc_major);
    stp[3] = ustat(&st[3], S_CC_MINOR, p->props.cc_minor);
    h.n_stats = 4;
    h.stats = stp;
  }
  size_t hn = dlhxplane__xplane__get_packed_size(&h);
  uint8_t *hb = vx_xmalloc(hn ? hn : 1);
  dlhxplane__xplane__pack(&h, hb);
  /* metadata entries */
  size_t total = hn, nent = p->nmeta + S_NSTATS - 1;
  uint8_t **eb = vx_xmalloc(nent * sizeof *eb);
  size_t *en = vx_xmalloc(nent * sizeof *en);
  for (size_t i = 0; i < nent; i++) {
    if (i < p->nmeta) {
      Dlhxplane__XEventMetadata m = DLHXPLANE__XEVENT_METADATA__INIT;
      m.has_id = 1;
      m.id = (int64_t)i + 1;
      m.name = m.display_name = p->meta[i];
      Dlhxplane__EventMetadataEntry e = DLHXPLANE__EVENT_METADATA_ENTRY__INIT;
      e.has_key = 1;
      e.key = m.id;
      e.value = &m;
      en[i] = dlhxplane__event_metadata_entry__get_packed_size(&e);
      eb[i] = vx_xmalloc(en[i]);
      dlhxplane__event_metadata_entry__pack(&e, eb[i]);
    } else {
      Dlhxplane__XStatMetadata m = DLHXPLANE__XSTAT_METADATA__INIT;
      m.has_id = 1;
      m.id = (int64_t)(i - p->nmeta) + 1;
      m.name = (char *)stat_names[m.id];
      Dlhxplane__StatMetadataEntry e = DLHXPLANE__STAT_METADATA_ENTRY__INIT;
      e.has_key = 1;
      e.key = m.id;
      e.value = &m;
      en[i] = dlhxplane__stat_metadata_entry__get_packed_size(&e);
      eb[i] = vx_xmalloc(en[i]);
      dlhxplane__stat_metadata_entry__pack(&e, eb[i]);
    }
    total += 1 + vlen(en[i]) + en[i];
  }
  /* lines */
  uint8_t **lb = vx_xmalloc((p->nlines ? p->nlines : 1) * sizeof *lb);
  size_t *ln = vx_xmalloc((p->nlines ? p->nlines : 1) * sizeof *ln);
  for (size_t i = 0; i < p->nlines; i++) {
    lb[i] = pack_line_header(&p->lines[i], c->base, &ln[i]);
    uint64_t len = ln[i] + p->lines[i].bytes;
    total += 1 + vlen(len) + len;
  }
  putc(0x0a, out); /* XSpace.planes */
  ex_put_varint(out, total);
  fwrite(hb, 1, hn, out);
  char cp[1 << 16];
  for (size_t i = 0; i < p->nlines; i++) {
    xl *l = &p->lines[i];
    putc(0x1a, out); /* XPlane.lines */
    ex_put_varint(out, ln[i] + l->bytes);
    fwrite(lb[i], 1, ln[i], out);
    if (fflush(l->spill) != 0 || ferror(l->spill)) c->io_error = 1;
    rewind(l->spill);
    size_t k;
    uint64_t copied = 0;
    while ((k = fread(cp, 1, sizeof cp, l->spill)) > 0) {
      fwrite(cp, 1, k, out);
      copied += k;
    }
    if (copied != l->bytes) c->io_error = 1;
    free(lb[i]);
  }
  for (size_t i = 0; i < nent; i++) {
    put_bytes(out, i < p->nmeta ? 0x22 : 0x2a, eb[i], en[i]); /* event_metadata / stat_metadata */
    free(eb[i]);
  }
  free(eb);
  free(en);
  free(lb);
  free(ln);
  free(hb);
}

static void free_plane(xp *p) {
  for (size_t i = 0; i < p->nlines; i++) {
    free(p->lines[i].name);
    if (p->lines[i].spill) fclose(p->lines[i].spill);
  }
  free(p->lines);
  for (size_t i = 0; i < p->nmeta; i++) free(p->meta[i]);
  free(p->meta);
  ex_m_free(&p->line_ix);
  ex_m_free(&p->meta_ix);
}

static void host_of(const char *path, char *host, size_t n, uint32_t *pid) {
  vx_trace t;
  snprintf(host, n, "localhost");
  if (vx_trace_open(&t, path) < 0) return;
  const Dlh__Packet *p;
  for (int i = 0; i < 16 && vx_trace_next(&t, &p) == 1; i++)
    if (p->data_case == DLH__PACKET__DATA_PROCESS) {
      if (p->process->host && *p->process->host) snprintf(host, n, "%s", p->process->host);
      *pid = p->process->pid;
      break;
    }
  vx_trace_close(&t);
  char raw[128];
  snprintf(raw, sizeof raw, "%s", host);
  ex_safe_name(host, n, raw, "localhost");
  for (char *s = host; *s; s++) /* xprof takes the host from the name up to the first '.' */
    if (*s == '.') *s = '_';
}

static int xplane_one(const ex_opts *o, const char *path, const char *run, int suffix) {
  xctx c = {0};
  c.o = o;
  c.planes = vx_xmalloc(sizeof *c.planes);
  memset(c.planes, 0, sizeof *c.planes);
  c.nplanes = 1;
  c.planes[0].id = 1;
  snprintf(c.planes[0].name, sizeof c.planes[0].name, "/host:CPU");
  host_of(path, c.host, sizeof c.host, &c.pid);
  ex_sink s = {&c, x_packet, x_api, x_gpu};
  int rc = ex_scan(path, o, "exporting", &s);
  size_t dl = strlen(o->out) + strlen(run) + sizeof c.host + 64;
  char *dir = vx_xmalloc(dl), *file = vx_xmalloc(dl + 64), stem[sizeof c.host + 16], *done = NULL;
  snprintf(dir, dl, "%s/plugins/profile/%s", o->out, run);
  if (suffix) snprintf(stem, sizeof stem, "%s_%u", c.host, c.pid);
  else snprintf(stem, sizeof stem, "%s", c.host);
  snprintf(file, dl + 64, "%s/%s.xplane.pb", dir, stem);
  FILE *out = ex_create(file, 0);
  if (!out) {
    rc = VX_BAD_INPUT;
  } else {
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    for (size_t i = 0; i < c.nplanes; i++) write_plane(&c, out, &c.planes[i]);
    put_bytes(out, 0x22, (const uint8_t *)c.host, strlen(c.host)); /* XSpace.hostnames */
    if (c.io_error) vx_error("%s: temporary file error", file);
    /* two traces of one host and pid in one run get distinct names, nothing is replaced */
    done = ex_close_new(out, dir, stem, ".xplane.pb");
    if (!done || c.io_error) rc = VX_BAD_INPUT;
    else if (!o->quiet) fprintf(stderr, "dlhook: wrote %s\n", done);
  }
  free(done);
  for (size_t i = 0; i < c.nplanes; i++) free_plane(&c.planes[i]);
  free(c.planes);
  vx_map_free(&c.plane_ix, NULL);
  free(c.buf);
  free(dir);
  free(file);
  return rc;
}

int ex_xplane(const ex_opts *o, char **files, size_t n) {
  /* run name: the time of the export, as TensorBoard's profiler names runs. The run directory
   * is always a new one, made by this export (a name taken, by an earlier export or by anyone,
   * moves on to NAME_2, NAME_3, ...), so nothing in it was planted. */
  char run[80], base[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(base, sizeof base, "%Y_%m_%d_%H_%M_%S", &tm);
  size_t pl = strlen(o->out) + 32;
  char *prof = vx_xmalloc(pl), *dir = vx_xmalloc(pl + sizeof run);
  snprintf(prof, pl, "%s/plugins/profile", o->out);
  if (ex_mkdirs(prof) < 0 || ex_dir_safe(prof) < 0) {
    free(prof);
    free(dir);
    return VX_BAD_INPUT;
  }
  snprintf(run, sizeof run, "%s", base);
  for (unsigned i = 2;; i++) {
    snprintf(dir, pl + sizeof run, "%s/%s", prof, run);
    if (mkdir(dir, 0777) == 0) break;
    if (errno != EEXIST || i > 100000) {
      vx_error("%s: %s", dir, strerror(errno));
      free(prof);
      free(dir);
      return VX_BAD_INPUT;
    }
    snprintf(run, sizeof run, "%s_%u", base, i);
  }
  free(prof);
  free(dir);
  int rc = VX_OK;
  for (size_t i = 0; i < n; i++)
    if (xplane_one(o, files[i], run, n > 1) != VX_OK) rc = VX_BAD_INPUT;
  return rc;
}
