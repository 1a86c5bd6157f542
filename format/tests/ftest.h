/* ftest.h — tiny helpers for the format unit tests (exit 0 = pass, 1 = fail). */
#ifndef FTEST_H
#define FTEST_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_format.h"

static int ft_failures;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
      if (++ft_failures > 20) exit(1);                                           \
    }                                                                            \
  } while (0)

#define REQUIRE(cond)                                                            \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: required: %s\n", __FILE__, __LINE__, #cond);       \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static inline int ft_done(const char *name) {
  if (ft_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, ft_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

/* A path in the test's temporary directory ($T, or /tmp). malloc'd. */
static inline char *ft_path(const char *name) {
  const char *d = getenv("T");
  if (!d || !*d) d = "/tmp";
  char *p = NULL;
  if (asprintf(&p, "%s/%s.%d", d, name, (int)getpid()) < 0) exit(1);
  return p;
}

static inline void ft_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f);
  REQUIRE(len == 0 || fwrite(data, 1, len, f) == len);
  REQUIRE(fclose(f) == 0);
}

static inline unsigned char *ft_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  REQUIRE(f);
  size_t cap = 1 << 16, n = 0, k;
  unsigned char *p = malloc(cap);
  REQUIRE(p);
  while ((k = fread(p + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) { cap *= 2; p = realloc(p, cap); REQUIRE(p); }
  }
  fclose(f);
  *len = n;
  return p;
}

/* Packs a packet into a malloc'd buffer (for byte-exact comparisons). */
static inline unsigned char *ft_pack(const Dlh__Packet *p, size_t *len) {
  *len = dlh__packet__get_packed_size(p);
  unsigned char *b = malloc(*len ? *len : 1);
  REQUIRE(b);
  REQUIRE(dlh__packet__pack(p, b) == *len);
  return b;
}

/* xorshift PRNG, deterministic. */
static inline uint64_t ft_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

#endif
