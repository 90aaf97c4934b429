"""The kernel cache: in-memory hits, disk hits across processes, rebuilds of damaged objects."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import sparsetir_torch as st
from conftest import REPO_ROOT, SCRIPTS_DIR, read_script

# Compiles tests/scripts/csrmm.py (float32 / int32), runs it on a small matrix,
# checks the result against dense float64 torch and prints cache_info() as JSON.
CHILD = r"""
import json, sys
import torch
import sparsetir_torch as st
with open(sys.argv[1], encoding="utf-8") as f:
    kernel = st.compile(f.read())
indptr = torch.tensor([0, 2, 2, 5, 6], dtype=torch.int32)
indices = torch.tensor([1, 3, 0, 2, 3, 4], dtype=torch.int32)
a = torch.tensor([1.5, -2.0, 0.5, 3.0, -1.0, 2.5])
b = torch.arange(15, dtype=torch.float32).reshape(5, 3) / 7 - 1
c = torch.full((4, 3), float("nan"))
kernel(a=a, b=b, c=c, indptr=indptr, indices=indices, m=4, n=5, feat_size=3, nnz=6)
dense = torch.zeros(4, 5, dtype=torch.float64)
rows = torch.repeat_interleave(torch.arange(4), indptr.diff().long())
dense[rows, indices.long()] = a.double()
expected = dense @ b.double()
ok = bool(torch.allclose(c.double(), expected, rtol=1e-6, atol=1e-6))
info = st.cache_info()
print(json.dumps({"ok": ok, "compiles": info["compiles"], "disk_hits": info["disk_hits"],
                  "memory_hits": info["memory_hits"], "directory": info["directory"]}))
"""

CSRMM = os.path.join(SCRIPTS_DIR, "csrmm.py")


def child_env(cache_dir):
    env = dict(os.environ)
    env["SPARSETIR_CACHE_DIR"] = str(cache_dir)
    return env


def run_child(cache_dir, timeout=120):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, CSRMM],
        env=child_env(cache_dir),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["ok"], f"wrong result in the child process: {info}"
    assert os.path.realpath(info["directory"]) == os.path.realpath(str(cache_dir)), info
    return info


def kernel_objects(cache_dir):
    return sorted(glob.glob(os.path.join(str(cache_dir), "*.so")))


# --------------------------------------------------------------------------- in process


def test_session_uses_the_private_cache_directory(session_cache_dir):
    directory = st.cache_info()["directory"]
    assert os.path.realpath(directory) == os.path.realpath(session_cache_dir)
    home_cache = os.path.realpath(os.path.expanduser("~/.cache/sparsetir"))
    assert os.path.realpath(directory) != home_cache


def test_compile_twice_gives_a_memory_hit():
    text = read_script("csrmm")
    st.compile(text)
    before = st.cache_info()
    k1 = st.compile(text)
    k2 = st.compile(st.parse(text))
    after = st.cache_info()
    assert after["memory_hits"] - before["memory_hits"] >= 2
    assert after["compiles"] == before["compiles"]
    assert after["disk_hits"] == before["disk_hits"]
    assert k1.source == k2.source and k1.params == k2.params


def test_different_dtype_is_a_different_kernel():
    before = st.cache_info()
    k32 = st.compile(read_script("sddmm", "float32"))
    k64 = st.compile(read_script("sddmm", "float64"))
    assert k32.source != k64.source
    assert "double" in k64.source
    after = st.cache_info()
    # each was built or found, none answered for the other
    assert sum(after[key] - before[key] for key in ("compiles", "disk_hits", "memory_hits")) == 2


def test_kernel_source_is_plain_c_abi(session_cache_dir):
    k = st.compile(read_script("csrmm"))
    assert 'extern "C"' in k.source
    assert "torch" not in k.source.lower()
    assert k.params == ("a", "b", "c", "indptr", "indices", "m", "n", "feat_size", "nnz")
    assert k.lowered.stage == 3
    # the source is kept next to its object in the cache
    sources = []
    for path in glob.glob(os.path.join(session_cache_dir, "*.cc")):
        with open(path, encoding="utf-8") as f:
            sources.append(f.read())
    assert k.source in sources


# --------------------------------------------------------------------------- across processes


def test_second_process_hits_the_disk_cache(session_cache_dir):
    st.compile(read_script("csrmm"))  # this process has put it on disk
    info = run_child(session_cache_dir)
    assert info["compiles"] == 0, info
    assert info["disk_hits"] >= 1, info


@pytest.fixture(scope="module")
def populated_cache(tmp_path_factory):
    """A fresh cache directory filled by one child process (which must compile)."""
    directory = tmp_path_factory.mktemp("fresh_cache")
    info = run_child(directory)
    assert info["compiles"] == 1 and info["disk_hits"] == 0, info
    assert len(kernel_objects(directory)) == 1
    return directory


def test_fresh_cache_directory_compiles_once(populated_cache):
    # the fixture asserted compiles == 1 in a fresh directory; a later process reuses it
    info = run_child(populated_cache)
    assert info["compiles"] == 0 and info["disk_hits"] == 1, info


def copy_cache(src, dst):
    shutil.copytree(str(src), str(dst))
    return dst


def truncate_half(path):
    size = os.path.getsize(path)
    assert size > 0
    with open(path, "r+b") as f:
        f.truncate(size // 2)


def flip_bytes(path):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        middle = len(data) // 2
        for i in range(middle, middle + 64):
            data[i] ^= 0xFF
        f.seek(0)
        f.write(data)


@pytest.mark.parametrize("damage", ["truncated", "corrupted", "deleted"])
def test_damaged_object_is_rebuilt(populated_cache, tmp_path, damage):
    directory = copy_cache(populated_cache, tmp_path / "cache")
    (obj,) = kernel_objects(directory)
    good_size = os.path.getsize(obj)
    if damage == "truncated":
        truncate_half(obj)
        assert os.path.getsize(obj) == good_size // 2
    elif damage == "corrupted":
        flip_bytes(obj)
    else:
        os.remove(obj)
    info = run_child(directory)  # asserts the kernel's result is correct
    assert info["compiles"] == 1 and info["disk_hits"] == 0, info
    (obj,) = kernel_objects(directory)
    assert os.path.getsize(obj) == good_size
    info = run_child(directory)  # the rebuilt object is now a valid cache entry
    assert info["compiles"] == 0 and info["disk_hits"] == 1, info


def test_concurrent_processes_compile_once(tmp_path):
    """The per-key file lock makes concurrent processes on a fresh directory build once."""
    directory = tmp_path / "concurrent"
    directory.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, CSRMM],
            env=child_env(directory),
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    infos = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, f"child failed:\n{out}\n{err}"
        infos.append(json.loads(out.strip().splitlines()[-1]))
    assert all(i["ok"] for i in infos), infos
    assert sum(i["compiles"] for i in infos) == 1, infos
    assert sum(i["disk_hits"] for i in infos) == 2, infos
    assert len(kernel_objects(directory)) == 1
    leftovers = [p for p in os.listdir(directory) if not p.endswith((".so", ".cc", ".sha256", ".lock"))]
    assert not leftovers, f"temporary files left in the cache: {leftovers}"


def test_in_process_kernel_still_works_after_cache_tests(kernel):
    """Damage done in other directories does not affect this process's kernels."""
    k = kernel("csrmm")
    a, b, c = torch.ones(1), torch.full((1, 2), 3.0), torch.zeros(1, 2)
    k(a=a, b=b, c=c, indptr=torch.tensor([0, 1], dtype=torch.int32), indices=torch.tensor([0], dtype=torch.int32),
      m=1, n=1, feat_size=2, nnz=1)
    assert torch.equal(c, torch.full((1, 2), 3.0))
