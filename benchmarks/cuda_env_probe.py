"""Facts a CUDA backend author needs about this machine, printed as "key: value" lines:

    python / torch      versions, torch.version.cuda, the device (name, capability, SMs, memory, L2, peak bandwidth)
    libraries           where libnvrtc*.so / libnvrtc-builtins*.so are (torch/lib, site-packages/nvidia/*/lib,
                        /usr/local/cuda*), and whether the process has libnvrtc mapped (/proc/self/maps) before
                        torch, after `import torch` and after the first CUDA tensor; whether libcuda.so.1 loads
    headers             where cuda_fp16.h / cuda_bf16.h are (site-packages/nvidia/*/include, /usr/local/cuda*)
    nvrtc (ctypes)      nvrtcVersion, nvrtcGetSupportedArchs; compiles
                        extern "C" __global__ void axpy(float a, const float* x, float* y, int n)
                        to CUBIN for the device's sm_XY (PTX for compute_XY if that fails; sm_90 without a device),
                        median compile time of 5; the same with sm_XYa; an fp16 and a bf16 kernel that include
                        cuda_fp16.h / cuda_bf16.h, without and with -I for each header folder found
    driver (ctypes)     loads the CUBIN with cuModuleLoadData in torch's context (cuDevicePrimaryCtxRetain +
                        cuCtxSetCurrent if none is current), launches axpy with cuLaunchKernel on torch tensors'
                        data_ptr() on torch.cuda.current_stream(), checks y against torch; launch overhead: median
                        over 1000 launches of the GPU time between two events around each launch and of the host
                        time of each cuLaunchKernel call, beside torch's own y.add_(x, alpha=a); runs the fp16 kernel

Every probe is wrapped: a failure prints "key: ERROR <type>: <message>" and the script goes on; it exits 0. It does
not import sparsetir_torch. Without a CUDA device it still reports the libraries, headers and NVRTC compiles.

    python benchmarks/cuda_env_probe.py
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import platform
import shutil
import site
import statistics
import subprocess
import sys
import time
from typing import Callable, List, Optional

AXPY = r'''
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''

AXPY_HALF = r'''
#include <cuda_fp16.h>
extern "C" __global__ void axpy_half(float a, const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(a * __half2float(x[i]) + __half2float(y[i]));
}
'''

AXPY_BF16 = r'''
#include <cuda_bf16.h>
extern "C" __global__ void axpy_bf16(float a, const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(a * __bfloat162float(x[i]) + __bfloat162float(y[i]));
}
'''


def emit(key: str, value) -> None:
    print(f"{key}: {value}", flush=True)


def error_text(e: BaseException) -> str:
    first = str(e).strip().splitlines()
    return f"ERROR {type(e).__name__}: {first[0][:300] if first else ''}"


def probe(key: str, fn: Callable, default=None, show: Callable = str):
    """Prints key: show(fn()) (nothing if fn returns None) and returns fn(); on an exception prints
    key: ERROR ... and returns default."""
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001  (a probe must never stop the script)
        emit(key, error_text(e))
        return default
    if value is not None:
        emit(key, show(value))
    return value


def ok(_value) -> str:
    return "ok"


# --------------------------------------------------------------------------------------------------------------------
# Files


def mapped(substrings) -> List[str]:
    """Paths of the shared objects mapped into this process whose file name contains one of the substrings."""
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and any(s in os.path.basename(parts[5].strip()) for s in substrings):
                paths.add(parts[5].strip())
    return sorted(paths)


def describe_mapped(substrings) -> str:
    paths = mapped(substrings)
    return ", ".join(paths) if paths else "no"


def site_dirs() -> List[str]:
    dirs = list(site.getsitepackages()) + [site.getusersitepackages()]
    torch_mod = sys.modules.get("torch")
    if torch_mod is not None and getattr(torch_mod, "__file__", None):
        dirs.insert(0, os.path.dirname(os.path.dirname(torch_mod.__file__)))
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def torch_lib_dir() -> Optional[str]:
    torch_mod = sys.modules.get("torch")
    if torch_mod is None:
        return None
    return os.path.join(os.path.dirname(torch_mod.__file__), "lib")


def cuda_toolkit_dirs(sub: str) -> List[str]:
    """/usr/local/cuda*/<sub> and /usr/local/cuda*/targets/*/<sub>, plus $CUDA_HOME / $CUDA_PATH."""
    roots = sorted(glob.glob("/usr/local/cuda*")) + [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH")]
    out = []
    for root in dict.fromkeys(r for r in roots if r):
        out += [os.path.join(root, sub)] + sorted(glob.glob(os.path.join(root, "targets", "*", sub)))
    return [d for d in dict.fromkeys(out) if os.path.isdir(d)]


def find_files(patterns: List[str], dirs: List[str]) -> List[str]:
    found = []
    for d in dirs:
        for p in patterns:
            found += glob.glob(os.path.join(d, p))
    return sorted(dict.fromkeys(os.path.realpath(f) if os.path.islink(f) else f for f in found))


def unique_dirs(dirs) -> List[str]:
    """Existing folders, each once (a symlinked /usr/local/cuda and its target count as one)."""
    seen, out = set(), []
    for d in dirs:
        if d and os.path.isdir(d) and os.path.realpath(d) not in seen:
            seen.add(os.path.realpath(d))
            out.append(d)
    return out


def library_dirs() -> List[str]:
    dirs = [torch_lib_dir()] if torch_lib_dir() else []
    for sp in site_dirs():
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    dirs += cuda_toolkit_dirs("lib64") + cuda_toolkit_dirs("lib")
    return unique_dirs(dirs)


def include_dirs() -> List[str]:
    dirs = []
    for sp in site_dirs():
        dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "include")))
    dirs += cuda_toolkit_dirs("include")
    return unique_dirs(dirs)


def header_dirs(header: str) -> List[str]:
    return [d for d in include_dirs() if os.path.isfile(os.path.join(d, header))]


def pick_nvrtc(cuda_version: Optional[str]) -> Optional[str]:
    """The libnvrtc to use: the one already mapped (torch's, so that the process holds one NVRTC), else one whose
    soname major matches torch.version.cuda, else any. '.alt' builds are skipped."""
    already = [p for p in mapped(["libnvrtc.so"]) if ".alt." not in p]
    if already:
        return already[0]
    libs = [p for p in find_files(["libnvrtc.so*"], library_dirs()) if ".alt." not in p]
    major = (cuda_version or "").split(".")[0]
    for lib in libs:
        if major and f".so.{major}" in lib:
            return lib
    return libs[0] if libs else None


# --------------------------------------------------------------------------------------------------------------------
# NVRTC through ctypes


class Nvrtc:
    def __init__(self, path: str):
        folder = os.path.dirname(path)
        # libnvrtc dlopens libnvrtc-builtins by soname at compile time; loading it by full path first (global)
        # makes that succeed without LD_LIBRARY_PATH.
        builtins = [p for p in sorted(glob.glob(os.path.join(folder, "libnvrtc-builtins.so*"))) if ".alt." not in p]
        self.builtins = builtins[-1] if builtins else None
        if self.builtins:
            ctypes.CDLL(self.builtins, mode=ctypes.RTLD_GLOBAL)
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        self.lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p,
                                                ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.nvrtcCompileProgram.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        for fn in ("nvrtcGetProgramLogSize", "nvrtcGetCUBINSize", "nvrtcGetPTXSize"):
            getattr(self.lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        for fn in ("nvrtcGetProgramLog", "nvrtcGetCUBIN", "nvrtcGetPTX"):
            getattr(self.lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p)]

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(rc).decode()} ({rc})")

    def version(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        return f"{major.value}.{minor.value}"

    def supported_archs(self) -> List[int]:
        n = ctypes.c_int()
        self.check(self.lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * n.value)()
        self.check(self.lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        return list(archs)

    def compile(self, source: str, options: List[str], binary: str = "cubin") -> bytes:
        """CUBIN (or PTX, NUL-terminated) bytes; raises with the compile log on failure."""
        prog = ctypes.c_void_p()
        self.check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"probe.cu", 0, None, None),
                   "nvrtcCreateProgram")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = self.lib.nvrtcCompileProgram(prog, len(options), opts)
            if rc != 0:
                size = ctypes.c_size_t()
                self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
                log = ctypes.create_string_buffer(size.value)
                self.lib.nvrtcGetProgramLog(prog, log)
                first = " | ".join(log.value.decode(errors="replace").strip().splitlines()[:3])
                raise RuntimeError(f"{self.lib.nvrtcGetErrorString(rc).decode()}: {first}")
            get_size, get = ((self.lib.nvrtcGetCUBINSize, self.lib.nvrtcGetCUBIN) if binary == "cubin"
                             else (self.lib.nvrtcGetPTXSize, self.lib.nvrtcGetPTX))
            size = ctypes.c_size_t()
            self.check(get_size(prog, ctypes.byref(size)), f"get {binary} size")
            buf = ctypes.create_string_buffer(size.value)
            self.check(get(prog, buf), f"get {binary}")
            return buf.raw
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


# --------------------------------------------------------------------------------------------------------------------
# The driver API through ctypes


class Driver:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        L = self.lib
        L.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        L.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        L.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        L.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        L.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        L.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        L.cuModuleUnload.argtypes = [ctypes.c_void_p]
        L.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p,
                                                                               ctypes.POINTER(ctypes.c_void_p),
                                                                               ctypes.c_void_p]

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(msg))
            raise RuntimeError(f"{what}: {msg.value.decode() if msg.value else 'error'} ({rc})")

    def driver_version(self) -> str:
        v = ctypes.c_int()
        self.check(self.lib.cuDriverGetVersion(ctypes.byref(v)), "cuDriverGetVersion")
        return f"{v.value // 1000}.{v.value % 1000 // 10}"

    def ensure_context(self, device_index: int) -> str:
        """Makes a context current on this thread: torch's, or the device's primary context (which torch uses)."""
        self.check(self.lib.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if ctx.value:
            return f"torch's current context 0x{ctx.value:x}"
        dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(dev), device_index), "cuDeviceGet")
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return f"primary context 0x{ctx.value:x} (retained and set current)"

    def load(self, image: bytes, name: str):
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), "cuModuleGetFunction")
        return module, fn


class AxpyLaunch:
    """One prepared launch of an axpy-shaped kernel (float a, const T* x, T* y, int n) on torch's current stream."""

    def __init__(self, driver: Driver, fn, a: float, x, y, block: int = 256):
        import torch

        self.driver, self.fn, self.block = driver, fn, block
        n = x.numel()
        self.grid = (n + block - 1) // block
        # the argument values must outlive the launches: keep them on self
        self.args = [ctypes.c_float(a), ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()), ctypes.c_int(n)]
        self.params = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in self.args])
        self.stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def __call__(self) -> None:
        self.driver.check(self.driver.lib.cuLaunchKernel(self.fn, self.grid, 1, 1, self.block, 1, 1, 0, self.stream,
                                                         self.params, None), "cuLaunchKernel")


# --------------------------------------------------------------------------------------------------------------------
# Probes


def probe_python() -> None:
    probe("python", lambda: sys.version.split()[0])
    probe("python executable", lambda: sys.executable)
    probe("platform", lambda: f"{platform.system()} {platform.release()} {platform.machine()}")


def probe_torch():
    probe("libnvrtc mapped before import torch", lambda: describe_mapped(["libnvrtc"]))
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        emit("import torch", error_text(e))
        return None
    emit("import torch", "ok")
    probe("torch version", lambda: torch.__version__)
    probe("torch file", lambda: torch.__file__)
    probe("torch.version.cuda", lambda: torch.version.cuda)
    probe("torch cudnn", lambda: torch.backends.cudnn.version())
    probe("torch arch list", lambda: " ".join(torch.cuda.get_arch_list()))
    probe("libnvrtc mapped after import torch", lambda: describe_mapped(["libnvrtc"]))
    probe("libcudart mapped after import torch", lambda: describe_mapped(["libcudart"]))
    return torch


def probe_device(torch) -> Optional[tuple]:
    """(major, minor, device index) of the current device, or None."""
    if torch is None or not probe("cuda available", lambda: torch.cuda.is_available(), default=False):
        return None
    probe("device count", lambda: torch.cuda.device_count())
    idx = probe("current device", lambda: torch.cuda.current_device())
    props = probe("device properties", lambda: torch.cuda.get_device_properties(idx), show=ok)
    if props is None:
        return None
    probe("device name", lambda: props.name)
    probe("device capability", lambda: f"{props.major}.{props.minor} (sm_{props.major}{props.minor})")
    probe("device SM count", lambda: props.multi_processor_count)
    probe("device memory", lambda: f"{props.total_memory / 2**30:.1f} GiB")
    probe("device L2", lambda: f"{getattr(props, 'L2_cache_size', 0) / 2**20:.1f} MiB")
    probe("device shared memory per block (opt-in)", lambda: f"{props.shared_memory_per_block_optin} bytes")
    probe("device registers per SM", lambda: props.regs_per_multiprocessor)
    probe("device max threads per SM", lambda: props.max_threads_per_multi_processor)

    def bandwidth():
        clock, bus = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
        if not clock or not bus:
            return f"not exposed by torch (memory_clock_rate={clock}, memory_bus_width={bus})"
        return f"{2 * clock * 1e3 * bus / 8 / 1e9:.0f} GB/s (memory clock {clock / 1e3:.0f} MHz, {bus}-bit bus, x2)"

    probe("device peak memory bandwidth", bandwidth)
    probe("first CUDA tensor", lambda: str(torch.zeros(1, device="cuda").device))
    probe("libnvrtc mapped after a CUDA tensor", lambda: describe_mapped(["libnvrtc"]))
    probe("libcudart mapped after a CUDA tensor", lambda: describe_mapped(["libcudart"]))
    probe("libcuda mapped after a CUDA tensor", lambda: describe_mapped(["libcuda.so"]))
    return props.major, props.minor, idx


def probe_files(torch) -> None:
    probe("library search folders", lambda: ", ".join(library_dirs()) or "none")
    probe("libnvrtc found", lambda: ", ".join(find_files(["libnvrtc.so*", "libnvrtc.alt.so*"], library_dirs()))
          or "none")
    probe("libnvrtc-builtins found", lambda: ", ".join(find_files(["libnvrtc-builtins*.so*"], library_dirs()))
          or "none")
    probe("torch's nvrtc stub", lambda: ", ".join(find_files(["*nvrtc*"], [torch_lib_dir()])) or "none"
          if torch_lib_dir() else "torch not imported")
    probe("ctypes.util.find_library('nvrtc')", lambda: ctypes.util.find_library("nvrtc") or "none")
    probe("cuda_fp16.h", lambda: ", ".join(header_dirs("cuda_fp16.h")) or "not found")
    probe("cuda_bf16.h", lambda: ", ".join(header_dirs("cuda_bf16.h")) or "not found")
    probe("nvcc", lambda: shutil.which("nvcc") or "not on PATH")
    probe("nvcc version", lambda: subprocess.run([shutil.which("nvcc"), "--version"], capture_output=True, text=True,
                                                 timeout=30).stdout.strip().splitlines()[-1]
          if shutil.which("nvcc") else None)
    probe("CUDA_HOME (torch.utils.cpp_extension)", cpp_extension_cuda_home if torch else lambda: None)


def cpp_extension_cuda_home() -> str:
    from torch.utils import cpp_extension

    return str(cpp_extension.CUDA_HOME)


def median_ms(fn: Callable, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def probe_nvrtc(torch, device: Optional[tuple]) -> Optional[dict]:
    """Compiles the kernels; returns {'axpy': (image, kind), 'axpy_half': ...} for the driver probe."""
    path = probe("nvrtc library used", lambda: pick_nvrtc(torch.version.cuda if torch else None) or None)
    if not path:
        emit("nvrtc", "skipped: no libnvrtc found")
        return None
    nv = probe("nvrtc load (builtins by full path first)", lambda: Nvrtc(path), show=ok)
    if nv is None:
        return None
    emit("nvrtc builtins loaded", nv.builtins or "none found beside libnvrtc")
    probe("nvrtcVersion", nv.version)
    probe("nvrtcGetSupportedArchs", lambda: " ".join(str(a) for a in nv.supported_archs()))
    major, minor = device[:2] if device else (9, 0)
    sm = f"{major}{minor}"
    if not device:
        emit("nvrtc target", "sm_90 (no CUDA device here)")
    images = {}

    def compile_axpy():
        try:
            images["axpy"] = (nv.compile(AXPY, [f"--gpu-architecture=sm_{sm}"]), "cubin")
            return f"CUBIN for sm_{sm}, {len(images['axpy'][0])} bytes"
        except RuntimeError as e:
            images["axpy"] = (nv.compile(AXPY, [f"--gpu-architecture=compute_{sm}"], "ptx"), "ptx")
            return f"CUBIN for sm_{sm} failed ({e}); PTX for compute_{sm}, {len(images['axpy'][0])} bytes"

    if probe("nvrtc compile axpy", compile_axpy) is None:
        return images
    kind = images["axpy"][1]
    arch = f"--gpu-architecture={'sm' if kind == 'cubin' else 'compute'}_{sm}"
    probe("nvrtc compile time (median of 5)",
          lambda: f"{median_ms(lambda: nv.compile(AXPY, [arch], kind), 5):.1f} ms")
    if major >= 9:
        probe(f"nvrtc compile axpy for sm_{sm}a (arch-specific: wgmma, setmaxnreg)",
              lambda: f"ok, {len(nv.compile(AXPY, [f'--gpu-architecture=sm_{sm}a']))} bytes")

    for source, header, name in ((AXPY_HALF, "cuda_fp16.h", "axpy_half"), (AXPY_BF16, "cuda_bf16.h", "axpy_bf16")):
        for folder in [None] + header_dirs(header):
            def compile_fp(folder=folder, source=source, name=name):
                image = nv.compile(source, [arch] + ([f"-I{folder}"] if folder else []), kind)
                images.setdefault(name, (image, kind))
                return f"ok, {len(image)} bytes"
            probe(f"nvrtc {header} " + (f"with -I{folder}" if folder else "without -I"), compile_fp)
    return images


def probe_driver(torch, device: Optional[tuple], images: Optional[dict]) -> None:
    drv = probe("ctypes.CDLL('libcuda.so.1')", Driver, show=ok)
    if drv is not None:
        emit("libcuda.so.1 path", describe_mapped(["libcuda.so"]))
        probe("cuDriverGetVersion", drv.driver_version)
    if drv is None or device is None or not images or "axpy" not in images:
        emit("driver launch", "skipped: " + ("no CUDA device" if device is None else
                                             "no libcuda" if drv is None else "no compiled kernel"))
        return
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # torch's primary context is now current on this thread
    if probe("driver context", lambda: drv.ensure_context(device[2])) is None:
        return
    image, kind = images["axpy"]
    loaded = probe("cuModuleLoadData + cuModuleGetFunction(axpy)", lambda: drv.load(image, "axpy"), show=ok)
    if loaded is None:
        return
    module, fn = loaded
    emit("loaded image kind", kind)
    g = torch.Generator(device="cuda").manual_seed(0)
    n, a = 1 << 20, 2.5
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    expected = torch.addcmul(y, x, torch.full_like(x, a))

    def run_axpy():
        launch = AxpyLaunch(drv, fn, a, x, y)
        launch()
        torch.cuda.synchronize()
        err = float((y - expected).abs().max())
        verdict = "ok" if err <= 1e-5 * float(expected.abs().max()) else "WRONG"
        return f"{verdict}, max |y - torch| = {err:.3g} (n = {n})"

    probe("cuLaunchKernel axpy on torch tensors, checked against torch", run_axpy)
    probe("launch overhead", lambda: launch_overhead(torch, drv, fn))
    if "axpy_half" in images:
        probe("fp16 kernel (cuda_fp16.h) load + launch", lambda: run_half(torch, drv, images["axpy_half"][0]))
    drv.lib.cuModuleUnload(module)


def launch_overhead(torch, drv: Driver, fn) -> str:
    """Median over 1000 launches of a one-block axpy: GPU time between events around each launch, and host time of
    each cuLaunchKernel call; the same for torch's y.add_(x, alpha=a)."""
    x = torch.ones(256, device="cuda")
    y = torch.zeros(256, device="cuda")
    launch = AxpyLaunch(drv, fn, 1.0, x, y)

    def measure(call) -> tuple:
        for _ in range(50):
            call()
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(1000)]
        host = []
        for start, end in events:
            start.record()
            t0 = time.perf_counter()
            call()
            host.append((time.perf_counter() - t0) * 1e6)
            end.record()
        torch.cuda.synchronize()
        gpu = [s.elapsed_time(e) * 1e3 for s, e in events]
        return statistics.median(gpu), statistics.median(host)

    ours_gpu, ours_host = measure(launch)
    torch_gpu, torch_host = measure(lambda: y.add_(x, alpha=1.0))
    return (f"cuLaunchKernel via ctypes: {ours_gpu:.2f} us between events, {ours_host:.2f} us host per call; "
            f"torch y.add_: {torch_gpu:.2f} us between events, {torch_host:.2f} us host per call (median of 1000)")


def run_half(torch, drv: Driver, image: bytes) -> str:
    module, fn = drv.load(image, "axpy_half")
    try:
        n, a = 4096, 0.5
        x = torch.randn(n, device="cuda").half()
        y = torch.randn(n, device="cuda").half()
        expected = (a * x.float() + y.float()).half()
        AxpyLaunch(drv, fn, a, x, y)()
        torch.cuda.synchronize()
        err = float((y.float() - expected.float()).abs().max())
        return f"{'ok' if err <= 2e-3 * float(expected.float().abs().max()) else 'WRONG'}, max |y - torch| = {err:.3g}"
    finally:
        drv.lib.cuModuleUnload(module)


def main() -> int:
    probe_python()
    torch = probe_torch()
    device = probe_device(torch)
    probe_files(torch)
    images = probe_nvrtc(torch, device)
    probe_driver(torch, device, images)
    return 0


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # noqa: BLE001  (the probe exits 0 whatever happens)
        emit("probe", f"ERROR {type(e).__name__}: {e}")
    sys.exit(0)
