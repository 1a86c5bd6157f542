/* exec.c — the preload and the DLHOOK_* settings reach programs started with exec* or
 * posix_spawn*, even when they are given a cleaned environment (DLHOOK_FOLLOW_EXEC=0 turns this
 * off). The entries to add are prepared once at start-up; an exec wrapper only builds an
 * array on the stack (it may run in a child of a multithreaded fork: no malloc, no locks).
 *
 * glibc's execv/execvp/execl* call execve internally, not through the PLT, so each entry point
 * is wrapped and forwarded to execve/execvpe with the completed environment.
 *
 * A child's own LD_PRELOAD (jemalloc, tcmalloc, a sanitizer runtime, another tool) is kept, in
 * its order and ahead of dlhook: dlhook is added at its end, never put in its place. The real
 * functions are looked up first thing in the constructor (dlh_exec_resolve), so that exec works
 * in every state of dlhook (DLHOOK_DISABLE=1, secure execution); a call before the constructor
 * looks them up then. */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlh_internal.h"

extern char **environ;

#define MAX_KEEP 64
static char *keep[MAX_KEEP]; /* "NAME=value" entries to carry over (DLHOOK_*, injection paths) */
static size_t nkeep;
static char *preload_entry;  /* "LD_PRELOAD=<ours>" */
static const char *self_path;
static int follow = 1;

static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                               const posix_spawnattr_t *, char *const[], char *const[]);
static int (*real_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                const posix_spawnattr_t *, char *const[], char *const[]);

void dlh_exec_init(void) {
  follow = dlh_cfg.follow_exec;
  Dl_info info;
  if (dladdr((void *)dlh_exec_init, &info) && info.dli_fname) self_path = strdup(info.dli_fname);
  if (self_path) {
    size_t n = strlen("LD_PRELOAD=") + strlen(self_path) + 1;
    preload_entry = malloc(n);
    if (preload_entry) snprintf(preload_entry, n, "LD_PRELOAD=%s", self_path);
  }
  for (char **e = environ; e && *e && nkeep < MAX_KEEP; e++)
    if (!strncmp(*e, "DLHOOK_", 7) || !strncmp(*e, "CUDA_INJECTION64_PATH=", 22) ||
        !strncmp(*e, "NVTX_INJECTION64_PATH=", 22))
      keep[nkeep++] = strdup(*e);
}

/* The real functions, looked up in the constructor before anything else (also when dlhook is
 * disabled or under secure execution: exec must work in every state), and not at a first use
 * that may be in a forked child, where the loader's lock may be held. */
void dlh_exec_resolve(void) {
  real_execve = (__typeof__(real_execve))dlsym(RTLD_NEXT, "execve");
  real_execvpe = (__typeof__(real_execvpe))dlsym(RTLD_NEXT, "execvpe");
  real_posix_spawn = (__typeof__(real_posix_spawn))dlsym(RTLD_NEXT, "posix_spawn");
  real_posix_spawnp = (__typeof__(real_posix_spawnp))dlsym(RTLD_NEXT, "posix_spawnp");
}

#define RESOLVE(var, name) \
  do { if (!(var)) (var) = (__typeof__(var))dlsym(RTLD_NEXT, name); } while (0)

static int has_name(char *const *env, const char *entry) {
  size_t n = strcspn(entry, "=") + 1;
  for (; env && *env; env++)
    if (!strncmp(*env, entry, n)) return 1;
  return 0;
}

/* The first LD_PRELOAD entry of env (the one the dynamic loader reads), or NULL. */
static char *const *preload_of(char *const *env) {
  for (; env && *env; env++)
    if (!strncmp(*env, "LD_PRELOAD=", 11)) return env;
  return NULL;
}

static int preload_has_us(char *const *env) {
  char *const *p = preload_of(env);
  return p && self_path && strstr(*p, self_path) != NULL;
}

/* Number of entries `out` needs: env + kept entries + LD_PRELOAD + NULL. */
static size_t env_size(char *const *env) {
  size_t n = 0;
  for (; env && *env; env++) n++;
  return n + nkeep + 2;
}

/* Bytes the merged "LD_PRELOAD=theirs:ours" entry needs (at least 1). */
static size_t preload_size(char *const *env) {
  char *const *p = preload_of(env);
  return (preload_entry ? strlen(preload_entry) : 0) + (p ? strlen(*p) : 0) + 2;
}

/* Fills out (sized by env_size) with env plus what is missing; merged (sized by preload_size)
 * receives the LD_PRELOAD entry when the child's own lacks us: the child's own libraries, in
 * their order (a sanitizer runtime must stay first), then ours. */
static char *const *complete(char *const *env, char **out, char *merged) {
  if (!follow || !dlh_cfg.enabled || !preload_entry) return env;
  size_t k = 0;
  char *const *theirs = preload_of(env);
  int ours = preload_has_us(env);
  if (!ours) {
    const char *rest = theirs ? *theirs + 11 : "", *self = preload_entry + 11;
    size_t b = strlen(rest);
    while (b && (rest[b - 1] == ':' || rest[b - 1] == ' ')) b--;
    memcpy(merged, "LD_PRELOAD=", 11);
    size_t a = 11;
    if (b) { memcpy(merged + a, rest, b); a += b; merged[a++] = ':'; }
    memcpy(merged + a, self, strlen(self));
    a += strlen(self);
    merged[a] = 0;
  }
  for (char *const *e = env; e && *e; e++) out[k++] = (!ours && e == theirs) ? merged : *e;
  if (!ours && !theirs) out[k++] = merged;
  for (size_t i = 0; i < nkeep; i++)
    if (!has_name(env, keep[i])) out[k++] = keep[i];
  out[k] = NULL;
  return out;
}

/* What this process recorded is written out before its image is replaced. */
/* What was recorded reaches the file before the image is replaced; a trace that the sampler
 * thread would start now (its deferred start) waits until the exec has failed, else the
 * exec could leave its file empty. Not in a vfork child, which shares the parent's memory and
 * never comes back from a successful exec to release it. */
static void before_exec(void) {
  if (!dlh_foreign_process()) dlh_sample_hold(1);
  dlh_writer_flush_wait(1000);
}

static int exec_failed(int r) {
  int e = errno;
  if (!dlh_foreign_process()) dlh_sample_hold(-1);
  errno = e;
  return r;
}

/* The arrays complete() fills, on the caller's stack (no malloc: this may run in the child of
 * a multithreaded fork, or in a vfork child). */
#define COMPLETE(env) \
  char *buf_[env_size(env)]; \
  char merged_[preload_size(env)]; \
  char *const *full_ = complete(env, buf_, merged_)

DLH_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  RESOLVE(real_execve, "execve");
  if (!real_execve) { errno = ENOSYS; return -1; }
  before_exec();
  COMPLETE(envp);
  return exec_failed(real_execve(path, argv, full_));
}

DLH_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  RESOLVE(real_execvpe, "execvpe");
  if (!real_execvpe) { errno = ENOSYS; return -1; }
  before_exec();
  COMPLETE(envp);
  return exec_failed(real_execvpe(file, argv, full_));
}

DLH_EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }
DLH_EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

/* execl* collect their variadic arguments into an argv on the stack. */
#define COLLECT_ARGS(first, last_named, want_env)                 \
  va_list ap;                                                     \
  size_t argc = 1;                                                \
  va_start(ap, last_named);                                       \
  while (va_arg(ap, char *)) argc++;                              \
  va_end(ap);                                                     \
  char *argv[argc + 1];                                           \
  char *const *envp = environ;                                    \
  argv[0] = (char *)(first);                                      \
  va_start(ap, last_named);                                       \
  for (size_t i = 1; i <= argc; i++) argv[i] = va_arg(ap, char *); \
  if (want_env) envp = va_arg(ap, char *const *);                 \
  va_end(ap);

DLH_EXPORT int execl(const char *path, const char *arg, ...) {
  COLLECT_ARGS(arg, arg, 0)
  return execve(path, argv, envp);
}
DLH_EXPORT int execlp(const char *file, const char *arg, ...) {
  COLLECT_ARGS(arg, arg, 0)
  return execvpe(file, argv, envp);
}
DLH_EXPORT int execle(const char *path, const char *arg, ...) {
  COLLECT_ARGS(arg, arg, 1)
  return execve(path, argv, envp);
}

DLH_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
  RESOLVE(real_posix_spawn, "posix_spawn");
  if (!real_posix_spawn) return ENOSYS;
  COMPLETE(envp);
  return real_posix_spawn(pid, path, fa, attr, argv, full_);
}

DLH_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
  RESOLVE(real_posix_spawnp, "posix_spawnp");
  if (!real_posix_spawnp) return ENOSYS;
  COMPLETE(envp);
  return real_posix_spawnp(pid, file, fa, attr, argv, full_);
}
