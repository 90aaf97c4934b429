"""Access to the built-in kernel scripts: the repository's kernels/ folder,
installed inside the package as kernel_scripts/ (setup.py)."""
from __future__ import annotations

import os


def _kernels_dir() -> str:
    """kernel_scripts/ beside this module in an installed package, else the
    source tree's kernels/ (an editable install or a checkout)."""
    package = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(package, "kernel_scripts")
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(package), "kernels")


KERNELS_DIR = _kernels_dir()


def kernel_script(name: str, float32: str = "float32", int32: str = "int32") -> str:
    """The text of kernels/<name>.py with the value dtype put in for its
    "float32" and the index dtype for its "int32", as the operators build it
    (the substitution is C++'s, PutDtypes), e.g. kernel_script("csrmm",
    float32="float64", int32="int64"). T.float32 written as a name (not a
    string) is the accumulator's dtype: float64 for float64 values, float32
    for float32 and 16-bit ones."""
    # Absolute: this module also runs from a built tree (tests/python/test_packaging.py).
    from sparsetir_torch import _C

    path = os.path.join(KERNELS_DIR, name + ".py")
    if not os.path.isfile(path):
        raise ValueError(f"no built-in kernel named {name!r} (looked for {path})")
    with open(path, encoding="utf-8") as f:
        return _C.put_dtypes(f.read(), float32, int32)
