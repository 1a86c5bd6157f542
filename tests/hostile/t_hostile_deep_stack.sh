# Recursion: a ~20 KB trace with one 200,000-frame stack once crashed export -f svg/folded,
# report and diff with a stack overflow. The reader refuses stacks over 256 frames (the
# recorder's DLHOOK_STACK_DEPTH maximum) as damage, and the flame graph code walks its trees
# without recursion: a stack of exactly 256 frames exports correctly in every format. Names that
# demangle through 60,000 levels of nesting (the C++ demangler recurses) stay within its limit.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
"$HOSTILE" deepstack deep.dlh || fail "hostile deepstack"
every_subcommand deep.dlh 1
grep -q 'a stack of 200000 frames (limit 256)' dump.err || fail "deepstack: $(cat dump.err)"
[ "$(api_events deep.dlh)" = 13 ] || fail "deepstack: events lost"
# the deepest legal stack: correct output, exit 0
"$HOSTILE" stack256 s256.dlh || fail "hostile stack256"
every_subcommand s256.dlh 0
"$DLHOOK_BIN" export -q -f folded --weight cpu -o cpu.folded s256.dlh || fail "folded cpu"
# 3 calls on the 256-frame stack: one line with 256 frames + the function, weight 3000
awk '{ n = split($1, f, ";"); if (n == 257 && $2 == 3000) ok = 1 } END { exit !ok }' cpu.folded ||
  fail "no 257-frame line of weight 3000: $(awk '{print split($1, f, ";"), $2}' cpu.folded)"
xmllint --noout out.svg 2>/dev/null || { command -v xmllint >/dev/null && fail "svg unparsable"; }
python3 -c 'import json,sys; json.load(open("out.speedscope.json"))' || fail "speedscope JSON"
# deeply nested mangled names: the demangler gives up (the raw name is shown), no crash
"$HOSTILE" mangled m.dlh || fail "hostile mangled"
every_subcommand m.dlh 0
grep -q '_Z1fPPPP' stats.out || fail "mangled: $(head -c 300 stats.out)"
echo ok
