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


def kernel_script(name: str, **replacements: str) -> str:
    """The text of kernels/<name>.py, with dtype strings replaced as asked,
    e.g. kernel_script("csrmm", float32="float64", int32="int64")."""
    path = os.path.join(KERNELS_DIR, name + ".py")
    if not os.path.isfile(path):
        raise ValueError(f"no built-in kernel named {name!r} (looked for {path})")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for old, new in replacements.items():
        text = text.replace(f'"{old}"', f'"{new}"')
    return text
