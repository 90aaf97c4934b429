"""Compile and load times of a kernel: cold (empty cache), warm (disk cache, new
process) and in-memory (repeated st.compile in one process). Medians of several
fresh processes.

    python benchmarks/bench_compile.py [--kernel csrmm] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import sparsetir_torch as st
from sparsetir_torch.kernels import kernel_script
t1 = time.perf_counter()
text = kernel_script(sys.argv[1])
t2 = time.perf_counter()
f = st.parse(text)
k = st.compile(f)
t3 = time.perf_counter()
n = 1000
for _ in range(n):
    st.compile(f)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "build_s": t3 - t2, "memory_hit_us": (t4 - t3) / n * 1e6,
                  "compiles": st.cache_info()["compiles"]}))
"""


def run_child(kernel: str, cache: str) -> dict:
    env = dict(os.environ, SPARSETIR_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, kernel], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernel", default="csrmm")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cold, warm, memory = [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            first = run_child(args.kernel, cache)
            assert first["compiles"] == 1, first
            second = run_child(args.kernel, cache)
            assert second["compiles"] == 0, second
            cold.append(first["build_s"])
            warm.append(second["build_s"])
            memory.append(second["memory_hit_us"])
    print(f"kernel {args.kernel}: medians of {args.repeats} fresh processes")
    print(f"  cold compile (parse + lower + codegen + c++ + load): {statistics.median(cold) * 1e3:8.1f} ms")
    print(f"  warm load from the disk cache (new process):         {statistics.median(warm) * 1e3:8.1f} ms")
    print(f"  in-memory lookup (st.compile again, same process):   {statistics.median(memory):8.1f} us")


if __name__ == "__main__":
    main()
