"""Shared fixtures for the sparsetir_torch Python test suite.

The kernel cache directory is read by the C++ side at the first compile, so it
is pointed at a private temporary directory here, at conftest import time,
before anything imports sparsetir_torch. Tests therefore never depend on (or
pollute) ~/.cache.
"""
import atexit
import os
import re
import shutil
import tempfile

# Under pytest-xdist the controller imports this file first and its workers
# inherit its environment: they share its directory (the cache takes one lock
# per key, so a kernel two workers need is compiled once), and only the
# controller, which outlives them, removes it.
if "PYTEST_XDIST_WORKER" in os.environ and os.environ.get("SPARSETIR_TEST_SHARED_CACHE"):
    _SESSION_CACHE_DIR = os.environ["SPARSETIR_TEST_SHARED_CACHE"]
else:
    _SESSION_CACHE_DIR = tempfile.mkdtemp(prefix="sparsetir_test_cache_")
    os.environ["SPARSETIR_TEST_SHARED_CACHE"] = _SESSION_CACHE_DIR
    atexit.register(shutil.rmtree, _SESSION_CACHE_DIR, True)
os.environ["SPARSETIR_CACHE_DIR"] = _SESSION_CACHE_DIR

import dataclasses  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import sparsetir_torch as st  # noqa: E402

# tools/test_sanitized.sh runs tests on an extension built elsewhere: make sure
# that is the one imported, not the installed one.
if os.environ.get("SPARSETIR_EXPECT_EXTENSION_UNDER"):
    _expected = os.path.realpath(os.environ["SPARSETIR_EXPECT_EXTENSION_UNDER"])
    if not os.path.realpath(st._C.__file__).startswith(_expected + os.sep):
        raise RuntimeError(f"the tests imported {st._C.__file__}, not the extension under {_expected}")

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS_DIR = os.path.join(REPO_ROOT, "tests", "scripts")
MUST_FAIL_DIR = os.path.join(REPO_ROOT, "tests", "must_fail")
# Real matrices shipped with the repository (tests/data/matrices/README.md);
# $SPARSETIR_DATASETS may name another folder of the same layout.
DATASETS_DIR = os.path.abspath(os.environ.get("SPARSETIR_DATASETS")
                               or os.path.join(REPO_ROOT, "tests", "data", "matrices"))

TORCH_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
INDEX_DTYPES = {"int32": torch.int32, "int64": torch.int64}
# Unit roundoff of each storage dtype (half an ulp of 1.0).
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}


# --------------------------------------------------------------------------- scripts


@pytest.fixture
def nvrtc():
    """For tests that compile CUDA through NVRTC (PTX, ptxas) without a GPU:
    loads NVRTC, or skips with NVRTC's own reason where it cannot be loaded
    (a CPU build of torch without the nvidia-cuda-nvrtc wheel; the library
    then refuses by name). Checked per test, not at import, and the search
    path it sets is taken back, so that child processes still find NVRTC
    on their own."""
    before = os.environ.get("SPARSETIR_NVRTC_DIRS")
    why = st.cuda_runtime.prepare_nvrtc()
    if before is None:
        os.environ.pop("SPARSETIR_NVRTC_DIRS", None)
    if why:
        pytest.skip(f"no NVRTC: {why[:200]}")


needs_nvrtc = pytest.mark.usefixtures("nvrtc")


@pytest.fixture(params=["forward", "check"])
def emulation_order(request, monkeypatch):
    """An emulated test twice: its threads in order, and under the race check
    (in order, reversed and shuffled, what the kernel wrote compared)."""
    if request.param == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    else:
        monkeypatch.delenv("SPARSETIR_EMULATE_ORDER", raising=False)
    return request.param


def assert_valid_cuda(source: str, entry: str, *headers: str) -> None:
    """NVRTC compiles `source` for sm_80 (C++17) with the include folders of
    CUDA's `headers` and the PTX defines `entry`: a kernel the emulator runs
    relies on nothing only the emulator accepts. Skips where NVRTC or a
    header is missing (use with needs_nvrtc)."""
    from sparsetir_torch import _C

    options = cuda_include_options(*headers) if headers else []
    if options is None:
        pytest.skip(f"no {', '.join(headers)} for NVRTC (neither a CUDA toolkit nor the nvidia-cuda-runtime wheel)")
    ptx = _C.nvrtc_compile(source, entry + ".cu", 80, False, options + ["-std=c++17"])["ptx"].decode()
    assert re.search(rf"\.entry {entry}\b", ptx), ptx[:400]


def cuda_include_options(*headers):
    """NVRTC's -I options under which each of `headers` (paths as #include
    names them) is found: in a CUDA toolkit or the nvidia-cuda-runtime
    wheel, or a cccl directory of either; None where one is missing."""
    from sparsetir_torch.cuda_runtime import cuda_include_dirs

    dirs = cuda_include_dirs(*headers)
    return ["-I" + d for d in dirs] if dirs else None


def ptx_param_sizes(ptx: str, kernel: str):
    """The byte size of each parameter of `kernel`'s .entry in `ptx`: what
    cuLaunchKernel copies for each argument."""
    entry = re.search(r"\.entry\s+" + kernel + r"\s*\((.*?)\)", ptx, re.S).group(1)
    sizes = []
    for decl in entry.split(","):
        array = re.search(r"\.b8\s+\w+\[(\d+)\]", decl)  # .param .align 2 .b8 k_param_3[2]
        sizes.append(int(array.group(1)) if array else int(re.search(r"\.[usbf](8|16|32|64)\b", decl).group(1)) // 8)
    return sizes


def run_emulated_cuda_benchmark(ops: str, out_dir) -> str:
    """benchmarks/bench_cuda.py --ops `ops` without a GPU: our operators' cuda
    path under the SIMT emulator on small cases, checked against float64 and
    not timed. Its output, once it exited 0 (skips where a GPU would time the
    cases instead)."""
    import subprocess
    import sys

    import sparsetir_torch as st

    if not st.cuda_unavailable_reason():
        pytest.skip("a GPU is present: the benchmark times it instead")
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "benchmarks", "bench_cuda.py"), "--ops", ops,
                           "--out", str(out_dir)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": REPO_ROOT})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def read_script(name: str, dtype: str = "float32", idtype: str = "int32") -> str:
    """The text of tests/scripts/<name>.py with its buffer dtype and iterator
    idtype replaced (the scripts declare "float32" buffers and "int32" indices)."""
    path = os.path.join(SCRIPTS_DIR, name if name.endswith(".py") else name + ".py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert '"float32"' in text, path
    if dtype != "float32":
        text = text.replace('"float32"', f'"{dtype}"')
    if idtype != "int32":
        assert '"int32"' in text, path
        text = text.replace('"int32"', f'"{idtype}"')
    return text


def all_script_names():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(SCRIPTS_DIR, "*.py")))


@pytest.fixture(scope="session")
def script_text():
    return read_script


@pytest.fixture(scope="session")
def session_cache_dir():
    return _SESSION_CACHE_DIR


_KERNELS = {}


def get_kernel(name: str, dtype: str = "float32", idtype: str = "int32"):
    """Compiles each (script, dtype, idtype) variant once per session."""
    key = (name, dtype, idtype)
    if key not in _KERNELS:
        _KERNELS[key] = st.compile(read_script(name, dtype, idtype))
    return _KERNELS[key]


@pytest.fixture(scope="session")
def kernel():
    """kernel(name, dtype="float32", idtype="int32") -> compiled st.Kernel (cached per session)."""
    return get_kernel


# --------------------------------------------------------------------------- CSR matrices


@dataclasses.dataclass
class Csr:
    """A CSR matrix in numpy: indptr/indices int64, values float64."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    shape: tuple

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @property
    def m(self) -> int:
        return self.shape[0]

    @property
    def n(self) -> int:
        return self.shape[1]

    def rows(self) -> np.ndarray:
        """The row of every stored entry."""
        return np.repeat(np.arange(self.m, dtype=np.int64), np.diff(self.indptr))

    def row_lengths(self) -> np.ndarray:
        return np.diff(self.indptr)

    def scipy(self, values=None):
        import scipy.sparse

        v = self.values if values is None else values
        return scipy.sparse.csr_matrix((v, self.indices, self.indptr), shape=self.shape)

    def torch_structure(self, idtype: str):
        t = INDEX_DTYPES[idtype]
        return torch.from_numpy(self.indptr).to(t).contiguous(), torch.from_numpy(self.indices).to(t).contiguous()


def random_values(rng: np.random.Generator, size) -> np.ndarray:
    """Values with magnitude in [0.25, 1] and a random sign: never zero, never tiny."""
    return rng.uniform(0.25, 1.0, size) * rng.choice([-1.0, 1.0], size)


def make_csr(
    m: int,
    n: int,
    density: float = 0.1,
    seed: int = 0,
    empty_rows=(),
    dense_rows=(),
    shuffle: bool = False,
    duplicates: int = 0,
) -> Csr:
    """A seeded random CSR matrix. ``empty_rows`` are forced empty, ``dense_rows``
    forced full; ``shuffle`` leaves column indices unsorted within rows and
    ``duplicates`` adds that many repeated (row, column) entries."""
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < density
    for r in dense_rows:
        mask[r, :] = True
    for r in empty_rows:
        mask[r, :] = False
    rows, cols = np.nonzero(mask)
    rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    if duplicates and rows.size:
        pick = rng.integers(0, rows.size, duplicates)
        rows, cols = np.concatenate([rows, rows[pick]]), np.concatenate([cols, cols[pick]])
    if shuffle:
        order = np.lexsort((rng.random(rows.size), rows))  # by row, random within a row
    else:
        order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    return Csr(indptr, cols.copy(), random_values(rng, rows.size), (m, n))


def gat_reference(csr, a_dst, a_src, x, slope):
    """float64: leaky scores, softmax per row and head, weighted sum."""
    rows = csr.rows()
    s = a_dst[rows] + a_src[csr.indices]
    e = np.where(s > 0, s, s * slope)
    out = np.zeros((csr.m,) + x.shape[1:])
    probs = np.zeros_like(e)
    for i in range(csr.m):
        lo, hi = csr.indptr[i], csr.indptr[i + 1]
        if hi > lo:
            w = np.exp(e[lo:hi] - e[lo:hi].max(axis=0))
            probs[lo:hi] = w / w.sum(axis=0)
            out[i] = np.einsum("eh,ehc->hc", probs[lo:hi], x[csr.indices[lo:hi]])
    return out, probs


# Named shapes used by the numeric tests: name -> make_csr kwargs.
CSR_CASES = {
    "1x1": dict(m=1, n=1, density=1.0),
    "1x1_empty": dict(m=1, n=1, density=0.0),
    "empty_rows": dict(m=40, n=30, density=0.25, empty_rows=(0, 5, 6, 7, 39)),
    "zero_nnz": dict(m=12, n=9, density=0.0),
    "dense_row": dict(m=25, n=64, density=0.05, dense_rows=(3,)),
    "fully_dense": dict(m=6, n=5, density=1.0),
    "tall": dict(m=200, n=17, density=0.1),
    "wide": dict(m=9, n=150, density=0.1),
    "unsorted_with_duplicates": dict(m=30, n=20, density=0.2, shuffle=True, duplicates=15),
    "no_rows": dict(m=0, n=5, density=0.5),
    "no_columns": dict(m=4, n=0, density=0.5),
}


@pytest.fixture(scope="session")
def csr_factory():
    """make_csr(m, n, density=..., seed=..., empty_rows=..., dense_rows=..., shuffle=..., duplicates=...)."""
    return make_csr


def to_tensor(x: np.ndarray, dtype: str) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64)).to(TORCH_DTYPES[dtype]).contiguous()


def assert_within_bound(out: torch.Tensor, ref: np.ndarray, magnitude: np.ndarray, terms, dtype: str, what: str):
    """|out - ref| <= 2 (terms + 2) u magnitude (+ a subnormal allowance for float16).

    ``ref`` is the exact (float64) result from the rounded inputs, ``magnitude``
    the sum of the absolute values of the summed products, ``terms`` the number
    of summed products per output element: the classic bound for recursive
    summation when each partial sum is rounded to ``dtype`` (true for any
    summation order, with or without fused multiply-add), doubled as a margin.
    """
    got = out.detach().to(torch.float64).numpy()
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    assert np.all(np.isfinite(got)), f"{what}: non-finite values in the output"
    u = UNIT_ROUNDOFF[dtype]
    terms = np.broadcast_to(np.asarray(terms, dtype=np.float64), ref.shape)
    tol = 2.0 * (terms + 2.0) * u * magnitude
    if dtype == "float16":
        tol = tol + (terms + 2.0) * 2.0**-24  # subnormal spacing of float16
    err = np.abs(got - ref)
    bad = err > tol
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{what} ({dtype}): {int(bad.sum())} of {bad.size} elements off; first at {idx}: "
            f"got {got[idx]!r}, expected {ref[idx]!r} (tolerance {tol[idx]:.3g}, max error {err.max():.3g})"
        )


# --------------------------------------------------------------------------- datasets


def dataset_files():
    """pytest params for every dataset matrix except the malformed wrong.mtx."""
    if not os.path.isdir(DATASETS_DIR):
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"datasets folder {DATASETS_DIR} is missing"))]
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(DATASETS_DIR, "*.mtx.gz")))
    if not names:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no *.mtx.gz files in {DATASETS_DIR}"))]
    return names


_DATASETS = {}


def load_dataset(name: str) -> Csr:
    """Reads a dataset once per session. Pattern matrices (all values 1 in the
    file) get seeded random values so the data is never trivial."""
    if name not in _DATASETS:
        from sparsetir_torch.matrix_market import read_matrix_market

        path = os.path.join(DATASETS_DIR, name)
        with gzip.open(path, "rt", encoding="utf-8") as f:
            is_pattern = "pattern" in f.readline().lower()
        mat = read_matrix_market(path)
        values = mat.values.numpy().astype(np.float64)
        if is_pattern:
            values = random_values(np.random.default_rng(zlib.crc32(name.encode())), values.size)
        csr = Csr(mat.indptr.numpy().astype(np.int64), mat.indices.numpy().astype(np.int64), values, tuple(mat.shape))
        assert csr.nnz == 0 or np.any(csr.values != 0), name
        _DATASETS[name] = csr
    return _DATASETS[name]


@pytest.fixture(scope="session")
def dataset():
    """dataset(file_name) -> Csr (cached per session)."""
    if not os.path.isdir(DATASETS_DIR):
        pytest.skip(f"datasets folder {DATASETS_DIR} is missing")
    return load_dataset
