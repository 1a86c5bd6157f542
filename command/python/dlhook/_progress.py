"""The progress line of long work (the Parquet dataset of many traces, dlhook analyze), as the
dlhook command draws its own (command/lib/scan.c): one line on stderr, rewritten at most twice
a second and erased at the end, only when stderr is a terminal and the work has taken
DLHOOK_PROGRESS_AFTER seconds (default 1); nothing in a log or a pipe. It says how many of the
items are done, the events (rows) per second when counted, and the time left: the time so far
scaled by the weight (a trace's bytes, or one per analysis) still to do, counted down between
the items' ends."""
import os
import sys
import threading
import time


def _count(n):
    if n < 10000:
        return "%d" % n
    if n < 1000000:
        return "%.1f k" % (n / 1e3)
    return "%.2f M" % (n / 1e6)


class Progress:
    def __init__(self, what, unit, total, weight=None, quiet=False):
        """what: the work ("parquet"); unit: what is counted ("traces"); total: how many;
        weight: their summed weight (default total: each weighs one)."""
        self.on = not quiet and sys.stderr.isatty()
        self.what, self.unit, self.total = what, unit, total
        self.weight = weight if weight else total
        self.t0 = time.monotonic()
        self.last = 0.0
        self.after = float(os.environ.get("DLHOOK_PROGRESS_AFTER") or 1.0)
        self.shown = False
        self.drawn = None  # the items done when the line was last drawn
        self.state = (0, 0, None, None)
        self.at = 0.0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        if self.on:  # redrawn while an item takes long (a query on Spark)
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self):
        while not self.stop.wait(0.5):
            self.update(*self.state)

    def update(self, done, weight_done, events=None, current=None):
        """done of total items finished, weight_done of their weight; events read so far (None:
        not counted); current: the item under way (named on the line)."""
        if not self.on:
            return
        with self.lock:
            if self.state[:2] != (done, weight_done):  # the time of this progress
                self.at = time.monotonic() - self.t0
            self.state = (done, weight_done, events, current)
            self._draw(done, weight_done, events, current)

    def _draw(self, done, weight_done, events, current):
        t = time.monotonic()
        el = t - self.t0
        # twice a second, and at once when an item is done (items can take less than that)
        if el < self.after or self.stop.is_set() or (t - self.last < 0.45 and self.drawn == done):
            return
        self.last = t
        self.drawn = done
        line = "dlhook: %s: %d/%d %s" % (self.what, done, self.total, self.unit)
        if current:
            line += " (%s)" % str(current)[:40]
        if events is not None and el > 0:
            line += ", %s events, %s events/s" % (_count(events), _count(int(events / el)))
        if 0 < weight_done < self.weight and self.at > 0:
            # the rate when the weight done last grew, counted down since
            left = max(0.0, self.at * (self.weight - weight_done) / weight_done - (el - self.at))
            line += ", %.0f s left" % left if left < 120 else ", %.0f min left" % (left / 60)
        sys.stderr.write("\r\033[K" + line)
        sys.stderr.flush()
        self.shown = True

    def close(self):
        """Erases the line: what is printed next starts clean."""
        self.stop.set()
        with self.lock:
            self._erase()

    def _erase(self):
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self.shown = False
