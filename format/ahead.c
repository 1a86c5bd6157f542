/* ahead.c — a trace reader with a thread of its own (dlh_reader_open_ahead): the thread runs an
 * ordinary reader (reader.c) ahead of the caller and hands its results over in blocks, so that
 * decompression and protobuf decoding of one trace run while the caller works on another.
 *
 * The thread's reader puts each packet into the memory of the block being filled (its arena
 * chunks, dlh_reader_keep) and records, for every call of dlh_reader_next, what the call returned
 * and the counters after it (frames, skipped, offset). The caller takes one block at a time and
 * replays the calls: what it sees is what the same calls on a reader of its own would return,
 * limits and errors included, since the thread's reader is one. The one thing the thread cannot
 * replay is a change of the cases to pass over (dlh_reader_skip) after it has read on with the
 * old ones: then it is stopped, the file is opened again by an ordinary reader, which is called
 * as many times as the caller had called with the old cases, then given the new ones. Memory: at
 * most ahead_bytes of blocks wait (plus the block being filled and the one handed out). */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_format.h"
#include "dlh_format_int.h"

#define BLOCK_CALLS 2048           /* calls of dlh_reader_next per block, at most */
#define BLOCK_BYTES (256u << 10)   /* a block is handed over once its packets take this much */
#define CHUNK_BYTES (64u << 10)    /* arena chunks of a block (a larger allocation: its own);
                                      * under malloc's mmap threshold, so reused, not mapped anew */

struct call {                      /* one dlh_reader_next of the thread's reader */
  const Dlh__Packet *p;
  int rc;
  uint64_t frames, skipped, offset;
};

struct chunk {
  struct chunk *next;
  size_t cap, used;
  max_align_t data[];
};

struct block {
  struct block *next;
  struct chunk *chunks;            /* where its packets live */
  size_t bytes, n;                 /* bytes of packets, calls */
  struct call c[BLOCK_CALLS];
};

struct dlh_ahead {
  char *path;
  uint64_t skip;                   /* the cases the thread passes over */
  uint64_t want;                   /* the caller's (dlh_reader_skip) */
  size_t cap;                      /* bytes of blocks that may wait */
  dlh_reader *in;                  /* the thread's reader */
  pthread_t th;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct block *head, *tail;       /* handed over, not yet taken (mu) */
  struct block *spare;             /* replayed, for the thread to fill again (mu) */
  size_t queued;                   /* their bytes (mu) */
  int done, stop;                  /* (mu) */
  struct block *fill;              /* the block the thread fills (the thread's) */
  int oom;                         /* an allocation for it failed (the thread's) */
  /* the caller's side */
  struct block *cur;               /* the block being replayed */
  size_t pos;                      /* its next call */
  struct call last;                /* the last call replayed (rc 1 before any) */
  uint64_t calls;                  /* calls replayed up to the first that returned <= 0 */
  dlh_reader *serial;              /* after a change of the cases: the reader that goes on */
  char *err;                       /* why that reader could not be made */
};

/* Chunks of blocks that were freed, for the next blocks of any reader: a command reads trace
 * after trace, and memory that was returned to the system would fault in again page by page. */
#define POOL_CHUNKS 1024           /* 64 MiB */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct chunk *pool;
static size_t pool_n;

static struct chunk *chunk_new(size_t cap) {
  struct chunk *c = NULL;
  if (cap == CHUNK_BYTES) {
    pthread_mutex_lock(&pool_mu);
    if ((c = pool)) {
      pool = c->next;
      pool_n--;
    }
    pthread_mutex_unlock(&pool_mu);
  }
  if (!c) c = malloc(sizeof *c + cap);
  if (c) {
    c->cap = cap;
    c->used = 0;
  }
  return c;
}

static void chunk_free(struct chunk *c) {
  if (c->cap == CHUNK_BYTES) {
    pthread_mutex_lock(&pool_mu);
    if (pool_n < POOL_CHUNKS) {
      c->next = pool;
      pool = c;
      pool_n++;
      c = NULL;
    }
    pthread_mutex_unlock(&pool_mu);
  }
  free(c);
}

static void free_block(struct block *b) {
  if (!b) return;
  for (struct chunk *c = b->chunks, *n; c; c = n) {
    n = c->next;
    chunk_free(c);
  }
  free(b);
}

static void free_blocks(struct block *b) {
  for (struct block *n; b; b = n) {
    n = b->next;
    free_block(b);
  }
}

/* A replayed block back to the thread (a->mu held): its chunks emptied, the large ones freed,
 * so that the thread fills memory that is already there (no page faults). The blocks are at
 * most those that may wait, and the two in use. */
static void recycle(struct dlh_ahead *a, struct block *b) {
  if (!b) return;
  struct chunk **pc = &b->chunks;
  while (*pc) {
    struct chunk *c = *pc;
    if (c->cap > CHUNK_BYTES) {
      *pc = c->next;
      chunk_free(c);
    } else {
      c->used = 0;
      pc = &c->next;
    }
  }
  b->n = b->bytes = 0;
  b->next = a->spare;
  a->spare = b;
}

/* The thread reader's allocator (reader.c's pkt_alloc has checked the packet's budget). */
static void *keep_alloc(void *ctx, size_t size) {
  struct dlh_ahead *a = ctx;
  struct block *b = a->fill;
  size_t n = (size + 15) & ~(size_t)15;
  struct chunk *c = b->chunks;
  while (c && n > c->cap - c->used) c = c->next; /* the first with room (recycled: empty) */
  if (!c) {
    c = chunk_new(n > CHUNK_BYTES ? n : CHUNK_BYTES);
    if (!c) {
      a->oom = 1;
      return NULL;
    }
    c->next = b->chunks;
    b->chunks = c;
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  b->bytes += n;
  return p;
}

static void *thread_main(void *arg) {
  struct dlh_ahead *a = arg;
  for (;;) {
    if (!a->fill) {
      pthread_mutex_lock(&a->mu);
      a->fill = a->spare;
      if (a->fill) a->spare = a->fill->next;
      pthread_mutex_unlock(&a->mu);
      if (!a->fill && (a->fill = malloc(sizeof *a->fill))) {
        a->fill->chunks = NULL;
        a->fill->n = a->fill->bytes = 0;
      }
      if (!a->fill) a->oom = 1;
      else a->fill->next = NULL;
    }
    int rc = 0;
    if (!a->oom) {
      const Dlh__Packet *p;
      rc = dlh_reader_next(a->in, &p);
      struct call *c = &a->fill->c[a->fill->n++];
      c->p = p;
      c->rc = rc;
      c->frames = dlh_reader_frames(a->in);
      c->skipped = dlh_reader_skipped(a->in);
      c->offset = dlh_reader_offset(a->in);
    }
    pthread_mutex_lock(&a->mu);
    if (a->oom) { /* the caller goes on without the thread (what was handed over stays good) */
      a->done = 1;
    } else if (rc <= 0 || a->fill->n == BLOCK_CALLS || a->fill->bytes >= BLOCK_BYTES) {
      if (a->tail) a->tail->next = a->fill;
      else a->head = a->fill;
      a->tail = a->fill;
      a->queued += a->fill->bytes + sizeof *a->fill;
      a->fill = NULL;
      if (rc <= 0) a->done = 1;
      pthread_cond_broadcast(&a->cv);
      while (!a->stop && !a->done && a->queued >= a->cap) pthread_cond_wait(&a->cv, &a->mu);
    }
    int end = a->done || a->stop;
    pthread_mutex_unlock(&a->mu);
    if (end) break;
  }
  return NULL;
}

/* Stops the thread and frees what it read ahead. */
static void stop_thread(struct dlh_ahead *a) {
  if (!a->started) return;
  pthread_mutex_lock(&a->mu);
  a->stop = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  pthread_join(a->th, NULL);
  a->started = 0;
  free_block(a->fill);
  a->fill = NULL;
  free_blocks(a->head);
  free_blocks(a->spare);
  a->head = a->tail = a->spare = NULL;
  a->queued = 0;
}

/* From now on an ordinary reader: the file opened again and called as often as the caller has
 * called, with the cases of then. Returns 0, or -1 (a->err says why). */
static int go_serial(struct dlh_ahead *a) {
  stop_thread(a);
  free_block(a->cur);
  a->cur = NULL;
  char *err = NULL;
  dlh_reader *s = dlh_reader_open(a->path, &err);
  if (s) dlh_reader_skip(s, a->skip);
  for (uint64_t i = 0; s && i < a->calls; i++) {
    const Dlh__Packet *p;
    int rc = dlh_reader_next(s, &p);
    if (rc != (i + 1 < a->calls || a->last.rc == 1 ? 1 : a->last.rc)) { /* the file changed */
      dlh_reader_close(s);
      s = NULL;
      err = strdup("the file changed while it was read");
    }
  }
  if (!s) {
    free(a->err);
    a->err = err ? err : strdup("out of memory");
    a->last.rc = -1;
    return -1;
  }
  free(err);
  dlh_reader_skip(s, a->want);
  a->serial = s;
  return 0;
}

static int dlh_ahead_next(struct dlh_ahead *a, const Dlh__Packet **out) {
  if (a->serial) return dlh_reader_next(a->serial, out);
  if (a->err) return -1;
  if (a->want != a->skip) return go_serial(a) < 0 ? -1 : dlh_reader_next(a->serial, out);
  if (a->last.rc <= 0) return a->last.rc; /* the end, again */
  while (!a->cur || a->pos == a->cur->n) {
    pthread_mutex_lock(&a->mu);
    recycle(a, a->cur);
    a->cur = NULL;
    while (!a->head && !a->done) pthread_cond_wait(&a->cv, &a->mu);
    struct block *b = a->head;
    if (b) {
      a->head = b->next;
      if (!a->head) a->tail = NULL;
      a->queued -= b->bytes + sizeof *b;
      pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    if (!b) { /* the thread ran out of memory */
      return go_serial(a) < 0 ? -1 : dlh_reader_next(a->serial, out);
    }
    a->cur = b;
    a->pos = 0;
  }
  a->last = a->cur->c[a->pos++];
  a->calls++;
  if (out) *out = a->last.p;
  if (a->last.rc <= 0) { /* the end: the thread has stopped, its blocks are not needed */
    free_block(a->cur);
    a->cur = NULL;
    free_blocks(a->spare);
    a->spare = NULL;
  }
  return a->last.rc;
}

static void dlh_ahead_skip(struct dlh_ahead *a, uint64_t cases) {
  if (a->serial) dlh_reader_skip(a->serial, cases);
  else a->want = cases;
}

static const char *dlh_ahead_error(struct dlh_ahead *a) {
  if (a->serial) return dlh_reader_error(a->serial);
  if (a->err) return a->err;
  /* the thread has stopped after its last call (its block was taken under the lock) */
  return a->last.rc < 0 ? dlh_reader_error(a->in) : NULL;
}

static uint64_t dlh_ahead_count(struct dlh_ahead *a, int what) {
  if (a->serial)
    return what == 0 ? dlh_reader_frames(a->serial) : what == 1 ? dlh_reader_skipped(a->serial)
                                                                : dlh_reader_offset(a->serial);
  return what == 0 ? a->last.frames : what == 1 ? a->last.skipped : a->last.offset;
}

static void dlh_ahead_close(struct dlh_ahead *a) {
  stop_thread(a);
  free_block(a->cur);
  dlh_reader_close(a->in);
  dlh_reader_close(a->serial);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  free(a->path);
  free(a->err);
  free(a);
}

static const struct dlh_reader_ops ops = {dlh_ahead_next, dlh_ahead_skip, dlh_ahead_error,
                                          dlh_ahead_count, dlh_ahead_close};

dlh_reader *dlh_reader_open_ahead(const char *path, uint64_t skip, size_t ahead_bytes, char **err) {
  dlh_reader *in = dlh_reader_open(path, err);
  if (!in) return NULL;
  struct dlh_ahead *a = calloc(1, sizeof *a);
  dlh_reader *r = a ? dlh_reader_shell(a, &ops) : NULL;
  if (a) a->path = strdup(path);
  if (!r || !a->path) {
    if (a) free(a->path);
    free(a);
    free(r);
    dlh_reader_close(in);
    if (err) *err = strdup("out of memory");
    return NULL;
  }
  a->in = in;
  a->skip = a->want = skip;
  a->cap = ahead_bytes;
  a->last.rc = 1;
  a->last.offset = dlh_reader_offset(in);
  dlh_reader_skip(in, skip);
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  dlh_reader_keep(in, keep_alloc, a);
  /* the thread takes no signal: the command's handlers run where they always have */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  a->started = pthread_create(&a->th, NULL, thread_main, a) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!a->started) { /* no thread: the reader is an ordinary one */
    dlh_reader_keep(in, NULL, NULL);
    a->serial = in;
    a->in = NULL;
  }
  return r;
}
