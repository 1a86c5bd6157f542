#!/bin/sh
# libdlhook.so exports dlsym, dlvsym and dlopen (preload/dlsym.c); glibc's versions depend on who
# calls them, and that must not change under dlhook: from a library opened RTLD_LOCAL,
# dlsym(RTLD_DEFAULT) and dlsym(RTLD_NEXT) still find its own dependencies and dlopen still uses
# its RUNPATH ($ORIGIN); dlsym on ordinary handles returns the real symbols; RTLD_DEEPBIND gives
# one warning. No CUDA needed.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"
CC=${CC:-cc}
mkdir -p sub
cat >dep.c <<'C'
int dep_fn(void) { return 42; }
C
cat >dep2.c <<'C'
int dep2_fn(void) { return 7; }
C
cat >plug.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
int dep_fn(void);
int plug_default(void) { int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "dep_fn"); return f ? f() : -1; }
int plug_next(void) { int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "dep_fn"); return f ? f() : -1; }
int plug_vnext(void) {      /* an unversioned definition satisfies any version */
  int (*f)(void) = (int (*)(void))dlvsym(RTLD_NEXT, "dep_fn", "ANYVERSION");
  return f ? f() : -1;
}
int plug_open(void) {      /* found through this library's RUNPATH ($ORIGIN/sub) only */
  void *h = dlopen("libdep2.so", RTLD_NOW | RTLD_LOCAL);
  int (*f)(void) = h ? (int (*)(void))dlsym(h, "dep2_fn") : 0;
  return f ? f() : -1;
}
C
cat >main.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen("./libplug.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*d)(void) = (int (*)(void))dlsym(h, "plug_default");
  int (*n)(void) = (int (*)(void))dlsym(h, "plug_next");
  int (*v)(void) = (int (*)(void))dlsym(h, "plug_vnext");
  int (*o)(void) = (int (*)(void))dlsym(h, "plug_open");
  printf("default %d next %d vnext %d open %d\n", d(), n(), v(), o());
  printf("missing %s\n", dlsym(h, "no_such_symbol") ? "found" : "NULL");
  printf("error %s\n", dlerror() ? "set" : "unset");
  printf("libc %s\n", dlsym(RTLD_NEXT, "printf") == (void *)printf ? "same" : "different");
  if (argc > 1) {
    void *deep = dlopen("./libdep.so", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    printf("deepbind %s\n", deep ? "opened" : dlerror());
  }
  return 0;
}
C
$CC -shared -fPIC -o libdep.so dep.c && $CC -shared -fPIC -o sub/libdep2.so dep2.c &&
$CC -shared -fPIC -o libplug.so plug.c -L. -Wl,--no-as-needed -ldep -Wl,-rpath,'$ORIGIN' -Wl,-rpath,'$ORIGIN/sub' -ldl &&
$CC -o main main.c -ldl || fail "cannot build"
./main >plain.out || fail "plain run"
DLHOOK_OUTPUT="$T/" LD_PRELOAD="$DLHOOK_LIB" ./main >hooked.out 2>hooked.err || fail "run under dlhook"
cat hooked.out
cmp -s plain.out hooked.out || { diff plain.out hooked.out; fail "dlsym/dlopen behave differently under dlhook"; }
grep -q "^default 42 next 42 vnext 42 open 7$" hooked.out || fail "caller-relative lookups broken"
DLHOOK_OUTPUT="$T/" LD_PRELOAD="$DLHOOK_LIB" ./main deep >deep.out 2>deep.err || fail "deepbind run"
grep -q "^deepbind opened$" deep.out || fail "RTLD_DEEPBIND open failed"
n=$(grep -c "dlhook: warning: .*RTLD_DEEPBIND" deep.err)
[ "$n" -eq 1 ] || { cat deep.err; fail "expected one RTLD_DEEPBIND warning, got $n"; }
echo "dlsym/dlvsym/dlopen keep their caller-relative semantics; RTLD_DEEPBIND warns once"
