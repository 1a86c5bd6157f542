/* parquet.c — `dlhook export --format parquet -o DIR TRACE...`: the Parquet dataset, written by
 * the Python package (command/python/dlhook/tables.py) with pyarrow, one process per core; each
 * process reads one trace through `dlhook export --format columns` (columns.c). */
#include <stdio.h>
#include <stdlib.h>

#include "export.h"

int ex_parquet(const rd_opts *o, char **files, size_t n) {
  if (o->have_window) return rd_usage_error("export", "--format parquet takes no --window");
  char **av = rd_xmalloc((n + 6) * sizeof *av);
  char max[32];
  int k = 0;
  av[k++] = "-o";
  av[k++] = (char *)o->out;
  if (o->quiet) av[k++] = "-q";
  if (o->have_max_events) { /* the readers of the traces (export -f columns) take it */
    snprintf(max, sizeof max, "%llu", (unsigned long long)o->max_events);
    av[k++] = "--max-events";
    av[k++] = max;
  }
  av[k++] = "--";
  for (size_t i = 0; i < n; i++) av[k++] = files[i];
  int rc = rd_python("export", k, av);
  free(av);
  return rc;
}
