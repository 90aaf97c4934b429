"""Faults around the kernel cache and the system compiler: each ends in a
transparent recovery or a clear error, never in a wrong result or a kernel
left half-written under its key: a compiler killed mid-write, a cache path
that cannot be a directory, a full disk and a read-only one (real tmpfs
mounts in a private mount namespace), and many threads in two processes
compiling the same new kernels. (A deleted cache directory, damaged objects
and planted files are in test_cache_trust.py and test_cache.py.)"""
import json
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
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


def mounted_run(mount_options, mount_point, cache_dir, env_changes=None, after="true"):
    """Runs the CHILD kernel build in a private mount namespace where a tmpfs
    with `mount_options` lies at `mount_point` (a full or read-only disk that
    vanishes with the process), then the shell text `after` in the same
    namespace; the child's exit status is kept. Needs root and unshare(1)."""
    os.makedirs(mount_point, exist_ok=True)
    script = ('mount -t tmpfs -o "$1" tmpfs "$2" || exit 99; shift 2; "$@"; status=$?; ' + after +
              '; exit $status')
    env = dict(os.environ, SPARSETIR_CACHE_DIR=str(cache_dir), **(env_changes or {}))
    argv = [sys.executable, "-c", CHILD, CSRMM, "float32"]
    proc = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", mount_options, str(mount_point), *argv],
                          env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 99, f"mounting a tmpfs failed: {proc.stderr}"
    return proc


def can_mount():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(not can_mount(), reason="needs root and unshare --mount to make a small tmpfs")


def last_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_mount
def test_a_full_cache_disk_builds_into_a_private_directory(tmp_path):
    """A 16 KiB tmpfs holds the kernel's source but not its object: the link
    fails with ENOSPC, and the kernel is built in the process's private
    directory instead, with a warning; nothing half-written stays behind."""
    disk = tmp_path / "full-disk"
    proc = mounted_run("size=16k,mode=0700", disk, disk / "cache",
                       after=f'echo "LEFTOVERS $(find {disk} -name \'*.tmp.*\' | wc -l)"')
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-2])
    assert info["ok"] and info["compiles"] == 1, info
    assert "is out of space; building into" in proc.stderr, proc.stderr
    assert proc.stdout.strip().endswith("LEFTOVERS 0"), proc.stdout


@needs_mount
def test_a_full_disk_everywhere_is_a_clear_error(tmp_path):
    """When the private fallback lies on the same full disk, it fails too: a
    CompileError that says the disk is full, and no temporary file left."""
    disk = tmp_path / "full-disk"
    proc = mounted_run("size=16k,mode=0700", disk, disk / "cache", {"TMPDIR": str(disk)},
                       after=f'echo "LEFTOVERS $(find {disk} -name \'*.tmp.*\' | wc -l)"')
    assert proc.returncode != 0, proc.stdout
    assert "CompileError" in proc.stderr and "No space left on device" in proc.stderr, proc.stderr
    assert proc.stdout.strip().endswith("LEFTOVERS 0"), proc.stdout


@needs_mount
def test_a_read_only_cache_falls_back_with_a_warning(tmp_path):
    disk = tmp_path / "read-only"
    proc = mounted_run("ro,size=64k,mode=0700", disk, disk)
    assert proc.returncode == 0, proc.stderr
    info = last_json(proc)
    assert info["ok"] and info["compiles"] == 1 and info["directory"] != str(disk), info
    assert "is not writable" in proc.stderr, proc.stderr


# Eight threads of one process build and run a list of kernels no other test
# builds (widths of their own), each thread checking every result.
THREADED_CHILD = r"""
import json, sys, threading
from concurrent.futures import ThreadPoolExecutor
import torch
import sparsetir_torch as st

script, widths = open(sys.argv[1]).read(), [int(w) for w in sys.argv[2].split(",")]
start = threading.Barrier(8)

def work(seed):
    start.wait()
    ok = True
    for width in widths:
        kernel = st.compile(st.specialize(st.parse(script), feat_size=width))
        g = torch.Generator().manual_seed(seed * 1000 + width)
        indptr = torch.tensor([0, 2, 3], dtype=torch.int32)
        indices = torch.tensor([0, 2, 1], dtype=torch.int32)
        a, b, c = torch.rand(3, generator=g), torch.rand(3, width, generator=g), torch.empty(2, width)
        kernel(a=a, b=b, c=c, indptr=indptr, indices=indices, m=2, n=3, feat_size=width, nnz=3)
        dense = torch.zeros(2, 3, dtype=torch.float64)
        dense[torch.tensor([0, 0, 1]), indices.long()] = a.double()
        ok = ok and torch.allclose(c.double(), dense @ b.double(), rtol=1e-5, atol=1e-5)
    return ok

with ThreadPoolExecutor(8) as pool:
    ok = all(pool.map(work, range(8)))
info = st.cache_info()
print(json.dumps({"ok": ok, "compiles": info["compiles"], "disk_hits": info["disk_hits"]}))
"""


def test_two_processes_of_eight_threads_compile_each_kernel_once(tmp_path):
    """16 threads in 2 processes, all building the same 3 new kernels into
    one empty cache at once: each kernel is compiled exactly once in all,
    every result is right, and no temporary file is left."""
    directory = tmp_path / "cache"
    base = 3000 + (os.getpid() % 500) * 3
    widths = ",".join(str(base + i) for i in range(3))
    env = dict(os.environ, SPARSETIR_CACHE_DIR=str(directory))
    procs = [subprocess.Popen([sys.executable, "-c", THREADED_CHILD, CSRMM, widths], env=env, cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    infos = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        infos.append(json.loads(out.strip().splitlines()[-1]))
    assert all(i["ok"] for i in infos), infos
    assert sum(i["compiles"] for i in infos) == 3, infos
    assert sum(i["compiles"] + i["disk_hits"] for i in infos) == 6, infos
    assert len(objects(directory)) == 3
    assert not [p for p in os.listdir(directory) if ".tmp." in p]
