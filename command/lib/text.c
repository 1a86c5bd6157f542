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

void rd_json_double(FILE *f, double d) {
  if (d != d || d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
    fputs("null", f);
    return;
  }
  fprintf(f, "%.17g", d);
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
