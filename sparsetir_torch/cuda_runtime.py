"""Where the CUDA backend finds NVRTC, and whether CUDA kernels can run here.

The extension links no CUDA library: libnvrtc and libcuda are opened at their
first use (csrc/compiler/runtime/nvrtc.cc, cuda_driver.cc). torch's CUDA build
ships NVRTC as an nvidia wheel whose libnvrtc has no RUNPATH, so the C++ side
is told the wheel's library folders through $SPARSETIR_NVRTC_DIRS, set here at
import (a value the user set is kept).
"""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
from typing import List, Optional, Sequence, Tuple

from . import _C


def nvrtc_dirs() -> List[str]:
    """Folders of the installed nvidia wheels that hold a libnvrtc."""
    dirs = []
    try:
        import nvidia  # the namespace package of the nvidia-* wheels
    except ImportError:
        return dirs
    for root in getattr(nvidia, "__path__", []):
        for lib in sorted(glob.glob(os.path.join(root, "*", "lib"))):
            if glob.glob(os.path.join(lib, "libnvrtc.so*")):
                dirs.append(lib)
    return dirs


def cuda_include_dirs(*headers: str) -> List[str]:
    """NVRTC's include folders for CUDA's headers (cuda_fp16.h, mma.h,
    cooperative_groups.h, ...): the include folder of the CUDA toolkit
    ($CUDA_HOME, /usr/local/cuda), then of the nvidia-cuda-runtime wheel
    beside torch, each with its cccl folder where it has one. NVRTC ships
    none of these headers. With `headers` (paths as #include names them),
    the folders that hold them, or [] where one of them is in none."""
    return list(_include_dirs(headers))


# Searched once per process: st.launch_cuda asks at every launch.
@functools.lru_cache(maxsize=None)
def _include_dirs(headers: Tuple[str, ...]) -> Tuple[str, ...]:
    # A toolkit first: the wheel's headers are a subset (its mma.h includes a
    # crt/mma.h it lacks).
    roots = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include"), "/usr/local/cuda/include"]
    try:
        import nvidia

        roots += [os.path.join(base, sub, "include") for base in nvidia.__path__ for sub in ("cu13", "cu12")]
    except ImportError:
        pass
    dirs = [d for root in roots for d in (root, os.path.join(root, "cccl")) if os.path.isdir(d)]
    dirs = list(dict.fromkeys(os.path.realpath(d) for d in dirs))
    if not headers:
        return tuple(dirs)
    found = []
    for header in headers:
        where = next((d for d in dirs if os.path.exists(os.path.join(d, header))), None)
        if where is None:
            return ()
        found.append(where)
    return tuple(dict.fromkeys(found))


def point_at_nvrtc() -> None:
    """Tells the C++ loader where the wheels' NVRTC is (unless the user did)."""
    if "SPARSETIR_NVRTC_DIRS" not in os.environ:
        os.environ["SPARSETIR_NVRTC_DIRS"] = os.pathsep.join(nvrtc_dirs())


def prepare_nvrtc() -> str:
    """Loads NVRTC; returns why it cannot be loaded ("" when it can)."""
    point_at_nvrtc()
    try:
        _C.nvrtc_info()
    except Exception as e:  # noqa: BLE001 - the reason is the message
        return str(e)
    return ""


def cuda_unavailable_reason() -> str:
    """Why the operators cannot run CUDA kernels in this process ("" if they can):
    no CUDA device in torch, no driver, or no NVRTC."""
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    why = _C.cuda_unavailable_reason()
    return why or prepare_nvrtc()


def find_ptxas() -> Optional[str]:
    """The path of a CUDA toolkit's ptxas: on PATH, else in $CUDA_HOME/bin
    or /usr/local/cuda/bin; None where there is none."""
    candidates = (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas"),
                  "/usr/local/cuda/bin/ptxas")
    return shutil.which("ptxas") or next((p for p in candidates if os.access(p, os.X_OK)), None)


def nvrtc_ptx(who: str, source: str, file_name: str, arch, options: Sequence[str] = (),
              instance: str = "") -> Tuple[str, str]:
    """The PTX NVRTC compiles `source` to for `arch` ("sm_80", "sm_90", or
    the number), which needs no GPU, and the name a template kernel's
    `instance` ("k<float>") has in it ("" without one); errors name `who`."""
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+)", str(arch).strip())
    if not match:
        raise ValueError(f"{who}: arch is an sm_XY value such as 'sm_90', got {arch!r}")
    why = prepare_nvrtc()
    if why:
        raise RuntimeError(f"{who}: NVRTC cannot be loaded: {why}")
    expressions = [instance] if instance else []
    done = _C.nvrtc_compile(source, file_name, int(match.group(1)), False, list(options), expressions)
    return done["ptx"].decode(), done["lowered_names"][0] if instance else ""
