# The manual pages in docs/man/ (`make man`, installed by `make install`) are what `dlhook help
# --man CMD` writes from each command's option table, one page per command and one for dlhook:
# every option that `dlhook CMD --help` lists is in the page's OPTIONS, every option there is
# accepted by the command (it may reject the value given here, never the option), and each page
# renders without a warning from groff. A page out of step fails here until `make man` rewrites it.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
command -v groff >/dev/null 2>&1 || skip "groff is not installed (scripts/bootstrap-deps test installs groff-base)"
command -v col >/dev/null 2>&1 || skip "col is not installed (bsdextrautils)"
D=$DLHOOK_BIN
MAN=$ROOT/docs/man
cmds=$("$D" help --commands) || fail "dlhook help --commands failed"
[ -n "$cmds" ] || fail "dlhook help --commands lists nothing"

# The option names at the start of the lines of stdin (after `indent` spaces): "-o, --output DIR
# text" gives -o and --output.
opt_names() {
  awk -v indent="$1" '
    substr($0, 1, indent) ~ /^ *$/ && substr($0, indent + 1, 1) == "-" {
      for (i = 1; i <= NF; i++) { f = $i; sub(/,$/, "", f); sub(/\[=.*$/, "", f); if (f !~ /^-/) break; print f }
    }' | sort -u
}

for p in "$MAN"/*.1; do # every page belongs to a command
  n=$(basename "$p" .1)
  [ "$n" = dlhook ] && continue
  echo "$cmds" | grep -qx "${n#dlhook-}" || fail "$p: there is no command '${n#dlhook-}'"
done

checked=0
for c in dlhook $cmds; do
  if [ "$c" = dlhook ]; then page=$MAN/dlhook.1; "$D" --help >help.txt
  else page=$MAN/dlhook-$c.1; "$D" "$c" --help >help.txt; fi
  [ -f "$page" ] || fail "no manual page $page (make man)"
  "$D" help --man "$c" >want.1 || fail "dlhook help --man $c failed"
  cmp -s want.1 "$page" || { diff -u "$page" want.1 | head -n 30; fail "$page is not what dlhook help --man $c writes (make man)"; }
  groff -man -ww -z "$page" 2>warn.txt
  [ -s warn.txt ] && { cat warn.txt; fail "$page: groff warns"; }
  groff -man -Tascii "$page" 2>/dev/null | col -b >page.txt
  sed -n '/^OPTIONS/,/^[A-Z]/p' page.txt | opt_names 7 >man.opts
  opt_names 2 <help.txt >help.opts
  [ -s help.opts ] || fail "$c --help lists no option"
  missing=$(comm -23 help.opts man.opts | tr '\n' ' ')
  [ -z "$missing" ] || fail "$page lacks options of $c --help: $missing"
  extra=$(comm -13 help.opts man.opts | tr '\n' ' ')
  [ -z "$extra" ] || fail "$page lists options $c --help does not: $extra"
  [ "$c" = dlhook ] && set -- || set -- "$c"
  for o in $(cat man.opts); do
    # --help ends the parse before the command runs; the value (x) may be refused, the option not
    case $o in
      --*) "$D" "$@" "$o=x" --help >out.txt 2>err.txt ;;
      *) "$D" "$@" "$o" x --help >out.txt 2>err.txt ;;
    esac
    grep -q "unknown option" err.txt && fail "dlhook $c does not accept $o of its manual page: $(cat err.txt)"
    checked=$((checked + 1))
  done
done
echo "$(echo $cmds | wc -w) commands and dlhook: pages in step, render cleanly; $checked options accepted"
echo ok
