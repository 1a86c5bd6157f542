"""dlhook from Python: the tables of traces, SQL over them, and capture windows.

    import dlhook
    t = dlhook.tables("tables/")          # a dataset of dlhook export --format parquet, or traces
    t.calls.num_rows; t.gpu.to_pandas()
    dlhook.sql("tables/", "SELECT rank, count(*) FROM calls GROUP BY rank")   # a pyarrow Table
    dlhook.start(); ...; dlhook.stop()    # the capture window of this (recorded) process
"""
import os
import tempfile

# pyarrow is imported on first use, so that `import dlhook` (start/stop) needs nothing else
TABLES = ("processes", "threads", "calls", "nvtx", "gpu", "memory", "stacks", "samples",
          "operators", "anchors", "steps", "collectives")

__all__ = ["tables", "sql", "analyze", "start", "stop"]


class Tables:
    """The tables of a dataset, each a pyarrow Table read on first use (.to_pandas() for a
    DataFrame)."""

    def __init__(self, path):
        self.path = path
        self._t = {}

    def __getattr__(self, name):
        if name in TABLES:
            if name not in self._t:
                self._t[name] = _mod("tables").read_table(self.path, name)
            return self._t[name]
        raise AttributeError(name)

    def __dir__(self):
        return list(TABLES)


def tables(path):
    """The tables of path: a Parquet dataset directory, or traces (a .dlh file, or a directory
    of them, converted into a temporary dataset first)."""
    if os.path.isdir(os.path.join(path, "calls")):
        return Tables(path)
    if os.path.isdir(path):
        traces = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".dlh"))
    else:
        traces = [path]
    if not traces:
        raise FileNotFoundError("%s: no traces (*.dlh) and no dataset" % path)
    out = tempfile.mkdtemp(prefix="dlhook-tables-")
    errors = []
    rc, _ = _mod("tables").write_dataset(out, traces, quiet=True, errors=errors)
    if errors:  # the command's own messages (a damaged trace converts what could be read)
        raise RuntimeError("dlhook: could not convert %s: %s" % (path, "; ".join(errors)))
    return Tables(out)


_tables = tables


def _mod(name):
    """The submodule dlhook.NAME, imported on first use. Importing dlhook.tables binds the
    package's attribute `tables` to that module, over the function tables() (a second
    dlhook.tables(...) would call the module): the function is put back."""
    import importlib
    m = importlib.import_module("." + name, __name__)
    globals()["tables"] = _tables
    return m


def sql(path, query, engine="duckdb", master=None):
    """Runs query over a dataset; returns a pyarrow Table (.to_pandas() for a DataFrame)."""
    import pyarrow as pa
    q = _mod("query")
    mk, plain = q.engine, q.plain
    e = mk(engine, path, master)
    try:
        cols, rows = e.query(query)
    finally:
        e.close()
    return pa.table({c: [plain(r[i]) for r in rows] for i, c in enumerate(cols)})


def analyze(path, engine="duckdb", master=None):
    return _mod("query").analyze(path, engine, master)


def _ctl(value):
    """Opens (1) or closes (2) the capture window of this process when it runs under
    libdlhook.so with DLHOOK_CAPTURE_RANGE=signal or DLHOOK_SIGNAL set: what `dlhook ctl PID
    start|stop` does, a sigqueue of DLHOOK_SIGNAL (default SIGUSR2) with that value to itself.
    Returns False, sending nothing, when the process is not recorded that way."""
    import ctypes
    import signal
    try:
        with open("/proc/self/maps") as f:
            if "libdlhook" not in f.read():
                return False
    except OSError:
        return False
    if os.environ.get("DLHOOK_CAPTURE_RANGE", "").lower() != "signal" and \
            not os.environ.get("DLHOOK_SIGNAL"):
        return False
    sig = os.environ.get("DLHOOK_SIGNAL") or "SIGUSR2"
    num = int(sig) if sig.isdigit() else getattr(signal, sig.upper() if sig.upper().startswith(
        "SIG") else "SIG" + sig.upper(), None)
    if num is None:
        return False

    class sigval(ctypes.Union):
        _fields_ = [("sival_int", ctypes.c_int), ("sival_ptr", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, sigval]
    return libc.sigqueue(os.getpid(), int(num), sigval(sival_int=value)) == 0


def start():
    """Opens the capture window (see _ctl); True when the request was sent."""
    return _ctl(1)


def stop():
    """Closes the capture window (see _ctl); True when the request was sent."""
    return _ctl(2)
