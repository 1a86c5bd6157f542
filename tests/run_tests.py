#!/usr/bin/env python3
"""tests/run_tests.py — the test runner behind tests/run-tests (see there for usage).

Runs every test of the suite and prints a closing line "N passed, N failed, N skipped".
A test is an executable $BUILD/tests/bin/t_* (compiled) or a script tests/**/t_*.sh (run with sh).
Exit 0 = pass, 77 = skip (the last line of its output says why), anything else or a time-out =
fail. Each test runs in its own session (process group) and its own temporary directory ($T),
with ROOT, BUILD, DLHOOK_LIB, DLHOOK_BIN, SIMRUN, CUDA_HOME, TIMEOUT, RES and T set.

At most TEST_JOBS tests run at once (default: the number of CPUs). Each has TEST_TIMEOUT
seconds (default 300); a script may ask for more with a header line "# run-tests: timeout=N"
(scaled like the default when TEST_TIMEOUT is set: N * TEST_TIMEOUT / 300). A script with the
line "# run-tests: serial" (it measures time or needs the machine to itself) runs after all the
others, alone. When a test ends, what it left running in its process group is killed. The
directory of a test that passed or was skipped is removed (its log stays; a whole suite's traces
took several GB of /tmp per run): TEST_KEEP=1 keeps them all.

Longest tests start first: each run stores the durations in $BUILD/tests/durations.json and the
next run orders by them (tests/durations.json, committed, serves a new build dir; tests never
seen before go first), which shortens the whole run when TEST_JOBS > 1.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
DEFAULT_TIMEOUT = 300


def env_int(name, default):
    v = os.environ.get(name, "")
    try:
        n = int(v)
        return n if n > 0 else default
    except ValueError:
        if v:
            print(f"run-tests: ignoring {name}={v!r} (not a positive integer)", file=sys.stderr)
        return default


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD") or "build"
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
CUDA_HOME = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
TIMEOUT = env_int("TEST_TIMEOUT", DEFAULT_TIMEOUT)
try:
    NCPU = len(os.sched_getaffinity(0))  # the CPUs this process may use (as nproc counts them)
except (AttributeError, OSError):
    NCPU = os.cpu_count() or 2
JOBS = env_int("TEST_JOBS", NCPU)
DURATIONS = os.path.join(BUILD, "tests", "durations.json")
SEED_DURATIONS = os.path.join(ROOT, "tests", "durations.json")


class Test:
    def __init__(self, path):
        self.path = path
        if path.startswith(BUILD + "/"):
            self.name = path[len(BUILD) + 1:]
        else:
            self.name = os.path.relpath(path, ROOT)
        self.script = path.endswith(".sh")
        self.serial = False
        self.timeout = TIMEOUT
        if self.script:
            self._read_header()
        self.result = None   # "pass", "fail", "skip"
        self.secs = 0.0
        self.note = ""
        self.dir = None      # its $T while it runs

    def _read_header(self):
        try:
            with open(self.path, errors="replace") as f:
                head = f.read(8192)
        except OSError:
            return
        for m in re.finditer(r"^# run-tests:\s*(.*)$", head, re.M):
            for word in m.group(1).split():
                if word == "serial":
                    self.serial = True
                elif word.startswith("timeout="):
                    try:
                        self.timeout = max(1, int(word[8:]) * TIMEOUT // DEFAULT_TIMEOUT)
                    except ValueError:
                        pass


def find_tests(pattern):
    paths = []
    bindir = os.path.join(BUILD, "tests", "bin")
    if os.path.isdir(bindir):
        for n in os.listdir(bindir):
            p = os.path.join(bindir, n)
            if n.startswith("t_") and not n.endswith(".d") and os.path.isfile(p) and os.access(p, os.X_OK):
                paths.append(p)
    for d, dirs, files in os.walk(os.path.join(ROOT, "tests")):
        dirs.sort()
        for n in files:
            if n.startswith("t_") and n.endswith(".sh"):
                paths.append(os.path.join(d, n))
    tests = sorted((Test(p) for p in paths), key=lambda t: t.path)
    if pattern:
        # the pattern is a grep (basic) regular expression over the test paths, as it always was
        r = subprocess.run(["grep", "-e", pattern], input="".join(t.path + "\n" for t in tests),
                           capture_output=True, text=True)
        if r.returncode > 1:
            sys.exit(f"run-tests: bad pattern {pattern!r}: {r.stderr.strip()}")
        keep = set(r.stdout.splitlines())
        tests = [t for t in tests if t.path in keep]
    return tests


def load_durations():
    """Durations of the last run in this build dir; in a new one, those of tests/durations.json
    (a run on a 2-core machine, committed so that a fresh checkout starts the long tests first)."""
    d = {}
    for path in (SEED_DURATIONS, DURATIONS):
        try:
            with open(path) as f:
                d.update({k: float(v) for k, v in json.load(f).items()})
        except (OSError, ValueError, AttributeError, TypeError):
            pass
    return d


def save_durations(old, tests):
    d = dict(old)
    for t in tests:
        if t.result in ("pass", "fail"):
            d[t.name] = round(t.secs, 2)
    try:
        os.makedirs(os.path.dirname(DURATIONS), exist_ok=True)
        tmp = DURATIONS + ".tmp"
        with open(tmp, "w") as f:
            json.dump(d, f, indent=0, sort_keys=True)
        os.replace(tmp, DURATIONS)
    except OSError:
        pass


out_lock = threading.Lock()


def say(text):
    with out_lock:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Runner:
    def __init__(self, res):
        self.res = res
        self.running = {}   # pid -> (test, proc, start, log)

    def start(self, t):
        safe = t.name.replace("/", "_")
        tdir = tempfile.mkdtemp(prefix=safe + ".", dir=self.res)
        log = tdir + ".log"
        env = dict(os.environ, T=tdir, TIMEOUT=str(t.timeout))
        argv = ["sh", t.path] if t.script else [t.path]
        with open(log, "wb") as lf:
            proc = subprocess.Popen(argv, cwd=tdir, env=env, stdin=subprocess.DEVNULL, stdout=lf,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.running[proc.pid] = (t, proc, time.monotonic(), log)
        t.dir = tdir

    def reap(self):
        """Waits until one running test ends (or times out); returns it."""
        while True:
            now = time.monotonic()
            for pid, (t, proc, start, log) in list(self.running.items()):
                rc = proc.poll()
                timed_out = False
                if rc is None and now - start > t.timeout:
                    kill_group(pid, signal.SIGTERM)
                    try:
                        rc = proc.wait(10)
                    except subprocess.TimeoutExpired:
                        kill_group(pid, signal.SIGKILL)
                        rc = proc.wait()
                    timed_out = True
                if rc is None:
                    continue
                # whatever the test left behind in its process group goes with it
                kill_group(pid, signal.SIGKILL)
                del self.running[pid]
                t.secs = time.monotonic() - start
                self.report(t, rc, timed_out, log)
                if t.result != "fail" and os.environ.get("TEST_KEEP", "") != "1":
                    shutil.rmtree(t.dir, ignore_errors=True)
                return t
            time.sleep(0.05)

    def report(self, t, rc, timed_out, log):
        if timed_out:
            t.result = "fail"
            t.note = f"timed out after {t.timeout}s"
        elif rc == 0:
            t.result = "pass"
        elif rc == SKIP:
            t.result = "skip"
            last = tail(log, 1)
            t.note = last[0].strip() if last else "(no reason given)"
        else:
            t.result = "fail"
            t.note = f"exit {rc}" if rc > 0 else f"killed by signal {-rc}"
        if t.result == "pass":
            say(f"PASS {t.name} ({t.secs:.1f}s)")
        elif t.result == "skip":
            say(f"SKIP {t.name}: {t.note}")
        else:
            lines = [f"FAIL {t.name} ({t.note}, {t.secs:.1f}s)"]
            lines += ["    | " + l for l in tail(log, 40)]
            say("\n".join(lines))

    def stop_all(self):
        for pid in list(self.running):
            kill_group(pid, signal.SIGKILL)


def main(argv):
    usage = "usage: tests/run-tests [PATTERN]   (PATTERN: grep expression over the test paths)"
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__ + "\n" + usage)
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(usage, file=sys.stderr)
        return 2
    pattern = argv[1] if len(argv) > 1 else ""
    tests = find_tests(pattern)
    if not tests:
        print("no tests found" + (f" matching {pattern!r}" if pattern else ""))
        print("0 passed, 0 failed, 0 skipped")
        return 1

    os.environ.update(ROOT=ROOT, BUILD=BUILD, CUDA_HOME=CUDA_HOME,
                      DLHOOK_LIB=os.environ.get("DLHOOK_LIB") or os.path.join(BUILD, "libdlhook.so"),
                      DLHOOK_BIN=os.environ.get("DLHOOK_BIN") or os.path.join(BUILD, "dlhook"),
                      SIMRUN=os.path.join(ROOT, "tests", "simcuda", "run"))
    res = tempfile.mkdtemp(prefix="dlhook-tests.", dir=os.environ.get("TMPDIR") or "/tmp")
    os.environ["RES"] = res

    known = load_durations()
    # longest first (never-seen tests count as longest), then by name
    order = lambda t: (-known.get(t.name, float("inf")), t.name)
    parallel = sorted((t for t in tests if not t.serial), key=order)
    serial = sorted((t for t in tests if t.serial), key=lambda t: t.name)
    load0 = os.getloadavg()
    t0 = time.monotonic()
    print(f"run-tests: {len(tests)} test{'s' if len(tests) != 1 else ''} ({len(serial)} serial), {JOBS} at a time, "
          f"time-out {TIMEOUT}s, load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}", flush=True)

    runner = Runner(res)

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    interrupted = False
    try:
        queue = list(parallel)
        while queue or runner.running:
            while queue and len(runner.running) < JOBS:
                runner.start(queue.pop(0))
            runner.reap()
        for t in serial:
            runner.start(t)
            runner.reap()
    except KeyboardInterrupt:
        interrupted = True
        runner.stop_all()
        print("run-tests: interrupted", flush=True)
    except BrokenPipeError:  # nobody reads the output any more (| head): stop, quietly
        runner.stop_all()
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1

    wall = time.monotonic() - t0
    save_durations(known, tests)
    done = [t for t in tests if t.result]
    p = sum(t.result == "pass" for t in done)
    f = sum(t.result == "fail" for t in done)
    s = sum(t.result == "skip" for t in done)
    load1 = os.getloadavg()
    slow = sorted(done, key=lambda t: -t.secs)[:5]
    print("slowest: " + ", ".join(f"{t.name} {t.secs:.0f}s" for t in slow))
    for t in done:
        if t.result == "skip":
            print(f"skipped: {t.name}: {t.note}")
    for t in done:
        if t.result == "fail":
            print(f"failed: {t.name} ({t.note}); log: {res}/{t.name.replace('/', '_')}.*.log")
    print(f"test logs: {res}")
    print(f"run-tests: wall time {wall:.0f}s, load average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    print(f"{p} passed, {f} failed, {s} skipped", flush=True)
    if interrupted:
        return 130
    return 0 if f == 0 and p + s == len(tests) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
