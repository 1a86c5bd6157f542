/* ranksgen — N rank traces of one job from real recordings of two ranks, for the tables' scale
 * tests and `make bench` (bench/tables-bench).
 * usage: ranksgen -o DIR -n N [--straggler R] [--jitter-us J] [--seed S] NORMAL.dlh SLOW.dlh
 *
 * NORMAL and SLOW are rank traces of one recorded job (examples/train --ranks 2 --slow-rank 1):
 * SLOW the rank that arrived late at the collectives, NORMAL one that waited. Rank R (default
 * N/3) is a copy of SLOW, every other rank a copy of NORMAL, each with its own pid (100000 + r),
 * rank and world size N, written as DIR/<host>-r<R>-<pid>.dlh. Every packet is copied as it is
 * except the process (pid, rank, local rank, world) and, in the copies of NORMAL, the NCCL
 * kernels: each starts later by a random 0..J us (default 200; seeded, reproducible) and ends
 * where it ended (a rank arriving later waits less), so arrivals jitter per rank and per
 * collective while the planted straggler stays last. Counts (calls, records, samples) stay those
 * of the template, so `dlhook stats` and the tables agree on them. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_format.h"

static uint64_t rng;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* StringDef ids of NCCL kernel names, as the template defines them */
static uint8_t *nccl_name;
static size_t nnames;

static int is_nccl(const char *s) { return s && (strstr(s, "ncclDevKernel") || strstr(s, "ncclKernel")); }

static int copy(const char *in, const char *out, int rank, int world, uint32_t pid, int jitter_us) {
  char *err = NULL;
  dlh_reader *r = dlh_reader_open(in, &err);
  if (!r) { fprintf(stderr, "ranksgen: %s: %s\n", in, err ? err : "cannot open"); return -1; }
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(out); dlh_reader_close(r); return -1; }
  dlh_encoder *enc = dlh_enc_create(fd, 1);
  const Dlh__Packet *cp;
  int rc, n = 0;
  uint64_t *abs = NULL;
  size_t cap = 0;
  while ((rc = dlh_reader_next(r, &cp)) == 1) {
    Dlh__Packet *p = (Dlh__Packet *)cp; /* the reader's copy, changed before it is re-encoded */
    if (p->data_case == DLH__PACKET__DATA_STRING && p->string && p->string->has_id) {
      uint32_t id = p->string->id;
      if (id >= nnames) {
        size_t nn = (size_t)id * 2 + 64;
        nccl_name = realloc(nccl_name, nn);
        memset(nccl_name + nnames, 0, nn - nnames);
        nnames = nn;
      }
      nccl_name[id] = (uint8_t)is_nccl(p->string->value);
    } else if (p->data_case == DLH__PACKET__DATA_PROCESS && p->process) {
      p->process->has_pid = 1, p->process->pid = pid;
      p->process->has_rank = 1, p->process->rank = rank;
      p->process->has_local_rank = 1, p->process->local_rank = rank % 8;
      p->process->has_world_size = 1, p->process->world_size = world;
    } else if (p->data_case == DLH__PACKET__DATA_GPU && p->gpu && jitter_us > 0) {
      Dlh__GpuBatch *g = p->gpu;
      size_t k = g->n_start_delta;
      if (k > cap) { cap = k * 2; abs = realloc(abs, cap * sizeof *abs); }
      uint64_t t = g->base_start_ns;
      for (size_t i = 0; i < k; i++) abs[i] = t += (uint64_t)g->start_delta[i];
      for (size_t i = 0; i < k && i < g->n_name && i < g->n_dur && i < g->n_kind; i++) {
        if (g->kind[i] != DLH__GPU_RECORD_KIND__KERNEL || g->name[i] >= nnames || !nccl_name[g->name[i]])
          continue;
        uint64_t d = next_rand() % ((uint64_t)jitter_us * 1000 + 1);
        if (d + 1000 > g->dur[i]) d = g->dur[i] > 1000 ? g->dur[i] - 1000 : 0;
        abs[i] += d;
        g->dur[i] -= d;
      }
      uint64_t prev = g->base_start_ns;
      for (size_t i = 0; i < k; i++) { g->start_delta[i] = (int64_t)(abs[i] - prev); prev = abs[i]; }
    }
    if (!enc || dlh_enc_packet(enc, p) < 0) { rc = -2; break; }
    if (++n % 256 == 0 && dlh_enc_flush(enc) < 0) { rc = -2; break; }
  }
  if (rc == -1) fprintf(stderr, "ranksgen: %s: %s (copied what could be read)\n", in, dlh_reader_error(r));
  int wrc = enc && dlh_enc_flush(enc) == 0 && rc != -2 ? 0 : -1;
  dlh_enc_free(enc);
  if (close(fd) < 0) wrc = -1;
  if (wrc < 0) fprintf(stderr, "ranksgen: %s: write error\n", out);
  free(abs);
  dlh_reader_close(r);
  return wrc;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *normal = NULL, *slow = NULL;
  long n = 0, straggler = -1, jitter = 200, seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-o") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(a, "-n") && i + 1 < argc) n = atol(argv[++i]);
    else if (!strcmp(a, "--straggler") && i + 1 < argc) straggler = atol(argv[++i]);
    else if (!strcmp(a, "--jitter-us") && i + 1 < argc) jitter = atol(argv[++i]);
    else if (!strcmp(a, "--seed") && i + 1 < argc) seed = atol(argv[++i]);
    else if (!normal) normal = a;
    else if (!slow) slow = a;
    else { fprintf(stderr, "ranksgen: unexpected %s\n", a); return 2; }
  }
  if (!dir || n < 2 || !normal || !slow || jitter < 0) {
    fprintf(stderr, "usage: ranksgen -o DIR -n N [--straggler R] [--jitter-us J] [--seed S] "
                    "NORMAL.dlh SLOW.dlh\n");
    return 2;
  }
  if (straggler < 0) straggler = n / 3;
  if (straggler >= n) { fprintf(stderr, "ranksgen: --straggler %ld >= N\n", straggler); return 2; }
  for (long k = 0; k < n; k++) {
    char out[4096];
    uint32_t pid = (uint32_t)(100000 + k);
    snprintf(out, sizeof out, "%s/gen-r%ld-%u.dlh", dir, k, pid);
    rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed * 1000003u + (uint64_t)k);
    if (!rng) rng = 1;
    if (copy(k == straggler ? slow : normal, out, (int)k, (int)n, pid,
             k == straggler ? 0 : (int)jitter) < 0)
      return 1;
  }
  printf("%ld rank traces in %s, straggler rank %ld\n", n, dir, straggler);
  free(nccl_name);
  return 0;
}
