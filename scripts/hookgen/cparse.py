"""hookgen.cparse — a parser of the C declarations in `cc -E` output: top-level function
prototypes (Proto, Param) and typedefs (Types), enough for the CUDA headers."""
import os
import re
import subprocess
import sys
import tempfile

from .specs import *  # noqa: F401,F403 (STRUCT_FIELDS, MAX_ARGS)

# ---------------------------------------------------------------------------------------------
# C declaration parsing (of `cc -E` output)
# ---------------------------------------------------------------------------------------------

C_KEYWORDS_TYPE = {'void', 'char', 'short', 'int', 'long', 'float', 'double', 'signed',
                   'unsigned', '_Bool', 'bool', '__int128', '_Complex', 'complex'}
QUALIFIERS = {'const', 'volatile', 'restrict', '__restrict', '__restrict__', 'extern', 'static',
              'inline', '__inline', '__inline__', '__extension__', 'register', '_Noreturn'}
IDENT = re.compile(r'[A-Za-z_]\w*')


def strip_balanced(text, keyword):
    """Removes `keyword ( ... )` with balanced parentheses from text."""
    out = []
    i = 0
    pat = re.compile(r'\b%s\b\s*\(' % re.escape(keyword))
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            return ''.join(out)
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            if text[j] == '(':
                depth += 1
            elif text[j] == ')':
                depth -= 1
            j += 1
        i = j


def clean(text):
    for kw in ('__attribute__', '__attribute', '__declspec', '__asm__', '__asm', 'asm',
               '__typeof__', '_Alignas'):
        text = strip_balanced(text, kw)
    text = re.sub(r'\b(__extension__|__inline__|__inline|inline|extern|static|_Noreturn)\b', ' ', text)
    return re.sub(r'\s+', ' ', text).strip()


def split_top(text, sep=','):
    """Splits at `sep` outside parentheses/brackets/braces."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append(''.join(cur))
    return [p.strip() for p in parts]


def statements(pre):
    """Yields (file, text) for each top-level declaration of preprocessed C source;
    function bodies and brace contents are collapsed to {}."""
    cur_file = ''
    buf = []
    depth = 0
    start_file = ''
    quote = None
    for line in pre.split('\n'):
        if line.startswith('#'):
            m = re.match(r'#\s*(?:line\s+)?\d+\s+"([^"]*)"', line)
            if m:
                cur_file = m.group(1)
            continue
        prev = ''
        for ch in line + ' ':
            if quote:  # inside a string or character literal
                if depth == 0:
                    buf.append(ch)
                if ch == quote and prev != '\\':
                    quote = None
                prev = '' if prev == '\\' else ch
                continue
            prev = ch
            if ch in '"\'':
                quote = ch
            if depth == 0 and not buf and ch.isspace():
                continue
            if not buf:
                start_file = cur_file
            if ch == '{':
                if depth == 0:
                    buf.append('{')
                depth += 1
                continue
            if ch == '}':
                depth -= 1
                if depth == 0:
                    buf.append('}')
                    before = ''.join(buf[:-2]).rstrip()
                    if before.endswith(')'):  # a function definition: the statement ends here
                        buf = []
                continue
            if depth > 0:
                continue
            if ch == ';':
                yield start_file, ''.join(buf)
                buf = []
                continue
            buf.append(ch)


class Param:
    def __init__(self, decl, name, typ, fnptr, array):
        self.decl = decl      # C text declaring the parameter, with its name
        self.name = name
        self.type = typ       # the type without the name
        self.fnptr = fnptr
        self.array = array


class Proto:
    def __init__(self, name, ret, params, variadic, origin):
        self.name, self.ret, self.params, self.variadic, self.origin = name, ret, params, variadic, origin

    def params_c(self):
        if not self.params:
            return 'void'
        s = ', '.join(p.decl for p in self.params)
        return s + (', ...' if self.variadic else '')


def norm_type(t):
    """`const char*` -> `const char *`, `void * *` -> `void **`."""
    t = re.sub(r'\s*\*\s*', '*', t.strip())
    return re.sub(r'(?<=[^*\s])\*', ' *', t)


def parse_param(text, idx):
    text = text.strip()
    m = re.search(r'\(\s*\*\s*(?:const\s+)?([A-Za-z_]\w*)?\s*\)\s*\(', text)
    if m:  # function pointer
        if m.group(1):
            name, decl = m.group(1), text
        else:
            name = 'a%d' % idx
            star = text.index('*', m.start())
            decl = text[:star + 1] + name + text[star + 1:]
        return Param(decl, name, decl, True, False)
    array = None
    am = re.search(r'(\[[^\]]*\])\s*$', text)
    if am:
        array = am.group(1)
        text = text[:am.start()].strip()
    toks = re.findall(r'[A-Za-z_]\w*|\*|[^\sA-Za-z_*]+', text)
    name = None
    if len(toks) >= 2 and IDENT.fullmatch(toks[-1]) and toks[-1] not in C_KEYWORDS_TYPE \
            and toks[-1] not in QUALIFIERS and toks[-2] not in ('struct', 'enum', 'union'):
        name = toks[-1]
        typ = text[:text.rfind(name)].strip()
    else:
        typ = text
    if not name:
        name = 'a%d' % idx
    typ = norm_type(typ)
    if array:
        decl = '%s %s%s' % (typ, name, array)
        typ = typ + ' *'
    else:
        decl = '%s%s%s' % (typ, '' if typ.endswith('*') else ' ', name)
    return Param(decl, name, typ, False, bool(array))


def parse_function(text, origin):
    """Parses `ret name(params)`; returns a Proto or None."""
    text = clean(text)
    if not text.endswith(')') or text.startswith('typedef') or '{' in text:
        return None
    depth, j = 0, len(text) - 1
    while j >= 0:
        if text[j] == ')':
            depth += 1
        elif text[j] == '(':
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if j <= 0:
        return None
    head, params = text[:j].rstrip(), text[j + 1:-1]
    m = re.search(r'([A-Za-z_]\w*)$', head)
    if not m:
        return None
    name, ret = m.group(1), norm_type(head[:m.start()])
    if not ret or '(' in ret or ret in QUALIFIERS:
        return None
    plist = [p for p in split_top(params) if p]
    variadic = False
    if plist and plist[-1] == '...':
        variadic = True
        plist = plist[:-1]
    if plist == ['void']:
        plist = []
    ps = [parse_param(p, i) for i, p in enumerate(plist)]
    return Proto(name, ret, ps, variadic, origin)


class Types:
    """Typedef table: name -> kind (int uint enum ptr double float bool void struct fn other),
    plus the struct tag for struct typedefs."""

    def __init__(self):
        self.kind = {}
        self.tag = {}

    def add_typedef(self, text):
        text = clean(text)
        if not text.startswith('typedef'):
            return
        text = text[len('typedef'):].strip()
        while True:  # collapse brace contents, innermost first
            t2 = re.sub(r'\{[^{}]*\}', '@@', text)
            if t2 == text:
                break
            text = t2
        text = text.replace('@@', '{}')
        if '{}' in text:
            i = text.index('{}') + 2
            base, decls = text[:i], split_top(text[i:])
        else:
            fm = re.search(r'\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(', text)
            if fm:
                self.kind[fm.group(1)] = 'ptr'
                return
            parts = split_top(text)
            m = re.match(r'(.*?)((?:[\s*]|\bconst\b)*)\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*|\(.*\))$',
                         parts[0])
            if not m or not m.group(1).strip():
                return
            base = m.group(1)
            decls = [parts[0][len(base):]] + parts[1:]
        for decl in decls:
            decl = decl.strip()
            nm = re.search(r'([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*|\(.*\))$', decl)
            if not nm:
                continue
            name, after = nm.group(1), nm.group(2).strip()
            if after.startswith('('):
                self.kind[name] = 'fn'
            elif '*' in decl[:nm.start()]:
                self.kind[name] = 'ptr'
            elif after.startswith('['):
                self.kind[name] = 'array'
            else:
                k, tag = self.classify_base(base)
                self.kind[name] = k
                if tag:
                    self.tag[name] = tag

    def classify_base(self, base):
        b = re.sub(r'\{\}', ' ', base)
        toks = [t for t in b.split() if t not in QUALIFIERS]
        if not toks:
            return 'other', None
        if toks[0] in ('struct', 'union'):
            return 'struct', (toks[1] if len(toks) > 1 else None)
        if toks[0] == 'enum':
            return 'enum', None
        if all(t in C_KEYWORDS_TYPE for t in toks):
            if 'void' in toks:
                return 'void', None
            if 'float' in toks:
                return 'float', None
            if 'double' in toks:
                return 'double', None
            if '_Bool' in toks or 'bool' in toks:
                return 'bool', None
            if 'unsigned' in toks:
                return 'uint', None
            if toks == ['char']:
                return 'int', None
            return 'int', None
        if len(toks) == 1:
            return 'alias:' + toks[0], None
        return 'other', None

    def resolve(self, name, seen=None):
        k = self.kind.get(name)
        if k is None:
            return 'other', None
        if k.startswith('alias:'):
            seen = seen or set()
            target = k[6:]
            if target in seen:
                return 'other', None
            seen.add(target)
            rk, rt = self.resolve(target, seen)
            return rk, self.tag.get(name) or rt
        return k, self.tag.get(name)

    def classify(self, typ):
        """Kind of a parameter or return type given as C text."""
        t = typ.strip()
        if '*' in t or '[' in t or '(' in t:
            return 'ptr', None
        k, tag = self.classify_base(t)
        if k.startswith('alias:'):
            k, tag = self.resolve(k[6:])
        if k in ('array', 'fn'):
            return 'ptr', None
        return k, tag
