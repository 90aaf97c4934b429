"""Build and load the hand-written CPU baselines (benchmarks/baseline/<op>_<isa>.cc) with ctypes.

    from benchmarks.baseline.build import load_baseline, available_isas   # or: python benchmarks/baseline/build.py
    print(available_isas())                       # e.g. ('avx2',) on an AVX2-only x86 host
    spmm = load_baseline("spmm", "avx2")
    spmm(indptr_i32, indices_i32, values_f32, B, C, num_threads=2)          # C = A @ B, written in place
    sddmm = load_baseline("sddmm", "avx2")
    sddmm(indptr_i32, indices_i32, values_f32, X, Y, out, num_threads=2)    # out[e] = values[e] * X[i] . Y[j]

All arguments are contiguous torch CPU tensors (int32 indices, float32 values and dense operands). One instruction
set level per build: avx2 (-march=x86-64-v3), avx512 (-march=x86-64-v4), neon (-march=armv8-a). A .so is built
once per (source, headers, flags, compiler) into a temp directory and reused; concurrent builds are safe (each
writes a private temp file and renames it into place).

load_spmm_avx512() is kept for the scripts written against the AVX-512 SpMM alone (benchmarks/bench_spmm.py).
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import platform
import subprocess
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
CXX = os.environ.get("CXX", "g++")
COMMON_FLAGS = ["-O3", "-std=c++17", "-pthread"]
ISA_FLAGS = {"avx2": ["-march=x86-64-v3"], "avx512": ["-march=x86-64-v4"], "neon": ["-march=armv8-a"]}
OPS = ("spmm", "sddmm")
SUPPORTED_K = (32, 64, 128, 256)

# /proc/cpuinfo flags a level needs. -march=x86-64-v3 lets the compiler use all of AVX2, FMA, F16C, BMI1/2, LZCNT
# and MOVBE anywhere in the library, and -march=x86-64-v4 AVX-512 F, BW, CD, DQ and VL, so the host must have the
# whole level, not only the intrinsics' feature (every AVX-512 server CPU has the five; Xeon Phi lacked BW/DQ/VL).
_X86_LEVEL_FLAGS = {
    "avx2": {"avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe"},
    "avx512": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}


def source_path(op: str, isa: str) -> str:
    if op not in OPS or isa not in ISA_FLAGS:
        raise ValueError(f"no baseline {op!r} for {isa!r} (ops: {OPS}, isas: {tuple(ISA_FLAGS)})")
    return os.path.join(HERE, f"{op}_{isa}.cc")


def _cpu_flags() -> set:
    """The feature words of /proc/cpuinfo ("flags" on x86, "Features" on Arm); empty where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


def available_isas() -> tuple:
    """The baseline levels this host can run, lowest first (x86: avx2 and/or avx512; aarch64: neon)."""
    machine = platform.machine().lower()
    flags = _cpu_flags()
    if machine in ("aarch64", "arm64"):
        # Advanced SIMD is mandatory in ARMv8-A; the flag is "asimd" where the kernel lists features.
        return ("neon",) if not flags or "asimd" in flags else ()
    if machine in ("x86_64", "amd64"):
        levels = ("avx2", "avx512")
        # avx512 builds for x86-64-v4, which includes x86-64-v3: it needs both levels' flags.
        have = [lvl for i, lvl in enumerate(levels) if all(_X86_LEVEL_FLAGS[x] <= flags for x in levels[: i + 1])]
        return tuple(have)
    return ()


def _compiler_version(cxx: str) -> str:
    return subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout


def _build_key(source: str, flags: list, cxx: str) -> str:
    h = hashlib.sha256()
    for path in [source, *sorted(glob.glob(os.path.join(HERE, "*.h")))]:  # the headers the sources include
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(" ".join(flags).encode())
    h.update(_compiler_version(cxx).encode())
    return h.hexdigest()[:16]


def _compile(cmd: list, out: str) -> None:
    """Runs cmd, writing a temp file private to this process and thread, and renames the result to out (atomic: a
    concurrent reader sees the old state or the whole file)."""
    tmp = out + f".{os.getpid()}.{threading.get_ident()}.tmp"
    res = subprocess.run([*cmd, "-o", tmp], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building the baseline failed:\n{' '.join(cmd)} -o {tmp}\n{res.stderr}")
    os.replace(tmp, out)


def build(extra_flags: tuple = (), op: str = "spmm", isa: str = "avx512", cxx: str = None,
          object_only: bool = False) -> str:
    """Compiles <op>_<isa>.cc (if not already built) and returns the path of the .so (or the .o with object_only,
    which is how an ISA the host cannot run, e.g. neon on x86 with a cross compiler, is checked to compile)."""
    cxx = cxx or CXX
    source = source_path(op, isa)
    flags = COMMON_FLAGS + ISA_FLAGS[isa] + (["-c"] if object_only else ["-shared", "-fPIC"]) + list(extra_flags)
    key = _build_key(source, flags, cxx)
    out_dir = os.path.join(tempfile.gettempdir(), f"sparsetir_bench_baseline_{os.getuid()}")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{op}_{isa}_{key}.{'o' if object_only else 'so'}")
    if not os.path.exists(out):
        _compile([cxx, *flags, source], out)
    return out


def _check_tensors(name: str, ints: tuple, floats: tuple) -> None:
    import torch

    for t in ints:
        if t.dtype != torch.int32:
            raise TypeError(f"{name}: indptr/indices must be int32, got {t.dtype}")
    for t in floats:
        if t.dtype != torch.float32:
            raise TypeError(f"{name}: values and dense operands must be float32, got {t.dtype}")
    for t in ints + floats:
        if t.device.type != "cpu" or not t.is_contiguous():
            raise ValueError(f"{name}: every tensor must be a contiguous CPU tensor")


def _raise_for(name: str, rc: int, K: int) -> None:
    if rc == 1:
        raise ValueError(f"{name}: unsupported K={K} (supported: {SUPPORTED_K})")
    if rc != 0:
        raise ValueError(f"{name}: rc={rc}")


def _spmm_callable(fn, name: str):
    def spmm(indptr, indices, values, B, C, num_threads: int = 2) -> None:
        m, K = C.shape
        n = B.shape[0]
        _check_tensors(name, (indptr, indices), (values, B, C))
        if B.shape[1] != K or indptr.numel() != m + 1 or indices.numel() != values.numel():
            raise ValueError(f"{name}: shapes do not match (B {tuple(B.shape)}, C {tuple(C.shape)})")
        rc = fn(indptr.data_ptr(), indices.data_ptr(), values.data_ptr(), B.data_ptr(), C.data_ptr(), m, n, K,
                num_threads)
        _raise_for(name, rc, K)

    return spmm


def _sddmm_callable(fn, name: str):
    def sddmm(indptr, indices, values, X, Y, out, num_threads: int = 2) -> None:
        m, K = X.shape
        n = Y.shape[0]
        _check_tensors(name, (indptr, indices), (values, X, Y, out))
        if Y.shape[1] != K or indptr.numel() != m + 1 or not indices.numel() == values.numel() == out.numel():
            raise ValueError(f"{name}: shapes do not match (X {tuple(X.shape)}, Y {tuple(Y.shape)})")
        rc = fn(indptr.data_ptr(), indices.data_ptr(), values.data_ptr(), X.data_ptr(), Y.data_ptr(),
                out.data_ptr(), m, n, K, num_threads)
        _raise_for(name, rc, K)

    return sddmm


def load_baseline(op: str, isa: str, extra_flags: tuple = ()):
    """Returns a Python callable over torch CPU tensors for the <op>_<isa> baseline:
    op "spmm":  f(indptr, indices, values, B, C, num_threads=2), C (m x K) = A @ B, written in place;
    op "sddmm": f(indptr, indices, values, X, Y, out, num_threads=2), out (nnz) = values * rowwise X[i] . Y[j].
    Raises RuntimeError when the host cannot run that instruction set (see available_isas())."""
    source_path(op, isa)  # validates op and isa
    if isa not in available_isas():
        raise RuntimeError(f"this host ({platform.machine()}) cannot run the {isa} baseline; it can run "
                           f"{available_isas() or 'none'}")
    lib = ctypes.CDLL(build(extra_flags, op=op, isa=isa))
    name = f"{op}_{isa}"
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    n_ptr = 5 if op == "spmm" else 6
    fn.argtypes = [ctypes.c_void_p] * n_ptr + [ctypes.c_int64] * 3 + [ctypes.c_int]
    call = _spmm_callable(fn, name) if op == "spmm" else _sddmm_callable(fn, name)
    call.lib = lib
    call.op, call.isa = op, isa
    return call


def load_spmm_avx512(extra_flags: tuple = ()):
    """Returns a Python callable spmm(indptr, indices, values, B, C, num_threads) over torch CPU tensors."""
    return load_baseline("spmm", "avx512", extra_flags)


if __name__ == "__main__":
    for isa in available_isas():
        for op in OPS:
            print(build(op=op, isa=isa))
