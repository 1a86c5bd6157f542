"""samples.py DLHOOK_BIN TRACE... — prints "CPU WAIT HOW": the host samples in the traces,
summed. HOW says where the counts came from:
  stats  `dlhook stats --json` has a "samples" object with "cpu" and "wait" (the summary the
         recorder's sampling comes with);
  dump   no such object (a dlhook without sampling in its summaries yet): the SampleBatch
         packets of `dlhook dump --all`, counted by their "kind" lists (0 on-CPU, 1 wait), one
         per packet when the dump shows no list; without such packets, the largest "samples"
         running total of its "counters" lines (counted as on-CPU);
  none   neither knows about samples (counts 0 0).
Exit 1 when a trace does not read."""
import json
import subprocess
import sys

dlhook, traces = sys.argv[1], sys.argv[2:]
cpu = wait = 0
how = "none"
for tr in traces:
    r = subprocess.run([dlhook, "stats", "--json", tr], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"samples.py: dlhook stats {tr} failed: {r.stderr.strip()}", file=sys.stderr)
        sys.exit(1)
    s = json.loads(r.stdout).get("samples")
    if isinstance(s, dict) and "cpu" in s:
        cpu += int(s.get("cpu") or 0)
        wait += int(s.get("wait") or 0)
        how = "stats"
        continue
    r = subprocess.run([dlhook, "dump", "--all", tr], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"samples.py: dlhook dump {tr} failed: {r.stderr.strip()}", file=sys.stderr)
        sys.exit(1)
    counted, total = 0, 0
    for line in r.stdout.splitlines():
        try:
            p = json.loads(line)
        except ValueError:
            continue
        if not isinstance(p, dict):
            continue
        if p.get("type") == "counters" and isinstance(p.get("samples"), int):
            total = max(total, p["samples"])
        if not str(p.get("type", "")).startswith("sample"):
            continue
        counted = 1
        if how == "none":
            how = "dump"
        kinds = p.get("kind")
        if isinstance(kinds, list):
            cpu += sum(1 for k in kinds if k in (0, "cpu", "SAMPLE_CPU"))
            wait += sum(1 for k in kinds if k not in (0, "cpu", "SAMPLE_CPU"))
        else:
            cpu += 1
    if not counted and total:
        cpu += total
        how = "dump"
print(cpu, wait, how)
