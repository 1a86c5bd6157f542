# SVG flame graph and differential flame graph: valid XML (xmllint), interactive script,
# tooltips with value and percentage; `dlhook diff` folded output.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/export/common.sh"
$GEN a.dlh --steps 10 || fail gentrace
$GEN b.dlh --steps 10 --slow 3 || fail gentrace
"$DLHOOK_BIN" export -q -f svg --title 'GPU <time> & "stacks"' -o a.svg a.dlh || fail "export svg"
"$DLHOOK_BIN" export -q -f svg --title 'GPU <time> & "stacks"' -o a2.svg a.dlh || fail "export svg again"
cmp -s a.svg a2.svg || fail "two exports of the same trace differ (the colours must not depend on the run)"
grep -q '<script' a.svg || fail "no script"
grep -q 'function zoom' a.svg || fail "no zoom"
grep -q 'function search' a.svg || fail "no search"
grep -qF '<title>backward(float*) (13.00 us, ' a.svg || fail "no tooltip for the backward kernel: $(grep -c '<title>' a.svg) titles"
grep -q 'GPU &lt;time&gt; &amp; &quot;stacks&quot;' a.svg || fail "title not escaped"
"$DLHOOK_BIN" diff -q -o d.svg a.dlh b.dlh || fail "diff svg"
"$DLHOOK_BIN" diff -q -o d.folded a.dlh b.dlh || fail "diff folded"
grep -qxF 'main;train;backward;cudaLaunchKernel;backward(float*) 13000 39000' d.folded || fail "diff: $(cat d.folded)"
grep -qxF 'main;train;forward;cudaLaunchKernel;forward(float*) 21000 21000' d.folded || fail "diff: $(cat d.folded)"
grep -q 'rgb(255,' d.svg || fail "diff svg has no red (grown) frames"
grep -q 'before .*after' d.svg || fail "diff tooltips"
"$DLHOOK_BIN" diff -o x.svg a.dlh 2>err; [ $? = 2 ] || fail "diff with one trace must be a usage error"
need_cmd xmllint "Debian libxml2-utils"
xmllint --noout a.svg || fail "a.svg is not valid XML"
xmllint --noout d.svg || fail "d.svg is not valid XML"
echo ok
