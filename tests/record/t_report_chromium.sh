# dlhook report: one self-contained HTML page (nothing from the network) with the GPU-time flame
# graph, the timeline (canvas, drawn by the page's script from its data block) and the tables.
# (t_report_browser.sh drives the page with Playwright.) Headless Chromium (Debian package `chromium`,
# installed by scripts/bootstrap-deps when it can be) renders it: the flame graph's script
# positions its frames, and the screenshot is not blank (pixel variance of a PNG decoded with
# the Python standard library). Skipped (77) when Chromium is missing or cannot run here.
. "$ROOT/tests/lib.sh"
need "$BUILD/simcuda/libcudart.so.13"; need "$BUILD/examples/train"
"$DLHOOK_BIN" record --sim -o "$T/tr" -- "$BUILD/examples/train" --steps 3 >/dev/null 2>rec.txt \
  || { cat rec.txt; fail "record failed"; }
tr=$(one_trace "$T/tr")
"$DLHOOK_BIN" report -o report.html "$tr" || fail "report failed"
# self-contained: no external resources (the only URLs are XML namespace names)
if grep -Eo '(src|href)="[a-z]+:[^"]*"|<link|@import|url\(' report.html | grep -v 'data:' | grep -q .; then
  fail "the page refers to external resources"
fi
for id in 'id="flamegraph"' 'class="f"' 'id="tl-canvas"' 'id="top-kernels"' 'id="top-calls"' \
          'id="stats"' 'id="memory"' 'id="steps"' '"ProfilerStep#1"' '"mem":\[{"g":' 'id="dlh-data"'; do
  grep -q -- "$id" report.html || fail "the page lacks $id"
done
grep -q '<td class="n"[^>]*>.*kernel' report.html || fail "the kernel table is empty"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || skip "chromium is not installed (apt-get install chromium)"
ch() { timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
         --hide-scrollbars --user-data-dir="$T/chrome" "$@" 2>chrome.err; }
ch --window-size=1280,1600 --screenshot="$T/shot.png" "file://$T/report.html" >/dev/null
[ -s shot.png ] || { tail -5 chrome.err; skip "chromium cannot run here (no screenshot)"; }
ch --dump-dom "file://$T/report.html" >dom.html || { tail -5 chrome.err; skip "chromium --dump-dom failed"; }
# the flame graph's script ran: its frames got positions and widths
grep -Eq '<g class="f"[^>]*>(<title>[^<]*</title>)?<rect [^>]*width="[0-9.]+"' dom.html \
  || fail "flame graph frames were not drawn in Chromium"
python3 - shot.png <<'PY' || fail "the screenshot is blank"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
lum = []
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    if y % 4 == 0:
        lum += [(line[i] + line[i + 1] + line[i + 2]) / 3 for i in range(0, stride, bpp * 4)]
mean = sum(lum) / len(lum)
var = sum((v - mean) ** 2 for v in lum) / len(lum)
dark = sum(1 for v in lum if v < 200) / len(lum)
print("screenshot %dx%d: mean %.1f variance %.1f, %.1f%% non-white" % (w, h, mean, var, 100 * dark))
assert var > 100 and dark > 0.02, (var, dark)
PY
echo ok
