#!/bin/sh
# run-tests: timeout=600
# t_torch_memory_advise: `dlhook advise` names a planted memory leak (tests/torch/memleak_py.py
# leak: a list that keeps one 2 MiB activation per step, recorded with --torch-memory) as the
# first finding, memory-leak, at the line that allocated the kept activation, with the growth
# over the steps; the tuned twin (it keeps loss.detach()) has no memory-leak finding.
. "$ROOT/tests/torch/common.sh"
cd "$T" || exit 1
S=$ROOT/tests/torch/memleak_py.py
line=$(grep -n '# LEAK-ALLOC' "$S" | head -n 1 | cut -d: -f1)
[ -n "$line" ] || fail "no LEAK-ALLOC in $S"
for m in leak tuned; do
  "$DLHOOK_BIN" record --sim --torch-memory -o "$m" -- "$PY" "$S" "$m" >"$m.out" 2>"$m.err" ||
    fail "record $m: $(tail -n 5 "$m.err")"
  grep -qx done "$m.out" || fail "$m: no 'done': $(cat "$m.out")"
  "$DLHOOK_BIN" advise --json "$(one_trace "$m")" >"$m.json" || fail "advise $m"
done
pyassert leak.json "j['findings'][0]['class'] == 'memory-leak'"
pyassert leak.json "j['findings'][0]['place'] == '$S:$line'"
pyassert leak.json "float(j['findings'][0]['evidence']['detail'].split('grew by ')[1].split(' MiB')[0]) >= 10"
pyassert tuned.json "not [f for f in j['findings'] if f['class'] == 'memory-leak']"
"$DLHOOK_BIN" advise "$(one_trace leak)" >leak.txt || fail "advise text"
grep -q '^  1\. memory-leak ' leak.txt || fail "text: $(cat leak.txt)"
exit 0
