"""Workspaces (buffers a function allocates for its whole body) become
parameters the host allocates, zeroed, at every call (lift_workspaces, the
pipeline's last pass): no kernel allocates memory itself, the call signature
leaves them out, and 16-bit workspaces keep float32 storage."""
import os

import numpy as np
import pytest
import torch

import sparsetir_torch as st

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(REPO_ROOT, "tests", "scripts", "row_normalize.py"), encoding="utf-8") as f:
    ROW_NORMALIZE = f.read()

# Accumulates into the workspace without initializing it: right only if the
# host hands the kernel zeroed memory at every call.
ACCUMULATE_UNINITIALIZED = '''
@T.prim_func
def row_twice(a: T.handle, out: T.handle, indptr: T.handle, m: T.int32, nnz: T.int32) -> None:
    T.func_attr({"sparse_tir_level": 0})
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    A = T.match_buffer(a, (nnz,), "DTYPE")
    O = T.match_buffer(out, (m,), "DTYPE")
    W = T.alloc_buffer((m,), "DTYPE")
    for i in T.serial(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            W[i] = W[i] + A[J_indptr[i] + j]
        O[i] = W[i] + W[i]
'''


def csr(rng, m=12, n=9, density=0.4, empty_rows=(3,), dense_row=None):
    dense = np.where(rng.random((m, n)) < density, rng.uniform(0.5, 2.0, (m, n)), 0.0)
    for r in empty_rows:
        dense[r] = 0
    if dense_row is not None:
        dense[dense_row] = rng.uniform(0.5, 2.0, n)
    return dense, torch.from_numpy(dense).float().to_sparse_csr()


def test_the_kernel_allocates_nothing_and_the_call_omits_the_workspace():
    kernel = st.compile(ROW_NORMALIZE)
    assert "calloc" not in kernel.source and "free(" not in kernel.source
    assert kernel.params == ("a", "out", "indptr", "indices", "m", "n", "nnz")
    lowered = kernel.lowered.script()
    assert 'S = T.match_buffer(S_workspace, (m,), "float32", scope="workspace")' in lowered, lowered
    assert "alloc_buffer" not in lowered


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_row_normalize_matches_float64(index_dtype):
    text = ROW_NORMALIZE.replace('"int32"', f'"{str(index_dtype)[6:]}"')
    kernel = st.compile(text)
    dense, a = csr(np.random.default_rng(0), dense_row=5)
    nnz = a.values().numel()
    out = torch.full((nnz,), float("nan"))
    kernel(a=a.values(), out=out, indptr=a.crow_indices().to(index_dtype), indices=a.col_indices().to(index_dtype),
           m=dense.shape[0], n=dense.shape[1], nnz=nnz)
    sums = dense.sum(axis=1, keepdims=True)
    expected = (dense / np.where(sums == 0, 1, sums))[dense != 0]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("m", [0, 1, 7])
def test_the_workspace_is_zeroed_at_every_call(m):
    kernel = st.compile(ACCUMULATE_UNINITIALIZED.replace("DTYPE", "float32"))
    assert kernel.params == ("a", "out", "indptr", "m", "nnz")
    lengths = torch.arange(m, dtype=torch.int32) % 3
    indptr = torch.cat([torch.zeros(1, dtype=torch.int32), lengths.cumsum(0).int()])
    nnz = int(indptr[-1])
    a = torch.arange(1.0, nnz + 1)
    expected = torch.zeros(m, dtype=torch.float64)
    for i in range(m):
        expected[i] = 2 * a[int(indptr[i]):int(indptr[i + 1])].double().sum()
    for _ in range(3):  # a workspace left over from the call before would add up
        out = torch.full((m,), float("nan"))
        kernel(a=a, out=out, indptr=indptr, m=m, nnz=nnz)
        torch.testing.assert_close(out.double(), expected)


def test_a_16_bit_workspace_is_stored_as_float32():
    # 8192 additions of 2^-12: exactly 2.0 in float32, stuck at 0.5 in float16
    # (there the step is a tie that rounds to even).
    kernel = st.compile(ACCUMULATE_UNINITIALIZED.replace("DTYPE", "float16"))
    nnz = 8192
    a = torch.full((nnz,), 2.0 ** -12, dtype=torch.float16)
    out = torch.zeros(1, dtype=torch.float16)
    kernel(a=a, out=out, indptr=torch.tensor([0, nnz], dtype=torch.int32), m=1, nnz=nnz)
    assert out.item() == 4.0


def test_a_stage_iii_script_may_declare_a_workspace_parameter():
    text = '''
@T.prim_func
def fill(out: T.handle, w: T.handle, m: T.int32) -> None:
    T.func_attr({"sparse_tir_level": 0})
    O = T.match_buffer(out, (m,), "float32")
    W = T.match_buffer(w, (m,), "float32", scope="workspace")
    for i in T.serial(m):
        W[i] = W[i] + T.float32(1.0)
        O[i] = W[i]
'''
    kernel = st.compile(text)
    assert kernel.params == ("out", "m")
    out = torch.zeros(4)
    kernel(out=out, m=4)
    assert out.tolist() == [1.0] * 4


def test_the_lifted_ir_round_trips():
    kernel = st.compile(ACCUMULATE_UNINITIALIZED.replace("DTYPE", "float32"))
    text = kernel.lowered.script()
    assert st.parse(text).script() == text
    again = st.compile(st.parse(text))
    assert again.params == kernel.params and again.source == kernel.source


def test_workspace_scope_is_only_for_stage_iii_parameters():
    bad = ACCUMULATE_UNINITIALIZED.replace('W = T.alloc_buffer((m,), "DTYPE")',
                                           'W = T.alloc_buffer((m,), "DTYPE", scope="workspace")')
    with pytest.raises(Exception, match=r'unknown scope "workspace" \(expected global, shared or local\)'):
        st.parse(bad.replace("DTYPE", "float32"))


def test_the_cuda_target_still_refuses_workspaces():
    with pytest.raises(Exception, match="workspace"):
        st.compile(ACCUMULATE_UNINITIALIZED.replace("DTYPE", "float32"), target="cuda")
