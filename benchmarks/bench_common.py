"""What every benchmark script shares: the instruction-set level to build and
measure at, a record of the machine, and where results go.

    apply_isa("avx2")          # before torch runs anything: our kernels, MKL and ATen at that level
    machine_info()             # {"cpu": ..., "isa": ..., "threads": ..., "torch": ..., "mkl": ...}
    output_base("ops", update) # benchmarks/results/ops, or a new timestamped folder
"""
from __future__ import annotations

import os
import platform
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

# The matrices: the folder named by $SPARSETIR_DATASETS, else the larger
# collection beside the repository (../shared/datasets) where there is one,
# else the cache `python -m sparsetir_torch.datasets fetch` fills once it
# holds the larger graphs, else the matrices shipped with the tests.
_SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "datasets"))


def _default_datasets() -> str:
    from sparsetir_torch.datasets import cache_dir

    if os.path.isdir(_SHARED):
        return _SHARED
    if os.path.isfile(os.path.join(cache_dir(), "mdual.mtx.gz")):
        return cache_dir()
    return os.path.normpath(os.path.join(HERE, "..", "tests", "data", "matrices"))


DATASETS = os.environ.get("SPARSETIR_DATASETS") or _default_datasets()

# MKL's names for the same levels (MKL_ENABLE_INSTRUCTIONS caps what MKL
# dispatches to, so the peer runs at the level our kernels are built for).
_MKL_LEVEL = {"generic": "SSE4_2", "avx2": "AVX2", "avx512": "AVX512"}
# ATen's (ATEN_CPU_CAPABILITY): torch's own vectorized kernels, such as
# sampled_addmm's and the reductions of torch.sparse.mm, are peers too.
_ATEN_LEVEL = {"generic": "default", "avx2": "avx2", "avx512": "avx512"}
_ATEN_ORDER = ["default", "avx2", "avx512"]


def apply_isa(isa: str | None) -> None:
    """Builds our kernels for `isa` (SPARSETIR_CPU_ISA) and restricts MKL and
    ATen's vectorized kernels to the same level. Must run before the first
    kernel call and before torch runs any operator (ATen fixes its level then)."""
    if not isa:
        return
    os.environ["SPARSETIR_CPU_ISA"] = isa
    level = isa if isa in _MKL_LEVEL else {"x86-64": "generic", "x86-64-v3": "avx2", "x86-64-v4": "avx512"}.get(isa)
    if level not in _MKL_LEVEL:
        return
    os.environ["MKL_ENABLE_INSTRUCTIONS"] = _MKL_LEVEL[level]
    os.environ["ATEN_CPU_CAPABILITY"] = _ATEN_LEVEL[level]
    import torch

    got = torch.backends.cpu.get_cpu_capability().lower()
    # Below the level asked is the CPU's best (ATen never goes above what the
    # CPU has); above it, ATen fixed its level before this ran.
    if got in _ATEN_ORDER and _ATEN_ORDER.index(got) > _ATEN_ORDER.index(_ATEN_LEVEL[level]):
        raise RuntimeError(f"--isa {isa}: torch's kernels already run at {got}, not {_ATEN_LEVEL[level]}; "
                           "apply_isa must run before torch runs any operator")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    """The machine a figure comes from: CPU model, the level our kernels were
    built for, threads, torch and MKL versions and MKL's level cap."""
    import torch
    from sparsetir_torch import _C

    target = _C.cpu_target("")
    mkl = ""
    try:
        mkl = torch.backends.mkl.is_available() and "MKL" or "no MKL"
        cfg = torch.__config__.show()
        for line in cfg.splitlines():
            if "Math Kernel Library" in line or "oneMKL" in line:
                mkl = line.strip().lstrip("- ")
                break
    except Exception:  # noqa: BLE001 - informational only
        pass
    return {
        "cpu": cpu_model(),
        "isa": target["target"],
        "detected_isa": target["detected"],
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "mkl": mkl,
        "mkl_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS", "default"),
        "aten_capability": torch.backends.cpu.get_cpu_capability(),
    }


def machine_line(info: dict) -> str:
    return (f"machine: {info['cpu']}; our kernels for {info['isa']} (this CPU: {info['detected_isa']}); "
            f"{info['threads']} threads; torch {info['torch']}; {info['mkl']}, "
            f"MKL_ENABLE_INSTRUCTIONS={info['mkl_instructions']}; ATen's kernels at {info['aten_capability']}")


def output_base(name: str, update_results: bool, out: str | None = None) -> str:
    """Where a run writes <base>.csv and <base>.png: --out if given; the
    committed benchmarks/results/<name> with --update-results; otherwise a new
    folder benchmarks/results/runs/<date-time>/ (committed results are never
    overwritten by accident)."""
    if out:
        return out
    if update_results:
        return os.path.join(RESULTS, name)
    folder = os.path.join(RESULTS, "runs", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, name)


def median_ms(fn, rounds: int = 7) -> float:
    """The median of `rounds` timed calls of fn after one untimed, in milliseconds."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3
