/* pickle.h — a Python pickle writer (protocol 2) for the exporters whose readers load pickles:
 * `dlhook export -f memory-snapshot` (memsnap.c), which PyTorch's torch.cuda._memory_viz and
 * pytorch.org/memory_viz read. Only what those readers understand is written: dicts, lists,
 * 2-tuples, ints, str, True/False/None, and the memo (an object written once, referred to
 * again by number). Errors of the FILE are left to the caller's rd_close. */
#ifndef PICKLE_H
#define PICKLE_H

#include <stdint.h>
#include <stdio.h>

typedef struct pk_writer {
  FILE *f;
  uint32_t next_memo;   /* the memo number the next pk_memo gives */
  uint32_t depth;       /* open lists */
  uint64_t items[64];   /* items of each open list (appended in batches of 1000) */
} pk_writer;

/* Starts a pickle on f (PROTO 2). */
void pk_begin(pk_writer *w, FILE *f);
/* Ends it (STOP). */
void pk_end(pk_writer *w);

void pk_int(pk_writer *w, int64_t v);
void pk_uint(pk_writer *w, uint64_t v);
/* A str: s is made valid UTF-8 (bytes that are not become U+FFFD); NULL writes "". */
void pk_str(pk_writer *w, const char *s);
void pk_bool(pk_writer *w, int v);
void pk_none(pk_writer *w);
/* (a, b) of two ints. */
void pk_tuple2_int(pk_writer *w, int64_t a, int64_t b);

/* A dict: pk_dict_begin, then key and value pairs, then pk_dict_end. */
void pk_dict_begin(pk_writer *w);
void pk_dict_end(pk_writer *w);
/* A list: pk_list_begin, pk_list_item before each item, pk_list_end (at most 64 nested). */
void pk_list_begin(pk_writer *w);
void pk_list_item(pk_writer *w);
/* pk_list_begin, the list put into the memo first (pk_memo after pk_list_begin would not do:
 * the list is open). Returns its memo number. */
uint32_t pk_list_begin_memo(pk_writer *w);
void pk_list_end(pk_writer *w);

/* Puts the object just written (a complete one: a str, an int, a closed list or dict) into
 * the memo and returns its number for pk_get. */
uint32_t pk_memo(pk_writer *w);
/* The object memo number id refers to, again. */
void pk_get(pk_writer *w, uint32_t id);

/* A str written once and referred to by memo afterwards: *id is 0 before the first use (the
 * memo number + 1 after). For dict keys that repeat millions of times. */
void pk_str_once(pk_writer *w, const char *s, uint32_t *id);

#endif
