# Decompression bombs: a 33 KB trace with one zstd frame of 1 GiB of zeros (with and without its
# size in the frame header), a frame of exactly the 64 MiB limit of empty packets, and 400 frames
# of 64 MiB of tiny packets (2 MB). Each subcommand reports the damage with its offset and exits
# 1 within bounded CPU time and memory, and every good event around the bomb is still read.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
for k in zeros zeros-nosize zeros-max tiny-many; do
  "$HOSTILE" $k $k.dlh || fail "hostile $k"
  echo "== $k: $(wc -c <$k.dlh) bytes"
  every_subcommand $k.dlh 1
  n=$(api_events $k.dlh)
  case $k in
    tiny-many) [ "$n" -ge 5 ] || fail "$k: $n API calls read, expected the 5 before the bomb" ;;
    *) [ "$n" = 10 ] || fail "$k: $n API calls read, expected 10 (5 before, 5 after the bomb)" ;;
  esac
done
"$DLHOOK_BIN" stats zeros.dlh 2>&1 >/dev/null | grep -q 'frame at offset [0-9]* holds 1073741824 bytes (limit 64 MiB)' ||
  fail "zeros: $("$DLHOOK_BIN" stats zeros.dlh 2>&1 >/dev/null)"
echo ok
