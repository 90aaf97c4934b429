"""st.CudaKernel: a hand-written CUDA kernel as one object that runs on the
device of its tensors, under the SIMT emulator on CPU tensors and through
NVRTC on CUDA tensors:

    scale = st.CudaKernel(source, "scale", options=["-DTILE=32"])
    scale(grid, block, x, 2.0, n)    # x on the CPU: emulated; on a GPU: launched
    print(scale.params)              # the parameters as the launch reads them
    print(scale.ptx("sm_90"))        # what NVRTC makes of it, without a GPU
    print(scale.resources("sm_90"))  # registers, spills and shared bytes, by ptxas

The declaration is read once, when the object is made, so a kernel whose
parameters cannot be passed (a template, a union by value) or a malformed
option fails there rather than at its first launch; every call converts its
arguments to the declared types as a launch does, on either device (a struct
or vector parameter takes a tuple, list or dict of its fields: `params`
shows where each lies).
"""
import re
from typing import NamedTuple, Sequence, Tuple

import torch

from . import _C
from .cuda_runtime import cuda_include_dirs, find_ptxas, nvrtc_ptx
from .emulator import Dims, checked_options, emulate_cuda, tensors_of
from .launch import launch_cuda


class CudaStructField(NamedTuple):
    """A field of a struct or vector parameter, as the device lays it out."""

    name: str
    type: str  # "float", "const float*" as "float*", a struct's name
    offset: int  # bytes from the struct's start
    count: int  # an array's elements; 0 for a lone value


class CudaKernelParam(NamedTuple):
    """A parameter as st.launch_cuda converts an argument to it."""

    type: str  # without qualifiers or name: "float*", "unsigned int", "__half", "float4", a struct's name
    name: str  # "" where the declaration names none
    bytes: int  # its size on the device
    declaration: str  # as written: "const float* __restrict__ x"
    fields: Tuple[CudaStructField, ...] = ()  # a struct's or vector type's, in order


class CudaKernel:
    """`name` (an ``extern "C" __global__`` function of `source`, or an
    instance of a template kernel: ``"scale<float, 4>"``) with
    NVRTC's `options` (macros: ``-DTILE=32``; on a GPU any NVRTC option).
    Calling it as ``kernel(grid, block, *args, shared_bytes=0)`` runs
    ``name<<<grid, block, shared_bytes>>>(*args)``: through st.launch_cuda
    where an argument is a CUDA tensor, else through st.emulate_cuda, which
    takes the same arguments."""

    def __init__(self, source: str, name: str, options: Sequence[str] = ()):
        if not isinstance(source, str) or not isinstance(name, str):
            raise TypeError("st.CudaKernel: 'source' and 'name' must be strings")
        self._source = source
        self._name = name
        self._instance = "<" in name  # a template kernel's ("k<float, 4>"): NVRTC names it in the output
        self._compiled_for = {}  # arch -> (PTX, entry): .ptx(), .entry() and .resources() compile once
        self._options = tuple(checked_options("st.CudaKernel", options))
        self._signature = _C.CudaKernelSignature(source, name, list(self._options), "st.CudaKernel")
        self._params = tuple(CudaKernelParam(*p[:4], tuple(CudaStructField(*f) for f in p[4]))
                             for p in self._signature.params)

    @property
    def source(self) -> str:
        return self._source

    @property
    def name(self) -> str:
        return self._name

    @property
    def options(self) -> Tuple[str, ...]:
        return self._options

    @property
    def params(self) -> Tuple[CudaKernelParam, ...]:
        """The parameters in order, as the declaration gives them."""
        return self._params

    def __call__(self, grid: Dims, block: Dims, *args, shared_bytes: int = 0) -> None:
        if any(t.is_cuda for _, t in tensors_of(args)):
            launch_cuda(self._source, self._name, grid, block, *args, shared_bytes=shared_bytes,
                        options=self._options)
            return
        # The checks a launch makes, on CPU tensors too: an int its parameter
        # cannot hold, a float for an integer or a tensor of another element
        # type fails here as it would on a GPU, not only there.
        self._signature.values(list(args))
        emulate_cuda(self._source, self._name, grid, block, *args, shared_bytes=shared_bytes, options=self._options)

    def ptx(self, arch="sm_90") -> str:
        """The kernel's PTX for `arch` ("sm_80", "sm_90", or the number),
        compiled by NVRTC with CUDA's headers and the options, on any machine
        where NVRTC loads (no GPU needed); ``ptxas -arch=sm_90 -v`` reports
        its registers and spills."""
        return self._compiled(arch)[0]

    def entry(self, arch="sm_90") -> str:
        """The kernel's name in its PTX and CUBIN: `name` for an ``extern
        "C"`` kernel, the mangled name NVRTC gives a template's instance."""
        return self._compiled(arch)[1]

    def _compiled(self, arch):
        if arch not in self._compiled_for:
            include = ["-I" + d for d in cuda_include_dirs()]
            base = self._name.split("<")[0].strip()
            ptx, lowered = nvrtc_ptx(f"st.CudaKernel {self._name}.ptx()", self._source, base + ".cu", arch,
                                     include + list(self._options), self._name if self._instance else "")
            self._compiled_for[arch] = (ptx, lowered or self._name)
        return self._compiled_for[arch]

    def resources(self, arch="sm_90") -> dict:
        """What the kernel takes of an `arch` multiprocessor, by ptxas (of a
        CUDA toolkit: on PATH, or in $CUDA_HOME/bin or /usr/local/cuda/bin)
        from its PTX, without a GPU: ``{"registers": per thread, "spills":
        bytes spilled, "shared": static shared bytes}``."""
        from .cuda_check import ptxas_report  # the operators' check reads ptxas the same way

        ptxas = find_ptxas()
        if ptxas is None:
            raise RuntimeError(f"st.CudaKernel {self._name}.resources(): no ptxas here (it comes with a CUDA toolkit)")
        ptx, entry = self._compiled(arch)
        number = int(re.search(r"\.target\s+sm_(\d+)", ptx).group(1))
        return ptxas_report(ptxas, ptx.encode(), number, entry=entry)

    def __repr__(self) -> str:
        return f"<CudaKernel {self._name}({', '.join(p.declaration for p in self._params)})>"
