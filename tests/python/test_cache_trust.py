"""What the kernel cache trusts (runtime/cache_trust.h): a cached object runs in
the calling process, so it is loaded only from a private directory and only
when it, and its checksum, are the user's own files that no one else can
write; the checksum binds an object to its key. Each case runs in a child
process (the cache directory is resolved once per process) on a copy of a
populated cache, and every child checks its kernel's result against float64.
"""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, SCRIPTS_DIR

# Builds tests/scripts/csrmm.py for argv[2] ("float32" or "float64"), runs it,
# checks against dense float64 and prints cache_info() as JSON. With argv[3] ==
# "delete-between", it compiles once, deletes the cache directory, and compiles
# the other dtype.
CHILD = r"""
import json, shutil, sys
import torch
import sparsetir_torch as st

def run(dtype):
    with open(sys.argv[1], encoding="utf-8") as f:
        kernel = st.compile(f.read().replace('"float32"', '"' + dtype + '"'))
    t = getattr(torch, dtype)
    indptr = torch.tensor([0, 2, 2, 5, 6], dtype=torch.int32)
    indices = torch.tensor([1, 3, 0, 2, 3, 4], dtype=torch.int32)
    a = torch.tensor([1.5, -2.0, 0.5, 3.0, -1.0, 2.5], dtype=t)
    b = (torch.arange(15, dtype=torch.float64).reshape(5, 3) / 7 - 1).to(t)
    c = torch.full((4, 3), float("nan"), dtype=t)
    kernel(a=a, b=b, c=c, indptr=indptr, indices=indices, m=4, n=5, feat_size=3, nnz=6)
    dense = torch.zeros(4, 5, dtype=torch.float64)
    rows = torch.repeat_interleave(torch.arange(4), indptr.diff().long())
    dense[rows, indices.long()] = a.double()
    return bool(torch.allclose(c.double(), dense @ b.double(), rtol=1e-6, atol=1e-6))

ok = run(sys.argv[2])
if len(sys.argv) > 3 and sys.argv[3] == "delete-between":
    shutil.rmtree(st.cache_info()["directory"])
    ok = ok and run("float64" if sys.argv[2] == "float32" else "float32")
info = st.cache_info()
print(json.dumps({"ok": ok, "compiles": info["compiles"], "disk_hits": info["disk_hits"],
                  "directory": info["directory"]}))
"""

CSRMM = os.path.join(SCRIPTS_DIR, "csrmm.py")


def child(env_changes, dtype="float32", extra=()):
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    proc = subprocess.run([sys.executable, "-c", CHILD, CSRMM, dtype, *extra], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["ok"], f"wrong result in the child process: {info}"
    return info, proc.stderr


def objects(directory):
    return sorted(glob.glob(os.path.join(str(directory), "*.so")))


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    """A cache directory (created by the library) holding the float32 and float64 kernels."""
    directory = tmp_path_factory.mktemp("trusted") / "cache"
    for dtype in ("float32", "float64"):
        info, _ = child({"SPARSETIR_CACHE_DIR": directory}, dtype)
        assert info["compiles"] == 1, info
    return directory


def fresh_copy(populated, tmp_path):
    target = tmp_path / "cache"
    shutil.copytree(populated, target)
    return target


def key_files(directory, dtype):
    """(object, checksum) of the csrmm kernel for `dtype`, told apart by its source."""
    for source in glob.glob(os.path.join(str(directory), "*.cc")):
        with open(source, encoding="utf-8") as f:
            text = f.read()
        if ("(double*)args[" in text) == (dtype == "float64"):
            stem = source[: -len(".cc")]
            return stem + ".so", stem + ".sha256"
    raise AssertionError(f"no {dtype} kernel in {directory}")


def test_created_directory_and_files_are_private(populated):
    assert mode(populated) == 0o700
    files = [p for p in os.listdir(populated) if not p.endswith(".lock")]
    assert files and all(mode(os.path.join(populated, p)) == 0o600 for p in files), {
        p: oct(mode(os.path.join(populated, p))) for p in files}


def test_a_copy_of_the_cache_is_trusted(populated, tmp_path):
    info, err = child({"SPARSETIR_CACHE_DIR": fresh_copy(populated, tmp_path)})
    assert info["compiles"] == 0 and info["disk_hits"] == 1, (info, err)


def test_object_copied_under_another_key_is_rebuilt(populated, tmp_path):
    directory = fresh_copy(populated, tmp_path)
    so32, sum32 = key_files(directory, "float32")
    so64, sum64 = key_files(directory, "float64")
    shutil.copy2(so32, so64)
    shutil.copy2(sum32, sum64)
    info, _ = child({"SPARSETIR_CACHE_DIR": directory}, "float64")  # checks a float64 result
    assert info["compiles"] == 1 and info["disk_hits"] == 0, info


@pytest.mark.parametrize("which", ["object", "checksum"])
def test_file_writable_by_others_is_not_loaded(populated, tmp_path, which):
    directory = fresh_copy(populated, tmp_path)
    so, checksum = key_files(directory, "float32")
    target = so if which == "object" else checksum
    os.chmod(target, 0o666)
    info, err = child({"SPARSETIR_CACHE_DIR": directory})
    assert info["compiles"] == 1 and info["disk_hits"] == 0, info
    assert "writable by other users" in err and "not loading the cached kernel" in err, err
    assert mode(so) == 0o600 and mode(checksum) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_object_owned_by_another_user_is_not_loaded(populated, tmp_path):
    directory = fresh_copy(populated, tmp_path)
    so, _ = key_files(directory, "float32")
    os.chown(so, 65534, 65534)
    info, err = child({"SPARSETIR_CACHE_DIR": directory})
    assert info["compiles"] == 1 and info["disk_hits"] == 0, info
    assert "owned by uid 65534" in err, err
    assert os.stat(so).st_uid == os.geteuid()


def test_symlinked_object_is_not_loaded(populated, tmp_path):
    directory = fresh_copy(populated, tmp_path)
    so, _ = key_files(directory, "float32")
    elsewhere = tmp_path / "planted.so"
    shutil.move(so, elsewhere)
    os.symlink(elsewhere, so)
    info, err = child({"SPARSETIR_CACHE_DIR": directory})
    assert info["compiles"] == 1 and "is not a regular file" in err, (info, err)
    assert not os.path.islink(so)


def test_directory_writable_by_others_is_replaced_by_a_private_one(populated, tmp_path):
    directory = fresh_copy(populated, tmp_path)
    os.chmod(directory, 0o777)
    info, err = child({"SPARSETIR_CACHE_DIR": directory})
    assert os.path.realpath(info["directory"]) != os.path.realpath(directory)
    assert info["compiles"] == 1 and info["disk_hits"] == 0, info
    assert "writable by other users" in err, err
    assert not os.path.exists(info["directory"]), "the private fallback directory outlived its process"


def test_without_home_the_cache_is_a_new_private_directory(tmp_path):
    env = {"SPARSETIR_CACHE_DIR": None, "XDG_CACHE_HOME": None, "HOME": None, "TMPDIR": tmp_path}
    first, _ = child(env)
    second, _ = child(env)
    for info in (first, second):
        assert re.fullmatch(r"sparsetir-cache-\w{6}", os.path.basename(info["directory"])), info
        assert info["compiles"] == 1
    assert first["directory"] != second["directory"]
    assert os.listdir(tmp_path) == [], "fallback directories were left behind"


def test_a_deleted_cache_directory_is_recreated(tmp_path):
    directory = tmp_path / "cache"
    info, _ = child({"SPARSETIR_CACHE_DIR": directory}, "float32", ["delete-between"])
    assert info["compiles"] == 2, info
    assert mode(directory) == 0o700 and len(objects(directory)) == 1


def test_a_failed_compile_leaves_no_temporary_files(tmp_path):
    directory = tmp_path / "cache"
    fake = tmp_path / "failing-compiler"
    fake.write_text("#!/bin/sh\necho 'error: no space left on device' >&2\nexit 1\n")
    fake.chmod(0o755)
    env = dict(os.environ, SPARSETIR_CACHE_DIR=str(directory), CXX=str(fake))
    proc = subprocess.run([sys.executable, "-c", CHILD, CSRMM, "float32"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0 and "CompileError" in proc.stderr, proc.stderr
    leftovers = [p for p in os.listdir(directory) if ".tmp." in p]
    assert not leftovers, leftovers
