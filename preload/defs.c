/* defs.c — what a trace defines once and refers to by id: the strings (StringDef: kernel
 * names, NVTX messages and domains) and the functions (FunctionDesc, written before the first
 * event that uses them). Writer thread only: the writer and the converters it calls (CUPTI,
 * NVTX) use them; a new trace (fork child, dlhook attach) starts them over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlh_format.h"
#include "dlh_internal.h"

/* ---------------------------------------------------------------- strings */

typedef struct { char *s; uint32_t id; } name_slot;
static name_slot *names;
static size_t names_cap, names_n;
static uint32_t next_string_id = 1;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

uint32_t dlh_intern(struct dlh_encoder *w, const char *s) {
  if (!s) return 0;
  if (names_n + 1 > names_cap / 2) {
    size_t nc = names_cap ? names_cap * 2 : 1024;
    name_slot *nn = calloc(nc, sizeof *nn);
    if (!nn) return 0;
    for (size_t i = 0; i < names_cap; i++)
      if (names[i].s) {
        size_t j = hash_str(names[i].s) & (nc - 1);
        while (nn[j].s) j = (j + 1) & (nc - 1);
        nn[j] = names[i];
      }
    free(names);
    names = nn;
    names_cap = nc;
  }
  size_t j = hash_str(s) & (names_cap - 1);
  while (names[j].s) {
    if (!strcmp(names[j].s, s)) return names[j].id;
    j = (j + 1) & (names_cap - 1);
  }
  char *copy = strdup(s);
  if (!copy) return 0;
  names[j].s = copy;
  names[j].id = next_string_id++;
  names_n++;
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__StringDef sd = DLH__STRING_DEF__INIT;
  sd.has_id = 1;
  sd.id = names[j].id;
  sd.value = copy;
  p.data_case = DLH__PACKET__DATA_STRING;
  p.string = &sd;
  dlh_enc_packet(w, &p);
  return names[j].id;
}

size_t dlh_defs_strings_put(struct dlh_encoder *w) {
  size_t n = 0;
  for (size_t i = 0; i < names_cap; i++) {
    if (!names[i].s) continue;
    Dlh__Packet p = DLH__PACKET__INIT;
    Dlh__StringDef sd = DLH__STRING_DEF__INIT;
    sd.has_id = 1;
    sd.id = names[i].id;
    sd.value = names[i].s;
    p.data_case = DLH__PACKET__DATA_STRING;
    p.string = &sd;
    if (dlh_enc_packet(w, &p) == 0) n++;
  }
  return n;
}

/* ---------------------------------------------------------------- functions */

#define FN_BITS (16u << 16)       /* fn ids: 4 bits of domain, 16 of index */
static uint8_t *fn_seen;          /* bitmap over fn ids: FunctionDesc written */

/* A function id carries its domain as dlh_hook.h numbers it, and FunctionDesc.domain is written
 * as that number: the two lists must agree. */
#define DLH_SAME_DOMAIN(x)                                                                     \
  _Static_assert((int)DLH_DOMAIN_##x == (int)DLH__DOMAIN__DOMAIN_##x,                          \
                 "DLH_DOMAIN_" #x " (dlh_hook.h) differs from dlh.Domain (dlhook.proto)")
DLH_SAME_DOMAIN(CUDART);
DLH_SAME_DOMAIN(DRIVER);
DLH_SAME_DOMAIN(CUBLAS);
DLH_SAME_DOMAIN(CUBLASLT);
DLH_SAME_DOMAIN(CUDNN);
DLH_SAME_DOMAIN(NCCL);
DLH_SAME_DOMAIN(NVTX);
DLH_SAME_DOMAIN(DLHOOK);
#undef DLH_SAME_DOMAIN

static void write_function(dlh_encoder *w, uint32_t id) {
  int domain = (int)(id >> 16);
  const dlh_fn_desc *d = dlh_fn_lookup(id, NULL);
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__FunctionDesc f = DLH__FUNCTION_DESC__INIT;
  Dlh__ArgDesc ad[DLH_MAX_ARGS], *adp[DLH_MAX_ARGS];
  char unknown[32];
  f.has_id = f.has_domain = 1;
  f.id = id;
  f.domain = (Dlh__Domain)domain;
  if (d) {
    f.name = (char *)d->name;
    f.n_args = d->nargs > DLH_MAX_ARGS ? DLH_MAX_ARGS : d->nargs;
    for (size_t i = 0; i < f.n_args; i++) {
      dlh__arg_desc__init(&ad[i]);
      ad[i].name = (char *)d->argnames[i];
      ad[i].has_type = 1;
      ad[i].type = d->argtypes[i];
      adp[i] = &ad[i];
    }
    f.args = adp;
  } else if (dlh_fn_name(id)) {
    f.name = (char *)dlh_fn_name(id);
  } else {
    snprintf(unknown, sizeof unknown, "fn#%u", id);
    f.name = unknown;
  }
  p.data_case = DLH__PACKET__DATA_FUNCTION;
  p.function = &f;
  dlh_enc_packet(w, &p);
}

void dlh_def_fn(struct dlh_encoder *w, uint32_t fn) {
  uint32_t bit = ((fn >> 16) & 0xf) << 16 | (fn & 0xffff);
  if (!fn_seen || !(fn_seen[bit >> 3] & (1u << (bit & 7)))) {
    if (fn_seen) fn_seen[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    write_function(w, fn);
  }
}

/* ---------------------------------------------------------------- per trace */

int dlh_defs_start(void) {
  if (!fn_seen) fn_seen = calloc(1, FN_BITS / 8);
  return fn_seen ? 0 : -1;
}

uint64_t dlh_defs_mem(void) { return FN_BITS / 8 + names_cap * sizeof *names; }

void dlh_defs_new_trace(void) {
  for (size_t i = 0; i < names_cap; i++) free(names[i].s);
  free(names);
  names = NULL;
  names_cap = names_n = 0;
  next_string_id = 1;
  if (fn_seen) memset(fn_seen, 0, FN_BITS / 8);
}

/* fork child: the parent's tables are left alone (a copy, never freed twice) */
void dlh_defs_after_fork_child(void) {
  names = NULL;
  names_cap = names_n = 0;
  next_string_id = 1;
  if (fn_seen) memset(fn_seen, 0, FN_BITS / 8);
}
