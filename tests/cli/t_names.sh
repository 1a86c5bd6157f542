# Names a person can read (command/lib/names.c, docs/stats.md): PyTorch kernel names shortened
# to their base name and the template arguments that tell them apart, rows that would read alike
# kept apart, module paths cut from the outside in. names_test holds the cases and the expected
# short forms.
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/bin/names_test"
"$BUILD/tests/bin/names_test" >out.txt 2>err.txt || fail "$(cat err.txt)"
tail -n 1 out.txt
