"""Access to the built-in kernel scripts in the repository's kernels/ folder."""
from __future__ import annotations

import os

KERNELS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")


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
