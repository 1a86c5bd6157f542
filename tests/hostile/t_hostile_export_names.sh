# File names derived from traces: host names are sanitized by one rule (ASCII letters, digits,
# '-', '_', '.' not first; anything else '_'), so a name never hides a file, never holds a
# newline, quote or '<>', never leaves the output directory; and two traces whose names come
# out the same (hosts "node.1" and "node 1" with the same pid; the same host, pid and start
# millisecond) get distinct files instead of overwriting each other: kineto and tensorboard.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
D=$DLHOOK_BIN
H="$HOSTILE plain"
$H a.dlh --host node.1 --pid 7 || fail gen
$H b.dlh --host "node 1" --pid 7 || fail gen
$H c.dlh --host node_1 --pid 7 || fail gen
$H d.dlh --host same --pid 9 --start-ms 1700000000123 || fail gen
$H e.dlh --host same --pid 9 --start-ms 1700000000123 || fail gen
$H f.dlh --host ".hidden" --pid 1 || fail gen
$H g.dlh --host "$(printf 'evil\nname"<x>/../../up')" --pid 2 || fail gen
$H h.dlh --host "" --pid 3 || fail gen
"$D" export -q -f kineto -o k a.dlh b.dlh c.dlh d.dlh e.dlh f.dlh g.dlh h.dlh 2>err || fail "kineto: $(cat err)"
n=$(ls -A k | wc -l)
[ "$n" = 8 ] || fail "kineto: $n files for 8 traces: $(ls -A k)"
ls -A k | grep -q '^\.' && fail "kineto: hidden file: $(ls -A k)"
ls -A k | LC_ALL=C grep -q '[^A-Za-z0-9._-]' && fail "kineto: unsafe name: $(ls -A k)"
[ -z "$(find . -name '*.json.gz' ! -path './k/*')" ] || fail "kineto: a file outside k"
# each file holds its own trace: the host names of the files are those of the 8 inputs
python3 - k <<'PY2' || fail "kineto: a trace overwrote another"
import gzip, json, os, sys
d = sys.argv[1]
hosts = sorted(json.load(gzip.open(os.path.join(d, f)))["host_name"] for f in os.listdir(d))
want = sorted(["node.1", "node 1", "node_1", "same", "same", ".hidden",
               'evil\nname"<x>/../../up', "host"])  # an empty host is named "host"
assert hosts == want, hosts
PY2
"$D" export -q -f tensorboard -o tb a.dlh b.dlh c.dlh d.dlh e.dlh f.dlh g.dlh h.dlh 2>err || fail "tensorboard: $(cat err)"
run=$(ls tb/plugins/profile)
n=$(ls -A "tb/plugins/profile/$run" | wc -l)
[ "$n" = 8 ] || fail "tensorboard: $n files for 8 traces: $(ls -A "tb/plugins/profile/$run")"
ls -A "tb/plugins/profile/$run" | grep -q '^\.' && fail "tensorboard: hidden file"
ls -A "tb/plugins/profile/$run" | LC_ALL=C grep -q '[^A-Za-z0-9._-]' && fail "tensorboard: unsafe name"
# re-exporting into the same directory never replaces the earlier files
"$D" export -q -f kineto -o k a.dlh 2>err || fail "kineto again: $(cat err)"
[ "$(ls -A k | wc -l)" = 9 ] || fail "kineto again: $(ls -A k)"
echo ok
