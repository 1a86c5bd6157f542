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
                                            "insert", "all-frames", "bomb", "hostile"};
#define FZ_KINDS 12

/* ---- hostile contents in well-formed frames (kinds 10 and 11): what an attacker writes ---- */

typedef struct fz_buf { uint8_t *p; size_t n, cap; } fz_buf;

static int fz_put(fz_buf *b, const void *p, size_t k) {
  if (b->n + k > b->cap) {
    size_t c = (b->n + k) * 2 + 256;
    uint8_t *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, p, k);
  b->n += k;
  return 0;
}

static int fz_varint(fz_buf *b, uint64_t v) {
  uint8_t t[10];
  size_t k = 0;
  for (; v >= 0x80; v >>= 7) t[k++] = (uint8_t)(v | 0x80);
  t[k++] = (uint8_t)v;
  return fz_put(b, t, k);
}

/* Appends tag + length + body (a length-delimited field). */
static int fz_field(fz_buf *b, unsigned field, const fz_buf *body) {
  return fz_varint(b, (uint64_t)field << 3 | 2) || fz_varint(b, body->n) ||
         fz_put(b, body->p, body->n);
}

/* Appends one packet (length + Packet) whose oneof field `field` holds body. */
static int fz_packet(fz_buf *frame, unsigned field, const fz_buf *body) {
  fz_buf pk = {0};
  int rc = fz_field(&pk, field, body);
  rc = rc || fz_varint(frame, pk.n) || fz_put(frame, pk.p, pk.n);
  free(pk.p);
  return rc;
}

/* A zstd frame of `len` zero bytes in RLE blocks, its size stated (or not) in the header. */
static int fz_zero_frame(fz_buf *b, uint64_t len, int stated) {
  uint8_t h[14] = {0x28, 0xb5, 0x2f, 0xfd};
  size_t k = 4;
  if (stated) { h[k++] = 0xe0; for (int i = 0; i < 8; i++) h[k++] = (uint8_t)(len >> (8 * i)); }
  else { h[k++] = 0x00; h[k++] = 0x58; }
  if (fz_put(b, h, k)) return -1;
  for (uint64_t done = 0; done < len;) {
    uint64_t sz = len - done < (128u << 10) ? len - done : (128u << 10);
    done += sz;
    uint32_t v = (uint32_t)(done == len) | 1u << 1 | (uint32_t)sz << 3;
    uint8_t blk[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), 0};
    if (fz_put(b, blk, 4)) return -1;
  }
  return 0;
}

/* Packets that break a limit or aim at a weakness of the reader or the command, chosen by the
 * seed: a stack deeper than 256, a string over 64 KiB, a batch of more than 65,536 events, an
 * empty packet, ids that share a slot of a fixed hash, names with invalid UTF-8 and terminal
 * control sequences. Returns the raw (uncompressed) frame in b. */
static int fz_hostile_packets(fz_buf *b, uint64_t *seed) {
  fz_buf m = {0}, c = {0};
  int rc = 0;
  unsigned shape = (unsigned)(fz_next(seed) % 6);
  switch (shape) {
    case 0: { /* StackDef { id, pc: 257..4096 frames } */
      size_t n = 257 + (size_t)(fz_next(seed) % 3840);
      rc = fz_varint(&m, 1 << 3) || fz_varint(&m, 1 + fz_next(seed) % 64);
      for (size_t i = 0; i < n && !rc; i++) rc = fz_varint(&c, 0x400000 + (fz_next(seed) & 0xffff));
      rc = rc || fz_field(&m, 2, &c) || fz_packet(b, 9, &m);
      break;
    }
    case 1: { /* StringDef { id 1..8, value: 64 KiB + a few bytes } */
      size_t n = (64u << 10) + 1 + (size_t)(fz_next(seed) % 4096);
      rc = fz_varint(&m, 1 << 3) || fz_varint(&m, 1 + fz_next(seed) % 8);
      for (size_t i = 0; i < n && !rc; i++) rc = fz_put(&c, "k", 1);
      rc = rc || fz_field(&m, 2, &c) || fz_packet(b, 7, &m);
      break;
    }
    case 2: { /* ApiBatch { tid, start_delta and fn of 65,537..70,000 events } */
      size_t n = 65537 + (size_t)(fz_next(seed) % 4464);
      rc = fz_varint(&m, 1 << 3) || fz_varint(&m, 1);
      for (size_t i = 0; i < n && !rc; i++) rc = fz_put(&c, "\x02", 1);
      rc = rc || fz_field(&m, 3, &c) || fz_field(&m, 5, &c) || fz_packet(b, 4, &m);
      break;
    }
    case 3: { /* an empty packet between two good ones */
      uint8_t z = 0;
      rc = fz_varint(&m, 1 << 3) || fz_varint(&m, 5) || fz_packet(b, 2, &m) || fz_put(b, &z, 1) ||
           fz_packet(b, 2, &m);
      break;
    }
    case 4: /* FunctionDesc and StringDef ids id << 16 (one slot of a multiplicative hash) */
      for (uint32_t i = 1; i <= 2000 && !rc; i++) {
        m.n = 0;
        rc = fz_varint(&m, 1 << 3) || fz_varint(&m, (uint64_t)i << 16) ||
             fz_varint(&m, 2 << 3 | 2) || fz_varint(&m, 4) || fz_put(&m, "fn_x", 4) ||
             fz_packet(b, 3, &m) || fz_packet(b, 7, &m);
      }
      break;
    default: { /* names of functions and strings 1..4: invalid UTF-8, control sequences */
      static const char *const bad[] = {"bad\xff\xfe", "cr\r\x1b[2K\x1b]0;t\x07", "cut\xe2\x82",
                                        "<svg onload=\"x\">&\xc2\x9b"};
      for (uint32_t i = 1; i <= 4 && !rc; i++) {
        const char *v = bad[(i + fz_next(seed)) % 4];
        m.n = 0;
        rc = fz_varint(&m, 1 << 3) || fz_varint(&m, i) || fz_varint(&m, 2 << 3 | 2) ||
             fz_varint(&m, strlen(v)) || fz_put(&m, v, strlen(v)) || fz_packet(b, 3, &m) ||
             fz_packet(b, 7, &m);
      }
      break;
    }
  }
  free(m.p);
  free(c.p);
  return rc;
}

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
    case 10: case 11: { /* after frame j: a decompression bomb (10), or a well-formed frame of
                         * hostile packets (11); reading goes on after it */
      size_t at = nf ? off[j + 1] : len;
      fz_buf b = {0};
      int rc;
      if (kind % FZ_KINDS == 10) {
        /* 1 GiB of zeros, its size stated or not (a bomb right at the frame limit costs a
         * 64 MiB decompression per run: tests/hostile/ has that one) */
        rc = fz_zero_frame(&b, 1ull << 30, (int)(fz_next(&seed) % 2));
      } else {
        fz_buf raw = {0};
        rc = fz_hostile_packets(&raw, &seed);
        if (!rc) {
          size_t bound = ZSTD_compressBound(raw.n);
          rc = !(b.p = malloc(bound));
          if (!rc) {
            size_t z = ZSTD_compress(b.p, bound, raw.p, raw.n, 1);
            rc = ZSTD_isError(z);
            b.n = rc ? 0 : z;
          }
        }
        free(raw.p);
      }
      if (rc || n + at + b.n + (len - at) > cap) {
        uint8_t *o = rc ? NULL : realloc(out, at + b.n + (len - at) + 16);
        if (!o) { free(b.p); free(out); return NULL; }
        out = o;
      }
      PUT(in, at);
      PUT(b.p, b.n);
      PUT(in + at, len - at);
      free(b.p);
      *clean = at;
      break;
    }
  }
#undef PUT
  *outlen = n;
  return out;
}

#endif
