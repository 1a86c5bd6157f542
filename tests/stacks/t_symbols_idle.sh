# The symbol index of a library whose pcs stop coming is given back (unwind/symbolize.c,
# idle_indexes): a library of 100,000 functions (an index of ~1.7 MB) is called through once,
# then left alone for 5 s while the program goes on calling CUDA from elsewhere. Its frame is
# named in the trace, and the index is no longer held at the end (the trailer's
# symbol_index_bytes: below 1 MiB, against ~1.7 MB when the run ends while it is in use). A pc of
# that library seen for the first time after the index was given back is named too (the index
# is built again, and kept). The program's output and exit code are unchanged.
# run-tests: serial
. "$ROOT/tests/lib.sh"
prog=$BUILD/tests/stacks/idlemod
need "$prog"; need "$DLHOOK_LIB"; need "$DLHOOK_BIN"
need "$CUDA_HOME/lib64/libcudart.so"
command -v gcc >/dev/null || skip "no gcc to assemble the library"
python3 - >big.s <<'PY'
out = [".text"]
for i in range(100000):
    out.append(f".globl fn_{i}\n.type fn_{i},@function\n.p2align 4\nfn_{i}:\nret\n.size fn_{i},1")
out.append('.section .note.GNU-stack,"",@progbits')
print("\n".join(out))
PY
gcc -O1 -g -shared -fPIC -fvisibility=hidden -I"$CUDA_HOME/include" -o libbig.so \
  "$ROOT/tests/stacks/badmod_lib.c" big.s -L"$CUDA_HOME/lib64" -lcudart \
  -Wl,-rpath,"$CUDA_HOME/lib64" || fail "cannot build libbig.so"
rm -f big.s
check() { # name, args...: runs, dumps; NAME.res: the trailer's index bytes, the library's frames
  name=$1; shift
  "$prog" "$T/libbig.so" "$@" >bare.out 2>&1 || { cat bare.out; fail "$name: the program fails bare"; }
  traced "$T/$name" "$prog" "$T/libbig.so" "$@" >"$name.out" 2>"$name.err"; rc=$?
  [ "$rc" = 0 ] || { cat "$name.err"; fail "$name: exit code $rc"; }
  cmp -s bare.out "$name.out" || { diff bare.out "$name.out"; fail "$name: output changed"; }
  "$DLHOOK_BIN" dump --type api,trailer "$(one_trace "$T/$name")" >"$name.jsonl" || fail "$name: dump reports damage"
  python3 - "$name.jsonl" >"$name.res" <<'PY' || fail "$name: no trailer or no frame of libbig.so"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
tr = [e for e in ev if e.get("type") == "trailer"]
assert tr and "symbol_index_bytes" in tr[-1], "no trailer"
funcs = sorted({f.get("function") or "?" for e in ev for f in e.get("stack") or []
                if "libbig.so" in (f.get("module") or "")})
print(tr[-1]["symbol_index_bytes"], ",".join(funcs))
PY
  read -r bytes funcs <"$name.res"
}
# in use at the end: the index is held
check busy 0 again
echo "busy: index bytes $bytes, libbig.so frames $funcs"
[ "$bytes" -ge 1500000 ] || fail "busy: the index of 100,000 symbols is $bytes bytes"
case ",$funcs," in *,badmod_again,*) ;; *) fail "busy: badmod_again not named ($funcs)";; esac
# idle for 5 s at the end: given back, the frame named
check idle 5
echo "idle: index bytes $bytes, libbig.so frames $funcs"
[ "$bytes" -lt 1048576 ] || fail "idle: the idle library's index is still held ($bytes bytes)"
case ",$funcs," in *,badmod_call,*) ;; *) fail "idle: badmod_call not named ($funcs)";; esac
# idle, then a new pc of it: built again
check again 5 again
echo "again: index bytes $bytes, libbig.so frames $funcs"
[ "$bytes" -ge 1500000 ] || fail "again: the index was not built again ($bytes bytes)"
case ",$funcs," in *,badmod_again,*) ;; *) fail "again: badmod_again not named after the index was given back ($funcs)";; esac
echo ok
