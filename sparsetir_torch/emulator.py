"""st.emulate_cuda: a CUDA kernel written by hand, run on CPU tensors under the
SIMT emulator, to debug it without a GPU.

The source is compiled by the host compiler against the emulator header (the
CUDA built-ins: threadIdx & co., __syncthreads and its _count / _and / _or
votes, __syncwarp, the warp shuffles, votes, matches and reductions,
__activemask, __shared__, __constant__ and `extern __shared__ T name[]` for
dynamic shared memory, and CUDA's device library: vector types, dim3, min /
max, the integer and float intrinsics, CUDA's math functions beyond C's
(erfinvf, normcdff, sinpif, norm3df, ...), __dp4a, arithmetic in each
rounding direction (__fadd_rz, __dmul_ru, ...), __ldg, the atomics,
clock64, assert and __trap) and, where the source includes them, cuda_fp16.h / cuda_bf16.h
(__half, __nv_bfloat16 and their pairs, rounded as on the GPU), cuda_fp8.h
(E4M3 and E5M2, their conversions in both saturation modes),
cooperative_groups.h (the block, tiles, coalesced groups, reduce, scans,
memcpy_async), mma.h (nvcuda::wmma's fragments, loads, stores and mma_sync),
cuda_pipeline.h (__pipeline_memcpy_async & co.), cuda/barrier
(cuda::barrier's arrive / wait and the copies bound to one), cuda/pipeline
(a thread's or a block's cuda::pipeline), cuda/atomic and cuda/std/atomic
(cuda::atomic_ref, cuda::atomic and their cuda::std forms, wait / notify),
cuda/std/barrier, cuda/latch and cuda/semaphore (and their cuda/std forms)
and CUB's warp and block collectives (WarpReduce, WarpScan, BlockReduce,
BlockScan); a block's threads run as fibers that meet at the barriers and
take turns at spin points (a failed atomicCAS, an atomic that changes
nothing, an atomic load, a fence, __nanosleep), so that a thread spinning on
another's write lets it run. A deadlock raises an error naming the kernel,
the block and where each thread waits, and so does a spin that makes no
progress for SPARSETIR_EMULATE_SPIN_SECONDS (10); a failed assert or a
__trap raises one naming the block and the thread. SPARSETIR_EMULATE_ORDER=check
runs the kernel in order, reversed and shuffled and raises where what it
wrote differs (a race).
"""
from typing import List, Sequence, Tuple, Union

import torch

from . import _C

Dims = Union[int, Sequence[int]]


def launch_dims(op: str, name: str, value: Dims) -> Tuple[int, int, int]:
    """A grid or block given as an int or 1 to 3 ints, as CUDA's dim3."""
    dims = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ValueError(f"{op}: '{name}' must be an int or 1 to 3 ints, got {value!r}")
    return tuple(dims + [1] * (3 - len(dims)))


def checked_options(op: str, options) -> List[str]:
    """NVRTC-style options as a list of strings."""
    if isinstance(options, str) or not all(isinstance(o, str) for o in options):
        raise TypeError(f"{op}: 'options' must be a sequence of strings, got {options!r}")
    return list(options)


def tensors_of(args):
    """Every tensor among a kernel's `args` (those in the tuples, lists and
    dicts a struct parameter takes too), with where it is: "argument 2 ['x']"."""
    for i, a in enumerate(args):
        yield from _tensors_in(a, f"argument {i}")


def _tensors_in(value, where):
    if isinstance(value, torch.Tensor):
        yield where, value
    elif isinstance(value, (tuple, list, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            yield from _tensors_in(item, f"{where} [{key!r}]")


def check_no_leaf_requires_grad(op: str, args) -> None:
    """A kernel writes its tensors in place, which autograd cannot follow."""
    for where, a in tensors_of(args):
        if a.requires_grad and a.is_leaf:
            raise ValueError(f"{op}: {where} requires grad; pass it detached")


def emulate_cuda(source: str, kernel: str, grid: Dims, block: Dims, *args, shared_bytes: int = 0,
                 options: Sequence[str] = ()) -> None:
    """Runs `kernel` (an ``extern "C" __global__`` function of `source`, or
    an instance of a template kernel, ``"scale<float, 4>"``) on
    `grid` blocks of `block` threads (ints or up to three dimensions), as
    ``kernel<<<grid, block, shared_bytes>>>(*args)`` would on a GPU.

    Arguments: CPU tensors, contiguous, passed as pointers to their element
    type (``float*`` or ``float4*`` for float32, ``double*``, ``int*`` or
    ``unsigned*``, ``int64_t*`` or ``long long*``; ``__half*``, ``__half2*``
    or ``__nv_bfloat16*`` for float16 / bfloat16 where the source includes
    their header, else ``unsigned short*`` holding their bits;
    ``__nv_fp8_e4m3*`` / ``__nv_fp8_e5m2*`` (or their pairs and quads) for
    torch's float8 dtypes with cuda_fp8.h, else ``unsigned char*``; ...); Python
    ints and floats converted to their parameters' types and checked as
    st.CudaKernel checks them (an int a parameter cannot hold, or a float
    for an integer, is an error; where the declaration cannot be read, C++
    converts them); a tuple, list or dict for a struct or
    vector parameter (``Params p``, ``float4 v``), its fields in order or by
    name, laid out as on the device (st.launch_cuda's conversions, tensors
    for pointer fields). The kernel writes the tensors in place.

    `options` are st.launch_cuda's NVRTC options, so that both take the same
    call: macros (``-DTILE=32``, ``-DFAST``, ``-UFAST``) are defined before
    the source; ``-lineinfo`` and ``-std=c++17`` change nothing here; any
    other option is refused by name."""
    if not isinstance(source, str) or not isinstance(kernel, str):
        raise TypeError("st.emulate_cuda: 'source' and 'kernel' must be strings")
    op = "st.emulate_cuda"
    check_no_leaf_requires_grad(op, args)
    _C.emulate_cuda(source, kernel, launch_dims(op, "grid", grid), launch_dims(op, "block", block), list(args),
                    int(shared_bytes), checked_options(op, options))
