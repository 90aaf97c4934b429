#!/usr/bin/env python3
"""Regenerates tests/golden/kernels/: what every built-in operator kernel
compiles from, so that a change to a recipe, a pass or a code generator shows
up as a reviewed diff of the code that ships.

    python3 tools/update_kernel_snapshots.py            # rewrite the snapshots (and remove stale ones)
    python3 tools/update_kernel_snapshots.py --check    # write nothing; exit 1 with a diff if stale

For each target (cpu:avx512, cpu:avx2, cuda) and each kernel the operators build
(every script, reduce kind, value dtype, index dtype, and the feature widths /
block shapes / head sizes that change a recipe's choices), two files:

    tests/golden/kernels/<target>/<kernel>.stage3.py   the scheduled function after the
                                                        pipeline (printed stage-III IR)
    tests/golden/kernels/<target>/<kernel>.src          the generated source, without the prelude

and the prelude shared by a target's sources once, in <target>/prelude.src.
Nothing is compiled: the sources come from _C.op_kernel_source (the operators'
own request path), the IR from the pipeline's SPARSETIR_DUMP_IR dump of the same
call.
"""
from __future__ import annotations

import argparse
import difflib
import glob
import os
import sys
import tempfile
from typing import Dict, Iterator, Tuple

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SNAPSHOT_DIR = os.path.join(REPO_ROOT, "tests", "golden", "kernels")

CPU_TARGETS = ("cpu:avx512", "cpu:avx2")
CUDA_TARGET = "cuda"
DTYPES = ("float32", "float64", "float16", "bfloat16")

# (script, recipe, sizes) in float32 / int32: the widths each recipe tells
# apart (scalar, partial vectors, one to many registers, past the unrolling
# budget, past the local tile).
CSRMM_WIDTHS = (1, 3, 8, 20, 32, 64, 128, 256, 600, 10000)
SDDMM_WIDTHS = (1, 20, 64, 256)
BSR_SHAPES = ((1, 1, 64), (4, 4, 64), (16, 16, 64), (32, 32, 64), (32, 32, 256), (4, 8, 20))
ATTENTION_DIMS = ((64, 64), (32, 16), (20, 20))
EDGE_SOFTMAX_HEADS = (1, 8)
# hyb's ELL-bucket kernels (recipe csrmm_ell_<mode>): (feature width, bucket
# width or None for the kernel that takes the width as an argument) in
# float32 / int32: specialized widths (1, 4, 8: unrolled), the shared one,
# scalar and partial vectors, past the local tile.
HYB_MODES = ("overwrite", "add", "atomic")
# (heads, features per head) of the multi-head kernels: one feature (the heads
# are the vector), a width no vector divides, vector widths, past the register
# budget.
HEAD_SHAPES = ((8, 1), (3, 5), (4, 16), (2, 64), (8, 64))
HYB_SHAPES = ((32, 1), (32, 4), (32, 8), (32, None), (3, 4), (20, 2), (128, 2), (10000, 4))


def requests() -> Iterator[Tuple[str, str, str, str, Dict[str, int]]]:
    """(script, recipe, value dtype, index dtype, sizes) of every snapshot kernel."""
    for script in ("csrmm", "csrmm_max", "csrmm_min"):
        for feat in CSRMM_WIDTHS:
            yield script, "csrmm", "float32", "int32", {"feat_size": feat}
        for dtype in DTYPES[1:]:
            yield script, "csrmm", dtype, "int64", {"feat_size": 64}
    for feat in (3, 64, 10000):
        yield "csrmm_mean", "csrmm_mean", "float32", "int32", {"feat_size": feat}
    for dtype in DTYPES[1:]:
        yield "csrmm_mean", "csrmm_mean", dtype, "int64", {"feat_size": 64}
    for feat in (1, 32, 100):
        yield "csrmm_segments", "csrmm_segments", "float32", "int32", {"feat_size": feat, "divide": 0}
    yield "csrmm_segments", "csrmm_segments", "float64", "int64", {"feat_size": 64, "divide": 0}
    yield "csrmm_segments", "csrmm_segments", "float16", "int32", {"feat_size": 256, "divide": 1}
    for feat in SDDMM_WIDTHS:
        yield "sddmm_dot", "sddmm", "float32", "int32", {"feat_size": feat}
    for dtype in DTYPES[1:]:
        yield "sddmm_dot", "sddmm", dtype, "int64", {"feat_size": 64}
    for dtype, feat, lanes in (("float32", 64, 8), ("float32", 256, 16), ("float64", 64, 4)):
        yield "sddmm_dot_groups", "sddmm_dot_groups", dtype, "int32", {"feat_size": feat, "lanes": lanes}
    for feat in (32, 40, 256):
        yield "sddmm_segments", "sddmm_segments", "float32", "int32", {"feat_size": feat}
    yield "sddmm_segments", "sddmm_segments", "float16", "int64", {"feat_size": 64}
    yield "sddmm_heads_segments", "sddmm_heads_segments", "float32", "int32", {"heads": 4, "feat_size": 64}
    yield "sddmm_heads_segments", "sddmm_heads_segments", "bfloat16", "int64", {"heads": 2, "feat_size": 40}
    for bh, bw, feat in BSR_SHAPES:
        yield "bsrmm", "bsrmm", "float32", "int32", {"block_h": bh, "block_w": bw, "feat_size": feat}
    for dtype in DTYPES[1:]:
        yield "bsrmm", "bsrmm", dtype, "int64", {"block_h": 4, "block_w": 4, "feat_size": 64}
    for dtype in ("float16", "bfloat16"):  # the cuda recipe's tensor-core tiles
        yield "bsrmm", "bsrmm", dtype, "int32", {"block_h": 32, "block_w": 16, "feat_size": 24}
    for d, dv in ATTENTION_DIMS:
        yield "sparse_attention", "sparse_attention", "float32", "int32", {"head_dim": d, "value_dim": dv}
        yield "attention_probs", "attention_probs", "float32", "int32", {"head_dim": d}
        yield "attention_grad_scores", "attention_grad_scores", "float32", "int32", {"value_dim": dv}
    for dtype in DTYPES[1:]:
        yield "sparse_attention", "sparse_attention", dtype, "int64", {"head_dim": 64, "value_dim": 64}
    for dtype, idtype, (d, dv) in (("float32", "int32", (64, 64)), ("float32", "int32", (40, 100)),
                                   ("float64", "int64", (1, 1)), ("bfloat16", "int32", (64, 64))):
        yield ("sparse_attention_online", "sparse_attention_online", dtype, idtype,
               {"head_dim": d, "value_dim": dv})
        yield ("sparse_attention_online_columns", "sparse_attention_online_columns", dtype, idtype,
               {"head_dim": d, "value_dim": dv, "column_lanes": _column_lanes(d, dtype)})
    for dtype, idtype, rows in (("float32", "int32", 8), ("bfloat16", "int64", 16)):
        yield "sparse_attention_tiles", "sparse_attention_tiles", dtype, idtype, _tile_sizes(64, dtype, rows)
    for dtype, idtype, (d, dv) in (("float32", "int32", (64, 64)), ("float64", "int64", (40, 100))):
        yield ("sparse_attention_backward_online", "sparse_attention_backward_online", dtype, idtype,
               {"head_dim": d, "value_dim": dv})
        yield ("sparse_attention_backward_online_columns", "sparse_attention_backward_online_columns", dtype, idtype,
               {"head_dim": d, "value_dim": dv, "column_lanes": _column_lanes(max(d, dv), dtype)})
    for bh, bw in ((32, 32), (16, 8), (1, 1)):
        yield "bsr_linear", "bsr_linear", "float32", "int32", {"block_h": bh, "block_w": bw}
    yield "bsr_linear", "bsr_linear", "bfloat16", "int64", {"block_h": 32, "block_w": 32}
    for dtype, (bh, bw) in (("float16", (32, 16)), ("bfloat16", (40, 48))):
        yield "bsr_linear_tiles", "bsr_linear_tiles", dtype, "int32", {"block_h": bh, "block_w": bw, "tile_rows": 16}
        yield ("bsr_linear_grad_blocks_tiles", "bsr_linear_grad_blocks_tiles", dtype, "int32",
               {"block_h": bw, "block_w": bh, "tile_rows": 16})
    for bh, bw in ((32, 32), (16, 8)):
        yield "bsr_linear_grad_blocks", "bsr_linear_grad_blocks", "float32", "int32", {"block_h": bh, "block_w": bw}
    for heads, feat in HEAD_SHAPES:
        sizes = {"heads": heads, "feat_size": feat}
        yield "csrmm_heads", "csrmm_heads", "float32", "int32", sizes
        yield "sddmm_heads", "sddmm_heads", "float32", "int32", sizes
        yield "gat_attention", "gat_attention", "float32", "int32", sizes
    yield "csrmm_heads", "csrmm_heads", "bfloat16", "int64", {"heads": 4, "feat_size": 16}
    yield "gat_attention", "gat_attention", "float64", "int64", {"heads": 4, "feat_size": 16}
    for op in ("add", "mul"):
        for feat in (1, 4, 64):
            yield f"sddmm_{op}", f"sddmm_{op}", "float32", "int32", {"feat_size": feat}
    for heads in EDGE_SOFTMAX_HEADS:
        yield "edge_softmax", "edge_softmax", "float32", "int32", {"heads": heads}
        yield "edge_softmax_backward", "edge_softmax_backward", "float32", "int32", {"heads": heads}
    yield "edge_softmax", "edge_softmax", "float64", "int64", {"heads": 4}
    for mode in HYB_MODES:
        recipe = "csrmm_ell_" + mode
        for feat, width in HYB_SHAPES:
            sizes = {"feat_size": feat} if width is None else {"feat_size": feat, "width_ell": width}
            yield "csrmm", recipe, "float32", "int32", sizes
        for dtype in DTYPES[1:2]:
            yield "csrmm", recipe, dtype, "int64", {"feat_size": 64, "width_ell": 4}
        yield "csrmm", recipe, "float32", "int64", {"feat_size": 64}


def _column_lanes(head_dim: int, dtype: str) -> int:
    import torch
    from sparsetir_torch import _C

    return _C.cuda_attention_column_lanes(head_dim, getattr(torch, dtype).itemsize)


def _tile_sizes(head_dim: int, dtype: str, rows: int) -> Dict[str, int]:
    """The sizes of sparse_attention_tiles for heads (and values) of head_dim, `rows` warps a block."""
    import torch
    from sparsetir_torch import _C

    lanes = _column_lanes(head_dim, dtype)
    tile = _C.cuda_attention_tile(head_dim, head_dim, getattr(torch, dtype).itemsize, lanes, rows)
    return {"head_dim": head_dim, "value_dim": head_dim, "column_lanes": lanes, "piece": tile["piece"],
            "tile_rows": rows, "tile_columns": tile["columns"], "k_stride": tile["k_stride"]}


def kernel_name(script: str, recipe: str, dtype: str, idtype: str, sizes: Dict[str, int]) -> str:
    """Named by the script, or for a recipe that makes its own function from
    the script (hyb's csrmm_ell_<mode>: the script on an ELL bucket) by the
    recipe."""
    dims = "_".join(f"{k}{v}" for k, v in sorted(sizes.items()))
    name = recipe if recipe.startswith("csrmm_ell_") else script
    return f"{name}_{dtype}_{idtype}_{dims}"


def has_cuda_recipe(recipe: str) -> bool:
    from sparsetir_torch import _C

    return _C.has_cuda_recipe(recipe)


def has_cpu_recipe(recipe: str) -> bool:
    # The row segments are the GPU's answer to long rows and to sddmm's row
    # search, the batch tiles its tensor cores' (the CPU runs bsr_linear on any
    # batch).
    # The one-pass attention and its backward are cuda kernels (lanes, shuffles).
    return recipe not in ("csrmm_segments", "sddmm_segments", "sddmm_heads_segments", "bsr_linear_tiles",
                          "bsr_linear_grad_blocks_tiles", "sparse_attention_online",
                          "sparse_attention_online_columns", "sparse_attention_tiles",
                          "sparse_attention_backward_online",
                          "sparse_attention_backward_online_columns")


def generate_one(target: str, request) -> Tuple[str, str]:
    """(stage-III IR text, generated source) of one kernel for `target`."""
    from sparsetir_torch import _C

    script, recipe, dtype, idtype, sizes = request
    with tempfile.TemporaryDirectory(prefix="sparsetir-snapshot-") as dump:
        old = os.environ.get("SPARSETIR_DUMP_IR")
        os.environ["SPARSETIR_DUMP_IR"] = dump
        try:
            source = _C.op_kernel_source(script, recipe, dtype, idtype, sizes, target)
        finally:
            if old is None:
                os.environ.pop("SPARSETIR_DUMP_IR", None)
            else:
                os.environ["SPARSETIR_DUMP_IR"] = old
        steps = sorted(glob.glob(os.path.join(dump, "*.py")))
        if not steps:
            raise RuntimeError(f"no IR dump for {kernel_name(script, recipe, dtype, idtype, sizes)} ({target})")
        with open(steps[-1], encoding="utf-8") as f:
            ir = f.read()
    return ir, source


def common_prefix_lines(texts) -> str:
    """The longest run of whole lines every text starts with."""
    texts = list(texts)
    prefix = os.path.commonprefix(texts)
    return prefix[:prefix.rfind("\n") + 1]


def split_banner(source: str) -> Tuple[str, str]:
    """(the leading "// Generated by sparsetir from ..." line or "", the rest)."""
    if source.startswith("// Generated by sparsetir"):
        first, _, rest = source.partition("\n")
        return first + "\n", rest
    return "", source


def generate() -> Dict[str, str]:
    """Relative path -> content of every snapshot file."""
    files: Dict[str, str] = {}
    for target in CPU_TARGETS + (CUDA_TARGET,):
        folder = target.replace(":", "_")
        kernels = {}
        for request in requests():
            if not (has_cuda_recipe if target == CUDA_TARGET else has_cpu_recipe)(request[1]):
                continue
            name = kernel_name(*request)
            kernels[name] = generate_one(target, request)
        # A source may open with a comment naming its kernel; the prelude is
        # what all of a target's sources share after it.
        parts = {name: split_banner(source) for name, (_, source) in kernels.items()}
        prelude = common_prefix_lines(body for _, body in parts.values())
        files[f"{folder}/prelude.src"] = prelude
        for name, (ir, _) in kernels.items():
            banner, body = parts[name]
            files[f"{folder}/{name}.stage3.py"] = ir
            files[f"{folder}/{name}.src"] = banner + body[len(prelude):]
    return files


def on_disk() -> Dict[str, str]:
    files = {}
    for path in glob.glob(os.path.join(SNAPSHOT_DIR, "*", "*")):
        with open(path, encoding="utf-8") as f:
            files[os.path.relpath(path, SNAPSHOT_DIR)] = f.read()
    return files


def diff(expected: Dict[str, str], actual: Dict[str, str], limit: int = 200) -> str:
    """A unified diff of what differs (at most `limit` lines)."""
    out = []
    for rel in sorted(set(expected) | set(actual)):
        old, new = actual.get(rel), expected.get(rel)
        if old == new:
            continue
        out += difflib.unified_diff((old or "").splitlines(True), (new or "").splitlines(True),
                                    f"a/{rel}" if old is not None else "/dev/null",
                                    f"b/{rel}" if new is not None else "/dev/null")
    text = "".join(out)
    lines = text.splitlines(True)
    return "".join(lines[:limit]) + (f"... ({len(lines) - limit} more lines)\n" if len(lines) > limit else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff if stale")
    args = parser.parse_args()
    expected, actual = generate(), on_disk()
    if args.check:
        text = diff(expected, actual)
        if text:
            sys.stdout.write(text)
            print("kernel snapshots are stale: run python3 tools/update_kernel_snapshots.py and review the diff")
            return 1
        print(f"{len(expected)} kernel snapshot files up to date")
        return 0
    for rel in set(actual) - set(expected):
        os.remove(os.path.join(SNAPSHOT_DIR, rel))
    for rel, content in expected.items():
        path = os.path.join(SNAPSHOT_DIR, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if actual.get(rel) != content:
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
    print(f"wrote {len(expected)} kernel snapshot files into {os.path.relpath(SNAPSHOT_DIR, REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
