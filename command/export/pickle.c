/* pickle.c — a Python pickle writer, protocol 2 (pickle.h). The opcodes are those of Python's
 * Lib/pickletools.py; the pickle is what `pickle.dumps(obj, protocol=2)` would give up to the
 * choice of encodings: ints take the shortest of BININT1, BININT2, BININT and LONG1; a list's
 * items are appended in batches of 1000 (as Python does: a JavaScript reader that spreads one
 * batch onto a call's arguments overflows on millions). */
#include "pickle.h"

#include <stdlib.h>
#include <string.h>

#include "rd.h"

enum {
  PK_MARK = '(', PK_STOP = '.', PK_NONE = 'N', PK_BININT = 'J', PK_BININT1 = 'K',
  PK_BININT2 = 'M', PK_BINUNICODE = 'X', PK_APPENDS = 'e', PK_EMPTY_LIST = ']',
  PK_EMPTY_DICT = '}', PK_SETITEMS = 'u', PK_LONG_BINPUT = 'r', PK_LONG_BINGET = 'j',
  PK_PROTO = 0x80, PK_TUPLE2 = 0x86, PK_NEWTRUE = 0x88, PK_NEWFALSE = 0x89, PK_LONG1 = 0x8a,
};

static void u32le(FILE *f, uint32_t v) {
  unsigned char b[4] = {v & 255, (v >> 8) & 255, (v >> 16) & 255, (v >> 24) & 255};
  fwrite(b, 1, 4, f);
}

void pk_begin(pk_writer *w, FILE *f) {
  memset(w, 0, sizeof *w);
  w->f = f;
  putc(PK_PROTO, f);
  putc(2, f);
}

void pk_end(pk_writer *w) { putc(PK_STOP, w->f); }

/* LONG1: the shortest little-endian two's complement of v (the sign bit right). */
static void long1(FILE *f, const unsigned char *le9, int negative) {
  int n = 9;
  unsigned char fill = negative ? 0xff : 0;
  while (n > 1 && le9[n - 1] == fill && ((le9[n - 2] & 0x80) != 0) == negative) n--;
  putc(PK_LONG1, f);
  putc(n, f);
  fwrite(le9, 1, (size_t)n, f);
}

void pk_uint(pk_writer *w, uint64_t v) {
  FILE *f = w->f;
  if (v < 256) { putc(PK_BININT1, f); putc((int)v, f); return; }
  if (v < 65536) { putc(PK_BININT2, f); putc((int)(v & 255), f); putc((int)(v >> 8), f); return; }
  if (v < 0x80000000u) { putc(PK_BININT, f); u32le(f, (uint32_t)v); return; }
  unsigned char b[9];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  b[8] = 0;
  long1(f, b, 0);
}

void pk_int(pk_writer *w, int64_t v) {
  if (v >= 0) { pk_uint(w, (uint64_t)v); return; }
  if (v >= INT32_MIN) { putc(PK_BININT, w->f); u32le(w->f, (uint32_t)(int32_t)v); return; }
  unsigned char b[9];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
  b[8] = 0xff;
  long1(w->f, b, 1);
}

void pk_str(pk_writer *w, const char *s) {
  char *u = rd_utf8_dup(s);
  size_t n = strlen(u);
  putc(PK_BINUNICODE, w->f);
  u32le(w->f, (uint32_t)n);
  fwrite(u, 1, n, w->f);
  free(u);
}

void pk_bool(pk_writer *w, int v) { putc(v ? PK_NEWTRUE : PK_NEWFALSE, w->f); }
void pk_none(pk_writer *w) { putc(PK_NONE, w->f); }

void pk_tuple2_int(pk_writer *w, int64_t a, int64_t b) {
  pk_int(w, a);
  pk_int(w, b);
  putc(PK_TUPLE2, w->f);
}

void pk_dict_begin(pk_writer *w) {
  putc(PK_EMPTY_DICT, w->f);
  putc(PK_MARK, w->f);
}

void pk_dict_end(pk_writer *w) { putc(PK_SETITEMS, w->f); }

static void list_open(pk_writer *w) {
  putc(PK_MARK, w->f);
  if (w->depth < 64) w->items[w->depth] = 0;
  w->depth++;
}

void pk_list_begin(pk_writer *w) {
  putc(PK_EMPTY_LIST, w->f);
  list_open(w);
}

uint32_t pk_list_begin_memo(pk_writer *w) {
  putc(PK_EMPTY_LIST, w->f);
  uint32_t id = pk_memo(w);
  list_open(w);
  return id;
}

void pk_list_item(pk_writer *w) {
  if (!w->depth || w->depth > 64) return;
  uint64_t *n = &w->items[w->depth - 1];
  if (*n && *n % 1000 == 0) { /* this batch is full: append it, open the next */
    putc(PK_APPENDS, w->f);
    putc(PK_MARK, w->f);
  }
  (*n)++;
}

void pk_list_end(pk_writer *w) {
  putc(PK_APPENDS, w->f);
  if (w->depth) w->depth--;
}

uint32_t pk_memo(pk_writer *w) {
  putc(PK_LONG_BINPUT, w->f);
  u32le(w->f, w->next_memo);
  return w->next_memo++;
}

void pk_get(pk_writer *w, uint32_t id) {
  putc(PK_LONG_BINGET, w->f);
  u32le(w->f, id);
}

void pk_str_once(pk_writer *w, const char *s, uint32_t *id) {
  if (*id) { pk_get(w, *id - 1); return; }
  pk_str(w, s);
  *id = pk_memo(w) + 1;
}
