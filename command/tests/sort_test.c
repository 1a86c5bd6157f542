/* sort_test — rd_sort_pairs and rd_sort_by_key (command/lib/util.c) against a reference stable
 * sort (qsort by key, then by original position) on inputs of the shapes the analyses sort:
 * in order, nearly in order (a step's edges; the insertion sort), nearly in order past the
 * insertion sort's budget (the radix sort takes over half way), reversed, random, few distinct
 * keys (stability), keys that differ only in their high bytes, sizes 0 to 5,000.
 * Prints "sort_test: N cases ok"; exit 1 at the first difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd.h"

typedef struct rec { uint64_t key, pos, pad; } rec; /* rd_sort_by_key's records: 24 bytes */

static int by_key_pos(const void *a, const void *b) {
  const rd_pair *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->val < y->val ? -1 : x->val > y->val;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static uint64_t make_key(int shape, size_t i, size_t n) {
  switch (shape) {
    case 0: return 1000000000000ull + i * 10;                            /* in order */
    case 1: return 1000000000000ull + i * 10 + next() % 40;              /* nearly: local swaps */
    case 2: return 1000000000000ull + (i < n / 2 ? i : i + next() % (n + 1)) * 3; /* then far */
    case 3: return (uint64_t)(n - i);                                   /* reversed */
    case 4: return next();                                              /* random */
    case 5: return next() % 4;                                          /* few keys */
    default: return (next() % 3) << 56;                                 /* high bytes only */
  }
}

int main(void) {
  static const size_t sizes[] = {0, 1, 2, 3, 17, 64, 65, 400, 1000, 4097, 5000};
  int cases = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    size_t n = sizes[si];
    for (int shape = 0; shape < 7; shape++) {
      rd_pair *v = malloc((n + 1) * sizeof *v), *ref = malloc((n + 1) * sizeof *ref);
      rec *r = malloc((n + 1) * sizeof *r);
      for (size_t i = 0; i < n; i++) {
        v[i] = (rd_pair){make_key(shape, i, n), i};
        r[i] = (rec){v[i].key, i, ~i};
      }
      memcpy(ref, v, n * sizeof *v);
      qsort(ref, n, sizeof *ref, by_key_pos);
      rd_sort_pairs(v, n);
      rd_sort_by_key(r, n, sizeof *r);
      for (size_t i = 0; i < n; i++) {
        if (v[i].key != ref[i].key || v[i].val != ref[i].val) {
          fprintf(stderr, "rd_sort_pairs: n %zu shape %d: entry %zu is (%llu, %llu), want (%llu, %llu)\n",
                  n, shape, i, (unsigned long long)v[i].key, (unsigned long long)v[i].val,
                  (unsigned long long)ref[i].key, (unsigned long long)ref[i].val);
          return 1;
        }
        if (r[i].key != ref[i].key || r[i].pos != ref[i].val || r[i].pad != ~ref[i].val) {
          fprintf(stderr, "rd_sort_by_key: n %zu shape %d: record %zu wrong\n", n, shape, i);
          return 1;
        }
      }
      free(v);
      free(ref);
      free(r);
      cases++;
    }
  }
  printf("sort_test: %d cases ok\n", cases);
  return 0;
}
