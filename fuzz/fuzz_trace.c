/* fuzz_trace.c — libFuzzer harness: the input is a trace file; `dlhook dump`, `dlhook stats
 * --json` and one exporter (chosen by the input's length) run on it in-process, through the
 * dlhook command's own main() (dlh_cmd_main). A custom mutator mixes libFuzzer's byte mutations
 * with trace-aware damage (mutate.h: frames cut, duplicated, dropped, swapped, packets mutated
 * inside valid zstd frames), so inputs get past the frame checksums.
 * Built and run by `make fuzz` (fuzz/run-fuzz). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mutate.h"

int dlh_cmd_main(int argc, char **argv);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static char path[64], out[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  snprintf(path, sizeof path, "/tmp/dlhook-fuzz-%d.dlh", (int)getpid());
  snprintf(out, sizeof out, "/tmp/dlhook-fuzz-%d.out", (int)getpid());
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) { dup2(fd, 1); close(fd); } /* the commands' output */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  static const char *const formats[] = {"kineto", "perfetto", "tensorboard", "folded", "svg",
                                        "speedscope", "pprof", "columns"};
  char *dump[] = {"dlhook", "dump", path, NULL};
  char *stats[] = {"dlhook", "stats", "--json", path, NULL};
  char *ex[] = {"dlhook", "export", "--format", (char *)formats[size % (sizeof formats / sizeof *formats)], "-o", out, path, NULL};
  dlh_cmd_main(3, dump);
  dlh_cmd_main(4, stats);
  dlh_cmd_main(7, ex);
  fflush(stdout);
  return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  if (seed % 3 == 0 || size < FZ_HEADER) return LLVMFuzzerMutate(data, size, max_size);
  size_t n, clean;
  uint8_t *m = fz_damage(data, size, seed % FZ_KINDS, seed, &n, &clean);
  if (!m) return LLVMFuzzerMutate(data, size, max_size);
  if (n > max_size) n = max_size;
  memcpy(data, m, n);
  free(m);
  return n;
}
