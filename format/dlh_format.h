/* dlh_format.h — the trace file library shared by libdlhook.so (encoder) and dlhook (reader).
 *
 * A trace file is an 16-byte header (magic "DLHTRACE", u32 LE version, u32 LE flags) followed by
 * independent zstd frames. Each frame decompresses to a sequence of dlh.Packet messages
 * (format/dlhook.proto), each preceded by its length as a varint. A damaged or truncated tail
 * loses at most the frame it is in: every complete frame before it is still read.
 *
 * Encoder side (dlh_enc_*, format/encoder.c): packets are appended to an in-memory frame
 * buffer; dlh_enc_flush() compresses the buffer into one zstd frame and write()s it. The encoder
 * never allocates on behalf of the profiled program's threads: it is used only by the recorder's
 * writer thread (preload/writer.c, dlh_writer_*) and its exit path.
 *
 * Reader side: dlh_reader_next() returns one decoded packet at a time.
 */
#ifndef DLH_FORMAT_H
#define DLH_FORMAT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "dlhook.pb-c.h"

#define DLH_MAGIC "DLHTRACE"
#define DLH_FORMAT_VERSION 2u   /* 2: folded repeats (ApiBatch.count/span), Trailer.calls */
#define DLH_FORMAT_VERSION_MIN 1u /* the oldest version this reader reads */
#define DLH_HEADER_SIZE 16

/* ---------------------------------------------------------------- limits
 *
 * What a real recorder writes, with room to spare; the reader treats anything beyond as
 * damage (a trace is a file people send each other: its contents are not trusted). A frame or
 * packet over a limit is reported with its offset and skipped, and reading goes on with the
 * next one; dlh_reader_next() returns -1 at the end instead of 0 (see there). */

/* Decompressed bytes of one frame. The encoder starts a new frame once DLH_FRAME_AUTOFLUSH
 * (32 MiB) is buffered, so a frame holds at most that plus one batch (< 16 MiB). A frame
 * whose header does not state its content size (the encoder always does) counts as over. */
#define DLH_MAX_FRAME_CONTENT (64u << 20)
/* Packets in one frame (a real frame averages more than 32 bytes per packet). */
#define DLH_MAX_FRAME_PACKETS (1u << 20)
/* Memory one decoded packet may take (a full ApiBatch with 16 args per event needs ~12 MiB). */
#define DLH_MAX_PACKET_MEMORY (32u << 20)
/* Events per ApiBatch / records per GpuBatch (the encoder emits a batch at 65,536). */
#define DLH_MAX_BATCH_EVENTS 65536u
/* Recorded args per API event on average over a batch (DLH_MAX_ARGS in the recorder is 16),
 * kind-specific values per GPU record on average over a batch. */
#define DLH_MAX_EVENT_ARGS 16u
#define DLH_MAX_GPU_VALS 32u
/* Frames of one StackDef (DLHOOK_STACK_DEPTH is at most 256, Python frames included). */
#define DLH_MAX_STACK_DEPTH 256u
/* ApiBatch.args_delta (dlhook.proto): the first this many arguments of an event are written as
 * differences from the same function's last event in the batch, the rest as they are. */
#define DLH_ARGS_DELTA_BASE 16u
/* A StackDef frame value with this bit set is a Python frame: its low 32 bits are a PyFrameDef
 * id (dlhook.proto, "Call stacks"); without it, a native pc. */
#define DLH_PYFRAME_TAG (1ull << 63)
/* Bytes of any one string (names, paths, kernel names; mangled C++ names reach a few KiB). */
#define DLH_MAX_STRING (64u << 10)
/* Args of one FunctionDesc, command-line words of a ProcessInfo. */
#define DLH_MAX_LIST 4096u
/* Definition packets (function, string, stack, module, symbol, Python frame, thread, device)
 * per trace, repeats included. A PyTorch process defines ~300,000. */
#define DLH_MAX_DEFINITIONS (2u << 20)
/* Whole-trace budgets as a function of the file's size, so that a small file cannot cost much
 * time (a 1 MiB file: 384 MiB decompressed, 1.25 Mi packets): decompressed bytes at most
 * DLH_CONTENT_BASE + DLH_MAX_RATIO x file size (recorded traces compress 5-20 times; only long
 * runs of identical events compress much more, and those stay under the base), packets at most
 * DLH_PACKETS_BASE + DLH_PACKETS_PER_BYTE x file size (a packet of a real trace takes several
 * bytes compressed). Frames beyond a budget are skipped without decompressing them. */
#define DLH_CONTENT_BASE (256ull << 20)
#define DLH_MAX_RATIO 128u
#define DLH_PACKETS_BASE (256u << 10)
#define DLH_PACKETS_PER_BYTE 1u
/* String bytes of all definitions (names, paths: what the command keeps in memory) at most
 * DLH_DEF_BYTES_BASE + DLH_DEF_BYTES_PER_BYTE x file size (names compress less than 10 times;
 * a PyTorch process's ~40 MiB of names come in a file of more than 5 MiB). */
#define DLH_DEF_BYTES_BASE (64u << 20)
#define DLH_DEF_BYTES_PER_BYTE 32u

/* ---------------------------------------------------------------- encoder */

typedef struct dlh_encoder dlh_encoder;

/* Creates an encoder on an open file descriptor and writes the file header.
 * zstd_level: compression level (1..19; 0 = default 3). The fd stays owned by the caller.
 * Returns NULL on allocation failure or if the header could not be written. */
dlh_encoder *dlh_enc_create(int fd, int zstd_level);

/* Sink mode, for the flight recorder (preload/flight.c): frames are handed to sink(ctx, frame,
 * len, kept) instead of being written to a file (no file header either: dlh_enc_write_header
 * writes one where the frames are put together). Packets whose data case c has bit (1 << c) set
 * in kept_cases (DLH_CASE_BIT), and those given to dlh_enc_packet_kept, are packed into frames
 * of their own, handed over with kept = 1 before the frame of events of the same flush; every
 * other packet and every batch goes into the frames with kept = 0. The sink returns 0, or -1
 * (the frame is lost; dlh_enc_flush returns -1). The frame's bytes are the encoder's: the sink
 * copies what it keeps. Returns NULL on allocation failure. */
typedef int (*dlh_frame_sink)(void *ctx, const uint8_t *frame, size_t len, int kept);
dlh_encoder *dlh_enc_create_sink(dlh_frame_sink sink, void *ctx, int zstd_level,
                                 uint64_t kept_cases);

/* Appends a packet to the kept frames of a sink-mode encoder (to the frame, as
 * dlh_enc_packet, otherwise). Returns 0 or -1 (allocation failure, or a failed flush). */
int dlh_enc_packet_kept(dlh_encoder *enc, const Dlh__Packet *p);

/* Writes the 16-byte file header (magic, DLH_FORMAT_VERSION, flags 0) to fd. 0 or -1. */
int dlh_enc_write_header(int fd);

/* Appends one packet (any oneof case) to the current frame buffer. Returns 0, or -1 on
 * allocation failure (the packet is lost; the encoder stays usable). */
int dlh_enc_packet(dlh_encoder *enc, const Dlh__Packet *p);

/* One API call event, as the writer thread hands it to the encoder. */
typedef struct dlh_api_event {
  uint64_t start_ns;
  uint64_t dur_ns;
  uint32_t fn;        /* FunctionDesc id */
  int64_t ret;
  uint64_t corr;      /* 0 = none */
  uint32_t stack;     /* 0 = none */
  uint32_t depth;     /* nesting depth, 0 = outermost */
  uint32_t nargs;
  const uint64_t *args;
  uint64_t count;     /* calls this event stands for (folded repeats); 0 or 1 = one call */
  uint64_t span_ns;   /* count > 1: first call's start to last call's end (dur_ns is the sum of
                         the calls' own durations); else 0 (the span is dur_ns) */
} dlh_api_event;

/* Calls an event stands for, and the time it covers on a timeline. */
static inline uint64_t dlh_api_calls(const dlh_api_event *ev) { return ev->count > 1 ? ev->count : 1; }
static inline uint64_t dlh_api_span(const dlh_api_event *ev) {
  return ev->count > 1 && ev->span_ns ? ev->span_ns : ev->dur_ns;
}

/* Appends an API event of thread `tid` to that thread's open column batch (delta-encoded).
 * ev->args is copied (nargs values; args may be NULL when nargs is 0).
 * Encoding of ApiBatch.corr_delta: delta from the previous non-zero correlation id of the
 * batch (starting at 0); 0 = this event has none; INT64_MIN = same id as the previous one.
 * Batches are turned into ApiBatch packets by dlh_enc_flush() (or when a batch grows
 * past an internal limit). Returns 0, or -1 on allocation failure (event lost, counted). */
int dlh_enc_api(dlh_encoder *enc, uint32_t tid, const dlh_api_event *ev);

/* Thread `tid` has ended and all its events were given to dlh_enc_api: its open batch is
 * emitted into the current frame now and the batch's columns are freed, so that a program that
 * creates threads without end keeps the encoder's memory bounded. A later event of the same tid
 * starts a new batch. Returns 0, or -1 when the batch could not be encoded (events counted
 * as lost). */
int dlh_enc_thread_end(dlh_encoder *enc, uint32_t tid);

/* One GPU activity record (GpuBatch in format/dlhook.proto says what vals hold per kind). */
typedef struct dlh_gpu_event {
  uint32_t kind;      /* DLH__GPU_RECORD_KIND__KERNEL, __MEMCPY, ... (GpuRecordKind) */
  uint64_t start_ns, dur_ns;
  uint64_t corr;
  uint32_t device, context, stream;
  uint32_t name;      /* StringDef id, 0 = none */
  uint32_t nvals;
  const uint64_t *vals;
  uint32_t graph;       /* CUDA graph launch: CUPTI graphId, 0 = not from a graph */
  uint64_t graph_node;  /* CUPTI graphNodeId, 0 = none */
} dlh_gpu_event;

/* Appends a GPU record to the open GpuBatch (emitted at flush or when it grows large).
 * Returns 0, or -1 on allocation failure (record lost, counted in dlh_enc_lost). */
int dlh_enc_gpu(dlh_encoder *enc, const dlh_gpu_event *ev);

/* Encodes pending batches, compresses everything appended since the last flush into one
 * zstd frame and writes it (retrying short writes and EINTR). Returns 0 on success (also when
 * there was nothing to write), -1 on a write error (errno set; the frame is discarded, except
 * on EBADF: the fd was closed under the encoder, and the frame is written first by the next
 * flush, typically after dlh_enc_set_fd). */
int dlh_enc_flush(dlh_encoder *enc);

/* Makes the encoder write to fd from now on (the same file, reopened: the caller moved or
 * recovered its descriptor). */
void dlh_enc_set_fd(dlh_encoder *enc, int fd);

/* Bytes written to the fd so far (header included). */
uint64_t dlh_enc_bytes(const dlh_encoder *enc);

/* Events lost to allocation failures in dlh_enc_api / batch encoding so far. */
uint64_t dlh_enc_lost(const dlh_encoder *enc);

/* Bytes of the frame being built (encoded packets and open batches), before compression. */
uint64_t dlh_enc_pending_bytes(const dlh_encoder *enc);

/* Bytes of memory the encoder holds (its buffers, columns and zstd context). */
uint64_t dlh_enc_mem(const dlh_encoder *enc);

/* Frees the columns of threads' batches that hold no event (after dlh_enc_flush: all of them)
 * while the columns of all batches hold more than max_bytes, so that a process with hundreds of
 * threads keeps the encoder within its share of the memory budget; a batch gets columns again
 * at its next event. Returns the bytes freed. */
uint64_t dlh_enc_trim(dlh_encoder *enc, uint64_t max_bytes);

/* Flushes (best effort) and frees the encoder. Accepts NULL. Does not close the fd. */
void dlh_enc_free(dlh_encoder *enc);

/* ---------------------------------------------------------------- reader */

typedef struct dlh_reader dlh_reader;

/* Opens a file to read a trace from, never blocking: a FIFO, device, socket or directory is
 * refused without waiting for a writer. Returns a stdio stream (the caller fcloses it), or NULL
 * with *err (if err is not NULL) set to a malloc'd message ("cannot read: a FIFO, not a regular
 * file") that the caller frees. */
FILE *dlh_open_input(const char *path, char **err);

/* Opens a trace file. On failure returns NULL and, if err is not NULL, sets *err to a
 * malloc'd message ("not a dlhook trace (bad magic)", "empty file", "unsupported format
 * version 7", ...) that the caller frees. */
dlh_reader *dlh_reader_open(const char *path, char **err);

/* Reads the next packet. Returns 1 and sets *out to a packet owned by the reader (valid until
 * the next call or dlh_reader_close), 0 at the clean end of the file, -1 when the rest of the
 * file is damaged or truncated: then dlh_reader_error() says what and where, and every packet of
 * every complete frame before the damage has already been returned. A frame or packet over one
 * of the limits above is skipped and reading goes on; at the end of the file -1 is returned
 * (instead of 0) and dlh_reader_error() names the first one skipped, with its offset. */
int dlh_reader_next(dlh_reader *r, const Dlh__Packet **out);

/* Makes dlh_reader_next pass over, without decoding them, the packets whose data case c has bit
 * (1 << c) set in `cases` (Dlh__Packet__DataCase values; 0, the default, decodes every packet).
 * For a reader that wants only some kinds, e.g. the definitions of a trace before its events:
 * such a packet costs its decompression and a look at its first bytes. Limits still apply to
 * the packets passed over (they count as packets of their frame and of the trace). */
void dlh_reader_skip(dlh_reader *r, uint64_t cases);
#define DLH_CASE_BIT(c) (1ull << (unsigned)(c))

/* The error message after dlh_reader_next returned -1 (or NULL). Owned by the reader. */
const char *dlh_reader_error(const dlh_reader *r);

/* Frames and packets skipped so far for being over a limit (reading went on after them). */
uint64_t dlh_reader_skipped(const dlh_reader *r);

/* Frames read successfully so far, and the file offset where reading stopped. */
uint64_t dlh_reader_frames(const dlh_reader *r);
uint64_t dlh_reader_offset(const dlh_reader *r);

/* Closes the reader and frees everything it owns. Accepts NULL. */
void dlh_reader_close(dlh_reader *r);

/* Opens a trace like dlh_reader_open, and starts a thread that reads, decompresses and decodes
 * its packets ahead of dlh_reader_next, with the data cases in `skip` passed over (as after
 * dlh_reader_skip(r, skip)); at most about `ahead_bytes` of decoded packets wait (the thread
 * waits while more do). Every function above returns on it what it returns on a reader of
 * dlh_reader_open given the same calls: same packets, errors, limits, counts. When
 * dlh_reader_skip sets another set of cases, the thread stops and the reader goes on without it
 * (the file opened again and read up to the same packet; `skip` is the one to get right). For
 * reading several traces at once (ahead.c); errors and *err as dlh_reader_open. */
dlh_reader *dlh_reader_open_ahead(const char *path, uint64_t skip, size_t ahead_bytes, char **err);

/* Helper for consumers of ApiBatch packets: iterates its events in order.
 * Usage: dlh_api_iter it; dlh_api_iter_init(&it, batch);
 *        while (dlh_api_iter_next(&it, &ev)) { ... }
 * Returns 0 at the end, or when the batch is internally inconsistent (columns of different
 * lengths, args overrun): then it->bad is set. ev.args points into the packet. */
typedef struct dlh_api_iter {
  const Dlh__ApiBatch *b;
  size_t i, argpos;
  uint64_t t, corr;
  int bad;
} dlh_api_iter;
void dlh_api_iter_init(dlh_api_iter *it, const Dlh__ApiBatch *b);
int dlh_api_iter_next(dlh_api_iter *it, dlh_api_event *ev);

/* The same for GpuBatch packets: records in order, ev.vals points into the packet. */
typedef struct dlh_gpu_iter {
  const Dlh__GpuBatch *b;
  size_t i, valpos;
  uint64_t t;
  int bad;
} dlh_gpu_iter;
void dlh_gpu_iter_init(dlh_gpu_iter *it, const Dlh__GpuBatch *b);
int dlh_gpu_iter_next(dlh_gpu_iter *it, dlh_gpu_event *ev);

#endif
