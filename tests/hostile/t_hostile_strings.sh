# Strings from the trace reach every output valid for it: bytes that are not UTF-8 become U+FFFD
# in the SVG (parsable XML), speedscope/kineto JSON, pprof, XPlane and Perfetto (readable with
# proto3 readers, which refuse invalid UTF-8; the upstream pprof and xplane schemas are proto3); terminal control sequences in names (CR,
# erase line, OSC title, C1 CSI) are shown escaped by dlhook stats, never sent; module names cut
# to 60 bytes end at a character boundary.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/hostile/common.sh"
D=$DLHOOK_BIN
"$HOSTILE" badstr s.dlh || fail "hostile badstr"
every_subcommand s.dlh 0
utf8() { python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")' || fail "$1: not UTF-8"; }
# terminal: no control character but newline, valid UTF-8, the sequences shown escaped
for o in stats memory; do
  LC_ALL=C tr -d '\n' <$o.out | LC_ALL=C grep -q '[[:cntrl:]]' && fail "$o: control characters reach the terminal"
  utf8 $o <$o.out
done
grep -q 'evil\\x0d\\x1b\[2K\\x1b\]0;pwned\\x07 call' stats.out || fail "stats: escapes: $(grep evil stats.out)"
# SVG: well-formed XML with the replacement character
if command -v xmllint >/dev/null; then xmllint --noout out.svg || fail "svg is not well-formed"; fi
python3 -c 'import xml.dom.minidom, sys; xml.dom.minidom.parse("out.svg")' || fail "svg: python XML parser"
grep -q "$(printf '\357\277\275')" out.svg || fail "svg: no U+FFFD"
grep -q '&lt;svg onload' out.svg || fail "svg: markup not escaped"
# JSON outputs: strict UTF-8
utf8 speedscope <out.speedscope.json
python3 -c 'import json; json.load(open("out.speedscope.json", encoding="utf-8"))' || fail speedscope
for f in kineto/*.json.gz; do gzip -dc "$f" | utf8 kineto; done
"$D" dump s.dlh | utf8 dump
# module name cut at 60 bytes, at a character boundary: no U+FFFD in the folded name
"$D" export -q -f folded --weight cpu -o cpu.folded s.dlh || fail "folded cpu"
utf8 folded <cpu.folded
grep -q ";libx\{56\}+0x[0-9a-f]*;" cpu.folded || fail "module name not cut before the euro sign: $(cat cpu.folded)"
# proto3 readers: the upstream schemas are proto3 (they refuse strings that are not UTF-8)
if command -v protoc >/dev/null; then
  p3() { sed -e 's/^syntax = "proto2";/syntax = "proto3";/' -e 's/\[default *= *[^]]*\]//' \
             -e 's/^\( *\)required /\1/' "$ROOT/command/proto/$1" >"$1"; }
  p3 pprof.proto; p3 xplane.proto; p3 perfetto_trace.proto
  pkg() { sed -n 's/^package \(.*\);/\1/p' "$ROOT/command/proto/$1"; }
  gzip -dc out.pb.gz | protoc --proto_path=. --decode="$(pkg pprof.proto).Profile" pprof.proto >pprof.txt 2>perr ||
    fail "pprof under proto3: $(cat perr)"
  pb=$(find tb -name '*.xplane.pb' | head -n 1)
  protoc --proto_path=. --decode="$(pkg xplane.proto).XSpace" xplane.proto <"$pb" >xplane.txt 2>xerr ||
    fail "xplane under proto3: $(cat xerr)"
  protoc --proto_path=. --decode="$(pkg perfetto_trace.proto).Trace" perfetto_trace.proto <out.pftrace >pf.txt 2>perr ||
    fail "perfetto under proto3: $(cat perr)"
  grep -q 'cudaBad' pprof.txt && grep -q 'cudaBad' xplane.txt && grep -q 'cudaBad' pf.txt ||
    fail "names missing in pprof/xplane/perfetto"
else
  echo "(protoc missing: proto3 decoding not checked)"
fi
echo ok
