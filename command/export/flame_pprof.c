/* flame_pprof.c — the flame graph as a pprof profile (gzip'd protobuf). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "pprof.pb-c.h"
#include "flame.h"

/* ---------------------------------------------------------------- pprof */

typedef struct strtab {
  char **v;
  size_t n, cap;
} strtab;

static int64_t st_add(strtab *s, const char *str) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->v = rd_xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n] = (char *)str;
  return (int64_t)s->n++;
}

int flame_write_pprof(const flame *f, const char *path, const char *title) {
  Dlhpprof__Profile pr = DLHPPROF__PROFILE__INIT;
  strtab st = {0};
  st_add(&st, "");
  static const char *const wnames[] = {[RD_W_GPU] = "gpu_time", [RD_W_CPU] = "cpu_time",
                                       [RD_W_BYTES] = "bytes", [RD_W_SAMPLES] = "sampled_cpu_time",
                                       [RD_W_WAIT] = "wait_time"};
  static const char *const cnames[] = {[RD_W_GPU] = "gpu_ops", [RD_W_CPU] = "calls",
                                       [RD_W_BYTES] = "allocations_and_copies",
                                       [RD_W_SAMPLES] = "samples", [RD_W_WAIT] = "wait_samples"};
  const char *wname = wnames[f->o->weight], *cname = cnames[f->o->weight];
  Dlhpprof__ValueType vt[2] = {DLHPPROF__VALUE_TYPE__INIT, DLHPPROF__VALUE_TYPE__INIT};
  Dlhpprof__ValueType *vtp[2] = {&vt[0], &vt[1]};
  vt[0].has_type = vt[0].has_unit = vt[1].has_type = vt[1].has_unit = 1;
  vt[0].type = st_add(&st, cname);
  vt[0].unit = st_add(&st, "count");
  vt[1].type = st_add(&st, wname);
  vt[1].unit = st_add(&st, f->o->weight == RD_W_BYTES ? "bytes" : "nanoseconds");
  pr.n_sample_type = 2;
  pr.sample_type = vtp;
  pr.has_default_sample_type = 1;
  pr.default_sample_type = vt[1].type;
  pr.period_type = &vt[1];
  pr.has_period = 1;
  pr.period = 1;
  char *title_ok = rd_utf8_dup(title);
  int64_t cm = st_add(&st, title_ok);
  pr.n_comment = 1;
  pr.comment = &cm;
  /* one function and one location per frame name */
  size_t nf = f->nnames;
  Dlhpprof__Function *fn = rd_xmalloc((nf ? nf : 1) * sizeof *fn);
  Dlhpprof__Function **fnp = rd_xmalloc((nf ? nf : 1) * sizeof *fnp);
  Dlhpprof__Location *loc = rd_xmalloc((nf ? nf : 1) * sizeof *loc);
  Dlhpprof__Location **locp = rd_xmalloc((nf ? nf : 1) * sizeof *locp);
  Dlhpprof__Line *ln = rd_xmalloc((nf ? nf : 1) * sizeof *ln);
  Dlhpprof__Line **lnp = rd_xmalloc((nf ? nf : 1) * sizeof *lnp);
  for (size_t i = 0; i < nf; i++) {
    dlhpprof__function__init(&fn[i]);
    fn[i].has_id = fn[i].has_name = fn[i].has_system_name = 1;
    fn[i].id = i + 1;
    fn[i].name = fn[i].system_name = st_add(&st, f->names[i]);
    fnp[i] = &fn[i];
    dlhpprof__line__init(&ln[i]);
    ln[i].has_function_id = 1;
    ln[i].function_id = i + 1;
    lnp[i] = &ln[i];
    dlhpprof__location__init(&loc[i]);
    loc[i].has_id = 1;
    loc[i].id = i + 1;
    loc[i].n_line = 1;
    loc[i].line = &lnp[i];
    locp[i] = &loc[i];
  }
  pr.n_function = pr.n_location = nf;
  pr.function = fnp;
  pr.location = locp;
  /* samples: one per node with a weight */
  size_t ns = 0;
  for (size_t i = 1; i < f->nnodes; i++) ns += f->nodes[i].self[f->side] != 0;
  Dlhpprof__Sample *sm = rd_xmalloc((ns ? ns : 1) * sizeof *sm);
  Dlhpprof__Sample **smp = rd_xmalloc((ns ? ns : 1) * sizeof *smp);
  int64_t *vals = rd_xmalloc((ns ? ns : 1) * 2 * sizeof *vals);
  size_t nlocs = 0;
  for (size_t i = 1; i < f->nnodes; i++)
    if (f->nodes[i].self[f->side]) nlocs += f->nodes[i].depth;
  uint64_t *locids = rd_xmalloc((nlocs ? nlocs : 1) * sizeof *locids);
  size_t k = 0, lp = 0;
  for (size_t i = 1; i < f->nnodes; i++) {
    const node *d = &f->nodes[i];
    if (!d->self[f->side]) continue;
    dlhpprof__sample__init(&sm[k]);
    sm[k].location_id = locids + lp;
    for (uint32_t n = (uint32_t)i; n; n = f->nodes[n].parent) locids[lp++] = f->nodes[n].frame + 1;
    sm[k].n_location_id = (size_t)(locids + lp - sm[k].location_id);
    vals[2 * k] = (int64_t)d->count[f->side];
    vals[2 * k + 1] = (int64_t)d->self[f->side];
    sm[k].n_value = 2;
    sm[k].value = vals + 2 * k;
    smp[k] = &sm[k];
    k++;
  }
  pr.n_sample = k;
  pr.sample = smp;
  pr.n_string_table = st.n;
  pr.string_table = st.v;
  size_t len = dlhpprof__profile__get_packed_size(&pr);
  uint8_t *buf = rd_xmalloc(len ? len : 1);
  dlhpprof__profile__pack(&pr, buf);
  int rc = RD_OK;
  FILE *z = rd_create(path, 1);
  if (!z) {
    rc = RD_BAD_INPUT;
  } else {
    if (len) fwrite(buf, 1, len, z);
    if (rd_close(z, path) < 0) rc = RD_BAD_INPUT;
  }
  free(buf);
  free(locids);
  free(vals);
  free(sm);
  free(smp);
  free(fn);
  free(fnp);
  free(loc);
  free(locp);
  free(ln);
  free(lnp);
  free(st.v);
  free(title_ok);
  return rc;
}
