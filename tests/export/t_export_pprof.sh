# pprof: gzipped profile.proto read by `go tool pprof`.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --steps 10 || fail gentrace
"$DLHOOK_BIN" export -q -f pprof -o g.pb.gz g.dlh || fail "export pprof"
[ "$(head -c 2 g.pb.gz | od -An -tx1 | tr -d ' ')" = "1f8b" ] || fail "not gzip"
"$DLHOOK_BIN" export -q -f pprof --weight cpu -o c.pb.gz g.dlh || fail "export pprof cpu"
need_cmd go "Debian golang-go"
HOME=$T GOCACHE=$T/gocache GOFLAGS=-mod=mod go tool pprof -raw g.pb.gz >raw.txt 2>err.txt ||
  fail "go tool pprof failed: $(cat err.txt)"
grep -q 'gpu_ops/count gpu_time/nanoseconds' raw.txt || fail "sample types: $(head -5 raw.txt)"
HOME=$T GOCACHE=$T/gocache go tool pprof -top -unit=ns -sample_index=gpu_time g.pb.gz >top.txt 2>&1 ||
  fail "pprof -top: $(cat top.txt)"
cat top.txt
all=$(gpu_total g.dlh kernel,memcpy,memset)
grep -q "of ${all}ns total" top.txt || fail "GPU total should be ${all}ns"
grep -qE '^ +13000ns .*backward' top.txt || fail "backward kernels should be 13000ns"
HOME=$T GOCACHE=$T/gocache go tool pprof -top -sample_index=cpu_time c.pb.gz >ctop.txt 2>&1 || fail "pprof cpu: $(cat ctop.txt)"
grep -q 'cudaStreamSynchronize' ctop.txt || fail "cpu profile: $(cat ctop.txt)"
echo ok
