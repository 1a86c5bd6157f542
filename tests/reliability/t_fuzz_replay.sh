# Reader hardening: records a corpus of real traces (fuzz/make-corpus), then runs `dlhook dump`,
# `dlhook stats` and every exporter over the corpus and 10,000 deterministic mutations of it
# (truncation, flipped bytes, packets mutated inside valid zstd frames, frames duplicated,
# dropped, swapped, damaged headers, garbage appended or inserted, decompression bombs and
# well-formed frames of hostile packets inserted: stacks over 256 frames, strings over 64 KiB,
# batches over 65,536 events, empty packets, colliding ids, names that are not UTF-8 or hold
# terminal control sequences) with fuzz/replay: no crash,
# no hang (20 s limit per run), exit 0 or 1, exit 1 with a message, and every event of the
# undamaged prefix still read. Two replay processes share the inputs. REL_FUZZ_N overrides 10000.
# run-tests: timeout=600 (about 100 s on an idle 2-core machine; the bound is for a loaded one)
. "$ROOT/tests/lib.sh"
need "$BUILD/fuzz/replay"; need "$BUILD/tests/reliability/victim"; need "$DLHOOK_LIB"
N=${REL_FUZZ_N:-10000}
BUILD="$BUILD" sh "$ROOT/fuzz/make-corpus" "$T/corpus" || fail "could not record the corpus"
ls -l "$T"/corpus/*.dlh
half=$((N / 2))
mkdir w1 w2
"$BUILD/fuzz/replay" -s 0 -n $half -w "$T/w1" "$T"/corpus/*.dlh >r1.txt 2>e1.txt & p1=$!
"$BUILD/fuzz/replay" -s $half -n $((N - half)) -w "$T/w2" "$T"/corpus/*.dlh >r2.txt 2>e2.txt; rc2=$?
wait $p1; rc1=$?
cat r1.txt r2.txt
head -n 20 e1.txt e2.txt
[ $rc1 = 0 ] && [ $rc2 = 0 ] || fail "replay found failures (inputs kept as $T/w*/fail-*.dlh)"
echo "$N mutated traces, no crash, no hang, prefixes read"
echo ok
