# README.md is a front door (issue #53): at most 120 lines, and every page of docs/ (the manual
# pages of docs/man/ included) can be reached from it by following links, README to a page and
# page to page, so that what moved out of README is still found. Every relative link of README
# and of the pages resolves: its file exists and its #anchor names a heading of that page (as
# GitHub makes anchors from headings). Then, on a copy, an unlinked page, a link to a missing
# file and a link to a missing heading must each be caught.
. "$ROOT/tests/lib.sh"
cat >check.py <<'PY'
import os, re, sys
root = sys.argv[1]
MAX_README = 120
bad = []

def slug(h):
    h = re.sub(r"[^\w\- ]", "", h.strip().lower())
    return h.replace(" ", "-")

def anchors(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
    return out

def links(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)    # fenced code
    text = re.sub(r"^(    |\t).*$", "", text, flags=re.M)          # indented code
    text = re.sub(r"`[^`\n]*`", "", text)                         # inline code
    return re.findall(r"\]\(([^)\s]+)\)", text)

readme = os.path.join(root, "README.md")
n = sum(1 for _ in open(readme, encoding="utf-8"))
if n > MAX_README:
    bad.append("README.md has %d lines (at most %d)" % (n, MAX_README))
reached, todo = set(), [readme]
while todo:
    page = todo.pop()
    if page in reached:
        continue
    reached.add(page)
    if not page.endswith(".md"):
        continue
    for target in links(page):
        if re.match(r"[a-z]+:", target):      # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
        rel = os.path.relpath(page, root)
        if not os.path.exists(dest):
            bad.append("%s: link to %s: no such file" % (rel, target))
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append("%s: link to %s: no heading makes #%s" % (rel, target, anchor))
        if os.path.isfile(dest):
            todo.append(dest)
docs = os.path.join(root, "docs")
pages = [os.path.join(d, f) for d, _, fs in os.walk(docs) for f in fs
         if f.endswith(".md") or (os.path.basename(d) == "man" and f.endswith(".1"))]
for p in sorted(pages):
    if os.path.normpath(p) not in reached:
        bad.append("%s: not linked from README.md nor from a page it links to" % os.path.relpath(p, root))
for b in bad:
    print(b)
print("README.md: %d lines; %d of %d docs pages reached by links" %
      (n, sum(1 for p in pages if os.path.normpath(p) in reached), len(pages)))
sys.exit(1 if bad else 0)
PY
python3 check.py "$ROOT" >ok.txt 2>&1 || { cat ok.txt; fail "README.md or the links of docs/ are not as they should be"; }
cat ok.txt
# ---- the check must catch what it is for (a copy of README.md and docs/)
expect_fail() { # expect_fail WHAT PATTERN
  if python3 check.py src >bad.txt 2>&1; then cat bad.txt; fail "$1: not caught"; fi
  grep -q "$2" bad.txt || { cat bad.txt; fail "$1: caught, but not as '$2'"; }
  echo "caught: $1: $(grep "$2" bad.txt | head -n 1)"
}
copy() { rm -rf src; mkdir src; cp -r "$ROOT/README.md" "$ROOT/docs" src/; }
copy
printf '# Orphan\n' >src/docs/orphan.md
expect_fail "a page nothing links to" "docs/orphan.md: not linked"
copy
printf '\nSee [gone](docs/gone.md).\n' >>src/README.md
expect_fail "a link to a missing page" "README.md: link to docs/gone.md: no such file"
copy
printf '\nSee [x](stats.md#no-such-heading).\n' >>src/docs/advise.md
expect_fail "a link to a missing heading" "docs/advise.md: link to stats.md#no-such-heading: no heading"
copy
i=0; while [ $i -lt 120 ]; do echo >>src/README.md; i=$((i + 1)); done
expect_fail "a README of more than 120 lines" "README.md has [0-9]* lines (at most 120)"
echo ok
