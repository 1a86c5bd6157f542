/* dlh_format_int.h — helpers shared by encoder.c and reader.c; not part of the public API. */
#ifndef DLH_FORMAT_INT_H
#define DLH_FORMAT_INT_H

#include <stddef.h>
#include <stdint.h>

static inline void dlh_put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t dlh_get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* write() all of data, retrying short writes and EINTR. Returns 0 or -1 (errno set). */
int dlh_write_all(int fd, const void *data, size_t len);

/* The reader's side of dlh_reader_open_ahead (ahead.c). */
typedef struct dlh_reader dlh_reader;
struct dlh_ahead;
struct Dlh__Packet;
/* Makes the packets of r live in memory from keep(ctx, size), never freed by the reader (the
 * caller frees it); keep NULL: the reader's own arena again. */
void dlh_reader_keep(dlh_reader *r, void *(*keep)(void *ctx, size_t size), void *ctx);
/* What a reader of dlh_reader_shell does instead of reading itself: ahead.c's functions (given
 * as pointers, so that reader.c does not call into ahead.c, which calls into it). count: `what`
 * 0 frames, 1 skipped, 2 offset (dlh_reader_frames, _skipped, _offset). */
struct dlh_reader_ops {
  int (*next)(struct dlh_ahead *a, const struct Dlh__Packet **out);
  void (*skip)(struct dlh_ahead *a, uint64_t cases);
  const char *(*error)(struct dlh_ahead *a);
  uint64_t (*count)(struct dlh_ahead *a, int what);
  void (*close)(struct dlh_ahead *a);
};
/* A reader whose every call is ops' on ah (NULL when out of memory). */
dlh_reader *dlh_reader_shell(struct dlh_ahead *ah, const struct dlh_reader_ops *ops);

/* flat.c: the encoded packet [p, p + len) decoded as protobuf-c would, from a's memory, when it
 * is of the kinds and in the form flat.c takes; else NULL, and *part holds what was decoded
 * before it was dropped (free it with protobuf_c_message_free_unpacked and a; NULL: nothing). */
struct ProtobufCAllocator;
struct Dlh__Packet *dlh_flat_packet(struct ProtobufCAllocator *a, const uint8_t *p, size_t len,
                                    struct Dlh__Packet **part);

#endif
