/* flame.h — the flame-graph tree of the exporters (flame_tree.c) and its writers, one file per
 * format: folded (flame_folded.c), SVG (flame_svg.c), speedscope (flame_speedscope.c), pprof
 * (flame_pprof.c). `dlhook export` and `dlhook diff` reach them through ex_flame and
 * ex_flame_diff (flame.c). */
#ifndef DLH_FLAME_H
#define DLH_FLAME_H

#include <stdint.h>
#include <stdio.h>

#include "export.h"

typedef struct node {
  uint32_t parent, frame, child, sibling; /* child/sibling: index, 0 = none (0 is the root) */
  uint32_t depth;
  uint64_t self[2], total[2], count[2];
} node;

typedef struct flame {
  const rd_opts *o;
  int side;           /* 0 or 1 (diff: before, after) */
  /* frames: interned names */
  char **names;
  size_t nnames, capnames;
  rd_u64map name_ix;     /* hash of name -> chain head; collisions resolved by name_next */
  uint32_t *name_next;
  /* tree; node 0 is the root */
  node *nodes;
  size_t nnodes, capnodes;
  rd_u64map child_ix;    /* parent << 32 | frame -> node */
  /* per trace */
  rd_u64map leaf_ix;     /* stack << 32 | fn -> node of the call */
  rd_u64map samp_ix;     /* stack -> node of a host sample's frames */
  rd_u64map corr;        /* correlation id -> node of the launching call */
  uint64_t *corr_ring;
  size_t corr_pos;
  /* GPU records whose launch was not seen yet */
  struct pend { uint64_t corr, w; uint32_t frame, next; } *pend; /* next: same corr */
  size_t npend, cappend, nresolved;
  int pass2;          /* second pass: only resolving pending records */
  rd_u64map pend_ix;  /* corr -> most recent pending index */
  rd_u64map ext;      /* CUPTI correlation id -> slot in ext_ring (library call not seen yet) */
  struct extc { uint64_t corr, ext; } *ext_ring; /* the last CORR_LIMIT such ids */
  size_t next;
  uint32_t unknown_frame, nolaunch_frame;
  /* FLAME_MAX_NODES: past it, a new path goes no deeper than its known part, then one
   * "[flame graph node limit]" frame (limit_frame) takes its weight; limited says so once */
  uint32_t limit_frame;
  int limited;
} flame;

/* Nodes of a flame graph (~100 bytes each with their index) before new paths are cut short:
 * 20,000 stacks of 256 frames in distinct modules would make 5 M nodes and 600 MiB; the
 * graphs of real programs have tens of thousands. */
#define FLAME_MAX_NODES (1u << 19)

/* Starts an empty tree for the options o (weight, window). */
void flame_init(flame *f, const rd_opts *o);
/* Adds the events of one trace, on side f->side; RD_OK, or RD_BAD_INPUT (printed). */
int flame_read(flame *f, const char *path);
/* The same as pieces, for a reader that feeds the tree from its own pass (dlhook report): the
 * sink of the tree, and flame_trace_end(f, t, rc) after each trace's pass (rc: the pass's
 * result); returns RD_OK or RD_BAD_INPUT. */
rd_sink flame_sink(flame *f);
int flame_trace_end(flame *f, rd_trace *t, int rc);
void flame_free(flame *f);
/* Inclusive totals of every node (after the last flame_read). */
void flame_totals(flame *f);
/* The children of node n sorted by name (malloc'd, *cnt of them). */
uint32_t *flame_children(const flame *f, uint32_t n, size_t *cnt);

/* Visits the tree from `root` in pre-order, each node's children sorted by name, with an explicit
 * stack: the depth of the tree comes from the traces, so no recursion. visit() returns 0 to
 * leave out the node's subtree; kids(), when given, sees each visited node's sorted children. */
typedef struct walker {
  int (*visit)(void *ctx, uint32_t n);
  void (*kids)(void *ctx, uint32_t n, const uint32_t *c, size_t k);
  void *ctx;
} walker;
void flame_walk(const flame *f, uint32_t root, const walker *w);
/* Writes "a;b;c" (the path of n) to out. */
void flame_path(const flame *f, uint32_t n, FILE *out);

/* The writers: diff = 1 for a differential graph of sides 0 and 1. */
void flame_write_folded(const flame *f, FILE *out, int diff);
void flame_write_svg(const flame *f, FILE *out, int diff, const char *title);
void flame_write_speedscope(const flame *f, FILE *out, const char *title);
/* pprof writes its own file (gzip'd protobuf): RD_OK or RD_BAD_INPUT. */
int flame_write_pprof(const flame *f, const char *path, const char *title);

#endif
