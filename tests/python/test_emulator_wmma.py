"""st.emulate_cuda on hand-written tensor-core kernels (mma.h, nvcuda::wmma):
fragments of every layout, loads and stores of both memory layouts, mma_sync
with float and half accumulators, float16, bfloat16 and int8 inputs. Results
are checked against float64 (int64) matrix products; each kernel is also
compiled by NVRTC against the toolkit's headers where they are installed."""
import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import cuda_include_options, needs_nvrtc

GEMM = r'''
#include <mma.h>
using namespace nvcuda;

// C (M x N, float, row-major) = alpha A B + C with A (M x K) row-major and
// B (K x N) column-major: one warp a 16 x 16 tile of C.
extern "C" __global__ void gemm(const __half* a, const __half* b, float* c, int n, int k, float alpha) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
  wmma::fill_fragment(acc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + blockIdx.y * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, b + blockIdx.x * 16 * k + kk, k);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  float* out = c + blockIdx.y * 16 * n + blockIdx.x * 16;
  wmma::load_matrix_sync(fc, out, n, wmma::mem_row_major);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = alpha * acc.x[i] + fc.x[i];
  wmma::store_matrix_sync(out, fc, n, wmma::mem_row_major);
}

// One m32n8k16 tile of bfloat16: A column-major, B row-major, C stored column-major.
extern "C" __global__ void tall(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __nv_bfloat16, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, float> acc;
  wmma::fill_fragment(acc, 0.5f);
  wmma::load_matrix_sync(fa, a, 32);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 32, wmma::mem_col_major);
}

// One m8n32k16 tile with a half accumulator, and one m16n16k16 tile of int8.
extern "C" __global__ void narrow(const __half* a, const __half* b, __half* c, const signed char* qa,
                                  const signed char* qb, int* qc) {
  wmma::fragment<wmma::matrix_a, 8, 32, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 32, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 8, 32, 16, __half> acc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 32);
  wmma::load_matrix_sync(acc, c, 32, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 32, wmma::mem_row_major);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> qfa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> qfb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> qacc;
  wmma::fill_fragment(qacc, 7);
  wmma::load_matrix_sync(qfa, qa, 16);
  wmma::load_matrix_sync(qfb, qb, 16);
  wmma::mma_sync(qacc, qfa, qfb, qacc);
  wmma::store_matrix_sync(qc, qacc, 16, wmma::mem_row_major);
}
'''

MISALIGNED = r'''
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void misaligned(const __half* a, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, a + 8, 16);  // 16 bytes past an aligned tensor
  c[threadIdx.x] = fa.x[0];
}
'''


@pytest.mark.parametrize("order", ["forward", "check"])
def test_a_half_gemm_of_16_by_16_tiles(order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    g = torch.Generator().manual_seed(0)
    m, n, k = 32, 48, 64
    a = torch.randn(m, k, generator=g).half()
    b_t = torch.randn(n, k, generator=g).half()  # B column-major: its transpose row by row
    c = torch.randn(m, n, generator=g)
    want = 0.5 * (a.double() @ b_t.double().T) + c.double()
    st.emulate_cuda(GEMM, "gemm", (n // 16, m // 16), 32, a, b_t, c, n, k, 0.5)
    torch.testing.assert_close(c.double(), want, rtol=1e-5, atol=1e-5)


def test_bfloat16_tiles_of_32_by_8_in_both_layouts():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(32, 16, generator=g).bfloat16()
    b = torch.randn(16, 8, generator=g).bfloat16()
    c = torch.zeros(8, 32)  # column-major 32 x 8
    # A column-major: element (r, c) at a_cm[c * 32 + r].
    st.emulate_cuda(GEMM, "tall", 1, 32, a.T.contiguous(), b, c)
    want = a.double() @ b.double() + 0.5
    torch.testing.assert_close(c.T.double(), want, rtol=1e-5, atol=1e-5)


def test_a_half_accumulator_and_int8_tiles():
    g = torch.Generator().manual_seed(2)
    a = torch.randn(8, 16, generator=g).half()
    b = torch.randn(16, 32, generator=g).half()
    c = torch.randn(8, 32, generator=g).half()
    qa = torch.randint(-128, 128, (16, 16), generator=g, dtype=torch.int8)
    qb = torch.randint(-128, 128, (16, 16), generator=g, dtype=torch.int8)  # column-major
    qc = torch.zeros(16, 16, dtype=torch.int32)
    want = (a.double() @ b.double() + c.double()).half()
    st.emulate_cuda(GEMM, "narrow", 1, 32, a, b, c, qa, qb, qc)
    # Summed in float and rounded once to half: within half a unit in the last place of half.
    torch.testing.assert_close(c.double(), want.double(), rtol=2 ** -11, atol=2 ** -14)
    assert qc.tolist() == (qa.long() @ qb.long().T + 7).tolist()


def test_a_misaligned_tile_raises_naming_the_call():
    a = torch.zeros(512, dtype=torch.float16)
    with pytest.raises(RuntimeError, match=r"thread \(0, 0, 0\): wmma::load_matrix_sync: the pointer .* is not "
                                           r"32-byte aligned"):
        st.emulate_cuda(MISALIGNED, "misaligned", 1, 32, a, torch.zeros(32))


def test_an_unsupported_shape_fails_to_compile_by_name():
    source = ('#include <mma.h>\nusing namespace nvcuda;\nextern "C" __global__ void k(float* x) {\n'
              '  wmma::fragment<wmma::accumulator, 16, 16, 8, float> f;\n  x[0] = f.x[0];\n}\n')
    with pytest.raises(st.CompileError, match=r"wmma shapes are m16n16k16"):
        st.emulate_cuda(source, "k", 1, 32, torch.zeros(1))


@needs_nvrtc
@pytest.mark.parametrize("name, source", [("gemm", GEMM), ("misaligned", MISALIGNED)])
def test_every_kernel_here_is_valid_cuda(name, source):
    from sparsetir_torch import _C
    options = cuda_include_options("mma.h", "cuda_fp16.h")
    if options is None:
        pytest.skip("no mma.h here (neither the nvidia-cuda-runtime wheel nor a CUDA toolkit)")
    ptx = _C.nvrtc_compile(source, name + ".cu", 80, False, options)["ptx"].decode()
    assert ".entry" in ptx and ("wmma" in ptx or name == "misaligned")
