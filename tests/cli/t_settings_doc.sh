# The settings table of docs/settings.md is the one generated from the table of DLHOOK_*
# settings (preload/dlh_settings.def, printed by tests/cli/settings_doc.c): a setting added,
# removed or changed there and not in docs/settings.md (or the other way round) fails here.
# `make settings-doc` rewrites the table.
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/bin/settings_doc"
"$BUILD/tests/bin/settings_doc" >want.md || fail "settings_doc failed"
sed -n '/^<!-- settings: generated/,/^<!-- end of settings -->/p' "$ROOT/docs/settings.md" | sed '1d;$d' >have.md
[ -s have.md ] || fail "docs/settings.md has no generated settings table (markers missing)"
diff -u have.md want.md >d.txt || { cat d.txt; fail "the settings table of docs/settings.md differs from preload/dlh_settings.def (make settings-doc)"; }
echo "$(grep -c '^| `DLHOOK_' want.md) settings documented, docs/settings.md in step"
echo ok
