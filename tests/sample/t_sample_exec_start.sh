# A process sampled from start-up (DLHOOK_SAMPLE=always) starts its trace 20 ms in, on the
# sampler thread; one that execs or exits just then must not leave an empty trace file behind
# (it did: `t_sample_vfork` at load 46 read an empty trace of an exec'd child; 9-11 of ~250
# processes of a pyenv shim). 60 processes exec /bin/true or exit after 12-27 ms of work, around
# that moment: every trace file they leave reads, none is empty.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_LIB"
need "$DLHOOK_BIN"
command -v gcc >/dev/null || skip "no gcc to build the test program"
cat >spin_exec.c <<'C'
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) { /* spin_exec MS exec|exit */
  double ms = argc > 1 ? atof(argv[1]) : 20;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
  if (argc > 2 && !strcmp(argv[2], "exec")) execl("/bin/true", "true", (char *)0);
  return 0;
}
C
gcc -O1 -o spin_exec spin_exec.c || fail "cannot build spin_exec"
mkdir -p out
i=0
while [ $i -lt 60 ]; do
  how=exec
  [ $((i % 3)) = 0 ] && how=exit
  DLHOOK_QUIET=1 DLHOOK_OUTPUT="$PWD/out/" DLHOOK_SAMPLE=always DLHOOK_FOLLOW_EXEC=0 \
    LD_PRELOAD="$DLHOOK_PRELOAD" ./spin_exec $((12 + i % 16)) $how || fail "run $i failed"
  i=$((i + 1))
done
n=$(ls out | wc -l)
empty=$(find out -type f -size 0 | wc -l)
echo "$n trace files from 60 processes, $empty empty"
[ "$empty" = 0 ] || fail "$empty empty trace files"
for f in out/*.dlh; do
  [ -e "$f" ] || continue
  "$DLHOOK_BIN" stats "$f" >/dev/null 2>err.txt || { cat err.txt; fail "$f does not read"; }
done
echo ok
