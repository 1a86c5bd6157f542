#!/usr/bin/env python3
"""Generates the NOT_SUPPORTED stubs and version scripts of the simulated CUDA libraries.

For each library: reads the exported functions of the real one (`nm -D --defined-only`), finds
each one's prototype in the preprocessed real headers, and writes
  libs/<lib>/<lib>_stubs.c   one stub per exported function, returning the library's
                             "not supported" status (weak, so a hand-written definition in
                             another file of the library wins; NCCL: see below)
  libs/<lib>/<lib>.map       version script: the real version node (or an anonymous one for
                             NCCL, whose symbols are unversioned) listing every export.
Exports of newer releases than the installed toolkit's (NCCL 2.30 of the PyPI wheel
nvidia-nccl-cu13, which PyTorch links) are listed in libs/<lib>/extra.syms (`nm -D` of that
library) and exported too; those without a prototype in the installed headers return the
not-supported status from an `int f(void)` stub unless implemented by hand.
NCCL: each `pncclX` is strong and `ncclX` a weak alias of it, as in the real library. Functions
implemented by hand are declared in libs/nccl/*.c with NCCL_ALIAS(ncclX); they are skipped here.

The output is committed; rerun after a CUDA upgrade:
  python3 tests/simcuda/libs/gen_stubs.py [CUDA_HOME]
"""
import os, re, subprocess, sys

CUDA = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CUDA_HOME", "/usr/local/cuda")
HERE = os.path.dirname(os.path.abspath(__file__))

LIBS = [
    # dir, real soname, version node, header groups (one stubs file each; cublasXt.h and
    # cublas.h exclude each other), status type, not-supported value
    ("cublas", "libcublas.so.13", "libcublas.so.13", [["cublas.h"], ["cublasXt.h"]],
     "cublasStatus_t", "CUBLAS_STATUS_NOT_SUPPORTED"),
    ("cublasLt", "libcublasLt.so.13", "libcublasLt.so.13", [["cublasLt.h"]],
     "cublasStatus_t", "CUBLAS_STATUS_NOT_SUPPORTED"),
    ("cudnn", "libcudnn.so.9", "libcudnn.so.9", [["cudnn.h"]],
     "cudnnStatus_t", "CUDNN_STATUS_NOT_SUPPORTED"),
    ("nccl", "libnccl.so.2", None, [["nccl.h"]], "ncclResult_t", "ncclInvalidUsage"),
]


def exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) != 3 or f[1] not in "TW":
            continue
        syms[f[2].split("@")[0]] = f[1]
    return syms


def strip_attrs(s):
    # removes __attribute__((...)) and __declspec(...) with balanced parentheses
    while True:
        m = re.search(r"__attribute__\s*\(|__declspec\s*\(", s)
        if not m:
            return s
        i, depth = m.end() - 1, 0
        while i < len(s):
            if s[i] == "(":
                depth += 1
            elif s[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        s = s[:m.start()] + " " + s[i + 1:]


def preprocess(headers):
    src = "".join('#include <%s>\n' % h for h in headers)
    out = subprocess.run(["gcc", "-E", "-P", "-x", "c", "-I", CUDA + "/include", "-"],
                         input=src, check=True, capture_output=True, text=True).stdout
    return re.sub(r"\s+", " ", strip_attrs(out))


def prototype(text, name):
    for m in re.finditer(r"(?:^|[;{}])\s*([^;{}()]*?)\b%s\s*\(" % re.escape(name), text):
        ret = m.group(1).strip()
        i, depth = m.end() - 1, 0
        while i < len(text):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        args = text[m.end():i].strip()
        rest = text[i + 1:i + 3].strip()
        if not rest.startswith(";") or not ret or "typedef" in ret:
            continue
        ret = re.sub(r"\b(extern|static|inline|__inline__|__stdcall)\b", "", ret).strip()
        ret = re.sub(r"\s+", " ", ret)
        return ret, args or "void"
    return None


def body(ret, stype, val):
    if ret == "void":
        return "{ }"
    if ret == stype:
        return "{ return %s; }" % val
    return "{ %s r; memset(&r, 0, sizeof r); return r; }" % ret


def gen(d, soname, node, groups, stype, val):
    syms = exports(os.path.join(CUDA, "lib64", soname))
    extra = os.path.join(HERE, d, "extra.syms")
    if os.path.exists(extra):
        for line in open(extra):
            f = line.split()
            if len(f) == 2 and not line.startswith("#") and f[1] not in syms:
                syms[f[1]] = f[0]
    texts = [preprocess(g) for g in groups]
    ldir = os.path.join(HERE, d)
    os.makedirs(ldir, exist_ok=True)
    implemented = set()
    if d == "nccl":
        for fn in os.listdir(ldir):
            if fn.endswith(".c") and "_stubs" not in fn:
                implemented |= set(re.findall(r"NCCL_ALIAS\((\w+)\)",
                                              open(os.path.join(ldir, fn)).read()))
    files = []
    for g in groups:
        lines = ["/* GENERATED by tests/simcuda/libs/gen_stubs.py from `nm -D %s` and the"
                 " real headers:" % soname,
                 " * every function the real library exports; those not implemented by hand"
                 " return %s. */" % val, "#include <string.h>"]
        lines += ["#include <%s>" % h for h in g]
        lines += ["/* exported whatever -fvisibility the build uses; the .map file chooses */",
                  "#pragma GCC visibility push(default)"]
        lines += ["#pragma GCC diagnostic ignored \"-Wunused-parameter\"",
                  "#pragma GCC diagnostic ignored \"-Wdeprecated-declarations\"", ""]
        files.append(lines)
    missing = []
    names = sorted(syms)
    weak = "" if d == "nccl" else "__attribute__((weak)) "
    for name in names:
        if d == "nccl":
            if name.startswith("nccl") and syms[name] == "W" and ("p" + name) in syms:
                continue  # emitted with its pnccl
            if name.startswith("pnccl") and name[1:] in implemented:
                continue
        proto, gi = None, 0
        for i, t in enumerate(texts):
            proto = prototype(t, name)
            if proto:
                gi = i
                break
        lines = files[gi]
        if proto is None:
            missing.append(name)
            lines.append("/* no prototype in the headers */")
            lines.append("int %s(void);" % name)
            lines.append("%sint %s(void) { return %s; }" % (weak, name, val))
        else:
            ret, args = proto
            lines.append("%s%s %s(%s) %s" % (weak, ret, name, args, body(ret, stype, val)))
        if d == "nccl" and name.startswith("pnccl") and syms.get(name[1:]) == "W":
            lines.append("extern __typeof(%s) %s __attribute__((weak, alias(\"%s\")));"
                         % (name, name[1:], name))
    for i, lines in enumerate(files):
        fn = d + "_stubs.c" if i == 0 else "%s_stubs_%s.c" % (d, groups[i][0].split(".")[0])
        open(os.path.join(ldir, fn), "w").write("\n".join(lines) + "\n")
    exported = "".join("    %s;\n" % n for n in names)
    mp = "/* GENERATED by gen_stubs.py: the exports of the real %s */\n" % soname
    mp += "%s{\n  global:\n%s  local: *;\n};\n" % ((node + " ") if node else "", exported)
    open(os.path.join(ldir, d + ".map"), "w").write(mp)
    print("%s: %d exports, %d without a prototype: %s" % (soname, len(names), len(missing),
                                                          " ".join(missing)))


if __name__ == "__main__":
    for lib in LIBS:
        gen(*lib)
