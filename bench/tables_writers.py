"""bench/tables_writers.py STREAM [REPS]: where the Parquet conversion's CPU goes, and what
pyarrow's writer settings would save (bench/tables-bench runs it on the column stream of its
large trace, `dlhook export --format columns`).

Decodes the stream as `dlhook export --format parquet` does (dlhook.tables), then writes every
table with the settings tables.py uses and with alternatives, each the minimum CPU time (user +
system of this process, all threads) of REPS rounds, the settings interleaved; an alternative
that does not read back equal to the data is marked so. Events: calls + GPU records + NVTX."""
import io
import os
import shutil
import sys
import tempfile
import time

t0 = time.process_time()
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "command", "python"))
from dlhook.tables import _Trace  # noqa: E402

t1 = time.process_time()


def current(schema):
    """What tables.py gives pq.ParquetWriter."""
    strs = [f.name for f in schema if pa.types.is_dictionary(f.type)]
    delta = {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_integer(f.type)}
    stats = [f.name for f in schema if f.name.endswith("_ns") or f.name == "pid"]
    return dict(compression="zstd", use_dictionary=strs, column_encoding=delta,
                write_statistics=stats, write_page_index=False)


def but(**over):
    return lambda schema: dict(current(schema), **over)


SETTINGS = [
    ("as written (zstd, delta ints, dictionaries for strings, statistics of times)", current),
    ("zstd level 1", but(compression_level=1)),
    ("snappy", but(compression="snappy")),
    ("lz4", but(compression="lz4")),
    ("no compression", but(compression="none")),
    ("no statistics", but(write_statistics=False)),
    ("data pages of 4 MiB", but(data_page_size=4 << 20)),
    ("write batches of 64 Ki rows", but(write_batch_size=65536)),
    ("plain integers (no delta)", but(column_encoding=None)),
]


def main():
    path, reps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    data = open(path, "rb").read()
    a = time.process_time()  # decoded as a conversion does: each batch dropped once written
    n = 0
    for kind, val in _Trace(io.BytesIO(data)).messages():
        n += val[1].num_rows if kind == "batch" else 0
    decode = time.process_time() - a
    tr = _Trace(io.BytesIO(data))
    schemas, batches = {}, {}
    for kind, val in tr.messages():
        if kind == "schema":
            schemas[val[0]] = val[1]
            batches[val[0]] = []
        elif kind == "batch":
            batches[val[0]].append(val[1])
    rows = {t: sum(b.num_rows for b in bl) for t, bl in batches.items()}
    ev = rows.get("calls", 0) + rows.get("gpu", 0) + rows.get("nvtx", 0)
    tables = {t: pa.Table.from_batches(bl, schemas[t]) for t, bl in batches.items()}
    print("  pyarrow and numpy imported: %.2f s; the stream (%d MB) decoded into Arrow: %.2f s"
          % (t1 - t0, len(data) // 1000000, decode))
    tmp = tempfile.mkdtemp(prefix="dlh-writers-")
    best, size, same = {}, {}, {}
    try:
        for _ in range(reps):
            for i, (name, kw) in enumerate(SETTINGS):
                d = os.path.join(tmp, str(i))
                os.makedirs(d, exist_ok=True)
                c = time.process_time()
                for t, bl in batches.items():
                    w = pq.ParquetWriter(os.path.join(d, t + ".parquet"), schemas[t], **kw(schemas[t]))
                    for b in bl:
                        w.write_batch(b)
                    w.close()
                c = time.process_time() - c
                best[name] = min(best.get(name, c), c)
                if name not in same:
                    size[name] = sum(os.path.getsize(os.path.join(d, t + ".parquet")) for t in batches)
                    same[name] = all(pq.read_table(os.path.join(d, t + ".parquet")).equals(tables[t])
                                     for t in batches)
                shutil.rmtree(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("  Parquet encoding of %.2f M events (%d rows), min of %d:" % (ev / 1e6, sum(rows.values()), reps))
    for name, _ in SETTINGS:
        print("    %-76s %5.2f s %6.2f M events/s %7.1f MB%s" % (name, best[name], ev / best[name] / 1e6,
                                                             size[name] / 1e6, "" if same[name] else "  READ BACK DIFFERS"))


if __name__ == "__main__":
    main()
