# docs/advise.md's table of finding classes is the one written from the class descriptors of
# command/lib/findings/ (`dlhook help --advise-classes`): a class added, removed or changed there
# and not in docs/advise.md (or the other way round) fails here; `make advise-doc` rewrites the
# table. `dlhook advise --help` (and so its manual page, tests/cli/t_man_pages.sh) lists every
# class of the table, one line each, in the same order.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
"$DLHOOK_BIN" help --advise-classes >want.md || fail "dlhook help --advise-classes failed"
sed -n '/^<!-- classes: generated/,/^<!-- end of classes -->/p' "$ROOT/docs/advise.md" | sed '1d;$d' >have.md
[ -s have.md ] || fail "docs/advise.md has no generated class table (markers missing)"
diff -u have.md want.md >d.txt || { cat d.txt; fail "the class table of docs/advise.md differs from the descriptors (make advise-doc)"; }
sed -n 's/^| `\([a-z0-9-]*\)` |.*/\1/p' want.md >table.ids
[ "$(wc -l <table.ids)" -ge 15 ] || fail "the table has $(wc -l <table.ids) classes"
"$DLHOOK_BIN" advise --help >help.txt || fail "advise --help"
sed -n '/^Classes (/,/^options:/p' help.txt | sed -n 's/^ \([a-z0-9-]*\): .*/\1/p' >help.ids
diff -u table.ids help.ids >h.txt || { cat h.txt; fail "advise --help lists other classes than the table"; }
echo "$(wc -l <table.ids) classes, docs/advise.md and advise --help in step"
echo ok
