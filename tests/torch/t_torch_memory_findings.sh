#!/bin/sh
# run-tests: timeout=900
# t_torch_memory_findings: `dlhook advise` names planted memory problems of
# tests/torch/memplant_py.py, recorded with --torch-memory, first, at their line, and their tuned
# twins have none:
#   frag   batches longer every step: PyTorch's default caching allocator (memfind.c's model)
#          reserves new segments while the old ones idle: memory-fragmentation at FRAG-ALLOC,
#          reserved >= 1.5x allocated at the peak; frag-tuned (padded to one length): none
#   oom    every step's 6 GiB output kept until an allocation fails: out-of-memory at
#          OOM-ALLOC with the request (6144 MiB), what was live by place (that line) and the
#          largest free block (smaller than the request); oom-tuned (keeps the last): none
. "$ROOT/tests/torch/common.sh"
cd "$T" || exit 1
S=$ROOT/tests/torch/memplant_py.py
fline=$(grep -n '# FRAG-ALLOC' "$S" | tail -n 1 | cut -d: -f1)
oline=$(grep -n '# OOM-ALLOC' "$S" | tail -n 1 | cut -d: -f1)
for m in frag frag-tuned oom oom-tuned; do
  "$DLHOOK_BIN" record --sim --torch-memory -o "$m" -- "$PY" "$S" "$m" >"$m.out" 2>"$m.err" ||
    fail "record $m: $(tail -n 5 "$m.err")"
  grep -qx done "$m.out" || fail "$m: no 'done': $(cat "$m.out")"
  "$DLHOOK_BIN" advise --json "$(one_trace "$m")" >"$m.json" || fail "advise $m"
done
pyassert frag.json "j['findings'][0]['class'] == 'memory-fragmentation'"
pyassert frag.json "j['findings'][0]['place'] == '$S:$fline'"
pyassert frag.json "(lambda d: float(d.split(' MiB reserved')[0].split()[-1]) >= 1.5 * float(d.split(' MiB of tensors')[0].split()[-1]))(j['findings'][0]['evidence']['detail'])"
pyassert frag-tuned.json "not [f for f in j['findings'] if f['class'] in ('memory-fragmentation', 'out-of-memory')]"
grep -q 'out of memory after' oom.out || fail "oom: the planted program did not run out of memory"
pyassert oom.json "j['findings'][0]['class'] == 'out-of-memory'"
pyassert oom.json "j['findings'][0]['place'] == '$S:$oline'"
pyassert oom.json "'6144.0 MiB requested' in j['findings'][0]['evidence']['detail']"
pyassert oom.json "'live by place: $S:$oline ' in j['findings'][0]['evidence']['detail']"
pyassert oom.json "float(j['findings'][0]['evidence']['detail'].split('largest free block ')[1].split(' MiB')[0]) < 6144"
pyassert oom-tuned.json "not [f for f in j['findings'] if f['class'] in ('memory-fragmentation', 'out-of-memory')]"
"$DLHOOK_BIN" advise "$(one_trace frag)" >frag.txt || fail "advise text"
grep -q '^  1\. memory-fragmentation ' frag.txt || fail "text: $(cat frag.txt)"
exit 0
