#!/usr/bin/env python3
"""gen_hooks.py — generates the LD_PRELOAD wrappers in hooks/gen/ from the real CUDA headers.

For each library in LIBS (one config entry per library) it
  1. lists the functions the real shared library exports (`nm -D --defined-only`),
  2. preprocesses the library's public headers with `cc -E` (C, not C++: `__dv(x)` default
     arguments vanish, `__host__`/`CUDARTAPI` expand to attributes or nothing; hooks/compat/
     supplies the few OpenGL/VDPAU/EGL types the interop headers need) and parses every
     top-level function declaration and typedef,
  3. writes hooks/gen/<lib>_hooks.c: one exported wrapper per exported function that has a
     prototype (from the headers, or from the config's hand-written `manual` table), and the
     descriptor table `const dlh_fn_desc dlh_fns_<lib>[]` (index = position in the table,
     fn id = DLH_FN_ID(domain, index)). Exported functions that cannot be wrapped are listed,
     with the reason, in a comment at the top of the generated file.

Recorded arguments (see preload/dlh_hook.h): every scalar parameter passed by value, in
declaration order, at most DLH_MAX_ARGS: signed integers and enums as DLH_ARG_INT, unsigned
integers as DLH_ARG_UINT, pointers/handles/function pointers as DLH_ARG_PTR, float/double as
DLH_ARG_DOUBLE (the bits of the double), _Bool as DLH_ARG_BOOL; structs in STRUCT_FIELDS (dim3,
cudaExtent, cudaPitchedPtr) as one arg per field named <param>_<field>; other by-value structs
are not recorded. A config's `extract` table replaces this for functions whose meaning is in a
struct or an out-parameter (see CUDART_EXTRACT for the format; hooks/README.md).

Recorded return value (`ret` of the record): the status for functions returning the library's
status type (cudaError_t, cublasStatus_t, ...), 0 for everything else.

When the real function cannot be found (dlh_resolve returns NULL) a wrapper returns the
config's `fail` value for the library's error type, 0/NULL for integers and pointers, an empty
string for `const char *`, a zeroed struct, or nothing for void (per-function: `fail_override`).

Usage:
  scripts/gen_hooks.py [--cuda-home DIR] [--out DIR] [--cc CC] [LIB...]   (default: all libs)
  scripts/gen_hooks.py --check [LIB...]  regenerates in memory and diffs with
      the committed files: exit 0 up to date, 1 different, 77 CUDA headers/libraries absent.
  scripts/gen_hooks.py --list LIB        prints the names of the wrapped functions.
The generator is a package, scripts/hookgen/: specs.py (the per-library specifications),
cparse.py (the C declaration parser), inputs.py (nm, cc -E), emit.py (the C it writes); this
file is its command line. Python 3 standard library only.
"""

import argparse
import difflib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hookgen.specs import LIBS, ROOT  # noqa: E402
from hookgen.emit import generate, lib_path  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description='Generates hooks/gen/<lib>_hooks.c from the CUDA headers.')
    ap.add_argument('libs', nargs='*', help='libraries (default: all): %s' % ', '.join(LIBS))
    ap.add_argument('--cuda-home', default=os.environ.get('CUDA_HOME', '/usr/local/cuda'))
    ap.add_argument('--cuda-inc', help='default: CUDA_HOME/include')
    ap.add_argument('--cuda-lib', help='default: CUDA_HOME/lib64')
    ap.add_argument('--cc', default=os.environ.get('CC', 'cc'))
    ap.add_argument('--out', default=os.path.join(ROOT, 'hooks', 'gen'))
    ap.add_argument('--check', action='store_true', help='diff against the committed files')
    ap.add_argument('--list', action='store_true', help='print the wrapped names')
    a = ap.parse_args()
    libs = a.libs or list(LIBS)
    for l in libs:
        if l not in LIBS:
            ap.error('unknown library %s (known: %s)' % (l, ', '.join(LIBS)))
    cuda_inc = a.cuda_inc or os.path.join(a.cuda_home, 'include')
    cuda_lib = a.cuda_lib or os.path.join(a.cuda_home, 'lib64')
    rc = 0
    checked = 0
    for lib in libs:
        cfg = LIBS[lib]
        hdr = os.path.join(cuda_inc, cfg['headers'][0])
        so = lib_path(cfg, cuda_lib)
        if not os.path.exists(hdr) or not os.path.exists(so):
            msg = 'gen_hooks: %s: %s or %s not found' % (lib, hdr, so)
            if a.check:
                print(msg + ' (skipped)', file=sys.stderr)
                rc = rc or 77
                continue
            raise SystemExit(msg)
        text, wrapped, skipped, exported = generate(lib, cfg, cuda_inc, cuda_lib, a.cc)
        if a.list:
            for n, _, _ in wrapped:
                print(n)
            continue
        path = os.path.join(a.out, '%s_hooks.c' % lib)
        if a.check:
            checked += 1
            try:
                with open(path) as f:
                    old = f.read()
            except FileNotFoundError:
                old = ''
            if old != text:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), path, '(regenerated)', n=1))
                print('gen_hooks: %s is out of date: run `make regen`' % path, file=sys.stderr)
                rc = 1
            else:
                print('gen_hooks: %s is up to date (%d of %d exported functions wrapped)'
                      % (os.path.relpath(path, ROOT), len(wrapped), len(exported)))
            continue
        os.makedirs(a.out, exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
        print('gen_hooks: wrote %s: %d of %d exported functions wrapped, %d skipped'
              % (path, len(wrapped), len(exported), len(skipped)))
    if a.check and rc == 77 and checked:
        rc = 0  # the libraries that are installed are up to date
    return rc


if __name__ == '__main__':
    sys.exit(main())
