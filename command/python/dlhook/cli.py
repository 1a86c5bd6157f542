"""The Python side of `dlhook export --format parquet`, `dlhook sql` and `dlhook analyze`; the
dlhook command (command/lib/python.c) runs `python -m dlhook.cli CMD ARGS...` after it checked
the options."""
import argparse
import csv
import json
import sys

EXIT_BAD, EXIT_USAGE = 1, 2


def _export(argv):
    p = argparse.ArgumentParser(prog="dlhook export --format parquet")
    p.add_argument("-o", dest="out", required=True)
    p.add_argument("-q", dest="quiet", action="store_true")
    p.add_argument("--max-events", dest="max_events", default=None)
    p.add_argument("traces", nargs="+")
    a = p.parse_args(argv)
    from .tables import write_dataset
    rc, _ = write_dataset(a.out, a.traces, quiet=a.quiet, max_events=a.max_events)
    return rc


def _common(p):
    p.add_argument("--engine", default="duckdb", type=str.lower, choices=("duckdb", "spark"))
    p.add_argument("--master", default=None)


def _print_rows(cols, rows, fmt, f=sys.stdout):
    from .query import plain
    if fmt == "json":
        for r in rows:
            f.write(json.dumps(dict(zip(cols, [plain(v) for v in r]))) + "\n")
    elif fmt == "csv":
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        w.writerows([[plain(v) for v in r] for r in rows])
    else:
        cells = [[("" if v is None else str(plain(v))) for v in r] for r in rows]
        wid = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
        f.write("  ".join(c.ljust(wid[i]) for i, c in enumerate(cols)).rstrip() + "\n")
        for r in cells:
            f.write("  ".join(v.rjust(wid[i]) if v[:1].isdigit() or v[:1] == "-" else
                              v.ljust(wid[i]) for i, v in enumerate(r)).rstrip() + "\n")


def _sql(argv):
    p = argparse.ArgumentParser(prog="dlhook sql")
    _common(p)
    p.add_argument("--format", default="table", type=str.lower, choices=("table", "csv", "json"))
    p.add_argument("dir")
    p.add_argument("query")
    a = p.parse_args(argv)
    q = a.query
    if q.startswith("@"):
        with open(q[1:]) as f:
            q = f.read()
    from .query import engine
    e = engine(a.engine, a.dir, a.master)
    try:
        cols, rows = e.query(q)
    finally:
        e.close()
    _print_rows(cols, rows, a.format)
    return 0


def _analyze(argv):
    p = argparse.ArgumentParser(prog="dlhook analyze")
    _common(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--only", action="append", default=[])
    p.add_argument("dir")
    a = p.parse_args(argv)
    from .query import ANALYSES, analyze
    only = [x for o in a.only for x in o.split(",") if x]
    for x in only:
        if x not in ANALYSES:
            print("dlhook analyze: unknown analysis '%s' (%s)" % (x, ", ".join(ANALYSES)),
                  file=sys.stderr)
            return EXIT_USAGE
    res = analyze(a.dir, a.engine, a.master, only or None)
    if a.json:
        json.dump(res, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for name, r in res.items():
        print("== %s (%d rows)" % (name, len(r["rows"])))
        _print_rows(r["columns"], r["rows"][:50], "table")
        if len(r["rows"]) > 50:
            print("... %d more rows (--json has them all)" % (len(r["rows"]) - 50))
        print()
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m dlhook.cli export|sql|analyze ...", file=sys.stderr)
        return EXIT_USAGE
    cmd, rest = argv[0], argv[1:]
    fn = {"export": _export, "sql": _sql, "analyze": _analyze}.get(cmd)
    if not fn:
        print("dlhook: unknown command %s" % cmd, file=sys.stderr)
        return EXIT_USAGE
    try:
        return fn(rest)
    except BrokenPipeError:  # the reader of the output went away (| head): nothing to say
        sys.stderr.close()
        return 0
    except ImportError as e:
        print("dlhook %s: %s (the Python that runs it, DLHOOK_PYTHON=%s, needs pyarrow, duckdb%s: "
              "pip install pyarrow duckdb%s)" % (cmd, e, sys.executable,
                                                 ", pyspark" if "spark" in str(e) else "",
                                                 " pyspark" if "spark" in str(e) else ""),
              file=sys.stderr)
        return EXIT_BAD
    except (FileNotFoundError, OSError) as e:
        print("dlhook %s: %s" % (cmd, e), file=sys.stderr)
        return EXIT_BAD
    except Exception as e:  # an engine's error about the query: say it, exit 1
        name = type(e).__name__
        msg = str(e).strip().splitlines()
        print("dlhook %s: %s: %s" % (cmd, name, msg[0] if msg else ""), file=sys.stderr)
        return EXIT_BAD


if __name__ == "__main__":
    sys.exit(main())
