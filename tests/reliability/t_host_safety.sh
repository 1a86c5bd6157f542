# Host safety: faults around dlhook never change the program. For each fault the traced run's
# stdout and exit code equal the untraced run's and stderr has at most one dlhook warning:
# unwritable output (read-only mount, a path under a file, /proc), the output directory removed
# while running, a full disk (64 KiB tmpfs; skipped if mount is not allowed), garbage DLHOOK_*
# values, shell metacharacters in DLHOOK_OUTPUT, CUPTI absent or a broken libcupti, and cuBLAS,
# cuDNN, NCCL absent (simulated stack without them).
. "$ROOT/tests/lib.sh"
R=$BUILD/tests/reliability
need "$R/victim"; need "$DLHOOK_LIB"
export DLHOOK_STACKS=none
N=300000
"$R/victim" out $N >plain.out 2>plain.err; plain_rc=$?
[ "$plain_rc" = 3 ] || fail "untraced run: exit $plain_rc"
faults=0
same() { # label; env assignments and the command follow (run through env)
  label=$1; shift
  env LD_PRELOAD="$DLHOOK_PRELOAD" "$@" >"$label.out" 2>"$label.err"; rc=$?
  [ "$rc" = "$want_rc" ] || fail "$label: exit $rc, untraced $want_rc; stderr: $(head -c 400 "$label.err")"
  cmp -s "$want_out" "$label.out" || fail "$label: stdout differs from the untraced run"
  w=$(grep -c 'dlhook: warning' "$label.err")
  [ "$w" -le 1 ] || fail "$label: $w warning lines: $(cat "$label.err")"
  faults=$((faults + 1))
  echo "$label: same output and exit code; $w warning(s) $(grep 'dlhook: warning' "$label.err" | head -c 160)"
}
want_rc=$plain_rc; want_out=plain.out
V="$R/victim out $N"

# ---- unwritable output
touch afile
same under-a-file DLHOOK_OUTPUT="$T/afile/sub/" $V
same proc DLHOOK_OUTPUT=/proc/dlhook-test.dlh $V
mounted=""
mkdir ro full
if mount -t tmpfs -o ro,size=64k dlhook-ro "$T/ro" 2>/dev/null; then
  mounted="$mounted $T/ro"
  same read-only-dir DLHOOK_OUTPUT="$T/ro/" $V
  same read-only-file DLHOOK_OUTPUT="$T/ro/x.dlh" $V
else
  echo "read-only mount not allowed: skipped that case"
fi
# ---- disk full: a 64 KiB tmpfs (a scattered-argument trace needs far more)
if mount -t tmpfs -o size=64k dlhook-full "$T/full" 2>/dev/null; then
  mounted="$mounted $T/full"
  same disk-full DLHOOK_OUTPUT="$T/full/" DLHOOK_FLUSH_MS=10 $V
  [ -n "$(ls "$T/full")" ] || fail "disk-full: no trace file at all"
  "$DLHOOK_BIN" stats "$T"/full/*.dlh >/dev/null 2>&1; [ $? -le 1 ] || fail "disk-full: stats crashed on the partial trace"
  rm -f "$T"/full/*
  dd if=/dev/zero of="$T/full/fill" bs=1k count=64 2>/dev/null # no room left at all
  same disk-already-full DLHOOK_OUTPUT="$T/full/" $V
else
  echo "tmpfs mount not allowed: disk-full case skipped"
fi
for m in $mounted; do umount "$m"; done
# ---- output directory removed while the program runs
DLHOOK_OUTPUT="$T/gone/" LD_PRELOAD="$DLHOOK_PRELOAD" "$R/victim" out 6000000 >gone.out 2>gone.err & pid=$!
for i in $(seq 3000); do [ -n "$(ls "$T/gone" 2>/dev/null)" ] && break; sleep 0.01; done
rm -rf "$T/gone"
wait $pid; rc=$?
"$R/victim" out 6000000 >gone-plain.out 2>/dev/null
[ $rc = 3 ] || fail "vanished: exit $rc"
cmp -s gone.out gone-plain.out || fail "vanished: stdout differs"
[ "$(grep -c 'dlhook: warning' gone.err)" -le 1 ] || fail "vanished: more than one warning"
faults=$((faults + 1)); echo "vanished: same output and exit code"

# ---- garbage settings (one at a time; each may warn once)
long=$(python3 -c "print('x' * 5000)")
for kv in DLHOOK_RING_KB=abc DLHOOK_RING_KB=-1 DLHOOK_RING_KB=99999999999999999999999 \
          DLHOOK_RING_KB=0 DLHOOK_MEM_MB=0x10 DLHOOK_MEM_MB=1 DLHOOK_FLUSH_MS=0 \
          DLHOOK_FLUSH_MS=1e3 DLHOOK_ZSTD_LEVEL=99 DLHOOK_ZSTD_LEVEL=-3 DLHOOK_DISABLE=maybe \
          DLHOOK_SIGNALS=2 DLHOOK_CUPTI=yes DLHOOK_NVTX=' ' DLHOOK_QUIET=%s%n \
          DLHOOK_STACKS=garbage DLHOOK_STACK_DEPTH=100000 RANK=-7 RANK=abc \
          "DLHOOK_OUTPUT=$long" "DLHOOK_OUTPUT=$T/%n%s%x%%%p%h%r-%q.dlh" ; do
  same "setting-$(echo "$kv" | cut -c1-40 | tr -c 'A-Za-z0-9_=\n-' '_')" "$kv" $V
done
# ---- nothing from the environment reaches a shell
same shell-meta "DLHOOK_OUTPUT=$T/\$(touch pwned1);touch pwned2;\`touch pwned3\`.dlh" $V
[ -z "$(ls pwned* 2>/dev/null)" ] || fail "a shell ran a command taken from DLHOOK_OUTPUT"

# ---- CUDA libraries absent or broken (simulated stack)
if [ -f "$BUILD/simcuda/libcudart.so.13" ]; then
  mkdir nolibs badcupti
  for f in "$BUILD"/simcuda/*.so*; do
    case "$f" in *cupti*|*cublas*|*cudnn*|*nccl*) ;; *) ln -s "$f" nolibs/; ln -s "$f" badcupti/ ;; esac
  done
  echo "not an ELF file" >badcupti/libcupti.so.13
  for dir in nolibs badcupti; do
    # (an ASAN=1 build's simulated libraries need the ASan runtime preloaded, traced or not)
    LD_PRELOAD="${ASAN_LIB:-}" LD_LIBRARY_PATH=$T/$dir CUDA_HOME=/nonexistent $V >"sim-$dir.plain" 2>/dev/null; want_rc=$?
    want_out="sim-$dir.plain"
    same "sim-$dir" LD_LIBRARY_PATH=$T/$dir CUDA_HOME=/nonexistent DLHOOK_OUTPUT="$T/tr-$dir/" $V
  done
fi
echo "$faults faults injected, program unchanged in each"
echo ok
