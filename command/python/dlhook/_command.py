"""The `dlhook` console script of the wheel: runs the dlhook command shipped in dlhook/_bin/
with this Python as DLHOOK_PYTHON (for export --format parquet, sql and analyze)."""
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "_bin", "dlhook")
    if not os.access(exe, os.X_OK):
        print("dlhook: %s is missing: this dlhook package has no command (install the wheel "
              "of make wheel)" % exe, file=sys.stderr)
        return 1
    os.environ.setdefault("DLHOOK_PYTHON", sys.executable)
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
