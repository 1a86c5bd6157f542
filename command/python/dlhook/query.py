"""SQL over the Parquet dataset: one view per table (with the partition columns job, host and
rank), on DuckDB (embedded) or Spark. The analyses are the SQL files in sql/, one per analysis,
run unchanged by both engines: they keep to the SQL both speak (CTEs, window functions, CASE,
CAST ... AS BIGINT) and give exact results: integers only, means as
CAST(FLOOR(CAST(SUM(x) AS DOUBLE) / COUNT(x)) AS BIGINT), every ORDER BY total."""
import os

from ._progress import Progress
from .tables import TABLES

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")
# the analyses of `dlhook analyze`, in the order they are shown
ANALYSES = ("steps", "ranks", "straggler", "collective_skew", "kernels", "operators",
            "overlap", "memory_peaks")


def analysis_sql(name):
    with open(os.path.join(SQL_DIR, name + ".sql")) as f:
        return f.read()


def _tables(path):
    if not os.path.isdir(path):
        raise FileNotFoundError("%s: no such directory" % path)
    have = [t for t in TABLES if os.path.isdir(os.path.join(path, t))]
    if "calls" not in have:
        raise FileNotFoundError("%s: not a dlhook parquet dataset (no calls/; write one with "
                                "dlhook export --format parquet -o %s TRACE...)" % (path, path))
    return have


class DuckDB:
    name = "duckdb"

    def __init__(self, path):
        import duckdb
        self.con = duckdb.connect()
        for t in _tables(path):
            glob = os.path.join(path, t, "**", "*.parquet").replace("'", "''")
            self.con.execute("CREATE VIEW %s AS SELECT * FROM read_parquet('%s', "
                             "hive_partitioning = true, union_by_name = true)" % (t, glob))

    def query(self, sql):
        cur = self.con.execute(sql)
        cols = [d[0] for d in cur.description]
        return cols, [tuple(r) for r in cur.fetchall()]

    def close(self):
        self.con.close()


class Spark:
    name = "spark"

    def __init__(self, path, master=None):
        from pyspark.sql import SparkSession
        b = (SparkSession.builder.appName("dlhook").master(master or "local[*]")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", os.environ.get("DLHOOK_SPARK_PARTITIONS", "8")))
        self.spark = b.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        for t in _tables(path):
            d = os.path.abspath(os.path.join(path, t))
            self.spark.read.option("basePath", d).option("mergeSchema", "true").parquet(d) \
                .createOrReplaceTempView(t)

    def query(self, sql):
        df = self.spark.sql(sql)
        return list(df.columns), [tuple(r) for r in df.collect()]

    def close(self):
        self.spark.stop()


def engine(name, path, master=None):
    if name == "spark":
        return Spark(path, master)
    return DuckDB(path)


def plain(v):
    """A value as JSON shows it, the same from either engine (Decimal, numpy ints, ...)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return v
    try:
        f = float(v)
        return int(f) if f == int(f) else f
    except (TypeError, ValueError):
        return str(v)


def analyze(path, engine_name="duckdb", master=None, only=None, quiet=False):
    """Runs the analyses; returns {name: {"columns": [...], "rows": [[...]]}}. A progress line
    on a terminal (_progress.py) unless quiet."""
    e = engine(engine_name, path, master)
    todo = [a for a in ANALYSES if not only or a in only]
    prog = Progress("analyze", "analyses", len(todo), quiet=quiet)
    try:
        out = {}
        for i, a in enumerate(todo):
            prog.update(i, i, None, a)
            cols, rows = e.query(analysis_sql(a))
            out[a] = {"columns": cols, "rows": [[plain(v) for v in r] for r in rows]}
        return out
    finally:
        prog.close()
        e.close()
