/* flat.c — the packets the reader decodes itself instead of through protobuf-c.
 *
 * protobuf-c's generic unpack costs more than all that follows it for the packets a trace is made
 * of: batches of columns (ApiBatch, GpuBatch, SampleBatch: packed varints, one function call
 * per value), stack definitions (packed pcs) and NCCL's profiler events (NcclEventBatch:
 * hundreds of small messages per packet, 18 k per rank of the bundled example). These are
 * decoded here, through the same descriptors into the same structures and with the same
 * allocator, so that everything after the reader, freeing included, cannot tell the two apart.
 *
 * Only the form our writer writes is taken: the packet is one field of its oneof; its message
 * has only optional scalars (varint types), strings and packed repeated scalars, each string
 * and repeated field at most once, strings within DLH_MAX_STRING, varints of at most 10 bytes
 * that fit 64 bits; an NcclEventBatch at most DLH_MAX_LIST events of that form. Anything else
 * (an unknown field, another wire type, an unpacked repeated field, a malformed varint, a
 * message of other field types) is dropped half-way and decoded by protobuf-c, which decodes or
 * rejects it as before: the result is the same either way (format/tests/t_format_flat.c holds
 * the two against each other). */
#include <pthread.h>
#include <string.h>

#include "dlh_format.h"
#include "dlh_format_int.h"

#define FLAT_IDS 64u               /* field numbers below this */
#define FLAT_TAGS (FLAT_IDS << 3)  /* tags: field number << 3 | wire type */

typedef struct flat_desc {
  const ProtobufCMessageDescriptor *d;
  const ProtobufCFieldDescriptor *by_tag[FLAT_TAGS]; /* NULL: not taken */
} flat_desc;

/* The Packet's oneof members (by field number) whose messages this decodes, and NcclEvent. */
static flat_desc *members[FLAT_IDS];
static flat_desc nccl_event;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int varint_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_UINT32 || t == PROTOBUF_C_TYPE_INT32 || t == PROTOBUF_C_TYPE_ENUM ||
         t == PROTOBUF_C_TYPE_SINT32 || t == PROTOBUF_C_TYPE_UINT64 || t == PROTOBUF_C_TYPE_INT64 ||
         t == PROTOBUF_C_TYPE_SINT64 || t == PROTOBUF_C_TYPE_BOOL;
}

/* d's tag table; 0 when one of its fields is of a kind not taken here. */
static int describe(flat_desc *f, const ProtobufCMessageDescriptor *d) {
  memset(f, 0, sizeof *f);
  f->d = d;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *fd = &d->fields[i];
    if (fd->id >= FLAT_IDS || (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) return 0;
    if (fd->label == PROTOBUF_C_LABEL_OPTIONAL && varint_type(fd->type))
      f->by_tag[fd->id << 3] = fd;
    else if (fd->label == PROTOBUF_C_LABEL_OPTIONAL && fd->type == PROTOBUF_C_TYPE_STRING)
      f->by_tag[fd->id << 3 | 2] = fd;
    else if (fd->label == PROTOBUF_C_LABEL_REPEATED && varint_type(fd->type) &&
             (fd->flags & PROTOBUF_C_FIELD_FLAG_PACKED))
      f->by_tag[fd->id << 3 | 2] = fd;
    else
      return 0;
  }
  return 1;
}

static void init(void) {
  static flat_desc pool[FLAT_IDS];
  const ProtobufCMessageDescriptor *pd = &dlh__packet__descriptor;
  for (unsigned i = 0; i < pd->n_fields; i++) {
    const ProtobufCFieldDescriptor *fd = &pd->fields[i];
    if (fd->id >= FLAT_IDS || fd->type != PROTOBUF_C_TYPE_MESSAGE ||
        !(fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) || fd->id == DLH__PACKET__DATA_NCCL_EVENTS)
      continue;
    if (describe(&pool[fd->id], fd->descriptor)) members[fd->id] = &pool[fd->id];
  }
  if (!describe(&nccl_event, &dlh__nccl_event__descriptor)) nccl_event.d = NULL;
}

/* A varint of at most 10 bytes whose value fits 64 bits (protobuf-c takes longer ones, or drops
 * bits, in ways of its own: those go to it). */
static inline int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  const uint8_t *q = *p;
  if (q < end && *q < 0x80) { /* one byte: tags, lengths, small numbers */
    *v = *q;
    *p = q + 1;
    return 0;
  }
  uint64_t x = 0;
  for (unsigned s = 0; q < end && s < 70; s += 7) {
    uint8_t b = *q++;
    if (s == 63 && b > 1) return -1;
    x |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *v = x;
      *p = q;
      return 0;
    }
  }
  return -1;
}

static inline void store(void *at, ProtobufCType t, uint64_t v) {
  switch (t) {
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_INT64:
    *(uint64_t *)at = v;
    break;
  case PROTOBUF_C_TYPE_SINT64:
    *(int64_t *)at = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    break;
  case PROTOBUF_C_TYPE_SINT32: {
    uint32_t u = (uint32_t)v;
    *(int32_t *)at = (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
    break;
  }
  case PROTOBUF_C_TYPE_BOOL:
    *(protobuf_c_boolean *)at = v != 0;
    break;
  default: /* uint32, int32, enum: the low 32 bits */
    *(uint32_t *)at = (uint32_t)v;
    break;
  }
}

static size_t elem_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64:
    return 8;
  case PROTOBUF_C_TYPE_BOOL:
    return sizeof(protobuf_c_boolean);
  default:
    return 4;
  }
}

/* The varints ending in [p, end): bytes without the continuation bit, 8 at a time. */
static size_t count_varints(const uint8_t *p, const uint8_t *end) {
  size_t n = 0;
  for (; end - p >= 8; p += 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    n += ((~w & 0x8080808080808080ull) >> 7) * 0x0101010101010101ull >> 56;
  }
  for (; p < end; p++) n += *p < 0x80;
  return n;
}

/* One varint of a packed field, known to end before the field does (counted): 8 bytes read at
 * once where 8 are left, its 7-bit groups put together in three steps; byte by byte near the
 * end and past 8 bytes. Returns -1 when it is longer than 10 bytes or over 64 bits. */
static inline int next_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  const uint8_t *p = *pp;
  if (*p < 0x80) { /* one byte: most deltas, counts, ids */
    *v = *p;
    *pp = p + 1;
    return 0;
  }
  if (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t stops = ~w & 0x8080808080808080ull;
    if (stops) {
      unsigned bits = (unsigned)__builtin_ctzll(stops) + 1; /* through its last byte */
      uint64_t x = bits == 64 ? w : w & ((1ull << bits) - 1);
      x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
      x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
      x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
      *v = x;
      *pp = p + bits / 8;
      return 0;
    }
  }
  return get_varint(pp, end, v);
}

/* n varints from p into v as type T through CONV(x). */
#define DECODE_LOOP(T, CONV)                                                   \
  for (size_t i = 0; i < n; i++) {                                             \
    uint64_t x;                                                                \
    if (next_varint(&p, end, &x) != 0) return -1;                              \
    ((T *)v)[i] = CONV(x);                                                     \
  }

#define AS_U64(x) (x)
#define AS_U32(x) ((uint32_t)(x))
#define AS_S64(x) ((int64_t)((x) >> 1) ^ -(int64_t)((x) & 1))
#define AS_S32(x) ((int32_t)((uint32_t)(x) >> 1) ^ -(int32_t)((uint32_t)(x) & 1))
#define AS_BOOL(x) ((protobuf_c_boolean)((x) != 0))

/* A packed repeated field's values [p, end) into a new array of m. */
static int packed(ProtobufCAllocator *a, const ProtobufCFieldDescriptor *fd, const uint8_t *p,
                  const uint8_t *end, char *m) {
  size_t n = count_varints(p, end);
  if (!n || end[-1] >= 0x80) return -1; /* empty, or its last varint cut */
  char *v = a->alloc(a->allocator_data, n * elem_size(fd->type));
  if (!v) return -1;
  *(void **)(m + fd->offset) = v;
  *(size_t *)(m + fd->quantifier_offset) = n;
  switch (fd->type) {
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_INT64:
    DECODE_LOOP(uint64_t, AS_U64)
    break;
  case PROTOBUF_C_TYPE_SINT64:
    DECODE_LOOP(int64_t, AS_S64)
    break;
  case PROTOBUF_C_TYPE_SINT32:
    DECODE_LOOP(int32_t, AS_S32)
    break;
  case PROTOBUF_C_TYPE_BOOL:
    DECODE_LOOP(protobuf_c_boolean, AS_BOOL)
    break;
  default: /* uint32, int32, enum: the low 32 bits */
    DECODE_LOOP(uint32_t, AS_U32)
    break;
  }
  return p == end ? 0 : -1;
}

/* The fields [p, end) of a message m of f's type (initialized), checked and stored. */
static int fields(ProtobufCAllocator *a, const flat_desc *f, const uint8_t *p, const uint8_t *end,
                  char *m) {
  uint64_t once_seen = 0; /* strings and repeated fields: at most once each */
  while (p < end) {
    uint64_t tag, v;
    if (get_varint(&p, end, &tag) != 0 || tag >= FLAT_TAGS) return -1;
    const ProtobufCFieldDescriptor *fd = f->by_tag[tag];
    if (!fd || get_varint(&p, end, &v) != 0) return -1;
    if ((tag & 7) == 0) { /* an optional scalar: the last one counts */
      *(protobuf_c_boolean *)(m + fd->quantifier_offset) = 1;
      store(m + fd->offset, fd->type, v);
      continue;
    }
    uint64_t bit = 1ull << (tag >> 3);
    if (v > (uint64_t)(end - p) || (once_seen & bit)) return -1;
    once_seen |= bit;
    if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
      if (packed(a, fd, p, p + v, m) != 0) return -1;
    } else {
      if (v > DLH_MAX_STRING) return -1;
      char *s = a->alloc(a->allocator_data, (size_t)v + 1);
      if (!s) return -1;
      memcpy(s, p, (size_t)v);
      s[v] = 0;
      *(char **)(m + fd->offset) = s;
    }
    p += v;
  }
  return 0;
}

/* An NcclEventBatch's events [p, end) into b. */
static int nccl_events(ProtobufCAllocator *a, const uint8_t *p, const uint8_t *end,
                       Dlh__NcclEventBatch *b) {
  size_t n = 0;
  for (const uint8_t *q = p; q < end;) { /* counted first: the array is allocated once */
    uint64_t tag, len;
    if (get_varint(&q, end, &tag) != 0 || tag != (1u << 3 | 2) || get_varint(&q, end, &len) != 0 ||
        len > (uint64_t)(end - q) || ++n > DLH_MAX_LIST)
      return -1;
    q += len;
  }
  if (!n || !nccl_event.d) return n ? -1 : 0;
  b->events = a->alloc(a->allocator_data, n * sizeof *b->events);
  if (!b->events) return -1;
  while (p < end) { /* the tags and lengths were checked above */
    uint64_t tag = 0, len = 0;
    get_varint(&p, end, &tag);
    get_varint(&p, end, &len);
    Dlh__NcclEvent *e = a->alloc(a->allocator_data, sizeof *e);
    if (!e) return -1;
    dlh__nccl_event__init(e);
    b->events[b->n_events++] = e;
    if (fields(a, &nccl_event, p, p + len, (char *)e) != 0) return -1;
    p += len;
  }
  return 0;
}

Dlh__Packet *dlh_flat_packet(ProtobufCAllocator *a, const uint8_t *p, size_t len,
                             Dlh__Packet **part) {
  *part = NULL;
  const uint8_t *end = p + len;
  uint64_t tag, blen;
  if (get_varint(&p, end, &tag) != 0 || (tag & 7) != 2 || (tag >> 3) >= FLAT_IDS ||
      get_varint(&p, end, &blen) != 0 || blen != (uint64_t)(end - p))
    return NULL;
  pthread_once(&once, init);
  uint32_t id = (uint32_t)(tag >> 3);
  const flat_desc *f = members[id];
  if (!f && id != DLH__PACKET__DATA_NCCL_EVENTS) return NULL;
  const ProtobufCFieldDescriptor *pf =
      protobuf_c_message_descriptor_get_field(&dlh__packet__descriptor, id);
  if (!pf) return NULL;
  const ProtobufCMessageDescriptor *d = pf->descriptor;
  Dlh__Packet *pkt = a->alloc(a->allocator_data, sizeof *pkt);
  if (!pkt) return NULL;
  dlh__packet__init(pkt);
  char *m = a->alloc(a->allocator_data, d->sizeof_message);
  if (!m) {
    a->free(a->allocator_data, pkt);
    return NULL;
  }
  d->message_init((ProtobufCMessage *)m);
  *(uint32_t *)((char *)pkt + pf->quantifier_offset) = id;
  *(void **)((char *)pkt + pf->offset) = m;
  *part = pkt;
  int rc = f ? fields(a, f, p, end, m) : nccl_events(a, p, end, (Dlh__NcclEventBatch *)m);
  return rc == 0 ? pkt : NULL;
}
