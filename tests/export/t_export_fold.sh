# --fold op|module|line on a trace without PyTorch frames: every call goes under one
# "[no operator]" / "[no module]" / "[no user line]" frame, weights keep their totals, the
# kernel (GPU weight) or API function (cpu) stays the leaf; diff takes --fold too, a bad value
# is a usage error. (The PyTorch layers themselves come from torch.c, as dlhook stats shows.)
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --threads 2 --steps 20 || fail "gentrace"
all=$(gpu_total g.dlh kernel,memcpy,memset)
for m in op:operator module:module line:'user line'; do
  fold=${m%%:*} none="[no ${m#*:}]"
  "$DLHOOK_BIN" export -q -f folded --fold "$fold" -o "$fold.folded" g.dlh || fail "export --fold $fold"
  sum=$(awk '{s += $NF} END {print s}' "$fold.folded")
  [ "$sum" = "$all" ] || fail "--fold $fold: weights add up to $sum, trace GPU time is $all"
  grep -qvF "$none;" "$fold.folded" && fail "--fold $fold: a stack outside $none: $(cat "$fold.folded")"
  grep -qF "$none;gemm(float const*, float const*, float*) " "$fold.folded" ||
    fail "--fold $fold: the kernel is not the leaf: $(cat "$fold.folded")"
done
"$DLHOOK_BIN" export -q -f folded --fold=op --weight cpu -o cpu.folded g.dlh || fail "export cpu"
grep -qx '\[no operator\];cudaStreamSynchronize [0-9]*' cpu.folded || fail "cpu: $(cat cpu.folded)"
"$DLHOOK_BIN" export -q -f svg --fold module -o m.svg g.dlh || fail "svg --fold module"
grep -qF '[no module]' m.svg || fail "svg: no [no module] frame"
"$DLHOOK_BIN" diff -q --fold op -o d.folded g.dlh g.dlh || fail "diff --fold op"
grep -qvF '[no operator];' d.folded && fail "diff --fold op: $(cat d.folded)"
"$DLHOOK_BIN" export -q -f folded --fold bogus -o x.folded g.dlh 2>err && fail "--fold bogus accepted"
grep -q "fold" err || fail "--fold bogus: $(cat err)"
echo ok
