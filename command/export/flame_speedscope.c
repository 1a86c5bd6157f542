/* flame_speedscope.c — the flame graph as a speedscope JSON file. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

/* ---------------------------------------------------------------- speedscope */

typedef struct ssctx {
  const flame *f;
  FILE *out;
  uint32_t *stk;   /* frames of the path, outermost first */
  int first, weights;
} ssctx;

static int ss_visit(void *ctx, uint32_t n) {
  ssctx *c = ctx;
  const node *d = &c->f->nodes[n];
  if (!n || !d->self[c->f->side]) return 1;
  fputs(c->first ? "" : ",", c->out);
  c->first = 0;
  if (c->weights) {
    fprintf(c->out, "%" PRIu64, d->self[c->f->side]);
    return 1;
  }
  size_t depth = 0;
  for (uint32_t x = n; x; x = c->f->nodes[x].parent) depth++;
  size_t i = depth;
  for (uint32_t x = n; x; x = c->f->nodes[x].parent) c->stk[--i] = c->f->nodes[x].frame;
  putc('[', c->out);
  for (i = 0; i < depth; i++) fprintf(c->out, i ? ",%u" : "%u", c->stk[i]);
  putc(']', c->out);
  return 1;
}

void flame_write_speedscope(const flame *f, FILE *out, const char *title) {
  fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":", out);
  rd_json_str(out, title);
  fprintf(out, ",\"exporter\":\"dlhook %s\",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[",
          DLHOOK_VERSION);
  for (size_t i = 0; i < f->nnames; i++) {
    fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
    rd_json_str(out, f->names[i]);
    putc('}', out);
  }
  fputs("]},\n\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
  rd_json_str(out, title);
  fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
          f->o->weight == RD_W_BYTES ? "bytes" : "nanoseconds", f->nodes[0].total[f->side]);
  uint32_t maxd = 0;
  for (size_t i = 0; i < f->nnodes; i++)
    if (f->nodes[i].depth > maxd) maxd = f->nodes[i].depth;
  ssctx c = {f, out, rd_xmalloc(((size_t)maxd + 1) * sizeof *c.stk), 1, 0};
  walker w = {ss_visit, NULL, &c};
  flame_walk(f, 0, &w);
  fputs("],\n\"weights\":[", out);
  c.first = 1;
  c.weights = 1;
  flame_walk(f, 0, &w);
  fputs("]}]}\n", out);
  free(c.stk);
}
