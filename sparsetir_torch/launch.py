"""st.launch_cuda: a CUDA kernel written by hand, run on CUDA tensors.

The call is st.emulate_cuda's, so a kernel debugged on CPU tensors under the
SIMT emulator runs unchanged on a GPU:

    st.emulate_cuda(source, "scale", grid, block, x_cpu, 2.0, n)   # any machine
    st.launch_cuda(source, "scale", grid, block, x_gpu, 2.0, n)    # a GPU

NVRTC compiles the source for the device's architecture at its first launch
there (the image cached on disk beside the operators' kernels), with CUDA's
headers found in the nvidia wheel beside torch or a CUDA toolkit. The kernel
runs on torch's current stream of the tensors' device, asynchronously like
any CUDA work torch queues.
"""
from typing import Sequence

from . import _C
from .cuda_runtime import cuda_include_dirs, point_at_nvrtc
from .emulator import Dims, check_no_leaf_requires_grad, checked_options, launch_dims


def launch_cuda(source: str, kernel: str, grid: Dims, block: Dims, *args, shared_bytes: int = 0,
                options: Sequence[str] = ()) -> None:
    """Runs `kernel` (an ``extern "C" __global__`` function of `source`, or
    an instance of a template kernel, ``"scale<float, 4>"``) on
    `grid` blocks of `block` threads (ints or up to three dimensions), as
    ``kernel<<<grid, block, shared_bytes>>>(*args)`` would.

    Arguments: contiguous CUDA tensors of one device, passed as pointers
    (a parameter ``float*`` takes a float32 tensor, ``int*`` or
    ``unsigned*`` an int32 one, ``__half*`` or ``unsigned short*`` a float16
    one, ...; ``float4*``, ``__half2*`` or ``void*`` any), and Python ints and
    floats, converted to the type the kernel's declaration gives the
    parameter (``int``, ``unsigned long long``, ``float``, ``__half``, ...):
    an int that the type cannot hold, or a float for an integer, is an error.
    A struct or CUDA vector parameter (``Params p``, ``float4 v``, a struct
    the source defines) takes a tuple or list of its fields in order, or a
    dict of them by name, each converted as above (an array field takes a
    sequence, a pointer field a tensor), laid out as the device lays it out.
    `options` are NVRTC's (``-DTILE=32``, ``-I...``), after the folders of
    CUDA's headers; st.emulate_cuda takes the same list (its macros). The
    kernel writes the tensors in place."""
    op = "st.launch_cuda"
    if not isinstance(source, str) or not isinstance(kernel, str):
        raise TypeError(f"{op}: 'source' and 'kernel' must be strings")
    options = checked_options(op, options)
    check_no_leaf_requires_grad(op, args)
    point_at_nvrtc()
    include = ["-I" + d for d in cuda_include_dirs()]
    _C.launch_cuda(source, kernel, launch_dims(op, "grid", grid), launch_dims(op, "block", block), list(args),
                   int(shared_bytes), include + options)
