# Packets whose decoded form is far larger than their bytes: a StackDef of 60 Mi one-byte pcs
# (480 MiB decoded) in a frame under the frame limit, 3 Mi definitions of one string (over the
# definitions and packets budgets), 6,000 definitions of one 64 KiB name under distinct ids in
# a 58 KB file (375 MiB the command would keep; over the budget of definition bytes). Each subcommand reports it with its offset and exits 1,
# within bounded CPU time and memory; the good events before it are still read.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
for k in widepcs defs bigdefs; do
  "$HOSTILE" $k $k.dlh || fail "hostile $k"
  echo "== $k: $(wc -c <$k.dlh) bytes"
  every_subcommand $k.dlh 1
  n=$(api_events $k.dlh)
  [ "$n" -ge 5 ] || fail "$k: $n API calls read, expected at least the 5 before"
done
"$DLHOOK_BIN" dump widepcs.dlh 2>&1 >/dev/null | grep -q 'needs more than 32 MiB decoded' ||
  fail "widepcs: $("$DLHOOK_BIN" dump widepcs.dlh 2>&1 >/dev/null)"
[ "$(api_events widepcs.dlh)" = 10 ] || fail "widepcs: the events after the packet are lost"
echo ok
