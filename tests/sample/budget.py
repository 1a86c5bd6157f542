"""budget.py SECONDS — threads that keep a host sampler busy: the main thread alternates 2 ms of
CPU with 2 ms of sleep (a training step's compute and its waits, faster than a sampling period),
and a helper thread wakes every millisecond (a poller: mostly off the CPU, never still). At its
end it prints one JSON line: how often the sampler thread went to sleep (voluntary context
switches of `dlhook-sampler`), the wall time, and the helper's thread id and time asleep."""
import json
import os
import threading
import time

secs = float(os.sys.argv[1])
stop = threading.Event()
helper = {}


def poller():
    helper["tid"] = threading.get_native_id()
    c0 = time.thread_time()
    w0 = time.monotonic()
    while not stop.is_set():
        time.sleep(0.001)
    helper["asleep"] = (time.monotonic() - w0) - (time.thread_time() - c0)


def sampler_wakes():
    n = None
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() != "dlhook-sampler":
                    continue
            with open(f"/proc/self/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        n = (n or 0) + int(line.split()[1])
        except (OSError, ValueError):
            pass
    return n


t = threading.Thread(target=poller)
t.start()
w0 = time.monotonic()
x = 0
while time.monotonic() - w0 < secs:
    c0 = time.thread_time()
    while time.thread_time() - c0 < 0.002:
        x = (x * 31 + 7) & 0xFFFF
    time.sleep(0.002)
wall = time.monotonic() - w0
wakes = sampler_wakes()
stop.set()
t.join()
print(json.dumps({"wall": wall, "sampler_wakes": wakes, "helper_tid": helper["tid"],
                  "helper_asleep": helper["asleep"]}))
