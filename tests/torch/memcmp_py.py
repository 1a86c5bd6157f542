"""memcmp_py.py SNAPSHOT|- WORKLOAD.py ARGS... — runs a workload (tests/torch/workload.py) with
PyTorch's own memory history on (torch.cuda.memory._record_memory_history, before the workload
allocates anything) and writes torch.cuda.memory._snapshot() to SNAPSHOT at the end; with '-' it
runs the workload alone (a run recorded with --torch-memory: PyTorch refuses a history under the
cudaMallocAsync backend). For t_torch_memory_vs_torch.sh."""
import pickle
import runpy
import sys

import torch


def main():
    out, script = sys.argv[1], sys.argv[2]
    if out != "-":
        torch.cuda.memory._record_memory_history(stacks="python", max_entries=10 ** 7)
    sys.argv = [script] + sys.argv[3:]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:  # workload.py ends with sys.exit(main()): the snapshot comes first
        code = e.code
    if out != "-" and code in (0, None):
        torch.cuda.synchronize()
        with open(out, "wb") as f:
            pickle.dump(torch.cuda.memory._snapshot(), f)
    sys.exit(code)


if __name__ == "__main__":
    main()
