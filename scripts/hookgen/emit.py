"""hookgen.emit — writes hooks/gen/<lib>_hooks.c: one wrapper per function, its descriptor
table dlh_fns_<lib>[] and the sorted table dlh_syms_<lib>[] (hooks/dlh_hooks.h)."""
import os
import re
import subprocess
import sys
import tempfile

from .specs import *  # noqa: F401,F403
from .cparse import *  # noqa: F401,F403
from .inputs import *  # noqa: F401,F403

# ---------------------------------------------------------------------------------------------
# Code generation
# ---------------------------------------------------------------------------------------------

class Arg:
    def __init__(self, name, kind, expr):
        self.name, self.kind, self.expr = name, kind, expr


def auto_args(types, p):
    """Automatic recorded args of one parameter: a list of Arg (empty when not recordable)."""
    if p.fnptr or p.array:
        return [Arg(p.name, 'ptr', p.name)]
    k, tag = types.classify(p.type)
    if k in ('int', 'uint', 'enum', 'ptr', 'bool', 'double'):
        return [Arg(p.name, k, p.name)]
    if k == 'float':
        return [Arg(p.name, 'double', p.name)]
    if k == 'struct' and tag in STRUCT_FIELDS:
        return [Arg('%s_%s' % (p.name, f), fk, '%s.%s' % (p.name, f)) for f, fk in STRUCT_FIELDS[tag]]
    return []


def recorded_args(types, proto, spec):
    """(recorded args, args cut at MAX_ARGS, statements always run after the call ('!'),
    statements run before the args are evaluated when the call is recorded ('@'))."""
    byname = {p.name: p for p in proto.params}
    if spec is None:
        spec = ['*']
    args, always, onrec = [], [], []
    for e in spec:
        if isinstance(e, str) and e[:1] == '!':
            always.append(e[1:])
        elif isinstance(e, str) and e[:1] == '@':
            onrec.append(e[1:])
        elif e == '*':
            for p in proto.params:
                if not any(a.name == p.name or a.name.startswith(p.name + '_') for a in args):
                    args.extend(auto_args(types, p))
        elif isinstance(e, str):
            if e not in byname:
                raise SystemExit('gen_hooks: extractor of %s names unknown parameter %s' % (proto.name, e))
            args.extend(auto_args(types, byname[e]))
        else:
            args.append(Arg(e[0], e[1], e[2]))
    return args[:MAX_ARGS], args[MAX_ARGS:], always, onrec


def fail_value(types, cfg, proto):
    if proto.name in cfg['fail_override']:
        return cfg['fail_override'][proto.name]
    base = proto.name
    for v in cfg['variants']:
        if base.endswith(v):
            base = base[:-len(v)]
    if base in cfg['fail_override']:
        return cfg['fail_override'][base]
    ret = proto.ret
    if re.sub(r'\bconst\b', '', ret).strip() == cfg['err_type']:
        return cfg['fail']
    k, tag = types.classify(ret)
    if k == 'void':
        return ''
    if k == 'ptr':
        if re.fullmatch(r'(const\s+)?char\s*\*', ret.strip()):
            return '""'
        return '0'
    if k == 'struct':
        return '(%s){0}' % ret
    return '0'


def ret_record(types, cfg, proto):
    ret = proto.ret
    # Only a status return is a result that `dlhook stats` can count as an error; anything
    # else (versions, sizes, strings, handles) is recorded as 0.
    if re.sub(r'\bconst\b', '', ret).strip() == cfg['err_type']:
        return '(int64_t)dlh_r'
    return None  # recorded as 0


PREAMBLE = r'''#include "dlh_hook.h"
#include "dlh_hooks.h"

#include <stdint.h>
#include <string.h>

/* Argument encoders (see DLH_ARG_* in dlh_hook.h). */
static inline uint64_t dlh_dbl_bits(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }
#define DLH_A_INT(x) ((uint64_t)(int64_t)(x))
#define DLH_A_UINT(x) ((uint64_t)(x))
#define DLH_A_PTR(x) ((uint64_t)(uintptr_t)(x))
#define DLH_A_DBL(x) dlh_dbl_bits((double)(x))
#define DLH_A_BOOL(x) ((uint64_t)((x) != 0))

/* Loads the cached real function into `fn`, resolving it on first use; returns `fail` from the
 * wrapper when the real library does not have it. */
#define DLH_REAL(fn, cache, sym, lib, fail)                                   \
  __typeof__(cache) fn = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);           \
  if (DLH_UNLIKELY(!fn)) {                                                    \
    fn = (__typeof__(cache))dlh_resolve(sym, lib);                            \
    if (!fn) return fail;                                                     \
    __atomic_store_n(&cache, fn, __ATOMIC_RELEASE);                           \
  }

/* The same for the entry that a handle lookup of the library gets (preload/dlsym.c): its real
 * function is the library's own definition, set before the entry is handed out. */
#define DLH_OWN(fn, cache, fail)                                              \
  __typeof__(cache) fn = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);           \
  if (DLH_UNLIKELY(!fn)) return fail;
'''


def c_str_list(items):
    return ', '.join('"%s"' % i for i in items)


def lib_path(cfg, cuda_lib):
    """The real library whose exported set is wrapped: cfg['libpath'] when given (e.g. a
    driver's libcuda.so.1 outside the toolkit), else CUDA lib dir / soname."""
    return cfg.get('libpath') or os.path.join(cuda_lib, cfg['soname'])


def generate(lib, cfg, cuda_inc, cuda_lib, cc):
    libpath = lib_path(cfg, cuda_lib)
    exported = exported_functions(libpath)
    pre = preprocess(cfg, cuda_inc, cc)
    types = Types()
    protos = {}
    for origin, st in statements(pre):
        s = st.strip()
        if s.startswith('typedef') or s.startswith('__extension__ typedef'):
            types.add_typedef(s.replace('__extension__', '', 1) if s.startswith('__ext') else s)
            continue
        p = parse_function(s, os.path.basename(origin))
        if p and p.name not in protos:
            protos[p.name] = p
    vm = re.search(r'int dlh_version_probe = ([^;]*);', pre)
    version = re.sub(r'\s+', '', vm.group(1)) if vm else '?'
    if vm and re.fullmatch(r'[\d()+*\s]+', vm.group(1)):
        version = str(eval(vm.group(1)))  # a constant integer expression from the header
    manual = {}
    for _, st in statements(cfg['manual']):
        p = parse_function(st, 'hand-written (gen_hooks.py)')
        if p:
            manual[p.name] = p
    macros = header_macro_names(cfg, cuda_inc)
    protos.update(raw_prototypes(cfg, cuda_inc, set(exported) - manual.keys() - protos.keys()))
    cxx_decls = declared_in_headers(cuda_inc, set(exported) - manual.keys() - protos.keys())

    wrapped, skipped = [], []
    skip_prefix = cfg.get('skip_prefix')
    for name in exported:
        if skip_prefix and name.startswith(skip_prefix) and name[len('p'):] in exported:
            skipped.append((name, 'profiling alias of %s: wrappers wrap %s and call %s'
                            % (name[1:], name[1:], name)))
            continue
        proto, base = manual.get(name) or protos.get(name), name
        if proto is None:
            for v in cfg['variants']:
                if name.endswith(v) and name[:-len(v)] in (manual.keys() | protos.keys()):
                    base = name[:-len(v)]
                    proto = manual.get(base) or protos[base]
        if proto is None:
            where = cxx_decls.get(name)
            if where:
                skipped.append((name, 'declared only in %s, which is not parsed for this library '
                                      '(C++-only or conflicting with the parsed headers)' % where))
            else:
                skipped.append((name, cfg['no_prototype_reason']))
            continue
        if proto.variadic:
            skipped.append((name, 'variadic: arguments cannot be forwarded'))
            continue
        wrapped.append((name, base, proto))

    o = []
    hdrs = ', '.join(cfg['headers'])
    o.append('/* Generated by scripts/gen_hooks.py from %s (%s %s) and %s; do not edit: run `make regen`. */'
             % (hdrs, cfg['version'], version, cfg['soname']))
    o.append('/* hooks/gen/%s_hooks.c — LD_PRELOAD wrappers for the %d functions of %s that have a'
             % (lib, len(wrapped), cfg['soname']))
    o.append(' * prototype, and their descriptor table %s[] (index = position, fn id =' % cfg['table'])
    o.append(' * DLH_FN_ID(%s, index)). Exported by %s: %d functions; not wrapped: %d.'
             % (cfg['domain'], cfg['soname'], len(exported), len(skipped)))
    for n, why in skipped:
        o.append(' *   not wrapped: %s — %s' % (n, why))
    o.append(' */')
    for d in cfg['defines']:
        o.append('#define %s 1' % d)
    for u in cfg['undefs']:
        o.append('#undef %s' % u)
    for h in cfg['pre_includes'] + cfg['headers']:
        o.append('#include <%s>' % h)
    o.append('')
    o.append(PREAMBLE)
    for h in cfg.get('post_includes', []):
        o.append('#include "%s"  /* hand-written argument extractors */' % h)
    if cfg.get('post_includes'):
        o.append('')
    renamed = sorted(n for n, _, _ in wrapped if n in macros)
    if renamed:
        o.append('/* The headers #define these names to others; the wrappers define the exported names. */')
        for n in renamed:
            o.append('#undef %s' % n)
        o.append('')

    descs = []
    fwd = cfg.get('forward_prefix')
    for idx, (name, base, proto) in enumerate(wrapped):
        spec = cfg['extract'].get(name, cfg['extract'].get(base))
        if spec is None and cfg.get('extract_fn'):
            spec = cfg['extract_fn'](name, proto)
        args, dropped, always, onrec = recorded_args(types, proto, spec)
        target = name
        if fwd and (fwd + name) in exported:
            target = fwd + name
        ret = proto.ret
        void = types.classify(ret)[0] == 'void'
        params = proto.params_c()
        callargs = ', '.join(p.name for p in proto.params)
        rrec = ret_record(types, cfg, proto)
        fv = fail_value(types, cfg, proto)
        note = ''
        if dropped:
            note = '; args beyond %d not recorded: %s' % (MAX_ARGS, ', '.join(a.name for a in dropped))
        o.append('/* %d: %s — %s%s%s */' % (idx, name, proto.origin,
                                           (' (prototype of %s)' % base) if base != name else '',
                                           note))
        o.append('static %s (*real_%s)(%s);' % (ret, name, params))
        o.append('static %s (*own_%s)(%s);' % (ret, name, params))
        o.append('static inline __attribute__((always_inline)) %s dlh_b_%s(__typeof__(real_%s) dlh_fn%s) {'
                 % (ret, name, name, (', ' + params) if proto.params else ''))
        pre, post = cfg.get('around', {}).get(name, (None, None))
        if pre:
            o.append('  %s' % pre)
        o.append('  dlh_call dlh_c;')
        o.append('  int dlh_rec = dlh_call_begin(&dlh_c);')
        if void:
            o.append('  dlh_fn(%s);' % callargs)
        else:
            o.append('  %s dlh_r = dlh_fn(%s);' % (ret, callargs))
        for st in always:
            o.append('  ' + st)
        o.append('  if (dlh_rec) {')
        for st in onrec:
            o.append('    ' + st)
        fnid = 'DLH_FN_ID(%s, %d)' % (cfg['domain'], idx)
        rv = rrec if (rrec and not void) else '0'
        if args:
            o.append('    uint64_t dlh_a[%d] = {' % len(args))
            for a in args:
                o.append('      %s(%s),' % (ENCODE_C[a.kind], a.expr))
            o.append('    };')
            o.append('    dlh_call_end(&dlh_c, %s, %s, %d, dlh_a);' % (fnid, rv, len(args)))
        else:
            o.append('    dlh_call_end(&dlh_c, %s, %s, 0, NULL);' % (fnid, rv))
        o.append('  }')
        if post:
            o.append('  %s' % post)
        if not void:
            o.append('  return dlh_r;')
        o.append('}')
        call = 'dlh_b_%s(dlh_fn%s);' % (name, (', ' + callargs) if proto.params else '')
        o.append('DLH_EXPORT %s %s(%s) {' % (ret, name, params))
        o.append('  DLH_REAL(dlh_fn, real_%s, "%s", %s, %s)' % (name, target, cfg['lib_enum'], fv))
        o.append('  %s%s' % ('' if void else 'return ', call))
        o.append('}')
        o.append('static %s dlh_own_%s(%s) {' % (ret, name, params))
        o.append('  DLH_OWN(dlh_fn, own_%s, %s)' % (name, fv))
        o.append('  %s%s' % ('' if void else 'return ', call))
        o.append('}')
        o.append('')
        descs.append((name, args))

    o.append('/* ---- descriptor table ---- */')
    for name, args in descs:
        if args:
            o.append('static const char *const dlh_an_%s[] = {%s};' % (name, c_str_list(a.name for a in args)))
            o.append('static const uint8_t dlh_at_%s[] = {%s};'
                     % (name, ', '.join(ARGTYPE_C[a.kind] for a in args)))
    o.append('')
    o.append('const dlh_fn_desc %s[] = {' % cfg['table'])
    for name, args in descs:
        if args:
            o.append('  {"%s", %d, dlh_an_%s, dlh_at_%s},' % (name, len(args), name, name))
        else:
            o.append('  {"%s", 0, NULL, NULL},' % name)
    o.append('};')
    o.append('const unsigned %s_count = %d;' % (cfg['table'], len(descs)))
    o.append('')
    # name -> wrapper for dlsym() on a handle of this library (preload/dlsym.c), sorted by name
    syms = 'dlh_syms_' + lib
    o.append('/* ---- wrappers by name, sorted (strcmp), for dlsym on a handle of %s ---- */' % cfg['soname'])
    o.append('#pragma GCC diagnostic push')
    o.append('#pragma GCC diagnostic ignored "-Wdeprecated-declarations"')
    o.append('const dlh_sym %s[] = {' % syms)
    for name in sorted(n for n, _ in descs):
        o.append('  {"%s", (void *)%s, (void **)&real_%s, (void *)dlh_own_%s, (void **)&own_%s},'
                 % (name, name, name, name, name))
    o.append('};')
    o.append('#pragma GCC diagnostic pop')
    o.append('const unsigned %s_count = %d;' % (syms, len(descs)))
    o.append('')
    return '\n'.join(o), wrapped, skipped, exported
