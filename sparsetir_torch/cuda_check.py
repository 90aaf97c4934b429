"""Compiles every CUDA kernel of the built-in operators without a GPU.

    python -m sparsetir_torch.cuda_check --arch sm_80,sm_90 [--dump DIR] [--quick] [--jobs N]

For each kernel the operators can build for the cuda target (every script with a
cuda recipe, value dtype, index dtype and the feature widths the recipes tell
apart), and each architecture: NVRTC compiles the generated source to a CUBIN
for sm_XY (keeping the PTX it made on the way), and ptxas (from the machine's
CUDA toolkit, when present) assembles that PTX, which reports registers, spills
and shared memory. Prints one row per kernel and architecture, in a fixed
order whatever --jobs is; exits 1 if any compile fails. --dump writes every
source (and its PTX) into DIR.

NVRTC comes from torch's CUDA build (the nvidia-cuda-nvrtc wheel); no GPU or
driver is needed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional

import torch

from . import _C
from .cuda_runtime import find_ptxas, prepare_nvrtc

DTYPES = ("float32", "float64", "float16", "bfloat16")
INDEX_DTYPES = ("int32", "int64")
# csrmm: the recipe's lane count changes below 32 (1, 2, ..., 16) and tiles
# above it; 100 is not a multiple of the tile (guarded lanes).
CSRMM_WIDTHS = (1, 8, 32, 100, 256)
# sddmm: a thread per non-zero below 32 features, a warp per non-zero (a
# shuffle reduction) from 32; 40 is not a multiple of the warp (guarded lanes);
# 64 and 256: a lane's features read with 8- and 16-byte vector loads.
SDDMM_WIDTHS = (1, 40, 64, 256)
QUICK_WIDTHS = (32,)


# Multi-head kernels (csrmm_heads, sddmm_heads): (heads, features per head).
HEAD_SHAPES = ((1, 1), (4, 16), (2, 64), (4, 128))
QUICK_HEAD_SHAPES = ((4, 16),)
# Block-sparse kernels (bsrmm, bsr_linear and its blocks' gradient): a small
# block, a warp-square one, and one taller than a block of threads.
BLOCKS = ((2, 3), (32, 32), (130, 2))
QUICK_BLOCKS = ((32, 32),)
# Element-wise sddmm (add, mul): a thread per non-zero and feature.
ELEMENTWISE_WIDTHS = (1, 8)


def _element_bytes(dtype: str) -> int:
    return getattr(torch, dtype).itemsize


@dataclass(frozen=True)
class Variant:
    script: str  # kernels/<script>.py
    recipe: str
    dtype: str
    index_dtype: str
    feat: int  # 0: a script without a feature width (edge_softmax, bsr_linear)
    heads: int = 0  # multi-head kernels only
    block: tuple = ()  # (block_h, block_w) of the block-sparse kernels
    dims: tuple = ()  # (head_dim, value_dim) of the attention kernels
    divide: bool = False  # csrmm_segments: the mean's kernel (rows divided by their length)
    tile_rows: int = 0  # sparse_attention_tiles: warps a block

    @property
    def name(self) -> str:
        heads = f"_h{self.heads}" if self.heads else ""
        block = f"_b{self.block[0]}x{self.block[1]}" if self.block else ""
        feat = f"_k{self.feat}" if self.feat else ""
        dims = f"_d{self.dims[0]}x{self.dims[1]}" if self.dims else ""
        mean = "_mean" if self.divide else ""
        rows = f"_r{self.tile_rows}" if self.tile_rows else ""
        return f"{self.script}_{self.dtype}_{self.index_dtype}{heads}{block}{feat}{dims}{mean}{rows}"

    @property
    def sizes(self) -> dict:
        sizes = {"feat_size": self.feat} if self.feat else {}
        if self.heads:
            sizes["heads"] = self.heads
        if self.block:
            sizes.update(block_h=self.block[0], block_w=self.block[1])
        if self.script in ("bsr_linear_tiles", "bsr_linear_grad_blocks_tiles"):
            sizes["tile_rows"] = 16  # a tensor core's rows
        if self.dims:
            sizes.update(head_dim=self.dims[0], value_dim=self.dims[1])
        if self.script == "csrmm_segments":
            sizes["divide"] = int(self.divide)
        if self.script == "sparse_attention_online_columns":
            sizes["column_lanes"] = _C.cuda_attention_column_lanes(self.dims[0], _element_bytes(self.dtype))
        if self.script == "sparse_attention_backward_online_columns":  # runs of dO and v too
            sizes["column_lanes"] = _C.cuda_attention_column_lanes(max(self.dims), _element_bytes(self.dtype))
        if self.script == "sparse_attention_tiles":
            lanes = _C.cuda_attention_column_lanes(self.dims[0], _element_bytes(self.dtype))
            tile = _C.cuda_attention_tile(*self.dims, _element_bytes(self.dtype), lanes, self.tile_rows)
            sizes.update(column_lanes=lanes, piece=tile["piece"], tile_rows=tile["rows"],
                         tile_columns=tile["columns"], k_stride=tile["k_stride"])
        return sizes


def variants(quick: bool = False) -> Iterator[Variant]:
    """Every built-in kernel the cuda target builds (a small subset with quick)."""
    dtypes = ("float32", "float16") if quick else DTYPES
    index_dtypes = ("int32",) if quick else INDEX_DTYPES
    for script in ("csrmm", "csrmm_max", "csrmm_min"):
        for dtype, idtype, feat in itertools.product(dtypes, index_dtypes, QUICK_WIDTHS if quick else CSRMM_WIDTHS):
            yield Variant(script, "csrmm", dtype, idtype, feat)
    for dtype, idtype, feat in itertools.product(dtypes, index_dtypes, QUICK_WIDTHS if quick else CSRMM_WIDTHS):
        yield Variant("csrmm_mean", "csrmm_mean", dtype, idtype, feat)
    for dtype, idtype, feat in itertools.product(dtypes, index_dtypes, QUICK_WIDTHS if quick else CSRMM_WIDTHS):
        yield Variant("csrmm_segments", "csrmm_segments", dtype, idtype, feat)
        yield Variant("csrmm_segments", "csrmm_segments", dtype, idtype, feat, divide=True)
    # From 32 features (a head's) the operators take the row segments; narrower
    # rows keep the fused loop (CudaSddmmSegmentLength).
    for dtype, idtype, feat in itertools.product(dtypes, index_dtypes, QUICK_WIDTHS if quick else SDDMM_WIDTHS):
        yield Variant("sddmm_dot", "sddmm", dtype, idtype, feat)
        if feat >= 32:
            yield Variant("sddmm_segments", "sddmm_segments", dtype, idtype, feat)
    for dtype, idtype, (heads, feat) in itertools.product(dtypes, index_dtypes,
                                                          QUICK_HEAD_SHAPES if quick else HEAD_SHAPES):
        for script in ("csrmm_heads", "sddmm_heads") + (("sddmm_heads_segments",) if feat >= 32 else ()):
            yield Variant(script, script, dtype, idtype, feat, heads)
    for script in ("edge_softmax", "edge_softmax_backward"):
        # Scores in the compute dtype: float32 (also for 16-bit inputs) or float64.
        for dtype, idtype, heads in itertools.product(("float32", "float64"), index_dtypes, (1, 4)):
            yield Variant(script, script, dtype, idtype, 0, heads)
    for dtype, idtype, block in itertools.product(dtypes, index_dtypes, QUICK_BLOCKS if quick else BLOCKS):
        yield Variant("bsrmm", "bsrmm", dtype, idtype, 64, block=block)
    if not quick:  # tensor cores: one 8-feature tile a warp (the 32 x 32 blocks above have four)
        for dtype in ("float16", "bfloat16"):
            yield Variant("bsrmm", "bsrmm", dtype, "int32", 24, block=(16, 48))
    for dtype, idtype, block in itertools.product(("float16", "bfloat16"), index_dtypes,
                                                  ((32, 32),) if quick else ((32, 32), (40, 48), (8, 16))):
        yield Variant("bsr_linear_tiles", "bsr_linear_tiles", dtype, idtype, 0, block=block)
        yield Variant("bsr_linear_grad_blocks_tiles", "bsr_linear_grad_blocks_tiles", dtype, idtype, 0,
                      block=(block[1], block[0]))
        yield Variant("bsr_linear", "bsr_linear", dtype, idtype, 0, block=block)
        yield Variant("bsr_linear_grad_blocks", "bsr_linear_grad_blocks", dtype, idtype, 0, block=block)
    for script in ("sddmm_add", "sddmm_mul"):
        for dtype, idtype, feat in itertools.product(dtypes, index_dtypes,
                                                     QUICK_WIDTHS if quick else ELEMENTWISE_WIDTHS):
            yield Variant(script, script, dtype, idtype, feat)
    for dtype, idtype, (heads, feat) in itertools.product(("float32", "float64"), index_dtypes,
                                                          QUICK_HEAD_SHAPES if quick else HEAD_SHAPES):
        yield Variant("gat_attention", "gat_attention", dtype, idtype, feat, heads)
    for dtype, idtype, dims in itertools.product(dtypes, index_dtypes,
                                                 ((64, 64),) if quick else ((64, 64), (1, 1), (40, 256))):
        yield Variant("sparse_attention_online", "sparse_attention_online", dtype, idtype, 0, dims=dims)
        yield Variant("sparse_attention_online_columns", "sparse_attention_online_columns", dtype, idtype, 0,
                      dims=dims)
    # The forward's tiles in shared memory, at widths they take ($SPARSETIR_CUDA_ATTENTION_TILE_ROWS).
    for dtype, idtype, dims, rows in itertools.product(dtypes, index_dtypes,
                                                       ((64, 64),) if quick else ((64, 64), (256, 256)),
                                                       (8,) if quick else (8, 16)):
        yield Variant("sparse_attention_tiles", "sparse_attention_tiles", dtype, idtype, 0, dims=dims,
                      tile_rows=rows)
    # The backward computes in the compute dtype: float32 (also for 16-bit inputs) or float64.
    for dtype, idtype, dims in itertools.product(("float32", "float64"), index_dtypes,
                                                 ((64, 64),) if quick else ((64, 64), (1, 1), (40, 256))):
        yield Variant("sparse_attention_backward_online", "sparse_attention_backward_online", dtype, idtype, 0,
                      dims=dims)
        yield Variant("sparse_attention_backward_online_columns", "sparse_attention_backward_online_columns", dtype,
                      idtype, 0, dims=dims)


def cuda_source(v: Variant) -> str:
    return _C.op_kernel(v.script, v.recipe, v.dtype, v.index_dtype, v.sizes, "cuda").source


@dataclass
class Row:
    kernel: str
    arch: int
    ok: bool
    nvrtc_ms: float = 0.0
    ptxas_ms: float = 0.0
    registers: Optional[int] = None
    spills: Optional[int] = None
    shared: Optional[int] = None
    error: str = ""


def ptxas_report(ptxas: str, ptx: bytes, arch: int, entry: Optional[str] = None) -> dict:
    """Registers, spilled bytes and shared bytes from `ptxas -v`: of the
    kernel `entry`, or of the first one the PTX defines."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        with open(path, "wb") as f:
            f.write(ptx)
        proc = subprocess.run([ptxas, f"-arch=sm_{arch}", "-v", path, "-o", os.path.join(tmp, "kernel.cubin")],
                              capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas failed:\n{proc.stderr}")
    text = proc.stderr + proc.stdout
    if entry is not None:
        # ptxas reports entry by entry, each after "Compiling entry function 'name'".
        sections = re.split(r"Compiling entry function '", text)[1:]
        text = next((s for s in sections if s.startswith(entry + "'")), None)
        if text is None:
            raise RuntimeError(f"ptxas reported no entry function '{entry}'")
    registers = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    shared = re.search(r"(\d+) bytes smem", text)
    return {"registers": int(registers.group(1)) if registers else None,
            "spills": int(spills.group(1)) if spills else 0,
            "shared": int(shared.group(1)) if shared else 0}


def _write_replacing(path: str, data: bytes, writer: str) -> None:
    partial = f"{path}.{writer}.partial"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)


def check(v: Variant, arch: int, ptxas: Optional[str], dump: Optional[str]) -> Row:
    row = Row(v.name, arch, ok=False)
    try:
        source = cuda_source(v)
        start = time.perf_counter()
        built = _C.nvrtc_compile(source, v.name + ".cu", arch, True)
        row.nvrtc_ms = (time.perf_counter() - start) * 1e3
        ptx = built["ptx"]
        if not built["cubin"] and not ptx:
            raise RuntimeError("NVRTC returned no image")
        if ptxas:
            start = time.perf_counter()
            report = ptxas_report(ptxas, ptx, arch)
            row.ptxas_ms = (time.perf_counter() - start) * 1e3
            row.registers, row.spills, row.shared = report["registers"], report["spills"], report["shared"]
        if dump:
            # Each architecture's row writes the same source: through a file
            # of its own and a rename, so two threads never interleave.
            _write_replacing(os.path.join(dump, v.name + ".cu"), source.encode(), f"sm_{arch}")
            _write_replacing(os.path.join(dump, f"{v.name}.sm_{arch}.ptx"), ptx, f"sm_{arch}")
        row.ok = True
    except Exception as e:  # noqa: BLE001 - every failure is reported in the table
        row.error = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
    return row


def _usable_cores() -> int:
    """The cores this process may run on (os.cpu_count() where the OS cannot say)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def parse_archs(text: str) -> List[int]:
    archs = []
    for part in text.split(","):
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)", part.strip())
        if not match:
            raise SystemExit(f"cuda_check: --arch takes sm_XY values separated by commas, got {part!r}")
        archs.append(int(match.group(1)))
    return archs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparsetir_torch.cuda_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="sm_80,sm_90", help="architectures, e.g. sm_80,sm_90")
    parser.add_argument("--dump", help="write every CUDA source and its PTX into this folder")
    parser.add_argument("--quick", action="store_true", help="a few kernels only")
    parser.add_argument("--jobs", type=int, default=_usable_cores(),
                        help="kernels compiled at once (default: the cores this process may use)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        raise SystemExit(f"cuda_check: --jobs takes a whole number from 1, got {args.jobs}")
    archs = parse_archs(args.arch)
    why = prepare_nvrtc()
    if why:
        print(f"cuda_check: NVRTC not available: {why}", file=sys.stderr)
        return 1
    info = _C.nvrtc_info()
    ptxas = find_ptxas()
    print(f"NVRTC {info['version'][0]}.{info['version'][1]} ({info['path']}); "
          f"ptxas: {ptxas or 'not found (registers not reported)'}")
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    header = f"{'kernel':<40} {'arch':>6} {'regs':>5} {'spill':>6} {'smem':>6} {'nvrtc ms':>9} {'ptxas ms':>9}  status"
    print(header)
    print("-" * len(header))
    failures = 0
    # NVRTC runs without the GIL and ptxas in a process of its own, so threads
    # keep every core busy; map() hands the rows back in the order of the work.
    work = [(v, arch) for v in variants(args.quick) for arch in archs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(lambda item: check(item[0], item[1], ptxas, args.dump), work):
            failures += not r.ok
            regs = "-" if r.registers is None else str(r.registers)
            spills = "-" if r.spills is None else str(r.spills)
            shared = "-" if r.shared is None else str(r.shared)
            status = "ok" if r.ok else f"FAILED: {r.error}"
            print(f"{r.kernel:<40} {'sm_' + str(r.arch):>6} {regs:>5} {spills:>6} {shared:>6} "
                  f"{r.nvrtc_ms:>9.1f} {r.ptxas_ms:>9.1f}  {status}", flush=True)
    print(f"{len(work) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
