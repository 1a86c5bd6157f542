/* fuzzgen.h — builds damaged traces whose zstd frames are valid but whose packet bytes are
 * mutated, so the protobuf decoding and batch iteration see arbitrary input. Shared by
 * t_format_fuzz and the mktrace test helper. */
#ifndef FUZZGEN_H
#define FUZZGEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static uint64_t fz_rand(uint64_t *s) {
  uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Given a trace in memory (in, len), returns a malloc'd trace (*outlen) where each frame was
 * decompressed, mutated (a few random bytes, byte runs or truncations), and recompressed.
 * Returns NULL if the input is not a trace of well-formed frames. */
static unsigned char *fz_mutate(const unsigned char *in, size_t len, uint64_t seed,
                                size_t *outlen) {
  if (len < 16) return NULL;
  size_t cap = len * 4 + 4096, n = 16;
  unsigned char *out = malloc(cap);
  if (!out) return NULL;
  memcpy(out, in, 16);
  size_t pos = 16;
  while (pos < len) {
    size_t fl = ZSTD_findFrameCompressedSize(in + pos, len - pos);
    unsigned long long cs = ZSTD_getFrameContentSize(in + pos, len - pos);
    if (ZSTD_isError(fl) || cs == ZSTD_CONTENTSIZE_ERROR || cs == ZSTD_CONTENTSIZE_UNKNOWN ||
        cs > (64u << 20)) { free(out); return NULL; }
    unsigned char *raw = malloc((size_t)cs + 64);
    if (!raw) { free(out); return NULL; }
    size_t rl = ZSTD_decompress(raw, (size_t)cs, in + pos, fl);
    if (ZSTD_isError(rl)) { free(raw); free(out); return NULL; }
    uint64_t r = fz_rand(&seed);
    int nmut = (int)(r % 4);
    for (int k = 0; k < nmut && rl > 0; k++) {
      uint64_t q = fz_rand(&seed);
      size_t at = (size_t)(q % rl);
      switch ((q >> 32) % 5) {
        case 0: raw[at] ^= (unsigned char)(1u << ((q >> 40) % 8)); break;
        case 1: raw[at] = (unsigned char)(q >> 48); break;
        case 2: raw[at] = 0xff; break;
        case 3: { /* a run of random bytes */
          size_t run = 1 + (size_t)((q >> 40) % 16);
          for (size_t j = 0; j < run && at + j < rl; j++) raw[at + j] = (unsigned char)fz_rand(&seed);
          break;
        }
        case 4: rl = at; break; /* cut the frame content short */
      }
    }
    size_t bound = ZSTD_compressBound(rl);
    if (n + bound > cap) {
      cap = (n + bound) * 2;
      unsigned char *o = realloc(out, cap);
      if (!o) { free(raw); free(out); return NULL; }
      out = o;
    }
    size_t z = ZSTD_compress(out + n, cap - n, raw, rl, 1);
    free(raw);
    if (ZSTD_isError(z)) { free(out); return NULL; }
    n += z;
    pos += fl;
  }
  *outlen = n;
  return out;
}

#endif
