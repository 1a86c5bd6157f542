"""hookgen.inputs — what the generator reads: the functions a library exports (nm -D), its
headers preprocessed (cc -E) and parsed, raw prototypes for C++-only declarations."""
import os
import re
import subprocess
import sys
import tempfile

from .specs import *  # noqa: F401,F403
from .cparse import *  # noqa: F401,F403

# ---------------------------------------------------------------------------------------------
# Library inputs
# ---------------------------------------------------------------------------------------------

def exported_functions(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] in ('T', 'W', 'i'):
            names.add(f[2].split('@')[0])
    return sorted(names)


def preprocess(cfg, cuda_inc, cc):
    src = ''.join('#define %s 1\n' % d for d in cfg['defines'])
    src += ''.join('#undef %s\n' % u for u in cfg['undefs'])
    src += ''.join('#include <%s>\n' % h for h in cfg['pre_includes'] + cfg['headers'])
    src += '\n#ifdef %s\nint dlh_version_probe = %s;\n#endif\n' % (cfg['version'], cfg['version'])
    with tempfile.NamedTemporaryFile('w', suffix='.c', delete=False) as f:
        f.write(src)
        name = f.name
    try:
        r = subprocess.run([cc, '-E', '-D_GNU_SOURCE', '-I', os.path.join(ROOT, 'hooks', 'compat'),
                            '-I', os.path.join(ROOT, 'hooks'), '-I', cuda_inc, name],
                           capture_output=True, text=True)
    finally:
        os.unlink(name)
    if r.returncode != 0:
        raise SystemExit('gen_hooks: preprocessing %s failed:\n%s' % (cfg['headers'], r.stderr))
    return r.stdout


def header_macro_names(cfg, cuda_inc):
    """Names the headers #define to something else (e.g. per-thread default stream aliases)."""
    names = set()
    for h in cfg['headers']:
        p = os.path.join(cuda_inc, h)
        if os.path.exists(p):
            with open(p, errors='replace') as f:
                names |= set(re.findall(r'^\s*#\s*define\s+([A-Za-z_]\w*)\s+\S', f.read(), re.M))
    return names


def raw_prototypes(cfg, cuda_inc, names):
    """Prototypes of `names` read from the raw text of cfg['raw']['headers'] (declarations the
    C preprocessor hides, e.g. behind `#if defined(__cplusplus)`), with cfg['raw']['strip'] macros
    removed and cfg['raw']['types'] substituted. Only declarations that come out as valid C with
    the substituted types used behind pointers are returned."""
    raw = cfg.get('raw')
    out = {}
    if not raw or not names:
        return out
    for h in raw['headers']:
        path = os.path.join(cuda_inc, h)
        if not os.path.exists(path):
            continue
        with open(path, errors='replace') as f:
            text = f.read()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        text = '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))
        for m in re.finditer(r'[^;{}]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*;', text):
            if m.group(1) not in names or m.group(1) in out:
                continue
            decl = m.group(0)[:-1]
            for mac in raw['strip']:
                decl = re.sub(r'\b%s\b' % re.escape(mac), ' ', decl)
            for old, new in sorted(raw['types'].items()):
                decl = re.sub(r'\b%s\b' % re.escape(old), new, decl)
            p = parse_function(decl, '%s (raw text; %s as void)' % (h, ', '.join(sorted(raw['types']))))
            if p and p.name == m.group(1) and \
                    not any(re.fullmatch(r'(const\s+)?void', q.type.strip()) for q in p.params):
                out[p.name] = p
    return out


def declared_in_headers(cuda_inc, names):
    """name -> first header (relative to cuda_inc) that has `name (`, for names the C parse
    did not find: declarations in C++-only headers. Scans *.h one directory deep (not cccl/)."""
    found = {}
    if not names:
        return found
    pat = re.compile(r'\b(%s)\s*\(' % '|'.join(sorted(re.escape(n) for n in names)))
    for dirpath, dirs, files in os.walk(cuda_inc):
        dirs[:] = sorted(d for d in dirs if d != 'cccl')
        for fn in sorted(files):
            if not fn.endswith(('.h', '.hpp')):
                continue
            path = os.path.join(dirpath, fn)
            with open(path, errors='replace') as f:
                text = f.read()
            for m in pat.finditer(text):
                found.setdefault(m.group(1), os.path.relpath(path, cuda_inc))
    return found
