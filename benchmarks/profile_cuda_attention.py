"""Where a training step of sparse_attention spends its GPU time: one kernel per line.

    python3 benchmarks/profile_cuda_attention.py [--L 4096] [--heads 4] [--dim 64] [--density 0.1]
                                                 [--dtypes float32 float16] [--steps 5] [--out FILE]

For each dtype, the forward and backward of sparsetir's sparse_attention (the gradients of q, k and v for a random
upstream gradient, as `bench_cuda.py --ops attention_train` times them) run under torch.profiler after warm-up.
The kernels of one step are listed in launch order with their median time over the profiled steps: our generated
kernels are named sparsetir_kernel_<script>, torch's by their own names. Then the same for SDPA with the boolean
mask, and each step's total (CUDA events, median). What the list shows is where to look next: the forward, the
backward's pass over the rows, the transposed spmm for dk and dv, or the copies around them.

Without a GPU the script runs the same steps on CPU tensors under the SIMT emulator (SPARSETIR_EMULATE_CUDA=1)
at L = 64, lists the host operators instead of kernels, and says so: a check of the script, not a measurement.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_cuda  # noqa: E402  (attention_pattern: the benchmark's own pattern)


def kernels_in_order(prof, device_events: bool) -> List[Tuple[str, float]]:
    """(name, microseconds) of every kernel, copy and fill on the GPU in the order they ran (one stream: the
    launch order), or on the CPU of every top-level operator."""
    if device_events:
        events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        events.sort(key=lambda e: e.time_range.start)
        return [(e.name, e.device_time_total) for e in events]
    return [(e.name, e.cpu_time_total) for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CPU and e.cpu_parent is None]


def profile_steps(step: Callable[[], None], steps: int, device_events: bool) -> List[Tuple[str, float, float]]:
    """One step's kernels in order: (name, median us over the steps, share of the step's kernel time)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device_events:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    per_step: List[List[Tuple[str, float]]] = []
    for _ in range(steps):
        with torch.profiler.profile(activities=activities) as prof:
            step()
            if device_events:
                torch.cuda.synchronize()
        per_step.append(kernels_in_order(prof, device_events))
    length = min(len(s) for s in per_step)
    rows = []
    for position in range(length):
        name = per_step[0][position][0]
        rows.append((name, statistics.median(s[position][1] for s in per_step)))
    total = sum(us for _, us in rows) or 1.0
    return [(name, us, us / total) for name, us in rows]


def timed_ms(step: Callable[[], None], reps: int) -> float:
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--L", type=int, default=4096, help="rows = columns of the pattern")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=64, help="features per head (q, k and v)")
    p.add_argument("--density", type=float, default=0.1)
    p.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=sorted(bench_cuda.DTYPES))
    p.add_argument("--steps", type=int, default=5, help="profiled steps (the median of each kernel's time)")
    p.add_argument("--out", default=None, help="also write the lines into this file")
    args = p.parse_args()

    gpu = torch.cuda.is_available()
    if not gpu:
        os.environ["SPARSETIR_EMULATE_CUDA"] = "1"
        bench_cuda.DEVICE = "cpu"
        args.L = min(args.L, 64)
    if bench_cuda.REPO not in sys.path:
        sys.path.insert(0, bench_cuda.REPO)
    import sparsetir_torch  # noqa: F401  (registers torch.ops.sparsetir)

    lines: List[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    if gpu:
        say(f"device {torch.cuda.get_device_name()}; torch {torch.__version__}, CUDA {torch.version.cuda}")
    else:
        say("no GPU: the steps run under the SIMT emulator on the CPU (host operators listed; no GPU figures)")
    indptr, indices, mask = bench_cuda.attention_pattern(args.L, args.L, args.density, 0, seed=args.L)
    say(f"L = {args.L}, {args.heads} heads, D = {args.dim}, {indices.numel()} allowed (row, column) pairs")
    for dname in args.dtypes:
        dtype = bench_cuda.DTYPES[dname]
        g = torch.Generator(device=bench_cuda.DEVICE).manual_seed(args.L)
        q, k, v = (torch.randn(1, args.heads, args.L, args.dim, device=bench_cuda.DEVICE, generator=g)
                   .to(dtype).requires_grad_() for _ in range(3))
        grad_out = torch.randn(1, args.heads, args.L, args.dim, device=bench_cuda.DEVICE, generator=g).to(dtype)
        forwards: Dict[str, Callable[[], torch.Tensor]] = {
            "sparsetir sparse_attention": lambda: torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v)}
        if gpu:
            forwards["sdpa(bool mask)"] = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        for name, forward in forwards.items():
            def step(forward=forward):
                torch.autograd.grad(forward(), (q, k, v), grad_out)

            for _ in range(3):  # compiles our kernels, warms torch's allocator
                step()
            total = f", step {timed_ms(step, 20):.3f} ms (CUDA events, median of 20)" if gpu else ""
            say(f"\n== {name}, {dname}{total}")
            try:
                rows = profile_steps(step, args.steps, gpu)
            except Exception as e:  # noqa: BLE001  (a profiler that fails here leaves the other cases)
                say(f"torch.profiler failed: {type(e).__name__}: {e}")
                continue
            say(f"{'kernel' if gpu else 'operator'} (in order)".ljust(72) + "       us  share")
            for kernel, us, share in rows:
                say(f"{kernel[:72]:72s} {us:8.1f}  {share:5.1%}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
