# Hazard: daemon(3) forks and the parent ends with libc's own _exit, which no wrapper sees: the
# parent's calls were lost (its trace held 0 of 300). The parent's records reach its trace at
# the fork; the daemon's calls are in a trace of its own.
. "$ROOT/tests/lib.sh"
P=$BUILD/tests/host/silentprog
need "$P"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
export DLHOOK_QUIET=1 DLHOOK_STACKS=none
i=0
while [ $i -lt 20 ]; do
  rm -rf "$T/tr"
  # the daemon keeps stdout: $(...) returns once it has exited
  out=$(traced "$T/tr" "$P" daemon 300 200; echo "rc=$?")
  case $out in *"daemon done"*"rc=0"*|*"rc=0"*"daemon done"*) ;; *) fail "run $i: $out" ;; esac
  n=0
  while [ $n -lt 100 ] && [ "$(ls "$T"/tr/*.dlh 2>/dev/null | wc -l)" -lt 2 ]; do
    sleep 0.05; n=$((n + 1))
  done
  for f in "$T"/tr/*.dlh; do
    "$DLHOOK_BIN" stats --json "$f" >"$f.json" || fail "run $i: $f unreadable"
  done
  python3 - "$T"/tr/*.json <<'PY' || fail "run $i: a trace is incomplete"
import json, sys
got = sorted({a["name"]: a["calls"] for a in json.load(open(f))["api"]}.get("cudaGetDeviceCount", 0)
             for f in sys.argv[1:])
assert got == [200, 300], got
PY
  i=$((i + 1))
done
echo "ok: 20 runs, the parent's 300 calls and the daemon's 200 each in their trace"
