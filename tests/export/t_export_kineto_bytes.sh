# kineto: the JSON is byte-for-byte what it was (the release before issue 49's faster writer,
# d806e6a, wrote these bytes): hand-written number formatting ("%.17g" of the occupancy and
# bandwidth figures, integers), cached event heads, kernel args and names, correlation id
# tables. Three synthetic traces: ranks with NCCL collectives, 40 k events of 4 threads with the
# GPU records before their calls, 20 k events with polling; --no-gzip, and gzip unpacked.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
need_cmd sha256sum coreutils
$GEN a.dlh --rank 0 --world 2 --steps 6 --coll-late 100,200 || fail gentrace
$GEN b.dlh --events 40000 --threads 4 --gpu-first || fail gentrace
$GEN c.dlh --events 20000 --threads 2 --poll 3 || fail gentrace
check() { # check TRACE SHA256
  rm -rf plain gz
  "$DLHOOK_BIN" export -q -f kineto --no-gzip -o plain "$1" || fail "export $1"
  "$DLHOOK_BIN" export -q -f kineto -o gz "$1" || fail "export $1 (gzip)"
  got=$(sha256sum plain/*.pt.trace.json | cut -c1-64)
  [ "$got" = "$2" ] || fail "$1: JSON changed (sha256 $got, expected $2)"
  zcat gz/*.pt.trace.json.gz | cmp -s - plain/*.pt.trace.json || fail "$1: gzip holds other JSON"
}
check a.dlh 16abbbe717e4e183b90dddc907baa37fe05fbedb6a5b10db48ba9318ce1863cb
check b.dlh 8d6bdd94bef43900abea69ffec3cdfd19aa2bb947604fea7a854338e4593d385
check c.dlh e3d4b98fbf96cd39652a6f2099db49bc5e78abd7cc459b8f277b8f60b8d232bf
echo "ok"
