# README.md's settings table is the one generated from the table of DLHOOK_* settings
# (preload/dlh_settings.def, printed by tests/cli/settings_doc.c): a setting added, removed or
# changed there and not in the README (or the other way round) fails here. `make settings-doc`
# rewrites the README's table.
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/bin/settings_doc"
"$BUILD/tests/bin/settings_doc" >want.md || fail "settings_doc failed"
sed -n '/^<!-- settings: generated/,/^<!-- end of settings -->/p' "$ROOT/README.md" | sed '1d;$d' >have.md
[ -s have.md ] || fail "README.md has no generated settings table (markers missing)"
diff -u have.md want.md >d.txt || { cat d.txt; fail "README.md's settings table differs from preload/dlh_settings.def (make settings-doc)"; }
echo "$(grep -c '^| `DLHOOK_' want.md) settings documented, README in step"
echo ok
