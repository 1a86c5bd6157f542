# The analyses' sorts (command/lib/util.c: rd_sort_pairs, rd_sort_by_key): the same order as a
# stable reference sort on every shape of input they meet (sort_test holds the cases).
. "$ROOT/tests/lib.sh"
need "$BUILD/tests/bin/sort_test"
"$BUILD/tests/bin/sort_test" >out.txt 2>err.txt || fail "$(cat err.txt)"
cat out.txt
