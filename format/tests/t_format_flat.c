/* The packets the reader decodes itself (format/flat.c: column batches, stack and other
 * definitions, NCCL's profiler events) must read back exactly as protobuf-c decodes them, in the
 * writer's form (random messages of every oneof member of Packet, every field, strings of any
 * length up to the limit, negative and 10-byte values) and in any other (unknown fields, other
 * wire types, fields repeated, unpacked repeated fields, varints too long or over 64 bits,
 * lengths past the end, strings and lists over the limits, random bytes changed), through the
 * plain reader and the read-ahead one. */
#include <zstd.h>

#include "ftest.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static char *rnd_string(void) {
  size_t n = rnd() % 4 == 0 ? 0 : rnd() % 40;
  if (rnd() % 200 == 0) n = DLH_MAX_STRING; /* at the limit */
  char *s = malloc(n + 1);
  REQUIRE(s);
  for (size_t i = 0; i < n; i++) s[i] = (char)('a' + rnd() % 26);
  s[n] = 0;
  return s;
}

/* A random value of a scalar field: small, large, or all bits. */
static uint64_t rnd_value(void) {
  switch (rnd() % 4) {
  case 0: return rnd() % 8;
  case 1: return rnd() % 100000;
  case 2: return rnd();
  default: return ~0ull;
  }
}

/* A packet of n random events, packed (malloc'd, *len). */
static uint8_t *random_batch(size_t n, size_t *len) {
  Dlh__NcclEvent *ev = calloc(n ? n : 1, sizeof *ev);
  Dlh__NcclEvent **evp = calloc(n ? n : 1, sizeof *evp);
  REQUIRE(ev && evp);
  const ProtobufCMessageDescriptor *d = &dlh__nccl_event__descriptor;
  for (size_t i = 0; i < n; i++) {
    dlh__nccl_event__init(&ev[i]);
    evp[i] = &ev[i];
    char *m = (char *)&ev[i];
    for (unsigned f = 0; f < d->n_fields; f++) {
      const ProtobufCFieldDescriptor *fd = &d->fields[f];
      if (rnd() % 3 == 0) continue; /* absent */
      if (fd->type == PROTOBUF_C_TYPE_STRING) {
        *(char **)(m + fd->offset) = rnd_string();
        continue;
      }
      *(protobuf_c_boolean *)(m + fd->quantifier_offset) = 1;
      uint64_t v = rnd_value();
      if (fd->type == PROTOBUF_C_TYPE_UINT64) *(uint64_t *)(m + fd->offset) = v;
      else if (fd->type == PROTOBUF_C_TYPE_BOOL) *(protobuf_c_boolean *)(m + fd->offset) = (int)(v & 1);
      else if (fd->type == PROTOBUF_C_TYPE_INT32) *(int32_t *)(m + fd->offset) = (int32_t)v;
      else *(uint32_t *)(m + fd->offset) = (uint32_t)v;
    }
  }
  Dlh__NcclEventBatch b = DLH__NCCL_EVENT_BATCH__INIT;
  b.n_events = n;
  b.events = evp;
  Dlh__Packet p = DLH__PACKET__INIT;
  p.data_case = DLH__PACKET__DATA_NCCL_EVENTS;
  p.nccl_events = &b;
  *len = dlh__packet__get_packed_size(&p);
  uint8_t *out = malloc(*len + 1);
  REQUIRE(out);
  dlh__packet__pack(&p, out);
  for (size_t i = 0; i < n; i++)
    for (unsigned f = 0; f < d->n_fields; f++)
      if (d->fields[f].type == PROTOBUF_C_TYPE_STRING)
        free(*(char **)((char *)&ev[i] + d->fields[f].offset));
  free(ev);
  free(evp);
  return out;
}

static int varint_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_UINT32 || t == PROTOBUF_C_TYPE_INT32 || t == PROTOBUF_C_TYPE_ENUM ||
         t == PROTOBUF_C_TYPE_SINT32 || t == PROTOBUF_C_TYPE_UINT64 || t == PROTOBUF_C_TYPE_INT64 ||
         t == PROTOBUF_C_TYPE_SINT64 || t == PROTOBUF_C_TYPE_BOOL;
}

static void put_value(void *at, ProtobufCType t, uint64_t v) {
  if (t == PROTOBUF_C_TYPE_UINT64 || t == PROTOBUF_C_TYPE_INT64 || t == PROTOBUF_C_TYPE_SINT64)
    memcpy(at, &v, 8);
  else if (t == PROTOBUF_C_TYPE_BOOL)
    *(protobuf_c_boolean *)at = (int)(v & 1);
  else
    *(uint32_t *)at = (uint32_t)v;
}

/* A packet of a random message of Packet's member `id` (malloc'd, *len), every field present or
 * not at random; NULL when the member's message has fields of other kinds (nested messages,
 * bytes: not decoded by flat.c). API batches hold no args as deltas (the reader turns them into
 * args, which protobuf-c does not). */
static uint8_t *random_member(uint32_t id, size_t *len) {
  const ProtobufCFieldDescriptor *pf =
      protobuf_c_message_descriptor_get_field(&dlh__packet__descriptor, id);
  if (!pf || pf->type != PROTOBUF_C_TYPE_MESSAGE) return NULL;
  const ProtobufCMessageDescriptor *d = pf->descriptor;
  for (unsigned f = 0; f < d->n_fields; f++) {
    const ProtobufCFieldDescriptor *fd = &d->fields[f];
    int ok = (fd->label == PROTOBUF_C_LABEL_OPTIONAL &&
              (varint_type(fd->type) || fd->type == PROTOBUF_C_TYPE_STRING)) ||
             (fd->label == PROTOBUF_C_LABEL_REPEATED && varint_type(fd->type));
    if (!ok) return NULL;
  }
  char *m = calloc(1, d->sizeof_message);
  REQUIRE(m);
  d->message_init((ProtobufCMessage *)m);
  for (unsigned f = 0; f < d->n_fields; f++) {
    const ProtobufCFieldDescriptor *fd = &d->fields[f];
    if (rnd() % 3 == 0 || !strcmp(fd->name, "args_delta")) continue; /* absent */
    if (fd->type == PROTOBUF_C_TYPE_STRING) {
      *(char **)(m + fd->offset) = rnd_string();
    } else if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = 1 + rnd() % (rnd() % 8 == 0 ? 300 : 12);
      size_t es = fd->type == PROTOBUF_C_TYPE_UINT64 || fd->type == PROTOBUF_C_TYPE_INT64 ||
                  fd->type == PROTOBUF_C_TYPE_SINT64 ? 8 : 4;
      char *v = calloc(n, es);
      REQUIRE(v);
      for (size_t i = 0; i < n; i++) put_value(v + i * es, fd->type, rnd_value());
      *(void **)(m + fd->offset) = v;
      *(size_t *)(m + fd->quantifier_offset) = n;
    } else {
      *(protobuf_c_boolean *)(m + fd->quantifier_offset) = 1;
      put_value(m + fd->offset, fd->type, rnd_value());
    }
  }
  Dlh__Packet p = DLH__PACKET__INIT;
  *(uint32_t *)((char *)&p + pf->quantifier_offset) = id;
  *(void **)((char *)&p + pf->offset) = m;
  *len = dlh__packet__get_packed_size(&p);
  uint8_t *out = malloc(*len + 1);
  REQUIRE(out);
  dlh__packet__pack(&p, out);
  protobuf_c_message_free_unpacked((ProtobufCMessage *)m, NULL);
  return out;
}

/* pkt with a few random bytes changed, or cut short (a copy in buf). */
static size_t mutate(const uint8_t *pkt, size_t len, uint8_t *buf) {
  memcpy(buf, pkt, len);
  int k = 1 + (int)(rnd() % 3);
  for (int i = 0; i < k && len > 2; i++) {
    size_t at = 2 + rnd() % (len - 2); /* past the packet's tag and length */
    switch (rnd() % 4) {
    case 0: buf[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
    case 1: buf[at] = (uint8_t)rnd(); break;
    case 2: buf[at] = 0x80; break;
    default: len = at; break;
    }
  }
  return len;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* A packet whose NcclEventBatch holds one event of the given raw bytes. */
static uint8_t *raw_event(const uint8_t *ev, size_t evlen, size_t *len) {
  uint8_t *out = malloc(evlen + 32);
  REQUIRE(out);
  uint8_t batch[16];
  size_t bl = 0;
  batch[bl++] = 0x0a; /* events, length-delimited */
  bl += put_varint(batch + bl, evlen);
  size_t n = put_varint(out, (uint64_t)DLH__PACKET__DATA_NCCL_EVENTS << 3 | 2);
  n += put_varint(out + n, bl + evlen);
  memcpy(out + n, batch, bl);
  memcpy(out + n + bl, ev, evlen);
  *len = n + bl + evlen;
  return out;
}

/* The packet as protobuf-c packs it again after decoding (malloc'd), or NULL: undecodable. */
static uint8_t *repack(const Dlh__Packet *p, size_t *len) {
  *len = dlh__packet__get_packed_size(p);
  uint8_t *out = malloc(*len + 1);
  REQUIRE(out);
  dlh__packet__pack(p, out);
  return out;
}

/* The reader's limits (reader.c, over_limit) on strings and lists of a message, as it walks them */
static int strings_over(const ProtobufCMessage *m, int depth) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *fd = &d->fields[i];
    if (fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *base = (const char *)m;
    size_t n = 1;
    void *const *v = (void *const *)(base + fd->offset);
    if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
      n = *(const size_t *)(base + fd->quantifier_offset);
      v = *(void *const *const *)(base + fd->offset);
      if (n > DLH_MAX_LIST) return 1;
    } else if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
               *(const uint32_t *)(base + fd->quantifier_offset) != fd->id) {
      continue;
    }
    for (size_t k = 0; k < n; k++) {
      if (!v[k]) continue;
      if (fd->type == PROTOBUF_C_TYPE_STRING) {
        if (strnlen(v[k], DLH_MAX_STRING + 1) > DLH_MAX_STRING) return 1;
      } else if (depth < 4 && strings_over(v[k], depth + 1)) {
        return 1;
      }
    }
  }
  return 0;
}

static int over_limit(const Dlh__Packet *p) {
  switch (p->data_case) {
  case DLH__PACKET__DATA_STACK:
    return p->stack->n_pc > DLH_MAX_STACK_DEPTH;
  case DLH__PACKET__DATA_API:
    return p->api->n_fn > DLH_MAX_BATCH_EVENTS ||
           p->api->n_args + p->api->n_args_delta > (size_t)DLH_MAX_BATCH_EVENTS * DLH_MAX_EVENT_ARGS;
  case DLH__PACKET__DATA_GPU:
    return p->gpu->n_kind > DLH_MAX_BATCH_EVENTS ||
           p->gpu->n_vals > (size_t)DLH_MAX_BATCH_EVENTS * DLH_MAX_GPU_VALS;
  case DLH__PACKET__DATA_SAMPLES:
    return 0;
  default:
    return strings_over(&p->base, 0);
  }
}

/* What protobuf-c makes of the packet: 0 undecodable, 1 within the limits, 2 over a limit;
 * its data case in *dcase, 0 when the reader changes what it holds (API args as deltas). */
static int reference(const uint8_t *pkt, size_t len, uint8_t **bytes, size_t *blen, int *dcase) {
  *bytes = NULL;
  *dcase = 0;
  Dlh__Packet *p = dlh__packet__unpack(NULL, len, pkt);
  if (!p) return 0;
  int over = over_limit(p);
  *dcase = p->data_case == DLH__PACKET__DATA_API && p->api->n_args_delta ? 0 : (int)p->data_case;
  *bytes = repack(p, blen);
  dlh__packet__free_unpacked(p, NULL);
  return over ? 2 : 1;
}

/* A trace of a thread packet, the packet under test, and a thread packet again. */
static char *write_trace(const uint8_t *pkt, size_t len) {
  Dlh__ThreadInfo ti = DLH__THREAD_INFO__INIT;
  ti.has_tid = 1;
  ti.tid = 42;
  Dlh__Packet tp = DLH__PACKET__INIT;
  tp.data_case = DLH__PACKET__DATA_THREAD;
  tp.thread = &ti;
  size_t tl = dlh__packet__get_packed_size(&tp);
  uint8_t *raw = malloc(2 * (tl + 10) + len + 10);
  REQUIRE(raw);
  size_t n = 0;
  n += put_varint(raw + n, tl);
  n += dlh__packet__pack(&tp, raw + n);
  n += put_varint(raw + n, len);
  memcpy(raw + n, pkt, len);
  n += len;
  n += put_varint(raw + n, tl);
  n += dlh__packet__pack(&tp, raw + n);
  size_t cap = ZSTD_compressBound(n);
  uint8_t *z = malloc(cap);
  REQUIRE(z);
  size_t zl = ZSTD_compress(z, cap, raw, n, 1);
  REQUIRE(!ZSTD_isError(zl));
  char *path = ft_path("nccl.dlh");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(dlh_enc_write_header(fd) == 0);
  REQUIRE(write(fd, z, zl) == (ssize_t)zl);
  close(fd);
  free(raw);
  free(z);
  return path;
}

static size_t cases[3];

/* The packet read by dlhook's reader (plain, then ahead) agrees with protobuf-c. */
static void check(const char *what, const uint8_t *pkt, size_t len) {
  uint8_t *ref;
  size_t rlen = 0;
  int dcase, kind = reference(pkt, len, &ref, &rlen, &dcase);
  cases[kind]++;
  char *path = write_trace(pkt, len);
  for (int ahead = 0; ahead < 2; ahead++) {
    char *err = NULL;
    dlh_reader *r = ahead ? dlh_reader_open_ahead(path, 0, 1 << 20, &err) : dlh_reader_open(path, &err);
    REQUIRE(r);
    const Dlh__Packet *p;
    CHECK(dlh_reader_next(r, &p) == 1 && p->data_case == DLH__PACKET__DATA_THREAD);
    int rc = dlh_reader_next(r, &p);
    if (kind == 0) {
      if (rc != -1) fprintf(stderr, "%s (ahead %d): read %d, protobuf-c cannot\n", what, ahead, rc);
      CHECK(rc == -1);
    } else if (kind == 2) {
      CHECK(rc == 1 && p->data_case == DLH__PACKET__DATA_THREAD); /* skipped */
      CHECK(dlh_reader_skipped(r) == 1);
    } else {
      if (rc != 1) fprintf(stderr, "%s (ahead %d): not read (%d), protobuf-c can\n", what, ahead, rc);
      CHECK(rc == 1);
      if (rc == 1 && dcase) {
        CHECK((int)p->data_case == dcase);
        size_t gl;
        uint8_t *got = repack(p, &gl);
        if (gl != rlen || memcmp(got, ref, gl) != 0)
          fprintf(stderr, "%s (ahead %d): decoded differently from protobuf-c\n", what, ahead);
        CHECK(gl == rlen && memcmp(got, ref, gl) == 0);
        free(got);
      }
      CHECK(dlh_reader_next(r, &p) == 1 && p->data_case == DLH__PACKET__DATA_THREAD);
      CHECK(dlh_reader_next(r, &p) == 0);
    }
    dlh_reader_close(r);
    free(err);
  }
  unlink(path);
  free(path);
  free(ref);
}

static void check_raw(const char *what, const uint8_t *ev, size_t evlen) {
  size_t len;
  uint8_t *pkt = raw_event(ev, evlen, &len);
  check(what, pkt, len);
  free(pkt);
}

int main(void) {
  /* the writer's form: batches of 1 to 600 random events, and empty ones */
  for (int k = 0; k < 300; k++) {
    size_t n = k % 50 == 0 ? 0 : 1 + rnd() % (k % 10 == 0 ? 600 : 20), len;
    uint8_t *pkt = random_batch(n, &len);
    char what[64];
    snprintf(what, sizeof what, "random batch %d (%zu events)", k, n);
    check(what, pkt, len);
    uint8_t *buf = malloc(len + 1);
    REQUIRE(buf);
    for (int j = 0; j < 4; j++) check("changed batch", buf, mutate(pkt, len, buf));
    free(buf);
    /* every prefix of a small one: cut inside a tag, a varint, a string */
    if (k < 40 && len < 400)
      for (size_t cut = 1; cut < len; cut++) check("cut batch", pkt, cut);
    free(pkt);
  }
  /* every member of Packet's oneof flat.c may take, with random bytes changed too */
  size_t members = 0;
  for (uint32_t id = 1; id < 64; id++) {
    for (int k = 0; k < 60; k++) {
      size_t len;
      uint8_t *pkt = random_member(id, &len);
      if (!pkt) break;
      members += k == 0;
      char what[64];
      snprintf(what, sizeof what, "member %u, random %d", id, k);
      check(what, pkt, len);
      uint8_t *buf = malloc(len + 1);
      REQUIRE(buf);
      for (int j = 0; j < 8; j++) {
        snprintf(what, sizeof what, "member %u, random %d, changed %d", id, k, j);
        check(what, buf, mutate(pkt, len, buf));
      }
      free(buf);
      free(pkt);
    }
  }
  printf("%zu members of Packet's oneof of scalars, strings and packed columns\n", members);
  CHECK(members >= 8);

  /* over DLH_MAX_LIST events */
  size_t len;
  uint8_t *big = random_batch(DLH_MAX_LIST + 1, &len);
  check("a list over the limit", big, len);
  free(big);

  /* other forms, one event each */
  const uint8_t unknown_field[] = {0x08, 0x01, 0xf8, 0x06, 0x05}; /* phase 1, field 111 = 5 */
  check_raw("unknown field", unknown_field, sizeof unknown_field);
  const uint8_t unknown_len[] = {0x08, 0x02, 0xfa, 0x06, 0x02, 'h', 'i'}; /* field 111, bytes */
  check_raw("unknown length-delimited field", unknown_len, sizeof unknown_len);
  const uint8_t wrong_wire[] = {0x0a, 0x01, 0x05}; /* phase as bytes */
  check_raw("scalar as bytes", wrong_wire, sizeof wrong_wire);
  const uint8_t str_varint[] = {0x50, 0x07}; /* func (10) as a varint */
  check_raw("string as varint", str_varint, sizeof str_varint);
  const uint8_t fixed64[] = {0x19, 1, 2, 3, 4, 5, 6, 7, 8}; /* id (3) as fixed64 */
  check_raw("fixed64 wire type", fixed64, sizeof fixed64);
  const uint8_t dup_scalar[] = {0x18, 0x05, 0x18, 0x09}; /* id 5, then id 9 */
  check_raw("scalar twice", dup_scalar, sizeof dup_scalar);
  const uint8_t dup_string[] = {0x52, 0x02, 'a', 'b', 0x52, 0x01, 'c'}; /* func twice */
  check_raw("string twice", dup_string, sizeof dup_string);
  const uint8_t neg_rank[] = {0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  check_raw("rank -1 (10-byte varint)", neg_rank, sizeof neg_rank);
  const uint8_t long_varint[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  check_raw("varint of 11 bytes", long_varint, sizeof long_varint);
  const uint8_t big_u32[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0x7f}; /* type: 35 bits */
  check_raw("uint32 over 32 bits", big_u32, sizeof big_u32);
  const uint8_t bool2[] = {0xa8, 0x01, 0x80, 0x02}; /* is_send = 256 */
  check_raw("bool of 256", bool2, sizeof bool2);
  const uint8_t past_end[] = {0x52, 0x09, 'a'}; /* func's length past the event */
  check_raw("string past the end", past_end, sizeof past_end);
  const uint8_t nul_in[] = {0x52, 0x03, 'a', 0, 'b'}; /* func with a NUL inside */
  check_raw("string with a NUL", nul_in, sizeof nul_in);
  const uint8_t field0[] = {0x00, 0x01};
  check_raw("field 0", field0, sizeof field0);
  const uint8_t group[] = {0x0b, 0x0c}; /* start/end group */
  check_raw("group wire type", group, sizeof group);
  /* a string over DLH_MAX_STRING */
  size_t sl = DLH_MAX_STRING + 1;
  uint8_t *longs = malloc(sl + 8);
  REQUIRE(longs);
  size_t h = 0;
  longs[h++] = 0x52;
  h += put_varint(longs + h, sl);
  memset(longs + h, 'x', sl);
  check_raw("a string over the limit", longs, h + sl);
  free(longs);
  /* stack definitions (id 1, pc 2 packed, truncated 3) in other forms */
  static const struct { const char *what; uint8_t len; uint8_t b[16]; } stacks[] = {
      {"stack", 6, {0x08, 0x05, 0x12, 0x02, 0x01, 0x02}},
      {"pc unpacked", 4, {0x08, 0x05, 0x10, 0x07}},
      {"pc twice", 6, {0x12, 0x01, 0x01, 0x12, 0x01, 0x02}},
      {"pc empty", 2, {0x12, 0x00}},
      {"pc of 10 bytes, over 64 bits", 12, {0x12, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
      {"pc of 10 bytes", 12, {0x12, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {"pc of 11 bytes", 13, {0x12, 0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {"pc's last varint cut", 3, {0x12, 0x01, 0x81}},
      {"pc's length past the end", 3, {0x12, 0x02, 0x81}},
      {"id of 10 bytes", 11, {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {"truncated twice", 4, {0x18, 0x01, 0x18, 0x00}},
  };
  for (size_t k = 0; k < sizeof stacks / sizeof stacks[0]; k++) {
    uint8_t pkt[32];
    size_t n = put_varint(pkt, (uint64_t)DLH__PACKET__DATA_STACK << 3 | 2);
    n += put_varint(pkt + n, stacks[k].len);
    memcpy(pkt + n, stacks[k].b, stacks[k].len);
    check(stacks[k].what, pkt, n + stacks[k].len);
  }
  /* a batch with another field beside its events */
  uint8_t odd[] = {0xe2, 0x01, 0x06, 0x0a, 0x02, 0x08, 0x01, 0x10, 0x07};
  check("batch with a field of its own", odd, sizeof odd);

  printf("%zu packets: %zu decoded, %zu over a limit, %zu undecodable\n",
         cases[0] + cases[1] + cases[2], cases[1], cases[2], cases[0]);
  CHECK(cases[0] > 100 && cases[1] > 1000 && cases[2] >= 2);
  return ft_done("t_format_flat");
}
