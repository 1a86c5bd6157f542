/* symtab_scale — the symbol index (unwind/elfsym.c) on synthetic modules of many sizes.
 * usage: symtab_scale MODULE:ADDR...   (each MODULE made by tests/stacks/t_symtab_scale.sh:
 *                                       functions fn_0 .. fn_{N-1}, 16 bytes apart, 1 byte long;
 *                                       ADDR: fn_0's address, hex, from nm)
 * For each module: builds the index (time), checks names and offsets of every 97th function and
 * that an address between two functions (outside fn's size) has no name, then times random
 * lookups (the best of 7 rounds each, ns per lookup) over 1 Mi random functions (cold: each
 * lookup misses the caches, like the first lookup of each pc of a trace), 1,024 (warm) and 16
 * (hot: the index's own work, everything it touches in the caches and the TLB). One line per
 * module:
 *   MODULE symbols=N build_ms=B cold_ns=C warm_ns=W hot_ns=H index_bytes=I resident_bytes=R
 * (R: how much more memory was resident after building the index than before)
 * Exit 1 when a lookup gives a wrong answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlh_elfsym.h"

static const dlh_elf_api API = {
    elf_version, elf_begin, elf_cntl, elf_end,   elf_nextscn,
    gelf_getshdr, elf_getdata, gelf_getsym, elf_strptr, gelf_getnote, elf_rawfile,
};

/* resident bytes now (statm: pages) */
static long rss_bytes(void) {
  long size = 0, res = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
  fclose(f);
  return res * 4096;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
  int bad = 0;
  for (int m = 1; m < argc; m++) {
    char *colon = strrchr(argv[m], ':');
    if (!colon) { fprintf(stderr, "usage: symtab_scale MODULE:ADDR...\n"); return 2; }
    *colon = 0;
    uint64_t base = strtoull(colon + 1, NULL, 16);
    long r0 = rss_bytes();
    double t0 = now_ns();
    dlh_symtab *t = dlh_symtab_open(&API, argv[m], NULL, 0);
    double t1 = now_ns();
    long resident = rss_bytes() - r0; /* what the open left resident: the index, not the file */
    if (!t) { fprintf(stderr, "%s: no index\n", argv[m]); return 1; }
    size_t n = dlh_symtab_count(t);
    for (size_t i = 0; i < n; i += 97) {
      char want[32];
      snprintf(want, sizeof want, "fn_%zu", i);
      uint64_t off = 99;
      const char *got = dlh_symtab_lookup(t, base + 16 * i, &off);
      if (!got || strcmp(got, want) || off != 0) {
        fprintf(stderr, "%s: %#llx: got %s+%llu, want %s\n", argv[m],
                (unsigned long long)(base + 16 * i), got ? got : "(none)",
                (unsigned long long)off, want);
        bad = 1;
        break;
      }
      if (dlh_symtab_lookup(t, base + 16 * i + 8, &off)) { /* padding after the 1-byte body */
        fprintf(stderr, "%s: padding after %s has a name\n", argv[m], want);
        bad = 1;
        break;
      }
    }
    enum { LOOKUPS = 1 << 20, WARM = 1024, HOT = 16 };
    uint64_t *addrs = malloc(LOOKUPS * sizeof *addrs);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < LOOKUPS; i++) { /* xorshift: the same sequence for every module */
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      addrs[i] = base + 16 * (x % n);
    }
    double best[3] = {1e18, 1e18, 1e18};
    const size_t set[3] = {LOOKUPS, WARM, HOT};
    size_t hits = 0;
    for (int round = 0; round < 21; round++) {
      int k = round % 3;
      double a = now_ns();
      for (size_t i = 0; i < LOOKUPS; i++)
        hits += dlh_symtab_lookup(t, addrs[i & (set[k] - 1)], NULL) != NULL;
      double b = now_ns();
      if ((b - a) / LOOKUPS < best[k]) best[k] = (b - a) / LOOKUPS;
    }
    if (hits != 21ull * LOOKUPS) { fprintf(stderr, "%s: lookups missed\n", argv[m]); bad = 1; }
    printf("%s symbols=%zu build_ms=%.1f cold_ns=%.1f warm_ns=%.1f hot_ns=%.1f index_bytes=%zu "
           "resident_bytes=%ld\n",
           argv[m], n, (t1 - t0) / 1e6, best[0], best[1], best[2], dlh_symtab_bytes(t), resident);
    free(addrs);
    dlh_symtab_close(t);
  }
  return bad;
}
