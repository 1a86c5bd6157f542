"""The Parquet dataset of dlhook traces.

`dlhook export --format parquet -o DIR TRACE...` lands in write_dataset(): each trace is read by
`dlhook export --format columns` (command/export/columns.c), which streams its tables as
fixed-width binary columns and string dictionaries in Arrow's memory layout; here each column
becomes an Arrow array over the received bytes (pyarrow.Array.from_buffers: no copy, no pass over
the values) and pyarrow writes the Parquet files.
One trace at a time per worker, as many workers as cores: the C reader of each trace runs in its
own process, and pyarrow's writer releases the GIL.

Layout: DIR/TABLE/job=JOB/host=HOST/rank=RANK/PID.parquet, one file per trace and table (rank -1
for a process without a rank); every table of every trace is written, empty or not, so that each
table has the same schema everywhere."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._progress import Progress

MAGIC = b"DLHCOLS2"
M_META, M_SCHEMA, M_STRINGS, M_BATCH, M_END = 1, 2, 3, 4, 5
TYPES = {ord("l"): (pa.int64(), 8), ord("i"): (pa.int32(), 4), ord("d"): (pa.float64(), 8),
         ord("b"): (pa.bool_(), 1), ord("s"): (pa.dictionary(pa.int32(), pa.string()), 4)}
TABLES = ("processes", "threads", "calls", "nvtx", "gpu", "memory", "stacks", "samples",
          "operators", "anchors", "steps", "collectives")


class StreamError(Exception):
    pass


def _read(f, n):
    b = f.read(n)
    if len(b) != n:
        raise StreamError("column stream cut short")
    return b


def _pad8(n):
    return (n + 7) & ~7


def _safe(s, dflt):
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", s or "")[:64].lstrip(".")
    return s or dflt


class _Trace:
    """Decodes one column stream into Arrow record batches, table by table."""

    def __init__(self, f):
        self.f = f
        self.meta = None
        self.schemas = {}
        self.strings = []
        self.dict_arr = pa.array([], pa.string())
        self.dict_len = 0

    def _dictionary(self):
        if self.dict_len != len(self.strings):
            self.dict_arr = pa.array(self.strings, pa.string())
            self.dict_len = len(self.strings)
        return self.dict_arr

    def messages(self):
        """Yields ("meta", dict), ("schema", (table, pa.Schema)), ("batch", (table, RecordBatch))."""
        if _read(self.f, 8) != MAGIC:
            raise StreamError("not a dlhook column stream")
        while True:
            head = _read(self.f, 16)
            mtype, table, _, nrows, size = struct.unpack("<BBHIQ", head)
            if mtype == M_END:
                return
            body = _read(self.f, size)
            if mtype == M_META:
                self.meta = json.loads(body)
                yield "meta", self.meta
            elif mtype == M_SCHEMA:
                (ln,) = struct.unpack_from("<H", body, 0)
                name = body[2:2 + ln].decode()
                p = 2 + ln
                (nc,) = struct.unpack_from("<H", body, p)
                p += 2
                cols = []
                for _ in range(nc):
                    t, nullable, cl = struct.unpack_from("<BBH", body, p)
                    p += 4
                    cols.append((body[p:p + cl].decode(), t, nullable))
                    p += cl
                schema = pa.schema([pa.field(c, TYPES[t][0], nullable=bool(nl) or t == ord("s"))
                                    for c, t, nl in cols])
                self.schemas[table] = (name, cols, schema)
                yield "schema", (name, schema)
            elif mtype == M_STRINGS:
                p = 0
                mv = memoryview(body)
                for _ in range(nrows):
                    (ln,) = struct.unpack_from("<I", body, p)
                    self.strings.append(bytes(mv[p + 4:p + 4 + ln]).decode("utf-8", "replace"))
                    p += 4 + ln
            elif mtype == M_BATCH:
                name, cols, schema = self.schemas[table]
                yield "batch", (name, self._batch(body, nrows, cols, schema))
            else:
                raise StreamError("unknown message %d" % mtype)

    def _batch(self, body, n, cols, schema):
        """The columns of a BATCH message as Arrow arrays over its bytes (columns.c's layout)."""
        arrays = []
        buf = pa.py_buffer(body)
        present = body[:len(cols)]
        p = _pad8(len(cols))
        for ci, (cname, t, nullable) in enumerate(cols):
            atype, w = TYPES[t]
            if not present[ci]:
                arrays.append(pa.nulls(n, atype))
                continue
            data = buf.slice(p, n * w)
            p += _pad8(n * w)
            bitmap = None
            if nullable or t == ord("s"):
                bitmap = buf.slice(p, (n + 7) // 8)
                p += _pad8((n + 7) // 8)
            if t == ord("s"):
                idx = pa.Array.from_buffers(pa.int32(), n, [bitmap, data], null_count=-1)
                arrays.append(pa.DictionaryArray.from_arrays(idx, self._dictionary()))
            elif t == ord("b"):  # a byte per value (only stacks.python): Arrow's bools are bits
                arrays.append(pa.array(np.frombuffer(data, np.uint8).astype(bool), pa.bool_()))
            else:
                arrays.append(pa.Array.from_buffers(atype, n, [bitmap, data], null_count=-1))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _dlhook_bin():
    """The dlhook command that reads traces: the one this package ships (_bin/dlhook, in the
    wheel), else DLHOOK_BIN (what `dlhook export --format parquet` sets to itself), else
    `dlhook` on PATH. A Jupyter kernel or `venv/bin/python script.py` has no venv bin/ on PATH:
    the shipped one must come first."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "dlhook")
    if os.access(here, os.X_OK):
        return here
    env = os.environ.get("DLHOOK_BIN")
    if env:
        return env
    found = shutil.which("dlhook")
    if found:
        return found
    raise StreamError("no dlhook command: not in this package (%s), DLHOOK_BIN is not set and "
                      "none is on PATH; install the wheel (make wheel) or set DLHOOK_BIN" % here)


def _said(err):
    """What the command wrote on its standard error (err: an open temporary file), one line
    without its "dlhook: " prefixes (its messages name the trace)."""
    err.seek(0)
    text = err.read().decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " ".join(ln[8:] if ln.startswith("dlhook: ") else ln for ln in lines)


def job_of(path):
    """The job a trace belongs to: DLHOOK_JOB, else the name of the trace's directory."""
    j = os.environ.get("DLHOOK_JOB")
    if j:
        return j
    return os.path.basename(os.path.dirname(os.path.abspath(path))) or "job"


def convert(path, out, job=None, max_events=None):
    """Writes the tables of one trace under out; returns ({table: rows}, damaged): a damaged
    trace (the reader's exit status 1, which a trace over the event limit also gets) has what
    could be read written. max_events: the reader's --max-events (None: its default)."""
    limit = ["--max-events", str(max_events)] if max_events is not None else []
    exe = _dlhook_bin()
    err = tempfile.TemporaryFile()  # the command's own messages, for the error raised
    try:
        proc = subprocess.Popen([exe, "export", "--format", "columns", "-q"] + limit +
                                ["-o", "-", path], stdout=subprocess.PIPE, stderr=err,
                                bufsize=1 << 20)
    except OSError as e:
        err.close()
        raise StreamError("%s: cannot run %s: %s" % (path, exe, e.strerror or e))
    with err:
        return _convert(proc, err, path, out, job)


def _convert(proc, err, path, out, job):
    tr = _Trace(proc.stdout)
    writers, tmp, rows = {}, {}, {}
    dirs = None
    ok = False
    try:
        for kind, val in tr.messages():
            if kind == "meta":
                m = val
                rank = m["rank"] if m["rank"] >= 0 else -1
                dirs = "job=%s/host=%s/rank=%d" % (_safe(job or job_of(path), "job"),
                                                   _safe(m["host"], "host"), rank)
            elif kind == "schema":
                name, schema = val
                d = os.path.join(out, name, dirs)
                os.makedirs(d, exist_ok=True)
                final = os.path.join(d, "%d.parquet" % tr.meta["pid"])
                tmp[name] = (final + ".tmp%d" % os.getpid(), final)
                # dictionaries for the strings, delta encoding for the integers (times, ids and
                # counts that move little from row to row: half the CPU of plain encoding + zstd
                # and a sixth of the size), statistics for the times (what queries filter on)
                strs = [f.name for f in schema if pa.types.is_dictionary(f.type)]
                delta = {f.name: "DELTA_BINARY_PACKED" for f in schema
                         if pa.types.is_integer(f.type)}
                stats = [f.name for f in schema if f.name.endswith("_ns") or f.name == "pid"]
                writers[name] = pq.ParquetWriter(tmp[name][0], schema, compression="zstd",
                                                 use_dictionary=strs, column_encoding=delta,
                                                 write_statistics=stats, write_page_index=False)
                rows[name] = 0
            else:
                name, batch = val
                writers[name].write_batch(batch)
                rows[name] += batch.num_rows
        ok = True
    except StreamError as e:
        proc.stdout.close()
        rc = proc.wait()
        said = _said(err)
        raise StreamError(said or "%s: %s (the reader exited with %d)" % (path, e, rc))
    finally:
        for w in writers.values():
            w.close()
        proc.stdout.close()
        rc = proc.wait()
        if not ok or rc not in (0, 1):
            for a, _ in tmp.values():
                if os.path.exists(a):
                    os.unlink(a)
    said = _said(err)
    if rc == 1:
        print("dlhook: %s: damaged or over the event limit; what could be read was converted%s"
              % (path, " (%s)" % said if said else ""), file=sys.stderr)
    elif rc != 0:
        raise StreamError(said or "%s: the reader exited with %d" % (path, rc))
    for a, b in tmp.values():
        os.replace(a, b)
    return rows, rc == 1


def write_dataset(out, traces, jobs=None, quiet=False, job=None, max_events=None, errors=None):
    """Converts traces in parallel into the dataset out. Returns (exit status, {table: rows}):
    1 when a trace could not be read or was damaged (what could be read is written), else 0.
    errors: a list that gets the message of each trace that could not be converted."""
    os.makedirs(out, exist_ok=True)
    jobs = jobs or int(os.environ.get("DLHOOK_JOBS") or 0) or os.cpu_count() or 1
    total = {}
    failed = 0
    lock = threading.Lock()
    done = [0, 0]  # traces, their bytes
    size = {p: (os.path.getsize(p) if os.path.isfile(p) else 0) for p in traces}
    prog = Progress("parquet", "traces", len(traces), sum(size.values()), quiet)

    def one(p):
        nonlocal failed
        try:
            r, damaged = convert(p, out, job, max_events)
        except (StreamError, OSError) as e:
            with lock:
                failed += 1
                if errors is not None:
                    errors.append(str(e))
            if not quiet or errors is None:
                print("dlhook: %s" % e, file=sys.stderr)
            return
        with lock:
            if damaged:
                failed += 1
            for k, v in r.items():
                total[k] = total.get(k, 0) + v
            done[0] += 1
            done[1] += size[p]
            prog.update(done[0], done[1], sum(total.values()))

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        list(ex.map(one, traces))
    prog.close()
    return (1 if failed else 0), total


def read_table(path, table):
    """One table of a dataset as a pyarrow Table, with the partition columns job, host, rank."""
    import pyarrow.dataset as ds
    d = os.path.join(path, table)
    if not os.path.isdir(d):
        raise FileNotFoundError("%s: no table %s (not a dlhook parquet dataset?)" % (path, table))
    return ds.dataset(d, format="parquet", partitioning="hive").to_table()
