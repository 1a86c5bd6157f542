/* flame.c — flame graphs of traces: `dlhook export --format folded|svg|speedscope|pprof` and
 * `dlhook diff`. The tree is built by flame_tree.c; each format has its writer (flame.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

/* ---------------------------------------------------------------- entry points */

static const char *default_title(const rd_opts *o, int diff) {
  static const char *const titles[][2] = {
      [RD_W_GPU] = {"GPU time by launching stack", "GPU time, differential"},
      [RD_W_CPU] = {"Time in API calls", "API time, differential"},
      [RD_W_BYTES] = {"Bytes allocated and copied", "Bytes, differential"},
      [RD_W_SAMPLES] = {"On-CPU time (host samples)", "On-CPU time, differential"},
      [RD_W_WAIT] = {"Wait time (host samples)", "Wait time, differential"}};
  if (o->title) return o->title;
  return titles[o->weight][diff != 0];
}

int ex_flame(const rd_opts *o, char **files, size_t n) {
  flame f;
  flame_init(&f, o);
  int rc = RD_OK;
  for (size_t i = 0; i < n; i++)
    if (flame_read(&f, files[i]) != RD_OK) rc = RD_BAD_INPUT;
  flame_totals(&f);
  const char *title = default_title(o, 0);
  if (!strcmp(o->format, "pprof")) {
    if (flame_write_pprof(&f, o->out, title) != RD_OK) rc = RD_BAD_INPUT;
  } else {
    FILE *out = rd_create(o->out, 0);
    if (!out) {
      rc = RD_BAD_INPUT;
    } else {
      if (!strcmp(o->format, "folded")) flame_write_folded(&f, out, 0);
      else if (!strcmp(o->format, "svg")) flame_write_svg(&f, out, 0, title);
      else flame_write_speedscope(&f, out, title);
      if (rd_close(out, o->out) < 0) rc = RD_BAD_INPUT;
    }
  }
  flame_free(&f);
  return rc;
}

int ex_flame_diff(const rd_opts *o, const char *a, const char *b) {
  flame f;
  flame_init(&f, o);
  int rc = RD_OK;
  f.side = 0;
  if (flame_read(&f, a) != RD_OK) rc = RD_BAD_INPUT;
  f.side = 1;
  if (flame_read(&f, b) != RD_OK) rc = RD_BAD_INPUT;
  flame_totals(&f);
  size_t l = strlen(o->out);
  int svg = l >= 4 && !strcmp(o->out + l - 4, ".svg");
  FILE *out = rd_create(o->out, 0);
  if (!out) {
    rc = RD_BAD_INPUT;
  } else {
    if (svg) flame_write_svg(&f, out, 1, default_title(o, 1));
    else flame_write_folded(&f, out, 1);
    if (rd_close(out, o->out) < 0) rc = RD_BAD_INPUT;
  }
  flame_free(&f);
  return rc;
}
