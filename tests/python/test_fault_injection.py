"""Faults around the kernel cache and the system compiler: each ends in a
transparent recovery or a clear error, never in a wrong result or a kernel
left half-written under its key. (A full disk, a deleted cache directory and
damaged objects are in test_cache_trust.py and test_cache.py.)"""
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import torch

import sparsetir_torch as st
from conftest import REPO_ROOT
from test_cache_trust import CHILD, CSRMM, child, objects

# A C++ compiler killed by a signal halfway through writing its output: it
# writes part of an object to the -o path, then sends itself SIGKILL.
KILLED_COMPILER = """#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; fi
  shift
done
[ -n "$out" ] && printf '\\177ELF-partial' > "$out"
kill -9 $$
"""


def test_a_compiler_killed_mid_compile_is_a_clear_error_and_the_next_run_recovers(tmp_path):
    directory = tmp_path / "cache"
    killed = tmp_path / "killed-compiler"
    killed.write_text(KILLED_COMPILER)
    killed.chmod(0o755)
    env = dict(os.environ, SPARSETIR_CACHE_DIR=str(directory), CXX=str(killed))
    proc = subprocess.run([sys.executable, "-c", CHILD, CSRMM, "float32"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0 and "CompileError" in proc.stderr, proc.stderr
    assert "signal" in proc.stderr or "killed" in proc.stderr.lower(), proc.stderr
    assert not objects(directory), "a partial object was left under the kernel's key"
    assert not [p for p in os.listdir(directory) if ".tmp." in p]
    # The next process, with a working compiler, builds the kernel and gets the right result.
    info, _ = child({"SPARSETIR_CACHE_DIR": directory})
    assert info["compiles"] == 1 and len(objects(directory)) == 1, info


def test_a_cache_location_that_cannot_be_a_directory_falls_back_to_a_private_one(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    info, stderr = child({"SPARSETIR_CACHE_DIR": blocker / "cache"})
    assert "cannot be created" in stderr and str(blocker / "cache") in stderr, stderr
    assert info["compiles"] == 1 and info["directory"] != str(blocker / "cache"), info


def test_eight_threads_compiling_one_new_kernel_compile_it_once():
    """One script no other test compiles (its feature width is specialized to
    a value of its own), compiled by eight threads at once: one compile, one
    kernel object shared by all, and every thread's result right."""
    with open(CSRMM, encoding="utf-8") as f:
        script = f.read()
    width = 4000 + (os.getpid() % 997)  # new to the memory and the disk cache of this session
    before = st.cache_info()["compiles"]
    start = threading.Barrier(8)

    def build_and_run(seed):
        start.wait()
        kernel = st.compile(st.specialize(st.parse(script), feat_size=width))
        g = torch.Generator().manual_seed(seed)
        indptr = torch.tensor([0, 2, 3], dtype=torch.int32)
        indices = torch.tensor([0, 2, 1], dtype=torch.int32)
        a = torch.rand(3, generator=g)
        b = torch.rand(3, width, generator=g)
        c = torch.empty(2, width)
        kernel(a=a, b=b, c=c, indptr=indptr, indices=indices, m=2, n=3, feat_size=width, nnz=3)
        dense = torch.zeros(2, 3, dtype=torch.float64)
        dense[torch.tensor([0, 0, 1]), indices.long()] = a.double()
        return kernel, torch.allclose(c.double(), dense @ b.double(), rtol=1e-5, atol=1e-5)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(build_and_run, range(8)))
    assert all(ok for _, ok in results)
    assert st.cache_info()["compiles"] - before == 1
    assert len({k.source for k, _ in results}) == 1
