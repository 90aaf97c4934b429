"""Builds the sparsetir_torch extension against the installed torch.

    pip install --no-build-isolation -e .

One build of the compiler core: the torch-free core (csrc/compiler) is the
CMake target `sparsetir_core` that the GoogleTest suite tests, built here by
CMake with the same standard (C++20, which torch's headers need too), warnings
and optimization, and linked whole into the extension with the torch glue
(csrc/ops). With GCC the glue loads torch's headers from a precompiled header
(SPARSETIR_PCH=0: without).
"""
import glob
import os
import re
import shutil
import subprocess
import sys

import setuptools
from setuptools import setup
from setuptools.command.build_py import build_py


def require_build_tools() -> None:
    """`pip install --no-build-isolation` builds with what the environment has:
    say what is missing instead of failing later with `invalid command
    'bdist_wheel'` or an import error."""
    missing = []
    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    if (major, minor) < (64, 0):
        missing.append(f"setuptools>=64 (found {setuptools.__version__})")
    if (major, minor) < (70, 1):  # bdist_wheel moved into setuptools in 70.1
        try:
            import wheel  # noqa: F401
        except ImportError:
            missing.append("wheel")
    try:
        import torch  # noqa: F401
    except ImportError:
        missing.append("torch (the extension compiles against the installed torch)")
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            missing.append(f"{tool} (the compiler core is built with CMake and ninja)")
    if missing:
        sys.exit("sparsetir_torch: the build needs " + ", ".join(missing) + " in this environment.\n"
                 "Install them first:  python3 -m pip install 'setuptools>=70.1' wheel torch\n"
                 "then:                python3 -m pip install --no-build-isolation .\n"
                 "(or run tools/install.sh, which does both)")


require_build_tools()
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(ROOT, "VERSION")) as version_file:
    VERSION = version_file.read().strip()  # the one place the version is written


def sanitizer_flags():
    """SPARSETIR_SANITIZE=address,undefined builds the extension with those
    sanitizers (tools/test_sanitized.sh runs a part of the Python suite on
    such a build): UB aborts instead of printing and going on."""
    sanitizers = os.environ.get("SPARSETIR_SANITIZE", "").strip()
    if not sanitizers:
        return [], []
    compile_flags = [f"-fsanitize={sanitizers}", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined",
                     "-O1", "-g1"]
    return compile_flags, [f"-fsanitize={sanitizers}"]


SANITIZE_COMPILE, SANITIZE_LINK = sanitizer_flags()


def sources():
    return sorted(glob.glob(os.path.join("csrc", "ops", "*.cc")))


def reusable_core_build(jobs: str):
    """SPARSETIR_CORE_BUILD: an existing CMake build folder whose sparsetir_core
    (brought up to date here) is linked instead of a new build; the C++
    suite's sanitized build serves the sanitized extension (tools/test.sh),
    so the core is compiled once with the sanitizers, not twice. Its flags
    must carry SPARSETIR_SANITIZE's sanitizers, or none when that is unset."""
    build_dir = os.environ.get("SPARSETIR_CORE_BUILD", "").strip()
    if not build_dir:
        return None
    build_dir = os.path.abspath(build_dir)
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            cache = f.read()
    except OSError:
        sys.exit(f"sparsetir_torch: SPARSETIR_CORE_BUILD={build_dir} is not a configured CMake build folder")
    found = re.search(r"^CMAKE_CXX_FLAGS:STRING=(.*)$", cache, re.MULTILINE)
    flags = found.group(1) if found else ""
    built_with = re.findall(r"-fsanitize=(\S+)", flags)
    wanted = os.environ.get("SPARSETIR_SANITIZE", "").strip()
    if built_with != ([wanted] if wanted else []):
        sys.exit(f"sparsetir_torch: the core in SPARSETIR_CORE_BUILD={build_dir} was built with sanitizers "
                 f"{built_with or 'none'}, this extension asks for {wanted or 'none'} (SPARSETIR_SANITIZE)")
    import torch

    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    if abi != 1 and f"-D_GLIBCXX_USE_CXX11_ABI={abi}" not in flags:
        sys.exit(f"sparsetir_torch: torch uses _GLIBCXX_USE_CXX11_ABI={abi}; the core in "
                 f"SPARSETIR_CORE_BUILD={build_dir} was not built with it")
    subprocess.run(["cmake", "--build", build_dir, "--target", "sparsetir_core", "-j", jobs], check=True)
    return build_dir


def build_core(build_dir: str, jobs: str) -> str:
    """Configures and builds the CMake target sparsetir_core (Release, without
    the tests) in `build_dir`; returns the static library. The sanitizers of
    SPARSETIR_SANITIZE apply to the core as to the glue."""
    import torch

    flags = [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", "-g0"]
    release = "-O3 -DNDEBUG"
    if SANITIZE_COMPILE:
        flags, release = flags[:1], " ".join(SANITIZE_COMPILE)
    configure = ["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 "-DSPARSETIR_BUILD_TESTS=OFF", f"-DCMAKE_CXX_FLAGS={' '.join(flags)}",
                 f"-DCMAKE_CXX_FLAGS_RELEASE={release}"]
    subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "--target", "sparsetir_core", "-j", jobs], check=True)
    return os.path.join(build_dir, "libsparsetir_core.a")


def core_link_libraries(build_dir: str) -> list:
    """What the core links besides itself (CMakeLists.txt writes the list):
    Boost.Context's static library where it was found."""
    with open(os.path.join(build_dir, "core_link_libraries.txt")) as f:
        libraries = [lib for lib in f.read().split(";") if lib.strip()]
    # Their symbols stay private to the module, like the core's.
    return libraries + [f"-Wl,--exclude-libs,{os.path.basename(lib)}" for lib in libraries]


class BuildExtensionWithCore(BuildExtension):
    """Builds the core with CMake first, then the glue against it."""

    def build_extensions(self):
        jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 1)
        core_dir = reusable_core_build(jobs)
        if core_dir is not None:
            core = os.path.join(core_dir, "libsparsetir_core.a")
        else:
            core_dir = os.path.join(os.path.abspath(self.build_temp), "core")
            core = build_core(core_dir, jobs)
        for ext in self.extensions:
            # Whole: nothing of the core may be dropped for being unreferenced
            # by the glue at link time.
            ext.extra_link_args = (["-Wl,--whole-archive", core, "-Wl,--no-whole-archive"] +
                                   core_link_libraries(core_dir) + ext.extra_link_args)
            ext.depends = list(ext.depends) + [core]  # a rebuilt core relinks the module
        super().build_extensions()

    def build_extension(self, ext):
        # torch's own flags are on ext by now (BuildExtension.build_extensions).
        pch = precompile_torch_headers(self.compiler.compiler_so, ext.include_dirs + self.compiler.include_dirs,
                                       ext.extra_compile_args, os.path.abspath(self.build_temp))
        ext.extra_compile_args = list(ext.extra_compile_args) + pch
        super().build_extension(ext)


# Every glue file parses torch's headers first, which is most of its compile
# time (about 5 of 9 s a file at -O2): they are parsed once into a GCC
# precompiled header that each compile loads instead.
TORCH_HEADERS = "#include <ATen/ATen.h>\n#include <torch/autograd.h>\n#include <torch/library.h>\n"


def precompile_torch_headers(compiler: list, include_dirs: list, flags: list, build_dir: str) -> list:
    """Builds build_dir/pch/torch_headers.h.gch with the glue's compiler and
    flags (again only when they or torch change) and returns the flags that
    make each compile load it. GCC uses it only where the flags match and
    falls back to parsing the headers otherwise (-Winvalid-pch says so), so a
    mismatch costs time, never correctness. Nothing for other compilers, or
    with SPARSETIR_PCH=0."""
    if os.environ.get("SPARSETIR_PCH", "1") == "0" or not compiler_is_gcc(compiler[0]):
        return []
    import torch

    folder = os.path.join(build_dir, "pch")
    header = os.path.join(folder, "torch_headers.h")
    command = (list(compiler) + [f"-I{d}" for d in include_dirs] + ["-x", "c++-header", header, "-o", header + ".gch"] +
               list(flags))
    stamp = "\n".join(command + [torch.__version__, torch.__file__])
    try:
        with open(header + ".stamp") as f:
            if f.read() == stamp and os.path.exists(header + ".gch"):
                return ["-include", header, "-Winvalid-pch"]
    except OSError:
        pass
    os.makedirs(folder, exist_ok=True)
    with open(header, "w") as f:
        f.write(TORCH_HEADERS)
    print("sparsetir_torch: precompiling torch's headers", flush=True)
    if subprocess.run(command).returncode != 0:
        print("sparsetir_torch: the precompiled header failed; each file parses torch's headers", flush=True)
        return []
    with open(header + ".stamp", "w") as f:
        f.write(stamp)
    return ["-include", header, "-Winvalid-pch"]


def compiler_is_gcc(compiler: str) -> bool:
    """torch's own test (absent from old torch: no precompiled header there)."""
    from torch.utils import cpp_extension

    check = getattr(cpp_extension, "check_compiler_is_gcc", None)
    return bool(check and check(compiler))


class BuildPyWithKernels(build_py):
    """Installs the kernel scripts (kernels/) inside the package, as
    sparsetir_torch/kernel_scripts/, so a non-editable install finds them
    (sparsetir_torch/kernels.py looks there first)."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "sparsetir_torch", "kernel_scripts")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "kernels"), target, ignore=shutil.ignore_patterns("__pycache__"))


setup(
    name="sparsetir_torch",
    version=VERSION,
    description="Sparse kernels for PyTorch, generated by a SparseTIR-style sparse tensor compiler",
    packages=["sparsetir_torch"],
    ext_modules=[
        CppExtension(
            name="sparsetir_torch._C",
            sources=sources(),
            include_dirs=[os.path.join(ROOT, "csrc", "compiler"), os.path.join(ROOT, "csrc", "ops")],
            # -fopenmp: at::parallel_for (the kernels' launcher) is an inline OpenMP
            # template, serial without it. Torch's bundled runtime has the same
            # SONAME (libgomp.so.1), so the process keeps a single OpenMP runtime.
            # -g0: Python's own CFLAGS ask for full debug info, which made the
            # build 1.7x slower and the module 90 MB (torch ships without it).
            extra_compile_args=["-O2", "-g0", "-std=c++20", "-fvisibility=hidden", "-fopenmp",
                                f'-DSPARSETIR_VERSION="{VERSION}"'] + SANITIZE_COMPILE,
            extra_link_args=["-fopenmp"] + SANITIZE_LINK,
        )
    ],
    cmdclass={"build_ext": BuildExtensionWithCore.with_options(use_ninja=True), "build_py": BuildPyWithKernels},
    python_requires=">=3.9",
)
