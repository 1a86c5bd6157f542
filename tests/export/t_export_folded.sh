# folded flame graphs: GPU weights add up to the trace's GPU time (kernels alone to the total
# kernel time), launches of library calls are found through external correlation, the two-pass
# join handles GPU records written before their launches, cpu and bytes weights.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN g.dlh --threads 2 --steps 20 || fail "gentrace"
$GEN gf.dlh --steps 20 --gpu-first || fail "gentrace --gpu-first"
for tr in g.dlh gf.dlh; do
  "$DLHOOK_BIN" export -q -f folded -o out.folded "$tr" || fail "export folded $tr"
  kern=$(gpu_total "$tr" kernel)
  all=$(gpu_total "$tr" kernel,memcpy,memset)
  [ "$kern" -gt 0 ] || fail "no kernel time in $tr"
  sum=$(awk '{s += $NF} END {print s}' out.folded)
  [ "$sum" = "$all" ] || fail "$tr: folded GPU weights add up to $sum, trace GPU time is $all"
  ksum=$(grep -vE ';(Memcpy [A-Za-z]+|Memset) [0-9]+$' out.folded | awk '{s += $NF} END {print s}')
  [ "$ksum" = "$kern" ] || fail "$tr: kernel leaves add up to $ksum, total kernel time is $kern"
  grep -qF 'main;train;gemm_layer;cublasSgemm_v2;gemm(float const*, float const*, float*) ' out.folded ||
    fail "$tr: gemm kernel not under its cuBLAS call: $(cat out.folded)"
  grep -q 'launch not found' out.folded && fail "$tr: unresolved launches: $(cat out.folded)"
  # every line: frames, a space, an integer
  grep -qvE '^[^ ].* [0-9]+$' out.folded && fail "$tr: malformed folded line"
done
# the mktrace trace: kernels with and without a launching call
"$BUILD/tests/bin/mktrace" m.dlh || fail mktrace
"$DLHOOK_BIN" export -q -f folded -o m.folded m.dlh || fail "export mktrace"
[ "$(awk '{s += $NF} END {print s}' m.folded)" = "$(gpu_total m.dlh kernel,memcpy,memset)" ] ||
  fail "mktrace: weights differ: $(cat m.folded)"
grep -qxF 'cuLaunchKernel;kernel(float*, int) 50000' m.folded || fail "mktrace: $(cat m.folded)"
# cpu: time in the outermost calls (NVTX ranges excluded)
"$DLHOOK_BIN" export -q -f folded --weight cpu -o cpu.folded g.dlh || fail "export cpu"
grep -qx 'main;train;sync;cudaStreamSynchronize 200000' cpu.folded || fail "cpu: $(cat cpu.folded)"
grep -q nvtx cpu.folded && fail "cpu weights include NVTX ranges"
# bytes: allocations (1 MiB each) and copies (4096) and memsets (256)
"$DLHOOK_BIN" export -q -f folded --weight bytes -o b.folded g.dlh || fail "export bytes"
grep -qx "main;train;alloc_buffers;cudaMalloc $((40 * 1048576))" b.folded || fail "bytes: $(cat b.folded)"
grep -qx "main;train;load_batch;cudaMemcpyAsync;Memcpy HtoD $((40 * 4096))" b.folded || fail "bytes: $(cat b.folded)"
grep -qx "main;train;zero_grad;cudaMemsetAsync;Memset $((40 * 256))" b.folded || fail "bytes: $(cat b.folded)"
# several traces add up
"$DLHOOK_BIN" export -q -f folded -o two.folded g.dlh gf.dlh || fail "export two"
[ "$(awk '{s += $NF} END {print s}' two.folded)" = "$(( $(gpu_total g.dlh kernel,memcpy,memset) + $(gpu_total gf.dlh kernel,memcpy,memset) ))" ] ||
  fail "two traces do not add up"
echo ok
