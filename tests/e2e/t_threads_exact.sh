# 8 threads x 100,000 calls: nothing lost, nothing dropped.
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/progs/threads
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
traced "$T/tr" "$prog" 8 100000 >out.txt || fail "program failed"
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" stats --json "$tr" >stats.json || fail "stats failed"
expect_calls stats.json cudaGetDevice=800000
pyassert stats.json 'j["dropped"] == 0'
ls -l "$tr"
python3 -c "import os,sys; print('bytes per call: %.2f' % (os.path.getsize(sys.argv[1]) / 800000))" "$tr"
echo ok
