"""Large operator outputs (csrc/ops/output_alloc.cc): the storage of a
released output is reused by the next output of the same size, never that of
an output still referenced anywhere, and results stay right."""
import gc

import numpy as np
import torch

import sparsetir_torch as st

ops = torch.ops.sparsetir


def banded(rows=4096, width=3):
    """A structure whose K = 256 float32 output is 4 MiB: large enough to recycle."""
    cols = np.clip(np.arange(rows)[:, None] + np.arange(-width, width + 1)[None, :], 0, rows - 1)
    indices = torch.from_numpy(np.sort(cols, axis=1).reshape(-1)).int()
    indptr = torch.arange(0, rows * (2 * width + 1) + 1, 2 * width + 1, dtype=torch.int32)
    return indptr, indices


def reference(indptr, indices, values, B):
    return torch.sparse_csr_tensor(indptr.long(), indices.long(), values.double(), (B.shape[0], B.shape[0])) \
        .to_dense() @ B.double()


def test_a_released_output_is_reused_and_right():
    st.clear_graph_cache()
    indptr, indices = banded()
    values = torch.rand(indices.numel())
    B = torch.randn(4096, 256)
    first = ops.spmm(indptr, indices, values, B)
    address = first.data_ptr()
    kept = ops.spmm(indptr, indices, values, B)  # `first` is alive: a new buffer
    assert kept.data_ptr() != address
    del first
    gc.collect()
    B2 = torch.randn(4096, 256)
    again = ops.spmm(indptr, indices, values, B2)
    assert again.data_ptr() == address  # the released storage, reused
    torch.testing.assert_close(again.double(), reference(indptr, indices, values, B2), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(kept.double(), reference(indptr, indices, values, B), rtol=1e-5, atol=1e-4)


def test_views_and_saved_outputs_keep_their_storage():
    st.clear_graph_cache()
    indptr, indices = banded()
    values = torch.rand(indices.numel(), requires_grad=True)
    B = torch.randn(4096, 256)
    out = ops.spmm(indptr, indices, values, B, "max")  # max saves its output for backward
    address = out.data_ptr()
    snapshot = out.detach().clone()
    row = out[7]  # a view holds the storage too
    loss = out.sum()
    del out
    gc.collect()
    other = ops.spmm(indptr, indices, values.detach(), torch.randn(4096, 256), "max")
    assert other.data_ptr() != address
    torch.testing.assert_close(row, snapshot[7])
    loss.backward()  # the saved output is intact
    assert values.grad is not None and torch.isfinite(values.grad).all()


def test_sddmm_outputs_recycle_too_and_clearing_keeps_results_right():
    st.clear_graph_cache()
    indptr, indices = banded(rows=1 << 17, width=4)  # 1.2M non-zeros: a 4.5 MiB sddmm output
    x, y = torch.randn(1 << 17, 8), torch.randn(1 << 17, 8)
    expected = (x[torch.repeat_interleave(torch.arange(1 << 17), 9)] * y[indices.long()]).sum(1)
    first = ops.sddmm(indptr, indices, None, x, y)
    address = first.data_ptr()
    del first
    gc.collect()
    second = ops.sddmm(indptr, indices, None, x, y)
    assert second.data_ptr() == address
    torch.testing.assert_close(second, expected, rtol=1e-5, atol=1e-5)
    del second
    st.clear_graph_cache()  # drops the recycled storages as well
    torch.testing.assert_close(ops.sddmm(indptr, indices, None, x, y), expected, rtol=1e-5, atol=1e-5)


def test_attention_writes_every_row_of_a_recycled_output():
    """The attention output is not zeroed before the kernel: rows without
    allowed keys must come out 0 even in a reused storage full of old values."""
    st.clear_graph_cache()
    heads, L, D = 4, 2048, 128  # a 4 MiB output
    mask = torch.rand(L, L) < 0.01
    mask[5] = False  # rows with nothing allowed
    mask[77] = False
    csr = mask.to_sparse_csr()
    indptr, indices = csr.crow_indices().int(), csr.col_indices().int()
    q, k, v = torch.randn(heads, L, D), torch.randn(heads, L, D), torch.randn(heads, L, D)
    stale = ops.sparse_attention(indptr, indices, q, k, v + 100.0)  # large values, then released
    address = stale.data_ptr()
    del stale
    gc.collect()
    out = ops.sparse_attention(indptr, indices, q, k, v)
    assert out.data_ptr() == address
    assert torch.equal(out[:, 5], torch.zeros(heads, D)) and torch.equal(out[:, 77], torch.zeros(heads, D))
    scores = (q @ k.transpose(1, 2)) / D ** 0.5
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0) @ v
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
