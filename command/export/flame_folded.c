/* flame_folded.c — folded stacks ("a;b;c weight" lines, Brendan Gregg's format). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

/* ---------------------------------------------------------------- folded */

typedef struct foldctx {
  const flame *f;
  FILE *out;
  int diff;
} foldctx;

static int folded_visit(void *ctx, uint32_t n) {
  const foldctx *c = ctx;
  const node *d = &c->f->nodes[n];
  if (n && (c->diff ? (d->self[0] || d->self[1]) : d->self[c->f->side] != 0)) {
    flame_path(c->f, n, c->out);
    if (c->diff) fprintf(c->out, " %" PRIu64 " %" PRIu64 "\n", d->self[0], d->self[1]);
    else fprintf(c->out, " %" PRIu64 "\n", d->self[c->f->side]);
  }
  return 1;
}

void flame_write_folded(const flame *f, FILE *out, int diff) {
  foldctx c = {f, out, diff};
  walker w = {folded_visit, NULL, &c};
  flame_walk(f, 0, &w);
}
