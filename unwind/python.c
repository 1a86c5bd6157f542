/* python.c — the CPython frame walker: reads the calling thread's Python frames (code object
 * and current instruction) without any tracing hook, for CPython 3.10 to 3.13.
 *
 * The thread state comes from PyGILState_GetThisThreadState() (exported by libpython or by a
 * statically linked python executable, found with dlsym): it is the calling thread's own state
 * even while the thread has released the GIL, as ctypes does around foreign calls. While the
 * thread is inside the hooked call its frames cannot change or be freed, so reading them needs
 * no lock. The structure offsets below are those of the release headers of each version
 * (x86-64 / LP64), checked with offsetof against 3.10.13, 3.11.7, 3.12.1 and 3.13.0:
 *
 *            thread state -> frame chain            frame: code  previous  instr  owner  entry
 *   3.10     ts+24 PyFrameObject* (f_back +24)            +32   +24      f_lasti +96 (int, units)
 *   3.11     ts+56 _PyCFrame*, +8 current_frame           +32   +48      +56     +69   +68
 *   3.12     ts+56 _PyCFrame*, +0 current_frame           +0    +8       +56     +70   owner==3
 *   3.13     ts+72 current_frame                          +0    +8       +56     +70   owner==3
 *
 * PyCodeObject: co_filename +104/+112, co_name (3.10) +112, co_qualname (3.11+) +128, bytecode
 * (co_code_adaptive) at +184 (3.11), +192 (3.12), +200 (3.13). One _PyEval_EvalFrameDefault
 * call runs one Python frame in 3.10; from 3.11 it runs the frames up to the next entry frame
 * (3.11: is_entry set; 3.12+: a shim frame owned by the C stack, owner 3, that is skipped). */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "unwind_int.h"

int dlh_py_active;
uintptr_t dlh_py_eval_lo, dlh_py_eval_hi;

static struct {
  int minor;
  void *(*get_ts)(void);
  int (*addr2line)(void *code, int byte_offset);
  uintptr_t code_type, unicode_type;
  size_t ts_frame, cf_current;   /* cf_current: (size_t)-1 = no _PyCFrame indirection */
  size_t fr_code, fr_prev, fr_instr, fr_owner, fr_entry;
  size_t co_filename, co_name, co_code;
  size_t ascii_size, compact_size;
} P;

#define NONE ((size_t)-1)
#define RD(type, base, off) (*(type *)((uintptr_t)(base) + (off)))

static int (*fd_up)(int);           /* dlh_unwind_settings.fd_move_up */
static void *(*interp_head)(void);  /* PyInterpreterState_Head, _ThreadHead (the list) */
static void *(*thread_head)(void *);

int dlh_py_init(int (*fd_move_up)(int)) {
  dlh_py_active = 0;
  fd_up = fd_move_up;
  const char *(*getver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
  if (!getver) return 0;
  const char *v = getver();
  int major = 0, minor = 0;
  if (!v || sscanf(v, "%d.%d", &major, &minor) != 2) return 0;
  if (major != 3 || minor < 10 || minor > 13) {
    dlh_warn("Python %d.%d: Python frames are read for CPython 3.10 to 3.13 only; stacks are "
             "native", major, minor);
    return 0;
  }
  P.minor = minor;
  P.get_ts = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  P.addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
  P.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
  P.unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  interp_head = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Head");
  thread_head = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
  if (!P.get_ts || !P.addr2line || !P.code_type || !P.unicode_type || !eval) {
    dlh_warn("Python %d.%d: interpreter symbols not exported; stacks are native", major, minor);
    return 0;
  }
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
    dlh_py_eval_lo = (uintptr_t)eval;
    dlh_py_eval_hi = (uintptr_t)eval + sym->st_size;
  }
  P.fr_entry = P.fr_owner = NONE;
  P.cf_current = NONE;
  switch (minor) {
    case 10:
      P.ts_frame = 24; P.fr_prev = 24; P.fr_code = 32; P.fr_instr = 96;
      P.co_filename = 104; P.co_name = 112; P.co_code = 0;
      break;
    case 11:
      P.ts_frame = 56; P.cf_current = 8; P.fr_code = 32; P.fr_prev = 48; P.fr_instr = 56;
      P.fr_owner = 69; P.fr_entry = 68;
      P.co_filename = 112; P.co_name = 128; P.co_code = 184;
      break;
    case 12:
      P.ts_frame = 56; P.cf_current = 0; P.fr_code = 0; P.fr_prev = 8; P.fr_instr = 56;
      P.fr_owner = 70;
      P.co_filename = 112; P.co_name = 128; P.co_code = 192;
      break;
    default: /* 13 */
      P.ts_frame = 72; P.fr_code = 0; P.fr_prev = 8; P.fr_instr = 56; P.fr_owner = 70;
      P.co_filename = 112; P.co_name = 128; P.co_code = 200;
      break;
  }
  P.ascii_size = minor <= 11 ? 48 : 40;
  P.compact_size = minor <= 11 ? 72 : 56;
  dlh_py_active = 1;
  return 1;
}

static inline int plausible(uintptr_t p) { return p >= 4096 && (p & 7) == 0 && p < (1ull << 56); }

/* Loads of the walker: direct in the thread itself (its frames cannot change under it), checked
 * copies for another thread's (a frame may be popped and its memory unmapped meanwhile): one
 * process_vm_readv of our own pid, which fails with EFAULT where a load would fault; where a
 * seccomp filter refuses it, a pread of /proc/self/mem (EIO there). */
static int mem_fd = -2;             /* /proc/self/mem, opened on the first refusal */
static int copy_in(void *dst, uintptr_t src, size_t n) {
  if (mem_fd == -2) {
    struct iovec l = {dst, n}, r = {(void *)src, n};
    ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
    if (got == (ssize_t)n) return 0;
    if (got >= 0 || errno == EFAULT || errno == ESRCH) return -1;
    mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC); /* ENOSYS, EPERM: a filter */
    if (mem_fd >= 0 && fd_up) mem_fd = fd_up(mem_fd);
    if (mem_fd < 0) mem_fd = -1;
  }
  if (mem_fd < 0) return -1;
  return pread(mem_fd, dst, n, (off_t)src) == (ssize_t)n ? 0 : -1;
}

static inline int load(int safe, void *dst, uintptr_t src, size_t n) {
  if (!safe) {
    memcpy(dst, (const void *)src, n);
    return 0;
  }
  return copy_in(dst, src, n);
}

/* The walk from the frame fr (the thread's current frame), direct or checked (safe): the frame
 * fields needed lie in the first FRAME_BYTES of a frame in every version. */
#define FRAME_BYTES 104
static inline __attribute__((always_inline)) int walk(uintptr_t fr, dlh_pyframe *out, int max,
                                                      int safe) {
  int n = 0;
  uint8_t f[FRAME_BYTES];
  size_t fbytes = P.minor == 10 ? 104 : 72;
  for (int guard = 0; plausible(fr) && n < max && guard < 4096; guard++) {
    const uint8_t *fp = (const uint8_t *)fr; /* direct: the fields are loaded in place */
    if (safe) {
      if (copy_in(f, fr, fbytes) != 0) break;
      fp = f;
    }
    uintptr_t prev = RD(uintptr_t, fp, P.fr_prev);
    if (P.minor >= 12 && RD(uint8_t, fp, P.fr_owner) == 3) { /* entry shim of one eval call */
      if (n) out[n - 1].group_end = 1;
      fr = prev;
      continue;
    }
    uintptr_t code = RD(uintptr_t, fp, P.fr_code), type = 0;
    if (plausible(code) && load(safe, &type, code + 8, sizeof type) == 0 && type == P.code_type) {
      int64_t lasti;
      if (P.minor == 10) {
        int li = RD(int, fp, P.fr_instr);
        lasti = li < 0 ? -1 : (int64_t)li * 2;
      } else {
        uintptr_t ip = RD(uintptr_t, fp, P.fr_instr);
        lasti = ip >= code + P.co_code ? (int64_t)(ip - (code + P.co_code)) : -1;
      }
      out[n].code = code;
      out[n].lasti = lasti;
      out[n].group_end = P.minor == 10 || (P.minor == 11 && RD(uint8_t, fp, P.fr_entry));
      n++;
    }
    fr = prev;
  }
  if (n) out[n - 1].group_end = 1;
  return n;
}

int dlh_py_walk(dlh_pyframe *out, int max) {
  uintptr_t ts = (uintptr_t)P.get_ts();
  if (!plausible(ts)) return 0;
  uintptr_t fr = RD(uintptr_t, ts, P.ts_frame);
  if (P.cf_current != NONE) fr = plausible(fr) ? RD(uintptr_t, fr, P.cf_current) : 0;
  return walk(fr, out, max, 0);
}

int dlh_py_walk_ts(uintptr_t ts, dlh_pyframe *out, int max) {
  if (!dlh_py_active || !plausible(ts)) return 0;
  uintptr_t fr = 0;
  if (copy_in(&fr, ts + P.ts_frame, sizeof fr) != 0) return 0;
  if (P.cf_current != NONE && (!plausible(fr) || copy_in(&fr, fr + P.cf_current, sizeof fr) != 0))
    return 0;
  return walk(fr, out, max, 1);
}

/* ---- thread states of threads that never showed theirs (sampler thread) ----
 * The interpreter's list of thread states (PyInterpreterState_ThreadHead, then `next`, the
 * second field of PyThreadState in every version) names each state's OS thread in its
 * native_thread_id (3.11+), whose offset is found at run time: the word equal to the thread's
 * id in the states of two different threads that showed theirs (dlh_py_calibrate). */
#define CAL_WORDS 64
static uint8_t cal_cand[CAL_WORDS];
static int cal_seen, cal_off = -1;
static uint32_t cal_last_tid;

void dlh_py_calibrate(uintptr_t ts, uint32_t tid) {
  if (cal_off != -1 || !dlh_py_active || !plausible(ts) || tid == cal_last_tid) return;
  uint64_t w[CAL_WORDS];
  if (copy_in(w, ts, sizeof w) != 0) return;
  int n = 0, last = 0;
  for (int i = 3; i < CAL_WORDS; i++) { /* after prev, next, interp */
    uint8_t ok = w[i] == tid;
    cal_cand[i] = cal_seen ? (uint8_t)(cal_cand[i] & ok) : ok;
    if (cal_cand[i]) { n++; last = i; }
  }
  cal_seen++;
  cal_last_tid = tid;
  if (!n) cal_off = -2;                             /* no such field (3.10): no list */
  else if (n == 1 && cal_seen >= 2) cal_off = last * 8;
}

int dlh_py_thread_states(uint32_t *tids, uintptr_t *states, int max) {
  if (cal_off < 0 || !interp_head || !thread_head) return 0;
  void *interp = interp_head();
  if (!interp) return 0;
  uintptr_t ts = (uintptr_t)thread_head(interp);
  int n = 0;
  for (int guard = 0; plausible(ts) && n < max && guard < 4096; guard++) {
    uint64_t tid = 0;
    uintptr_t next = 0;
    if (copy_in(&tid, ts + (size_t)cal_off, sizeof tid) != 0 ||
        copy_in(&next, ts + 8, sizeof next) != 0)
      break;
    if (tid && tid < (1ull << 32)) {
      tids[n] = (uint32_t)tid;
      states[n++] = ts;
    }
    ts = next;
  }
  return n;
}

uintptr_t dlh_py_this_ts(void) {
  return dlh_py_active && P.get_ts ? (uintptr_t)P.get_ts() : 0;
}

/* Copies a str object as UTF-8 (compact strings, which code object names always are). */
static void read_str(uintptr_t o, char *buf, size_t cap) {
  buf[0] = 0;
  if (!plausible(o) || RD(uintptr_t, o, 8) != P.unicode_type || cap < 8) {
    snprintf(buf, cap, "?");
    return;
  }
  int64_t len = RD(int64_t, o, 16);
  uint32_t state = RD(uint32_t, o, 32);
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || len < 0) {
    snprintf(buf, cap, "?");
    return;
  }
  size_t n = 0;
  if (ascii) {
    const char *d = (const char *)(o + P.ascii_size);
    for (int64_t i = 0; i < len && n + 1 < cap; i++) buf[n++] = d[i];
  } else {
    const uint8_t *d = (const uint8_t *)(o + P.compact_size);
    for (int64_t i = 0; i < len; i++) {
      uint32_t c = kind == 1 ? d[i] : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
      char tmp[4];
      size_t k;
      if (c < 0x80) { tmp[0] = (char)c; k = 1; }
      else if (c < 0x800) { tmp[0] = (char)(0xc0 | c >> 6); tmp[1] = (char)(0x80 | (c & 0x3f)); k = 2; }
      else if (c < 0x10000) {
        tmp[0] = (char)(0xe0 | c >> 12); tmp[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        tmp[2] = (char)(0x80 | (c & 0x3f)); k = 3;
      } else {
        tmp[0] = (char)(0xf0 | c >> 18); tmp[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        tmp[2] = (char)(0x80 | ((c >> 6) & 0x3f)); tmp[3] = (char)(0x80 | (c & 0x3f)); k = 4;
      }
      if (n + k + 1 > cap) break;
      memcpy(buf + n, tmp, k);
      n += k;
    }
  }
  buf[n] = 0;
}

void dlh_py_resolve(uint64_t code, int64_t lasti, uint32_t *line, char *fn, size_t fncap,
                    char *file, size_t filecap) {
  int l = P.addr2line((void *)(uintptr_t)code, lasti < 0 || lasti > 0x7fffffff ? -1 : (int)lasti);
  *line = l > 0 ? (uint32_t)l : 0;
  read_str(RD(uintptr_t, code, P.co_name), fn, fncap);
  read_str(RD(uintptr_t, code, P.co_filename), file, filecap);
}
