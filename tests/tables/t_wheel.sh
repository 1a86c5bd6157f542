# The wheel of `make wheel` in a fresh venv: pip install dist/dlhook-*.whl (numpy, pyarrow and
# duckdb come from the package index as its requirements), then its `dlhook` command records a
# program on the simulated CUDA stack, `import dlhook; dlhook.tables(TRACE).calls.num_rows`
# counts its calls (also from the venv's python with no venv bin/ on PATH), dlhook.sql answers,
# a bad trace's error carries the command's message, and the wheel's binaries need only libc and ld-linux
# (auditwheel show, when installed, calls it manylinux). Skips without the wheel or the index.
# run-tests: serial timeout=600
. "$ROOT/tests/lib.sh"
whl=$(ls "$ROOT"/dist/dlhook-*.whl 2>/dev/null | head -n 1)
[ -n "$whl" ] || skip "no dist/dlhook-*.whl (make wheel)"
need "$BUILD/examples/train"
python3 -m venv "$T/venv" || skip "python3 -m venv failed"
"$T/venv/bin/pip" install -q --disable-pip-version-check "$whl" >pip.out 2>&1 ||
  { tail -5 pip.out; grep -qi "connection\|resolve\|network" pip.out && skip "no package index"; fail "pip install failed"; }
PATH=$T/venv/bin:$PATH
[ "$(command -v dlhook)" = "$T/venv/bin/dlhook" ] || fail "no dlhook command in the venv"
unzip -l "$whl" | grep -q "dlhook/_bin/libdlhook.so" || fail "no libdlhook.so in the wheel"
so=$(ls "$T"/venv/lib/python3*/site-packages/dlhook/_bin/libdlhook.so)
for b in "$so" "$(dirname "$so")/dlhook"; do
  n=$(readelf -d "$b" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | grep -v '^libc.so.6$\|^ld-linux-x86-64.so.2$\|^libm.so.6$\|^libpthread.so.0$\|^libdl.so.2$')
  [ -z "$n" ] || fail "$b needs $n"
done
cd "$T"
SIMCUDA_HOST_COMPUTE=0 DLHOOK_QUIET=1 dlhook record -o t -- "$SIMRUN" "$BUILD/examples/train" --steps 3 >rec.out 2>&1 ||
  { cat rec.out; fail "dlhook record failed"; }
n=$(python -c "import dlhook; print(dlhook.tables('t').calls.num_rows)") || fail "dlhook.tables failed"
[ "$n" -gt 10 ] || fail "dlhook.tables('t').calls has $n rows"
m=$(python -c "
import dlhook, glob
d = dlhook.tables('t').path
print(dlhook.sql(d, 'SELECT count(*) AS n FROM calls').column('n')[0].as_py())") || fail "dlhook.sql failed"
[ "$m" = "$n" ] || fail "dlhook.sql counts $m calls, tables $n"
# the venv's python with neither the venv's bin/ nor the tree's build/ on PATH (a Jupyter kernel,
# `venv/bin/python script.py`): the package runs the dlhook it ships; twice, since importing the
# module dlhook.tables once shadowed the function of that name
k=$(env -u DLHOOK_BIN PATH=/usr/bin:/bin "$T/venv/bin/python" -c "
import dlhook
dlhook.tables('t')
print(dlhook.tables('t').calls.num_rows)") || fail "dlhook.tables without the venv on PATH failed"
[ "$k" = "$n" ] || fail "dlhook.tables without the venv on PATH: $k calls, $n with it"
# a trace that is not one: the error says what the command said, not only that it failed
echo garbage >bad.dlh
e=$(env -u DLHOOK_BIN PATH=/usr/bin:/bin "$T/venv/bin/python" -c "
import dlhook
try:
    dlhook.tables('bad.dlh')
except RuntimeError as e:
    print(e)" 2>&1)
echo "$e" | grep -q 'bad.dlh: not a dlhook trace' || fail "the error hides the cause: $e"
if command -v auditwheel >/dev/null 2>&1 || "$T/venv/bin/pip" install -q auditwheel >/dev/null 2>&1; then
  aw=$(command -v auditwheel || echo "$T/venv/bin/auditwheel")
  "$aw" show "$whl" >aw.txt 2>&1 || { cat aw.txt; fail "auditwheel show failed"; }
  grep -q 'manylinux_' aw.txt || { cat aw.txt; fail "auditwheel: not manylinux"; }
  sed -n '1,3p' aw.txt
fi
echo ok "($n calls)"
