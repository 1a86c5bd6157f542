/* mutate.h — deterministic damage for trace files, shared by the replay driver (make test) and
 * the libFuzzer harness's custom mutator. A trace is a 16-byte header and independent zstd
 * frames (format/dlh_format.h); each mutation also says how long an undamaged prefix of the
 * original stays in the result (header + the frames before the damage), which the reader must
 * still read in full. */
#ifndef DLH_FUZZ_MUTATE_H
#define DLH_FUZZ_MUTATE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define FZ_HEADER 16
#define FZ_MAX_FRAMES 4096

static uint64_t fz_next(uint64_t *s) { /* xorshift64* */
  uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* Frame starts of a trace: off[0..n] (off[n] = end of the last whole frame). Returns n. */
static size_t fz_frames(const uint8_t *in, size_t len, size_t *off) {
  size_t n = 0, pos = FZ_HEADER;
  if (len < FZ_HEADER) { off[0] = len; return 0; }
  off[0] = pos;
  while (pos < len && n < FZ_MAX_FRAMES - 1) {
    size_t fl = ZSTD_findFrameCompressedSize(in + pos, len - pos);
    if (ZSTD_isError(fl)) break;
    pos += fl;
    off[++n] = pos;
  }
  return n;
}

static const char *const fz_kind_names[] = {"truncate", "byteflip", "packet", "frame-dup",
                                            "frame-drop", "frame-swap", "header", "append",
                                            "insert", "all-frames"};
#define FZ_KINDS 10

/* Mutates the trace (in, len) with the mutation `kind` (0..FZ_KINDS-1) and seed. Returns a
 * malloc'd buffer (*outlen bytes); *clean gets the length of the original's prefix that the
 * result holds unchanged and that must still be read (0: nothing can be required). NULL when
 * out of memory. */
static uint8_t *fz_damage(const uint8_t *in, size_t len, unsigned kind, uint64_t seed,
                          size_t *outlen, size_t *clean) {
  static size_t off[FZ_MAX_FRAMES];
  size_t nf = fz_frames(in, len, off);
  size_t cap = len * 2 + 4096;
  uint8_t *out = malloc(cap);
  if (!out) return NULL;
  uint64_t r = fz_next(&seed);
  size_t j = nf ? (size_t)(r % nf) : 0; /* the frame the damage starts in */
  *clean = nf ? off[j] : 0;
  size_t n = 0;
#define PUT(p, k) do { memcpy(out + n, (p), (k)); n += (k); } while (0)
  switch (kind % FZ_KINDS) {
    case 0: { /* cut anywhere */
      size_t k = len ? (size_t)(fz_next(&seed) % len) : 0;
      PUT(in, k);
      *clean = FZ_HEADER;
      for (size_t i = 0; i <= nf; i++) if (off[i] <= k) *clean = off[i];
      if (k < FZ_HEADER) *clean = 0;
      break;
    }
    case 1: { /* a few flipped bytes from frame j on */
      PUT(in, len);
      size_t from = nf ? off[j] : 0, span = len > from ? len - from : 0;
      int k = 1 + (int)(fz_next(&seed) % 8);
      for (int i = 0; i < k && span; i++) {
        uint64_t q = fz_next(&seed);
        out[from + q % span] ^= (uint8_t)(1u << ((q >> 40) % 8));
      }
      break;
    }
    case 2: case 9: { /* the packets inside frame j (all frames: 9) decoded, mutated, recoded */
      if (!nf) { PUT(in, len); *clean = 0; break; }
      if (kind % FZ_KINDS == 9) { j = 0; *clean = 0; }
      PUT(in, off[j]);
      for (size_t f = j; f < nf; f++) {
        const uint8_t *fr = in + off[f];
        size_t fl = off[f + 1] - off[f];
        if (f > j && kind % FZ_KINDS == 2) { PUT(fr, fl); continue; }
        unsigned long long cs = ZSTD_getFrameContentSize(fr, fl);
        uint8_t *raw = cs < (64u << 20) ? malloc((size_t)cs + 1) : NULL;
        size_t rl = raw ? ZSTD_decompress(raw, (size_t)cs, fr, fl) : 0;
        if (!raw || ZSTD_isError(rl)) { free(raw); PUT(fr, fl); continue; }
        int k = 1 + (int)(fz_next(&seed) % 4);
        for (int i = 0; i < k && rl; i++) {
          uint64_t q = fz_next(&seed);
          size_t at = (size_t)(q % rl);
          switch ((q >> 32) % 6) {
            case 0: raw[at] ^= (uint8_t)(1u << ((q >> 40) % 8)); break;
            case 1: raw[at] = (uint8_t)(q >> 48); break;
            case 2: raw[at] = 0xff; break;
            case 3: raw[at] = 0; break;
            case 4: for (size_t b = 0; b < 1 + (q >> 40) % 16 && at + b < rl; b++) raw[at + b] = (uint8_t)fz_next(&seed); break;
            case 5: rl = at; break;
          }
        }
        size_t bound = ZSTD_compressBound(rl);
        if (n + bound + (len - off[f + 1]) > cap) {
          cap = n + bound + len + 4096;
          uint8_t *o = realloc(out, cap);
          if (!o) { free(raw); free(out); return NULL; }
          out = o;
        }
        size_t z = ZSTD_compress(out + n, cap - n, raw, rl, 1);
        free(raw);
        if (ZSTD_isError(z)) { PUT(fr, fl); continue; }
        n += z;
      }
      PUT(in + off[nf], len - off[nf]);
      break;
    }
    case 3: /* frame j twice */
      PUT(in, nf ? off[j + 1] : len);
      if (nf) { PUT(in + off[j], off[j + 1] - off[j]); PUT(in + off[j + 1], len - off[j + 1]); }
      break;
    case 4: /* frame j missing */
      PUT(in, nf ? off[j] : len);
      if (nf) PUT(in + off[j + 1], len - off[j + 1]);
      break;
    case 5: /* frames j and j+1 swapped */
      if (nf < 2 || j + 1 >= nf) { PUT(in, len); *clean = len; break; }
      PUT(in, off[j]);
      PUT(in + off[j + 1], off[j + 2] - off[j + 1]);
      PUT(in + off[j], off[j + 1] - off[j]);
      PUT(in + off[j + 2], len - off[j + 2]);
      break;
    case 6: { /* magic, version or flags */
      PUT(in, len);
      if (len) out[fz_next(&seed) % (len < FZ_HEADER ? len : FZ_HEADER)] ^= (uint8_t)(1 + fz_next(&seed) % 255);
      *clean = 0;
      break;
    }
    case 7: case 8: { /* garbage after the last frame (7), or between frames j and j+1 (8) */
      size_t at = kind % FZ_KINDS == 7 || !nf ? len : off[j + 1];
      PUT(in, at);
      size_t g = 1 + (size_t)(fz_next(&seed) % 512);
      for (size_t i = 0; i < g; i++) out[n++] = (uint8_t)fz_next(&seed);
      if (fz_next(&seed) % 2 && n >= 4) { out[n - g] = 0x28; if (g > 3) { out[n - g + 1] = 0xb5; out[n - g + 2] = 0x2f; out[n - g + 3] = 0xfd; } } /* a zstd magic */
      PUT(in + at, len - at);
      *clean = at;
      break;
    }
  }
#undef PUT
  *outlen = n;
  return out;
}

#endif
