/* text.c — text out of traces made safe to print: UTF-8 checks, terminal fitting, JSON strings
 * and numbers, C++ demangling. */
#include <stdlib.h>
#include <string.h>

#include "rd.h"

/* ---------------------------------------------------------------- JSON */

size_t rd_utf8_seq(const unsigned char *p) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the terminating NUL */
  if (n == 3) {
    unsigned cp = (c & 0x0f) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu);
    if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  } else if (n == 4) {
    unsigned cp = (c & 0x07) << 18 | (p[1] & 0x3fu) << 12 | (p[2] & 0x3fu) << 6 | (p[3] & 0x3fu);
    if (cp < 0x10000 || cp > 0x10ffff) return 0;
  }
  return n;
}

char *rd_utf8_dup(const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t len = strlen((const char *)p), bad = 0;
  for (size_t i = 0, k; i < len; i += k ? k : 1)
    if (!(k = rd_utf8_seq(p + i))) bad++;
  char *d = rd_xmalloc(len + 2 * bad + 1), *o = d;
  for (size_t i = 0, k; i < len; i += k ? k : 1) {
    k = rd_utf8_seq(p + i);
    if (k) {
      memcpy(o, p + i, k);
      o += k;
    } else {
      memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD */
      o += 3;
    }
  }
  *o = 0;
  return d;
}

/* One character of a terminal cell: its bytes as shown (escaped or not) and its length in the
 * source. Returns the bytes written to out (at most 4). */
static size_t term_char(const unsigned char *p, char out[5], size_t *srclen) {
  size_t k = rd_utf8_seq(p);
  *srclen = k ? k : 1;
  /* C0, DEL, C1 (U+0080..U+009F, e.g. CSI) and bytes that are not UTF-8: shown as \xNN */
  if (k == 0 || (k == 1 && (*p < 0x20 || *p == 0x7f)) || (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
    snprintf(out, 5, "\\x%02x", k == 2 ? p[1] : p[0]);
    return 4;
  }
  memcpy(out, p, k);
  return k;
}

void rd_term_fit(char *dst, size_t cap, size_t width, const char *src) {
  const unsigned char *p = (const unsigned char *)(src ? src : "");
  char ch[5];
  size_t o = 0, cols = 0, total = 0, sl;
  if (cap < 4 * width + 4 || width < 4) { if (cap) dst[0] = 0; return; }
  /* columns of the whole text (one per character, 4 per escape), counted up to width + 1 */
  for (const unsigned char *q = p; *q && total <= width; q += sl) {
    size_t b = term_char(q, ch, &sl);
    total += b == 4 && ch[0] == '\\' ? 4 : 1; /* a 4-byte UTF-8 character never starts so */
  }
  size_t room = total > width ? width - 3 : width;
  while (*p) {
    size_t b = term_char(p, ch, &sl);
    size_t w = b == 4 && ch[0] == '\\' ? 4 : 1;
    if (cols + w > room) break;
    memcpy(dst + o, ch, b);
    o += b;
    cols += w;
    p += sl;
  }
  if (total > width) {
    memcpy(dst + o, "...", 3);
    o += 3;
    cols += 3;
  }
  while (cols < width) { dst[o++] = ' '; cols++; }
  dst[o] = 0;
}

void rd_json_str(FILE *f, const char *s) {
  if (!s) { fputs("null", f); return; }
  const unsigned char *p = (const unsigned char *)s;
  putc('"', f);
  while (*p) {
    const unsigned char *q = p; /* a run of what is written as it is: one write */
    while (*q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\') q++;
    if (q > p) {
      fwrite(p, 1, (size_t)(q - p), f);
      p = q;
      continue;
    }
    unsigned c = *p;
    if (c == '"' || c == '\\') { putc('\\', f); putc((int)c, f); p++; continue; }
    if (c < 0x20) {
      switch (c) {
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default: fprintf(f, "\\u%04x", c);
      }
      p++;
      continue;
    }
    size_t n = rd_utf8_seq(p);
    if (n) {
      fwrite(p, 1, n, f);
      p += n;
    } else {
      fputs("\\ufffd", f);
      p++;
    }
  }
  putc('"', f);
}

/* d as printf's "%.17g" into buf (32 bytes), the same bytes, without printf (the occupancy and
 * bandwidth figures of every kernel and copy of a Kineto export), for magnitudes 1e-4 to 1e15;
 * returns the length, or 0 where printf must do it. */
static size_t fmt_g17(char *buf, double d) {
  char *p = buf;
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  if (bits >> 63) { *p++ = '-'; d = -d; bits &= ~(1ull << 63); } /* -0 too, as printf */
  if (!(d >= 1e-4 && d < 1e15)) { /* NaN, infinities, zeros and the rest: printf's */
    if (d != 0) return 0;
    *p++ = '0';
    return (size_t)(p - buf);
  }
  uint64_t m = (bits & ((1ull << 52) - 1)) | 1ull << 52; /* d = m * 2^-s */
  int s = 1075 - (int)(bits >> 52 & 0x7ff);
  char dig[24];
  int n = 0;
  if (s <= 0 || (s < 53 && !(m & ((1ull << s) - 1)))) { /* a whole number below 2^53 */
    uint64_t v = s <= 0 ? m << -s : m >> s;
    do { dig[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = dig[--n];
    return (size_t)(p - buf);
  }
  /* D = d * 10^(16 - X) rounded to the nearest (ties to even, as glibc rounds), 17 digits:
   * m * 10^k < 2^53 * 10^21 < 2^123 and s <= 66 here, exact in 128 bits */
  static const uint64_t p10[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                 10000000ull, 100000000ull, 1000000000ull, 10000000000ull};
  int X = 0;
  for (double t = d; t >= 10; t /= 10) X++;
  for (double t = d; t < 1; t *= 10) X--;
  uint64_t D;
  for (;;) {
    int k = 16 - X; /* 1..21 */
    unsigned __int128 N = (unsigned __int128)m * (k > 10 ? p10[k - 10] : 1) * p10[k > 10 ? 10 : k];
    unsigned __int128 rem = N & (((unsigned __int128)1 << s) - 1), half = (unsigned __int128)1 << (s - 1);
    D = (uint64_t)(N >> s);
    if (rem > half || (rem == half && (D & 1))) D++;
    if (D >= 100000000000000000ull) { if (X >= 16) return 0; X++; }
    else if (D < 10000000000000000ull) { if (X <= -5) return 0; X--; }
    else break;
  }
  if (X > 16 || X < -4) return 0;
  for (n = 17; n; D /= 10) dig[--n] = (char)('0' + D % 10);
  int last = 16; /* the last digit to write: trailing zeros of the fraction dropped */
  while (last > X && last > 0 && dig[last] == '0') last--;
  if (X >= 0) {
    for (int i = 0; i <= X; i++) *p++ = dig[i];
    if (last > X) {
      *p++ = '.';
      for (int i = X + 1; i <= last; i++) *p++ = dig[i];
    }
  } else {
    *p++ = '0';
    *p++ = '.';
    for (int i = -1; i > X; i--) *p++ = '0';
    for (int i = 0; i <= last; i++) *p++ = dig[i];
  }
  return (size_t)(p - buf);
}

void rd_json_double(FILE *f, double d) {
  if (d != d || d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
    fputs("null", f);
    return;
  }
  char b[32];
  size_t n = fmt_g17(b, d);
  if (n) fwrite(b, 1, n, f);
  else fprintf(f, "%.17g", d);
}

/* __cxa_demangle from the C++ runtime (linked with -lstdc++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *rd_demangle(const char *name) {
  if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
  int status = 0;
  char *d = __cxa_demangle(name, NULL, NULL, &status);
  if (status != 0) {
    free(d);
    return NULL;
  }
  return d;
}


/* ---------------------------------------------------------------- folded events */

char *rd_folded_name(const char *name, uint64_t count) {
  if (!name) name = "";
  if (count <= 1) return rd_xstrdup(name);
  size_t n = strlen(name) + 32;
  char *s = rd_xmalloc(n);
  /* U+00D7 MULTIPLICATION SIGN, as UTF-8 */
  snprintf(s, n, "%s \xc3\x97%llu", name, (unsigned long long)count);
  return s;
}
