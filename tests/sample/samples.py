"""samples.py DLHOOK_BIN TRACE... — prints "CPU WAIT HOW": the host samples in the traces,
summed. HOW says where the counts came from:
  stats  `dlhook stats --json` has a "samples" object with "cpu" and "wait" (the summary the
         recorder's sampling comes with);
  dump   no such object (a dlhook without sampling in its summaries yet): the SampleBatch
         lines of `dlhook dump --all` ("type":"sample", one a line, "kind" "cpu" or
         "wait"; a list of kinds is counted each); without such packets, the largest "samples"
         running total of its "counters" lines (counted as on-CPU);
  raw    neither shows samples (the reader does not know SampleBatch yet): the trace file
         itself, decompressed with the zstd command and its length-delimited Packets walked
         here (Packet field 21 = SampleBatch, its field 4 = the kinds);
  none   no samples anywhere (counts 0 0).
Exit 1 when a trace does not read."""
import json
import subprocess
import sys

from pb import fields_wt as fields, varint



def raw_counts(path):
    """(cpu, wait, found) from the file's SampleBatch packets; found 0 when there are none."""
    data = open(path, "rb").read()[16:]  # the 16-byte header, then zstd frames
    r = subprocess.run(["zstd", "-dcq"], input=data, capture_output=True)
    out = r.stdout  # what decompressed, also of a trace cut short
    cpu = wait = found = 0
    i = 0
    try:
        while i < len(out):
            n, i = varint(out, i)
            pkt, i = out[i:i + n], i + n
            for f, wt, v in fields(pkt):
                if f != 21 or wt != 2:
                    continue
                found = 1
                for g, gwt, gv in fields(v):
                    if g != 4:
                        continue
                    if gwt == 2:  # packed
                        j = 0
                        while j < len(gv):
                            k, j = varint(gv, j)
                            cpu, wait = (cpu + 1, wait) if k == 0 else (cpu, wait + 1)
                    else:
                        cpu, wait = (cpu + 1, wait) if gv == 0 else (cpu, wait + 1)
    except (IndexError, ValueError):
        pass  # a damaged tail: what came before counts
    return cpu, wait, found

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
        kinds = p.get("kind", 0)  # one sample per line ("cpu", "wait"), or a batch's list
        for k in kinds if isinstance(kinds, list) else [kinds]:
            if k in (0, "cpu", "SAMPLE_CPU"):
                cpu += 1
            else:
                wait += 1
    if not counted and total:
        cpu += total
        how = "dump"
        continue
    if not counted:
        c, w, found = raw_counts(tr)
        if found:
            cpu += c
            wait += w
            how = "raw"
print(cpu, wait, how)
