"""st.validate_every_call: index tensors changed behind torch's version
counter (through .data or a NumPy view) are validated again on every call,
so a bad index is a ValueError instead of an out-of-bounds read, and a changed
but valid structure gets fresh derived forms (the transpose of a backward
pass) instead of stale ones."""
import json
import os
import subprocess
import sys

import pytest
import torch

import sparsetir_torch as st
from conftest import REPO_ROOT, read_script

ops = torch.ops.sparsetir


def structure(dtype=torch.int32):
    # 4 x 5 with an empty row (2) and a dense row (3).
    indptr = torch.tensor([0, 2, 3, 3, 8], dtype=dtype)
    indices = torch.tensor([1, 4, 0, 0, 1, 2, 3, 4], dtype=dtype)
    return indptr, indices


def dense_of(indptr, indices, values, n=5):
    out = torch.zeros(len(indptr) - 1, n, dtype=torch.float64)
    for i in range(len(indptr) - 1):
        for e in range(int(indptr[i]), int(indptr[i + 1])):
            out[i, int(indices[e])] += float(values[e])
    return out


@pytest.fixture(autouse=True)
def switch_off_afterwards():
    yield
    st.validate_every_call.disable()


def test_the_switch_and_its_context_manager():
    assert not st.validate_every_call.is_enabled()
    with st.validate_every_call():
        assert st.validate_every_call.is_enabled()
        with st.validate_every_call(False):
            assert not st.validate_every_call.is_enabled()
        assert st.validate_every_call.is_enabled()
    assert not st.validate_every_call.is_enabled()
    st.validate_every_call.enable()
    assert st.validate_every_call.is_enabled()


def test_the_environment_turns_it_on():
    code = "import json, sparsetir_torch as st; print(json.dumps(st.validate_every_call.is_enabled()))"
    for value, expected in (("always", True), ("", False)):
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, SPARSETIR_VALIDATE=value),
                             cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
        assert json.loads(out.strip().splitlines()[-1]) is expected


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("alias", ["data", "numpy"])
def test_an_index_made_out_of_range_behind_the_version_counter_is_caught(idtype, alias):
    indptr, indices = structure(idtype)
    values, b = torch.rand(8), torch.rand(5, 3)
    ops.spmm(indptr, indices, values, b, "sum")  # validated and cached
    version = indices._version
    if alias == "data":
        indices.data[6] = 99
    else:
        indices.numpy()[6] = 99
    assert indices._version == version, "the write was meant to bypass the version counter"
    with st.validate_every_call():
        with pytest.raises(ValueError, match=r"sparsetir\.spmm: .*indices.*99"):
            ops.spmm(indptr, indices, values, b, "sum")


def test_a_changed_but_valid_structure_gets_a_fresh_transpose():
    """The gradient of B goes through the cached transpose: after indices
    change behind the counter, the re-check builds a new one."""
    indptr, indices = structure()
    values = torch.rand(8, dtype=torch.float64)
    b = torch.rand(5, 3, dtype=torch.float64, requires_grad=True)
    with st.validate_every_call():
        ops.spmm(indptr, indices, values, b, "sum").sum().backward()
        indices.data[0] = 3  # row 0 now holds columns 3 and 4
        b.grad = None
        ops.spmm(indptr, indices, values, b, "sum").sum().backward()
    expected = dense_of(indptr, indices, values).sum(0, keepdim=True).T.expand(5, 3)
    torch.testing.assert_close(b.grad, expected)


def test_a_torch_sparse_tensor_changed_behind_its_counter_is_converted_again():
    indptr, indices = structure(torch.int64)
    values = torch.rand(8, dtype=torch.float64)
    a = torch.sparse_csr_tensor(indptr, indices, values, (4, 5))
    b = torch.rand(5, 3, dtype=torch.float64)
    st.spmm(a, b)
    with st.validate_every_call():
        a.col_indices().data[0] = 3
        torch.testing.assert_close(st.spmm(a, b), dense_of(indptr, indices, values) @ b)
        a.col_indices().data[0] = 7
        with pytest.raises(ValueError, match="7"):
            st.spmm(a, b)


def test_a_compiled_kernel_validates_again():
    kernel = st.compile(read_script("csrmm"))
    indptr, indices = structure()
    a, b, c = torch.rand(8), torch.rand(5, 2), torch.empty(4, 2)
    args = dict(a=a, b=b, c=c, indptr=indptr, indices=indices, m=4, n=5, feat_size=2, nnz=8)
    kernel(**args)  # validated and remembered
    indices.data[2] = -1
    with st.validate_every_call():
        with pytest.raises(ValueError, match="element 2 is -1, outside the valid range"):
            kernel(**args)


def test_an_unchanged_structure_keeps_its_cache_entry():
    indptr, indices = structure()
    values, b = torch.rand(8), torch.rand(5, 3)
    st.clear_graph_cache()
    with st.validate_every_call():
        for _ in range(3):
            ops.spmm(indptr, indices, values, b, "sum")
    info = st.graph_cache_info()
    assert info["entries"] == 1 and info["hits"] == 2, info


# --------------------------------------------------------------------------- a SparseMatrix's derived forms


def _edited_matrix():
    """A 3 x 3 SparseMatrix and its indices, whose rows get new columns below."""
    ip, ix = torch.tensor([0, 2, 3, 5]), torch.tensor([0, 1, 2, 0, 2])
    return st.SparseMatrix(ip, ix, torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), (3, 3)), ix


def test_derived_forms_follow_an_in_place_edit_of_the_indices():
    # The transpose, ELL and hyb forms are cached on the matrix; an in-place
    # write to its indices (the version counter moves) derives them anew.
    A, ix = _edited_matrix()
    A.t(), A.ell(2), A.hyb(1, 2)
    ix.copy_(torch.tensor([1, 2, 0, 1, 2]))
    dense = A.to_dense()
    assert torch.equal(dense, torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0], [0.0, 4.0, 5.0]]))
    assert torch.equal(A.t().to_dense(), dense.t())
    assert torch.equal(A.ell(2).to_dense(), dense)
    assert torch.equal(A.hyb(1, 2).to_dense(), dense)


def test_derived_forms_follow_writes_that_bypass_the_version_counter_under_validate_every_call():
    A, ix = _edited_matrix()
    A.t()
    ix.numpy()[:] = [1, 2, 0, 1, 2]  # no version bump: unseen unless asked
    with st.validate_every_call():
        assert torch.equal(A.t().to_dense(), A.to_dense().t())


def test_a_layer_and_a_block_mask_follow_an_in_place_edit_of_the_graph():
    torch.manual_seed(0)
    ip, ix = torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 0])
    A = st.SparseMatrix(ip, ix, torch.ones(3), (3, 3))
    conv, x = st.nn.GCNConv(2, 2, bias=False), torch.randn(3, 2)
    with torch.no_grad():
        conv(x, A)
        ix.copy_(torch.tensor([0, 1, 2]))  # self loops only: the normalized adjacency is I
        torch.testing.assert_close(conv(x, A), conv.lin(x))
    q, k, v = torch.randn(4, 2), torch.randn(4, 2), torch.randn(4, 2)
    block_columns = torch.tensor([0, 1])
    M = st.SparseMatrix(torch.tensor([0, 1, 2]), block_columns, torch.ones(2, 2, 2), (4, 4))
    st.sparse_attention(q, k, v, M)
    block_columns.copy_(torch.tensor([1, 0]))
    mask = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
    scores = (q @ k.T / 2**0.5).masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(st.sparse_attention(q, k, v, M), torch.softmax(scores, -1) @ v)
