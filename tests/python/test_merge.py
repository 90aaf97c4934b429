"""The merge schedule primitive: sibling row loops become one loop (a row's
softmax passes back to back), checked on IR, on numbers against float64, and
on the cases it must refuse."""
import os

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import SCRIPTS_DIR

# The four softmax passes of a CSR row, one iteration each (the row loops merge joins).
with open(os.path.join(SCRIPTS_DIR, "formats", "csr_softmax.py"), encoding="utf-8") as f:
    SOFTMAX = f.read()

BLOCKS = ["row_max", "row_exp", "row_sum", "row_div"]


def rows(sch):
    return [sch.get_loops(b)[0] for b in BLOCKS]


def run(kernel, rng, m=30, n=25):
    dense = np.where(rng.random((m, n)) < 0.3, rng.standard_normal((m, n)), 0.0)
    dense[4] = 0  # an empty row
    csr = torch.from_numpy(dense).float().to_sparse_csr()
    nnz = csr.values().numel()
    p = torch.full((nnz,), float("nan"))
    kernel(a=csr.values(), out=p, indptr=csr.crow_indices().int(), indices=csr.col_indices().int(), m=m, n=n,
           nnz=nnz)
    return dense, csr, p


def test_merged_rows_run_the_passes_in_one_loop():
    sch = st.Schedule(st.parse(SOFTMAX))
    merged = sch.merge(rows(sch))
    assert merged == rows(sch)[0] and len(set(rows(sch))) == 1
    text = sch.mod.script()
    assert text.count(f"for {merged} in T.serial(m)") == 1
    assert "sch.merge([" in sch.trace
    assert st.Schedule.replay(sch.trace, st.parse(SOFTMAX)).mod == sch.mod


@pytest.mark.parametrize("parallel", [False, True])
def test_merged_softmax_matches_float64(parallel):
    sch = st.Schedule(st.parse(SOFTMAX))
    row = sch.merge(rows(sch))
    if parallel:
        sch.parallel(row)
    dense, csr, p = run(st.compile(sch), np.random.default_rng(1))
    expected = []
    for r in range(dense.shape[0]):
        values = dense[r][dense[r] != 0]
        if values.size:
            e = np.exp(values - values.max())
            expected.extend(e / e.sum())
    np.testing.assert_allclose(p.numpy(), np.array(expected), rtol=1e-5, atol=1e-6)


def test_merging_a_prefix_and_the_plain_kernel_agree():
    rng_a, rng_b = np.random.default_rng(2), np.random.default_rng(2)
    sch = st.Schedule(st.parse(SOFTMAX))
    sch.merge(rows(sch)[:2])
    _, _, merged = run(st.compile(sch), rng_a)
    _, _, plain = run(st.compile(st.parse(SOFTMAX)), rng_b)
    torch.testing.assert_close(merged, plain)


def test_merge_refusals():
    sch = st.Schedule(st.parse(SOFTMAX))
    r = rows(sch)
    with pytest.raises(st.ScheduleError, match="does not directly follow"):
        sch.merge([r[0], r[2]])
    with pytest.raises(st.ScheduleError, match="at least two loops"):
        sch.merge([r[0]])
    inner = sch.get_loops("row_max")[1]
    with pytest.raises(st.ScheduleError, match="does not directly follow"):
        sch.merge([r[0], inner])
    sch.lower_sparse_buffer()
    with pytest.raises(st.ScheduleError, match="works at stage II"):
        sch.merge(rows(sch)[:2])


def test_merge_refuses_reading_another_rows_result():
    shifted = SOFTMAX.replace("O[i, j] = T.exp(A[i, j] - MX[i])", "O[i, j] = T.exp(A[i, j] - MX[0])")
    assert shifted != SOFTMAX
    sch = st.Schedule(st.parse(shifted))
    with pytest.raises(st.ScheduleError, match="buffer 'MX' is written by one loop and accessed by another"):
        sch.merge(rows(sch)[:2])


def test_merge_refuses_different_ranges():
    two_sizes = SOFTMAX.replace("    MX = T.sp.alloc_buffer((I,), \"float32\")",
                                "    I2 = T.sp.dense_fixed(n)\n    MX = T.sp.alloc_buffer((I,), \"float32\")")
    two_sizes = two_sizes.replace('''    with T.sp.iteration([I, J], "SS", "row_div") as [i, j]:
        O[i, j] = O[i, j] / SM[i]''', '''    with T.sp.iteration([I2], "S", "row_div") as [i2]:
        SM[0] = SM[0] * 1.0''')
    assert "I2" in two_sizes and "[i2]" in two_sizes
    sch = st.Schedule(st.parse(two_sizes))
    r = [sch.get_loops(b)[0] for b in BLOCKS]
    with pytest.raises(st.ScheduleError, match="does not run over the same range"):
        sch.merge(r[2:])


# csrmm_mean: a row's sum, then its division by the row's length.
with open(os.path.join(SCRIPTS_DIR, "..", "..", "kernels", "csrmm_mean.py"), encoding="utf-8") as f:
    MEAN = f.read()


def merged_mean_features(text):
    """Rows merged, then csrmm's feature loop (after its non-zeros) merged with the division's."""
    sch = st.Schedule(st.parse(text))
    sch.specialize(feat_size=6)
    sch.merge([sch.get_loops("csrmm")[0], sch.get_loops("row_div")[0]])
    i, j, k = sch.get_loops("csrmm")
    sch.reorder([k, j])
    merged = sch.merge([sch.get_loops("csrmm")[1], sch.get_loops("row_div")[1]])
    return sch, merged


def test_feature_loops_merge_when_every_access_is_indexed_by_the_feature():
    sch, k = merged_mean_features(MEAN)
    assert sch.get_loops("row_div")[1] == k
    rng = np.random.default_rng(5)
    dense = np.where(rng.random((9, 7)) < 0.4, rng.standard_normal((9, 7)), 0.0)
    dense[2] = 0  # an empty row
    csr = torch.from_numpy(dense).float().to_sparse_csr()
    b = torch.from_numpy(rng.standard_normal((7, 6))).float()
    lengths = torch.clamp(csr.crow_indices().diff(), min=1).float()
    c = torch.full((9, 6), float("nan"))
    st.compile(sch)(a=csr.values(), b=b, c=c, lengths=lengths, indptr=csr.crow_indices().int(),
                    indices=csr.col_indices().int(), m=9, n=7, feat_size=6, nnz=csr.values().numel())
    expected = (dense @ b.double().numpy()) / lengths.double().numpy()[:, None]
    np.testing.assert_allclose(c.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_feature_loops_do_not_merge_when_one_reads_another_feature():
    shifted = MEAN.replace("C[i, k] = T.Cast(\"float32\", T.float32(C[i, k]) / L[i])",
                           "C[i, k] = T.Cast(\"float32\", T.float32(C[i, 0]) / L[i])")
    assert shifted != MEAN
    with pytest.raises(st.ScheduleError, match="buffer 'C' is written by one loop and accessed by another"):
        merged_mean_features(shifted)


# bsrmm's init and update, their block-row loops split by 16: iteration b of
# the split loop touches rows 16 b .. 16 b + 15 of C in both (tensor-core tiles).
with open(os.path.join(os.path.dirname(SCRIPTS_DIR), "..", "kernels", "bsrmm.py"), encoding="utf-8") as f:
    BSRMM = f.read()


def split_rows(inner):
    sch = st.Schedule(BSRMM)
    sch.specialize(block_h=32, block_w=4, feat_size=8)
    i, j, bi, bj, f = sch.get_loops("bsrmm")
    bi0, bi1 = sch.split(bi, factors=[None, 16])
    sch.reorder(bi0, j, bi1)
    _, ibi, _ = sch.get_loops("bsrmm_init")
    ibi0, ibi1 = sch.split(ibi, factors=[None, inner])
    return sch, ibi0, bi0


def run_bsrmm(sch, indptr=(0, 2, 2, 3), indices=(0, 1, 1)):
    """The scheduled bsrmm (3 block rows of 32 x 4 blocks, 2 block columns,
    8 features) on random values against float64."""
    rng = np.random.default_rng(4)
    indptr = torch.tensor(np.asarray(indptr), dtype=torch.int32)
    indices = torch.tensor(np.asarray(indices), dtype=torch.int32)
    a = torch.from_numpy(rng.standard_normal((len(indices), 32, 4))).float()
    b = torch.from_numpy(rng.standard_normal((2, 4, 8))).float()
    c = torch.full((3, 32, 8), float("nan"))
    st.compile(sch)(a=a, b=b, c=c, indptr=indptr, indices=indices, mb=3, nb=2, nnzb=len(indices), block_h=32,
                    block_w=4, feat_size=8)
    dense = np.zeros((3, 32, 2, 4))
    for r in range(3):
        for p in range(int(indptr[r]), int(indptr[r + 1])):
            dense[r, :, int(indices[p])] = a[p].double().numpy()
    expected = dense.reshape(96, 8) @ b.double().numpy().reshape(8, 8)
    np.testing.assert_allclose(c.reshape(96, 8).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_split_row_blocks_merge_when_each_iteration_keeps_to_its_rows():
    sch, init_rows, rows = split_rows(16)
    merged = sch.merge(init_rows, rows)
    mask = np.random.default_rng(3).random((3, 2)) < 0.6
    mask[1] = False
    run_bsrmm(sch, np.concatenate([[0], np.cumsum(mask.sum(1))]), np.nonzero(mask)[1])
    assert merged == init_rows


def test_split_row_blocks_of_other_sizes_do_not_merge():
    """The init split by 8 has 4 row blocks where the update's split has 2:
    merged, iteration 1 would zero rows 8..15, which the update of iteration
    0 had summed."""
    sch, init_rows, rows = split_rows(8)
    with pytest.raises(st.ScheduleError, match="does not run over the same range"):
        sch.merge(init_rows, rows)


def split_rows_three_ways(init_threads):
    """bsrmm's block rows split into slices x threads x 4 rows in the update
    and slices x init_threads x ... in the init, the update's thread loop
    after its slice loop as in the cuda register tiles."""
    sch = st.Schedule(BSRMM)
    sch.specialize(block_h=32, block_w=4, feat_size=8)
    i, j, bi, bj, f = sch.get_loops("bsrmm")
    z, y, r = sch.split(bi, factors=[None, 4, 4])
    sch.reorder(z, y, j, r)
    _, ibi, _ = sch.get_loops("bsrmm_init")
    iz, iy, ir = sch.split(ibi, factors=[2, init_threads, None])
    return sch, (iz, z), (iy, y)


def test_inner_split_parts_merge_after_their_outer_part():
    """Once the slices are merged, iteration y of the thread loops touches
    rows 16 z + 4 y .. 16 z + 4 y + 3 in both: the slice's part of the index
    is the same in every access and fixed for the merged loop."""
    sch, slices, threads = split_rows_three_ways(4)
    sch.merge(*slices)
    sch.merge(*threads)
    run_bsrmm(sch)


def test_inner_split_parts_with_other_outer_parts_do_not_merge():
    """The init's slice part 8 rows apart (its rows 8 z + 4 y ..), the
    update's 16: for z = 1, the init's iteration 2 would zero rows 16..19,
    which the update's iteration 0 had summed. The outer parts differ, so the
    loops stay apart."""
    sch, slices, threads = split_rows_three_ways(4)
    sch.merge(*slices)
    text = sch.mod.script()
    init = "C[i, (bi_init_0 * 4 + bi_init_1) * 4 + bi_init_2, f_init]"
    assert init in text, text
    other = st.Schedule(text.replace(init, "C[i, (bi_init_0 * 2 + bi_init_1) * 4 + bi_init_2, f_init]"))
    with pytest.raises(st.ScheduleError, match="buffer 'C' is written by one loop and accessed by another"):
        other.merge(*threads)
    st.Schedule(text).merge(*threads)  # as split, they merge
