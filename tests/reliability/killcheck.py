"""killcheck.py TRACE END_NS FLUSH_MS SLACK_MS LABEL — checks a trace of `victim loop` that was
killed (SIGKILL) or left through _exit at END_NS (CLOCK_MONOTONIC, the trace clock): `dlhook dump`
reads it without crashing, the cudaSetDevice calls it holds are exactly devices 0..k-1 (a complete
prefix), and the last one ended at most FLUSH_MS + SLACK_MS before END_NS. Prints one line:
LABEL calls K lost_ms L [damaged]."""
import json, os, subprocess, sys

trace, end_ns, flush_ms, slack_ms, label = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
p = subprocess.run([os.environ["DLHOOK_BIN"], "dump", trace], capture_output=True, text=True, timeout=120)
if p.returncode not in (0, 1):
    sys.exit(f"{label}: dump exit {p.returncode}: {p.stderr}")
if p.returncode == 1 and not p.stderr.strip():
    sys.exit(f"{label}: dump exit 1 without a message")
devs, last, start = [], None, None
for line in p.stdout.splitlines():
    e = json.loads(line)
    if e["type"] == "process":
        start = e["start_ns"]
    elif e["type"] == "api" and e["name"] == "cudaSetDevice":
        devs.append(int(e["args"]["device"]))
        end = e["start_ns"] + e["dur_ns"]
        last = end if last is None or end > last else last
if start is None:
    # The header frame (process record) is written by the first recorded call itself, before
    # it returns: without it the process died inside its first call; nothing else was lost.
    if devs:
        sys.exit(f"{label}: calls without a process record")
    print(f"{label} calls 0 lost_ms 0.0 (killed during the first call)")
    sys.exit(0)
if devs != list(range(len(devs))):
    holes = [i for i, d in enumerate(devs) if d != i][:5]
    sys.exit(f"{label}: not a complete prefix: {len(devs)} calls, first mismatches at {holes}")
ref = last if last is not None else start
lost_ms = (end_ns - ref) / 1e6
print(f"{label} calls {len(devs)} lost_ms {lost_ms:.1f}" + (" damaged" if p.returncode else ""))
if lost_ms > flush_ms + slack_ms:
    sys.exit(f"{label}: lost {lost_ms:.1f} ms > DLHOOK_FLUSH_MS {flush_ms} + {slack_ms}")
