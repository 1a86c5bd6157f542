/* Sink mode (the flight recorder's encoder): frames go to a callback, not a file; packets of the
 * kept cases (and dlh_enc_packet_kept's) come in frames of their own, handed over before the
 * event frame of the same flush. A file made of the header, every kept frame and only the LAST
 * event frames (the older ones dropped, as the flight recorder's ring drops them) reads back
 * without damage: every definition, and exactly the events of the frames kept. */
#include "ftest.h"

typedef struct frame { uint8_t *p; size_t len; int kept; } frame;
static frame frames[256];
static size_t nframes;

static int sink(void *ctx, const uint8_t *f, size_t len, int kept) {
  (void)ctx;
  REQUIRE(nframes < 256);
  frames[nframes].p = malloc(len);
  REQUIRE(frames[nframes].p);
  memcpy(frames[nframes].p, f, len);
  frames[nframes].len = len;
  frames[nframes].kept = kept;
  nframes++;
  return 0;
}

static void string_def(dlh_encoder *w, uint32_t id, const char *s) {
  Dlh__Packet p = DLH__PACKET__INIT;
  Dlh__StringDef sd = DLH__STRING_DEF__INIT;
  sd.has_id = 1;
  sd.id = id;
  sd.value = (char *)s;
  p.data_case = DLH__PACKET__DATA_STRING;
  p.string = &sd;
  REQUIRE(dlh_enc_packet(w, &p) == 0);
}

int main(void) {
  dlh_encoder *w = dlh_enc_create_sink(sink, NULL, 3, DLH_CASE_BIT(DLH__PACKET__DATA_STRING));
  REQUIRE(w);
  CHECK(dlh_enc_bytes(w) == 0); /* no header: the sink's owner writes one */
  /* the START anchor explicitly kept, as the recorder does */
  Dlh__Packet a = DLH__PACKET__INIT;
  Dlh__ClockAnchor ca = DLH__CLOCK_ANCHOR__INIT;
  ca.has_trace_ns = 1;
  ca.trace_ns = 42;
  a.data_case = DLH__PACKET__DATA_ANCHOR;
  a.anchor = &ca;
  REQUIRE(dlh_enc_packet_kept(w, &a) == 0);
  uint64_t t = 1000;
  for (uint32_t f = 1; f <= 10; f++) { /* 10 flushes: a string each, and 100 events */
    char name[32];
    snprintf(name, sizeof name, "name-%u", f);
    string_def(w, f, name);
    for (int i = 0; i < 100; i++) {
      uint64_t args[1] = {f};
      dlh_api_event ev = {.start_ns = t += 10, .dur_ns = 5, .fn = f, .nargs = 1, .args = args};
      REQUIRE(dlh_enc_api(w, 7, &ev) == 0);
    }
    size_t before = nframes;
    REQUIRE(dlh_enc_flush(w) == 0);
    REQUIRE(nframes == before + 2); /* the kept frame (its string; the first: + the anchor), events */
    CHECK(frames[before].kept && !frames[nframes - 1].kept);
  }
  CHECK(dlh_enc_flush(w) == 0); /* nothing pending: no frame */
  size_t total = nframes;
  CHECK(total == 20);
  dlh_enc_free(w);

  /* header + every kept frame + the last 3 event frames */
  char *path = ft_path("sink.dlh");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(dlh_enc_write_header(fd) == 0);
  for (size_t i = 0; i < nframes; i++)
    if (frames[i].kept) REQUIRE(write(fd, frames[i].p, frames[i].len) == (ssize_t)frames[i].len);
  size_t events_seen = 0;
  for (size_t i = 0; i < nframes; i++)
    if (!frames[i].kept && ++events_seen > 7)
      REQUIRE(write(fd, frames[i].p, frames[i].len) == (ssize_t)frames[i].len);
  close(fd);

  char *err = NULL;
  dlh_reader *r = dlh_reader_open(path, &err);
  REQUIRE(r);
  const Dlh__Packet *p;
  int rc, strings = 0, anchors = 0;
  uint64_t events = 0, fn_min = 99, fn_max = 0;
  while ((rc = dlh_reader_next(r, &p)) == 1) {
    if (p->data_case == DLH__PACKET__DATA_STRING) strings++;
    if (p->data_case == DLH__PACKET__DATA_ANCHOR) anchors += p->anchor->trace_ns == 42;
    if (p->data_case == DLH__PACKET__DATA_API) {
      dlh_api_iter it;
      dlh_api_event ev;
      dlh_api_iter_init(&it, p->api);
      while (dlh_api_iter_next(&it, &ev)) {
        events++;
        if (ev.fn < fn_min) fn_min = ev.fn;
        if (ev.fn > fn_max) fn_max = ev.fn;
        CHECK(ev.nargs == 1 && ev.args[0] == ev.fn);
      }
      CHECK(!it.bad);
    }
  }
  CHECK(rc == 0);
  CHECK(strings == 10);       /* every definition, also those of the frames dropped */
  CHECK(anchors == 1);
  CHECK(events == 300);       /* the three frames kept, whole */
  CHECK(fn_min == 8 && fn_max == 10);
  dlh_reader_close(r);
  for (size_t i = 0; i < nframes; i++) free(frames[i].p);
  free(path);
  return ft_done("t_format_sink");
}
