"""Build and load the hand-written AVX-512 SpMM baseline (spmm_avx512.cc) with ctypes.

    from benchmarks.baseline.build import load_spmm_avx512   # or: python benchmarks/baseline/build.py
    spmm = load_spmm_avx512()
    spmm(indptr_i32, indices_i32, values_f32, B, C, num_threads=2)   # torch CPU tensors, C written in place

The .so is built once per (source, flags, compiler) into a temp directory and reused.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "spmm_avx512.cc")
CXX = os.environ.get("CXX", "g++")
FLAGS = ["-O3", "-march=native", "-shared", "-fPIC", "-std=c++17", "-pthread"]
SUPPORTED_K = (32, 64, 128, 256)


def build(extra_flags: tuple = ()) -> str:
    """Compiles spmm_avx512.cc (if not already built) and returns the .so path."""
    flags = FLAGS + list(extra_flags)
    with open(SOURCE, "rb") as f:
        src = f.read()
    version = subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256(src + " ".join(flags).encode() + version.encode()).hexdigest()[:16]
    out_dir = os.path.join(tempfile.gettempdir(), f"sparsetir_bench_baseline_{os.getuid()}")
    os.makedirs(out_dir, exist_ok=True)
    so = os.path.join(out_dir, f"libspmm_avx512_{key}.so")
    if not os.path.exists(so):
        tmp = so + f".{os.getpid()}.tmp"
        cmd = [CXX, *flags, SOURCE, "-o", tmp]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"building the baseline failed:\n{' '.join(cmd)}\n{res.stderr}")
        os.replace(tmp, so)
    return so


def load_spmm_avx512(extra_flags: tuple = ()):
    """Returns a Python callable spmm(indptr, indices, values, B, C, num_threads) over torch CPU tensors."""
    import torch

    lib = ctypes.CDLL(build(extra_flags))
    fn = lib.spmm_avx512
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 3 + [ctypes.c_int]

    def spmm(indptr, indices, values, B, C, num_threads: int = 2) -> None:
        m, K = C.shape
        n = B.shape[0]
        assert indptr.dtype == torch.int32 and indices.dtype == torch.int32, "indptr/indices must be int32"
        assert values.dtype == torch.float32 and B.dtype == torch.float32 and C.dtype == torch.float32
        assert B.shape[1] == K and indptr.numel() == m + 1 and indices.numel() == values.numel()
        for t in (indptr, indices, values, B, C):
            assert t.device.type == "cpu" and t.is_contiguous()
        rc = fn(indptr.data_ptr(), indices.data_ptr(), values.data_ptr(), B.data_ptr(), C.data_ptr(), m, n, K,
                num_threads)
        if rc != 0:
            raise ValueError(f"spmm_avx512: unsupported K={K} (supported: {SUPPORTED_K})" if rc == 1 else f"rc={rc}")

    spmm.lib = lib
    return spmm


if __name__ == "__main__":
    print(build())
