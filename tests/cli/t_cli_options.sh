# Every option of every command takes its value in each of the forms of the one option parser
# (command/lib/opts.c): `--opt=V` and `--opt V`, and `-o V` and `-oV` for a short option, read
# alike (the same exit status and message: --help after it shows the help, or the command rejects
# the value V the same way). An option that takes no value refuses `--opt=V`; an abbreviated long
# option is unknown; `record` leaves the options of the program it runs alone.
. "$ROOT/tests/lib.sh"
need "$DLHOOK_BIN"
D=$DLHOOK_BIN

# run NAME ARGS...: exit status and stderr of dlhook ARGS, in NAME.rc and NAME.err
run() { n=$1; shift; "$D" "$@" >"$n.out" 2>"$n.err"; echo $? >"$n.rc"; }
same() { # same WHAT A B: runs A and B read alike
  cmp -s a.rc b.rc && cmp -s a.err b.err || fail "$1: $(cat a.rc) '$(cat a.err)' vs $(cat b.rc) '$(cat b.err)'"
  grep -q "unknown option\|needs a value" a.err && fail "$1: $(cat a.err)"
  return 0
}

checked=0
for c in $("$D" help --commands); do
  # the option lines of --help: "  -o, --output DIR  ..." or "  --json  ..."
  "$D" "$c" --help | grep -E '^  -' >opts.txt
  while read -r first second third rest; do
    short= long= arg=
    case $first in
      --*) long=$first; arg=$second ;;
      -?,) short=${first%,}; long=$second; arg=$third ;;
    esac
    [ "$long" = --help ] && continue
    case $arg in [A-Z]*) ;; *) arg= ;; esac
    case $long in
      *\[=*\]) # an optional value: --opt alone, or --opt=value, never --opt value
        long=${long%%\[=*}
        run a "$c" "$long" --help
        [ "$(cat a.rc)" = 0 ] || fail "$c $long --help (optional value): exit $(cat a.rc): $(cat a.err)"
        run a "$c" "$long=x" --help
        [ "$(cat a.rc)" = 0 ] || fail "$c $long=x --help (optional value): exit $(cat a.rc): $(cat a.err)"
        checked=$((checked + 1))
        continue ;;
    esac
    if [ -n "$arg" ]; then
      run a "$c" "$long=x" --help; run b "$c" "$long" x --help; same "$c $long=x / $long x"
      if [ -n "$short" ]; then
        run a "$c" "$short" x --help; run b "$c" "${short}x" --help; same "$c $short x / ${short}x"
        run b "$c" "$long" x --help; same "$c $short x / $long x"
      fi
      run a "$c" "$long"; grep -q "needs a value" a.err || fail "$c $long without a value: $(cat a.err)"
    else
      run a "$c" "$long" --help
      [ "$(cat a.rc)" = 0 ] || fail "$c $long --help: exit $(cat a.rc): $(cat a.err)"
      run a "$c" "$long=x" --help
      grep -q "takes no value" a.err || fail "$c $long=x: $(cat a.err)"
    fi
    # a prefix of the name is not the option
    run a "$c" "$(echo "$long" | cut -c1-4)" --help
    [ "$long" = "$(echo "$long" | cut -c1-4)" ] || grep -q "unknown option" a.err || fail "$c: abbreviation of $long accepted"
    checked=$((checked + 1))
  done <opts.txt
done
[ "$checked" -ge 20 ] || fail "only $checked options found in the commands' --help"

# enumerations: a value of the list is taken in either form, any case; others are refused
run a export --format=KINETO --help; [ "$(cat a.rc)" = 0 ] || fail "--format=KINETO: $(cat a.err)"
run a export -f nope -o x m.dlh; [ "$(cat a.rc)" = 2 ] && grep -q "unknown format 'nope'" a.err || fail "-f nope: $(cat a.err)"
run a record --capture-range=nvtx:step:3 --help; [ "$(cat a.rc)" = 0 ] || fail "nvtx:NAME:N: $(cat a.err)"
run a record --capture-range nvtx: true; [ "$(cat a.rc)" = 2 ] || fail "nvtx: without a name accepted"
run a dump --type=kernel,NOPE x.dlh; [ "$(cat a.rc)" = 2 ] && grep -q "'NOPE'" a.err || fail "--type list: $(cat a.err)"
# record: the program's options are the program's (with and without --)
run a record -o rec sh -c 'echo "$@"' sh --stacks bogus -o y
grep -q -- "--stacks bogus -o y" a.out || fail "record ate the program's options: $(cat a.out) $(cat a.err)"
run a record --output=rec -- sh -c 'echo "$@"' sh -v --help
grep -q -- "-v --help" a.out || fail "record -- PROG: $(cat a.out) $(cat a.err)"
echo "$checked options: --opt=V and --opt V (and -oV) read alike"
echo ok
