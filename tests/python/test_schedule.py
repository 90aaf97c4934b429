"""Tests of the schedule primitives (sparsetir_torch.Schedule) on the built-in
kernels/csrmm.py and kernels/sddmm.py:

1. each primitive's effect on the printed IR, and that every scheduled function
   prints and parses back to an equal function;
2. schedules never change results: scheduled kernels are compared with the
   unscheduled kernel and with a float64 reference on random CSR matrices
   (empty rows, a dense row, no nonzeros at all);
3. a seeded property test over random legal schedules;
4. the trace is Python and replays to a structurally equal function;
5. every primitive's typed errors (ScheduleError naming the loop / iteration).
"""
import ast
import random
import re

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch.kernels import kernel_script

from conftest import TORCH_DTYPES, Csr, assert_within_bound, make_csr, random_values, to_tensor

VARIANTS = {
    ("float32", "int32"): {},
    ("float64", "int64"): {"float32": "float64", "int32": "int64"},
    ("float64", "int32"): {"float32": "float64"},
    ("float32", "int64"): {"int32": "int64"},
}


def script(name: str, dtype: str = "float32", idtype: str = "int32") -> str:
    text = kernel_script(name, **VARIANTS[(dtype, idtype)])
    if dtype != "float32":
        assert '"float32"' not in text
    return text


def new_schedule(name: str = "csrmm", dtype: str = "float32", idtype: str = "int32") -> st.Schedule:
    return st.Schedule(script(name, dtype, idtype))


# Matrices every numeric check runs on: empty rows (first and last included),
# a dense row, a 1x1, a matrix with no nonzeros and a wider one.
MATRICES = [
    make_csr(37, 29, density=0.2, seed=11, empty_rows=(0, 5, 6, 36), dense_rows=(7,)),
    make_csr(64, 70, density=0.05, seed=12, empty_rows=(63,), dense_rows=(0,)),
    make_csr(1, 1, density=1.0, seed=13),
    make_csr(12, 9, density=0.0, seed=14),
]


def test_matrices_have_the_advertised_structure():
    big = MATRICES[0]
    assert all(big.row_lengths()[r] == 0 for r in (0, 5, 6, 36))
    assert big.row_lengths()[7] == big.n
    assert MATRICES[1].row_lengths()[0] == MATRICES[1].n and MATRICES[1].row_lengths()[63] == 0
    assert MATRICES[3].nnz == 0


_BASE = {}


def base_kernel(name: str, dtype: str = "float32", idtype: str = "int32") -> st.Kernel:
    """The unscheduled kernel, compiled once per session."""
    key = (name, dtype, idtype)
    if key not in _BASE:
        _BASE[key] = st.compile(script(name, dtype, idtype))
    return _BASE[key]


def _call_csrmm(k, csr: Csr, feat: int, dtype: str, idtype: str, seed: int):
    rng = np.random.default_rng(seed)
    a = to_tensor(csr.values, dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    c = torch.full((csr.m, feat), float("nan"), dtype=TORCH_DTYPES[dtype])  # every element must be written
    indptr, indices = csr.torch_structure(idtype)
    k(a=a, b=b, c=c, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=feat, nnz=csr.nnz)
    return a, b, c


def _call_sddmm(k, csr: Csr, feat: int, dtype: str, idtype: str, seed: int):
    rng = np.random.default_rng(seed)
    a = to_tensor(random_values(rng, (csr.m, feat)), dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    x = to_tensor(csr.values, dtype)
    y = torch.full((csr.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype])
    indptr, indices = csr.torch_structure(idtype)
    k(a=a, b=b, x=x, y=y, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=feat, nnz=csr.nnz)
    return a, b, x, y


def check_csrmm(k, feat: int, dtype: str = "float32", idtype: str = "int32", what: str = "") -> None:
    """Runs a scheduled csrmm kernel on every matrix; compares it with the float64
    reference and with the unscheduled kernel on the same inputs."""
    base = base_kernel("csrmm", dtype, idtype)
    for n_mat, csr in enumerate(MATRICES):
        seed = 100 * n_mat + feat
        a, b, c = _call_csrmm(k, csr, feat, dtype, idtype, seed)
        _, _, c0 = _call_csrmm(base, csr, feat, dtype, idtype, seed)
        a64, b64 = a.double().numpy(), b.double().numpy()
        ref = np.asarray(csr.scipy(a64) @ b64).reshape(csr.m, feat)
        magnitude = np.asarray(csr.scipy(np.abs(a64)) @ np.abs(b64)).reshape(csr.m, feat)
        terms = csr.row_lengths()[:, None]
        label = f"scheduled csrmm [{what}] on {csr.shape} (nnz={csr.nnz}) feat={feat}"
        assert_within_bound(c, ref, magnitude, terms, dtype, label + " vs float64")
        # Both are within the bound of the exact result, so within twice of each other.
        assert_within_bound(c, c0.double().numpy(), 2 * magnitude, terms, dtype, label + " vs unscheduled")
        empty = csr.row_lengths() == 0
        if empty.any():
            assert torch.all(c[torch.from_numpy(empty)] == 0), label + ": empty rows must be exactly zero"


def check_sddmm(k, feat: int, dtype: str = "float32", idtype: str = "int32", what: str = "") -> None:
    base = base_kernel("sddmm", dtype, idtype)
    for n_mat, csr in enumerate(MATRICES):
        seed = 200 * n_mat + feat
        a, b, x, y = _call_sddmm(k, csr, feat, dtype, idtype, seed)
        *_, y0 = _call_sddmm(base, csr, feat, dtype, idtype, seed)
        products = a.double().numpy()[csr.rows()] * b.double().numpy()[csr.indices] * x.double().numpy()[:, None]
        ref = products.sum(axis=1)
        magnitude = np.abs(products).sum(axis=1)
        label = f"scheduled sddmm [{what}] on {csr.shape} (nnz={csr.nnz}) feat={feat}"
        assert_within_bound(y, ref, magnitude, feat, dtype, label + " vs float64")
        assert_within_bound(y, y0.double().numpy(), 2 * magnitude, feat, dtype, label + " vs unscheduled")


CHECK = {"csrmm": check_csrmm, "sddmm": check_sddmm}


def assert_round_trips(sch: st.Schedule) -> None:
    text = sch.mod.script()
    assert st.parse(text) == sch.mod, "the scheduled function does not parse back to itself:\n" + text
    assert st.parse(text).script() == text


def loop_line(text: str, var: str) -> str:
    """The 'for <var> in ...' line of a printed function."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(f"for {var} in ")]
    assert len(lines) == 1, (var, lines, text)
    return lines[0]


def loop_order(text: str) -> list:
    """The loop variables of a printed function, in printing order."""
    return [ln.strip().split()[1] for ln in text.splitlines() if ln.strip().startswith("for ")]


# =========================================================================== 1. printed IR


def test_lowering_is_automatic_and_recorded():
    sch = new_schedule()
    assert sch.mod.stage == 1
    assert sch.trace == ""
    assert sch.get_blocks() == ["csrmm_init", "csrmm"]
    assert sch.mod.stage == 2
    assert sch.get_loops("csrmm") == ["i", "j", "k"]
    assert sch.get_loops("csrmm_init") == ["i", "k_init"]
    assert sch.trace.splitlines()[0] == "sch.lower_sparse_iter()"
    sch.specialize(feat_size=32)
    sch.cache_write("i", "C", "local")
    assert sch.mod.stage == 3
    assert "sch.lower_sparse_buffer()" in sch.trace.splitlines()
    assert_round_trips(sch)


def test_sddmm_loops():
    sch = new_schedule("sddmm")
    assert sch.get_blocks() == ["sddmm_init", "sddmm"]
    assert sch.get_loops("sddmm") == ["i", "j", "k"]
    assert sch.get_loops("sddmm_init") == ["i", "j"]


def test_split_vectorize_parallel_ir():
    sch = new_schedule()
    i, j, k = sch.get_loops("csrmm")
    assert sch.split(k, factors=[None, 16]) == ["k_0", "k_1"]
    assert sch.get_loops("csrmm") == ["i", "j", "k_0", "k_1"]
    text = sch.mod.script()
    assert "for k_0 in T.serial((feat_size + 15) // 16):" in text
    assert "for k_1 in T.serial(16):" in text
    assert "k_0 * 16 + k_1 < feat_size" in text  # the non-dividing tail is guarded
    sch.vectorize("k_1")
    sch.parallel(i)
    text = sch.mod.script()
    assert "for k_0 in T.serial(" in text
    assert "k_1 in T.vectorized(16)" in text
    assert "for i in T.parallel(m):" in text
    assert "for j in T.serial(" in loop_line(text, "j")
    assert_round_trips(sch)


def test_split_exact_has_no_guard():
    sch = new_schedule()
    sch.specialize(feat_size=64)
    assert sch.split("k", [None, 16]) == ["k_0", "k_1"]
    text = sch.mod.script()
    assert "for k_0 in T.serial(4):" in text and "for k_1 in T.serial(16):" in text
    assert " if " not in text
    assert_round_trips(sch)


def test_split_three_factors():
    sch = new_schedule()
    assert sch.split("k", [None, 2, 4]) == ["k_0", "k_1", "k_2"]
    assert sch.get_loops("csrmm") == ["i", "j", "k_0", "k_1", "k_2"]
    assert loop_order(sch.mod.script()) == ["i", "k_init", "j", "k_0", "k_1", "k_2"]
    assert_round_trips(sch)


def test_split_guard_reads_only_the_outer_parts_where_the_inner_divide():
    """20 features in 3 x 2 x 4: the inner 4 divide 20, so the guard names
    k_0 and k_1 only (the same condition: the inner part adds less than 4),
    and a thread's vector of 4 features always runs whole. 3 does not divide
    20: the guard names every part."""
    sch = new_schedule()
    sch.specialize(feat_size=20)
    sch.split("k", [None, 2, 4])
    guards = [ln.strip() for ln in sch.mod.script().splitlines() if ln.strip().startswith("if ")]
    assert guards == ["if k_0 * 2 + k_1 < 5:"], guards
    assert_round_trips(sch)
    check_csrmm(st.compile(sch), 20, what="split 3 x 2 x 4 of 20")
    sch = new_schedule()
    sch.specialize(feat_size=20)
    sch.split("k", [None, 3])
    assert "if k_0 * 3 + k_1 < 20:" in sch.mod.script()
    check_csrmm(st.compile(sch), 20, what="split by 3 of 20")


def test_local_cache_copies_take_the_guard_of_every_access():
    """A thread's window of 4 features (k_2) under the guard of its outer
    parts: the cache holds the window, not the row, and its copies in and
    out are guarded like the accesses, so that the iterations past the row's
    end (k_0 * 2 + k_1 >= 5) touch nothing: the elements after the output's
    last row keep their values."""
    sch = new_schedule()
    sch.specialize(feat_size=20)
    sch.split("k", [None, 2, 4])
    sch.reorder(["k_0", "k_1", "j"])
    sch.vectorize("k_2")
    sch.cache_write("k_1", "C", "local")
    text = sch.mod.script()
    assert 'C_local = T.alloc_buffer((4,), "float32", scope="local")' in text, text
    copies = [n for n, ln in enumerate(text.splitlines()) if "C_local[ax0_o * 4 + ax0_i]" in ln]
    lines = text.splitlines()
    for n in copies:  # each copy (in, out) sits under the guard, three lines up
        assert lines[n - 3].strip() == "if k_0 * 2 + k_1 < 5:", "\n".join(lines[n - 4:n + 1])
    kernel = st.compile(sch)
    check_csrmm(kernel, 20, what="guarded window cache")
    csr = MATRICES[0]
    rng = np.random.default_rng(5)
    a = torch.from_numpy(csr.values).float()
    b = torch.from_numpy(random_values(rng, (csr.n, 20))).float()
    memory = torch.full((csr.m * 20 + 16,), 7.0)
    c = memory[:csr.m * 20].view(csr.m, 20)
    indptr, indices = csr.torch_structure("int32")
    kernel(a=a, b=b, c=c, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=20, nnz=csr.nnz)
    assert torch.all(memory[csr.m * 20:] == 7.0), "the kernel wrote past the output's last row"


def test_unroll_ir():
    sch = new_schedule()
    sch.specialize(feat_size=64)
    k_0, k_1 = sch.split("k", [None, 16])
    sch.unroll(k_0)
    text = sch.mod.script()
    assert "for k_0 in T.unroll(4):" in text
    assert_round_trips(sch)


def test_sparse_reorder_ir():
    sch = new_schedule()
    before = sch.mod.script()
    assert 'T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:' in before
    sch.sparse_reorder("csrmm", ["I", "K", "J"])
    text = sch.mod.script()
    assert 'T.sp.iteration([I, K, J], "SSR", "csrmm") as [i, k, j]:' in text
    assert sch.mod.stage == 1
    assert_round_trips(sch)
    # after lowering the loops follow the new order
    assert sch.get_loops("csrmm") == ["i", "k", "j"]
    assert sch.get_loops("csrmm_init") == ["i", "k"]


def test_sparse_reorder_sddmm_ir():
    sch = new_schedule("sddmm")
    sch.sparse_reorder("sddmm", ["K", "I", "J"])
    assert 'T.sp.iteration([K, I, J], "RSS", "sddmm") as [k, i, j]:' in sch.mod.script()
    assert_round_trips(sch)
    assert sch.get_loops("sddmm") == ["k", "i", "j"]


def test_annotate_ir():
    sch = new_schedule()
    sch.annotate("csrmm", "preprocess", True)
    sch.annotate("csrmm", "count", 3)
    sch.annotate("csrmm", "ratio", 1.5)
    sch.annotate("csrmm", "note", 'a "quoted" \\ string')
    text = sch.mod.script()
    assert 'T.sp.iteration_attr({"preprocess": True, "count": 3, "ratio": 1.5, "note": "a \\"quoted\\" \\\\ string"})' in text
    assert_round_trips(sch)


def test_specialize_ir():
    sch = new_schedule()
    sch.specialize(feat_size=64)
    text = sch.mod.script()
    assert 'K = T.sp.dense_fixed(64, "int32")' in text
    assert '"specialized": {"feat_size": 64}' in text
    assert "feat_size: T.int32" in text  # the parameter stays in the signature
    assert_round_trips(sch)


def test_fuse_split_loops_ir():
    sch = new_schedule()
    k_0, k_1 = sch.split("k", [None, 4])
    fused = sch.fuse(k_0, k_1)
    assert sch.get_loops("csrmm") == ["i", "j", fused]
    assert loop_order(sch.mod.script()) == ["i", "k_init", "j", fused]
    assert_round_trips(sch)


def test_fuse_i_and_k_gives_one_loop():
    """After sparse_reorder(I, K, J), i and k (and the init block's loops) are a
    perfect nest of independent dense loops: fusing gives one loop."""
    sch = new_schedule()
    sch.sparse_reorder("csrmm", ["I", "K", "J"])
    assert sch.get_loops("csrmm_init") == ["i", "k"]
    fused = sch.fuse("i", "k")
    assert isinstance(fused, str)
    assert sch.get_loops("csrmm_init") == [fused]
    assert sch.get_loops("csrmm") == [fused, "j"]
    text = sch.mod.script()
    assert loop_order(text) == [fused, "j"]
    assert "m * feat_size" in loop_line(text, fused)
    assert_round_trips(sch)


def test_reorder_ir():
    sch = new_schedule()
    k_0, k_1 = sch.split("k", [None, 8])
    sch.reorder(k_1, k_0)
    assert sch.get_loops("csrmm") == ["i", "j", "k_1", "k_0"]
    assert loop_order(sch.mod.script()) == ["i", "k_init", "j", "k_1", "k_0"]
    assert_round_trips(sch)
    sch2 = new_schedule()
    sch2.reorder("k", "j")  # k has a constant-in-j extent: may go outside j
    assert sch2.get_loops("csrmm") == ["i", "k", "j"]
    assert_round_trips(sch2)


PERMUTATIONS = [
    ("k_0", "k_1", "k_2"),
    ("k_0", "k_2", "k_1"),
    ("k_1", "k_0", "k_2"),
    ("k_1", "k_2", "k_0"),
    ("k_2", "k_0", "k_1"),
    ("k_2", "k_1", "k_0"),
]


@pytest.mark.parametrize("order", PERMUTATIONS, ids="-".join)
def test_reorder_any_permutation_of_a_perfect_nest(order):
    """k_0, k_1, k_2 (from one split) are a perfect nest of constant-extent
    loops: every permutation is legal and keeps the results."""
    sch = new_schedule()
    assert sch.split("k", [None, 2, 4]) == ["k_0", "k_1", "k_2"]
    sch.reorder(*order)
    assert sch.get_loops("csrmm") == ["i", "j", *order]
    assert_round_trips(sch)
    check_csrmm(st.compile(sch), 20, what=f"reorder{order}")


def test_reorder_identity_j_k():
    sch = _lowered()
    sch.reorder("j", "k")
    assert sch.get_loops("csrmm") == ["i", "j", "k"]


def test_bind_ir():
    sch = new_schedule()
    sch.bind("i", "blockIdx.x")
    sch.bind("k", "threadIdx.x")
    text = sch.mod.script()
    assert 'for i in T.thread_binding(m, thread="blockIdx.x"):' in text
    assert 'for k in T.thread_binding(feat_size, thread="threadIdx.x"):' in text
    assert_round_trips(sch)


def test_cache_write_ir():
    sch = new_schedule()
    sch.specialize(feat_size=64)
    name = sch.cache_write("i", "C", "local")
    assert name == "C_local"
    text = sch.mod.script()
    assert 'C_local = T.alloc_buffer((64,), "float32", scope="local")' in text
    assert "C_local[k_init] = T.float32(0.0)" in text
    assert "C[i, " in text and "= C_local[" in text  # written back
    assert_round_trips(sch)


def test_cache_write_skips_the_copy_in_an_init_overwrites():
    """The init block stores every element of the cache first: no copy in (a read
    of never-written output memory would map the zero page and double the page
    faults); without an init in the loop (cache at j), the copy in stays."""
    sch = new_schedule()
    sch.specialize(feat_size=64)
    sch.cache_write("i", "C", "local")
    text = sch.mod.script()
    assert "= C[i, " not in text, text
    check_csrmm(st.compile(sch), 64, what="cache_write without copy in")

    sch = new_schedule()
    sch.specialize(feat_size=20)
    sch.cache_write("j", "C", "local")
    text = sch.mod.script()
    assert "C_local[ax0] = C[i, ax0]" in text, text
    check_csrmm(st.compile(sch), 20, what="cache_write at j keeps the copy in")


def test_cache_write_keeps_the_copy_in_for_a_partial_init():
    """An init over part of the row only (its loop split with an outer factor
    kept outside) does not cover the cache: the copy in stays."""
    sch = new_schedule()
    sch.specialize(feat_size=32)
    (k_init,) = sch.get_loops("csrmm_init")[1:]
    sch.split(k_init, [None, 16])
    sch.cache_write("i", "C", "local")
    text = sch.mod.script()
    assert "= C[i, " in text, text
    check_csrmm(st.compile(sch), 32, what="split init keeps the copy in")


def test_cache_write_shared_ir():
    sch = new_schedule()
    sch.specialize(feat_size=16)
    assert sch.cache_write("i", "C", "shared") == "C_shared"
    assert 'C_shared = T.alloc_buffer((16,), "float32", scope="shared")' in sch.mod.script()
    assert_round_trips(sch)


def test_cache_read_ir():
    sch = new_schedule()
    sch.specialize(feat_size=32)
    name = sch.cache_read("j", "B", "local")
    assert name == "B_local"
    text = sch.mod.script()
    assert 'B_local = T.alloc_buffer((32,), "float32", scope="local")' in text
    assert_round_trips(sch)


def test_primitives_do_not_touch_earlier_functions():
    sch = new_schedule()
    f0 = sch.mod
    text0 = f0.script()
    sch.split("k", [None, 4])
    sch.parallel("i")
    assert f0.script() == text0
    assert sch.mod != f0


# =========================================================================== 2. results unchanged


def _sp_reorder_csrmm(s):
    s.sparse_reorder("csrmm", ["I", "K", "J"])


def _sp_reorder_csrmm_par(s):
    s.sparse_reorder("csrmm", ["I", "K", "J"])
    s.parallel("i")
    s.parallel("k")


def _sp_reorder_csrmm_kij(s):
    s.sparse_reorder("csrmm", ["K", "I", "J"])


def _split_vec_par(s, factor=8):
    k_0, k_1 = s.split("k", [None, factor])
    s.vectorize(k_1)
    s.parallel("i")


def _split_nondividing(s):
    s.split("k", [None, 8])  # feat 20 is not a multiple of 8: a guarded tail
    s.vectorize("k_1")
    s.split("k_init", [None, 8])
    s.vectorize("k_init_1")


def _split_outer_factor(s):
    s.split("k", [3, None])


def _unroll(s):
    k_0, k_1 = s.split("k", [None, 4])
    s.unroll(k_1)
    s.unroll(k_0)


def _fuse_k(s):
    k_0, k_1 = s.split("k", [None, 4])
    s.fuse(k_0, k_1)


def _fuse_ik(s):
    s.sparse_reorder("csrmm", ["I", "K", "J"])
    s.parallel(s.fuse("i", "k"))


def _fuse_jk(s):
    s.fuse("j", "k")


def _reorder_k_split(s):
    k_0, k_1 = s.split("k", [None, 8])
    s.reorder(k_1, k_0)


def _reorder_k_outside_j(s):
    s.reorder("k", "j")
    s.parallel("k")


def _parallel_k(s):
    s.parallel("i")
    s.parallel("k")


def _cache_read_b(s):
    s.specialize(feat_size=20)
    s.cache_read("j", "B", "local")


def _cache_write_j(s):
    s.specialize(feat_size=20)
    s.cache_write("j", "C", "local")


def _cache_write_shared(s):
    s.specialize(feat_size=20)
    s.parallel("i")
    s.cache_write("i", "C", "shared")


def _fast_spmm(feat):
    def apply(s):
        s.specialize(feat_size=feat)
        i, j, k = s.get_loops("csrmm")
        k_0, k_1 = s.split(k, [None, 16])
        s.unroll(k_0)
        s.vectorize(k_1)
        (k_init,) = s.get_loops("csrmm_init")[1:]
        ki_0, ki_1 = s.split(k_init, [None, 16])
        s.vectorize(ki_1)
        s.cache_write(i, "C", "local")
        s.parallel(i)

    return apply


def _two_accumulators(s, feat=32):
    """The operator's SpMM recipe for narrow rows: every other non-zero goes to
    a second accumulator set (split j by 2 + rfactor)."""
    s.specialize(feat_size=feat)
    i, j, k = s.get_loops("csrmm")
    k_0, k_1 = s.split(k, [None, 16])
    s.unroll(k_0)
    s.vectorize(k_1)
    s.cache_write(i, "C", "local")
    j_0, j_1 = s.split(j, [None, 2])
    s.rfactor(j_1)
    s.unroll(j_1)
    s.parallel(i)


def _fast_spmm_cache_read(s):
    _fast_spmm(32)(s)
    s.cache_read("j", "B", "local")


def _prefetch_b(offset):
    def apply(s):
        s.specialize(feat_size=20)
        s.prefetch("j", "B", offset)
        s.parallel("i")

    return apply


def _two_accumulators_prefetch(s):
    """The operator's SpMM recipe: two accumulator sets and B rows prefetched."""
    _two_accumulators(s)
    s.prefetch("j_1", "B", 32)


CSRMM_SCHEDULES = {
    "sparse_reorder_IKJ": (_sp_reorder_csrmm, 20),
    "sparse_reorder_IKJ_parallel": (_sp_reorder_csrmm_par, 20),
    "sparse_reorder_KIJ": (_sp_reorder_csrmm_kij, 5),
    "split_vectorize_parallel": (_split_vec_par, 32),
    "split_nondividing_guarded": (_split_nondividing, 20),
    "split_outer_factor": (_split_outer_factor, 20),
    "unroll": (_unroll, 20),
    "fuse_split_k": (_fuse_k, 20),
    "fuse_i_k_parallel": (_fuse_ik, 20),
    "fuse_j_k": (_fuse_jk, 20),
    "reorder_k_split": (_reorder_k_split, 20),
    "reorder_k_outside_j": (_reorder_k_outside_j, 20),
    "parallel_nested": (_parallel_k, 20),
    "cache_read_B": (_cache_read_b, 20),
    "cache_write_at_j": (_cache_write_j, 20),
    "cache_write_shared": (_cache_write_shared, 20),
    "fast_spmm_K32": (_fast_spmm(32), 32),
    "fast_spmm_K64": (_fast_spmm(64), 64),
    "fast_spmm_cache_read_B": (_fast_spmm_cache_read, 32),
    "two_accumulators_K32": (_two_accumulators, 32),
    "two_accumulators_K16": (lambda s: _two_accumulators(s, 16), 16),
    "prefetch_B_ahead": (_prefetch_b(3), 20),
    "prefetch_B_far_ahead": (_prefetch_b(1000), 20),
    "prefetch_B_behind": (_prefetch_b(-2), 20),
    "two_accumulators_prefetch": (_two_accumulators_prefetch, 32),
}


@pytest.mark.parametrize("name", sorted(CSRMM_SCHEDULES))
def test_csrmm_schedule_keeps_results(name):
    apply, feat = CSRMM_SCHEDULES[name]
    sch = new_schedule("csrmm")
    apply(sch)
    assert sch.trace  # something was applied
    assert_round_trips(sch)
    check_csrmm(st.compile(sch), feat, what=name)


def _sd_reorder_kij(s):
    s.sparse_reorder("sddmm", ["K", "I", "J"])
    s.parallel("i")


def _sd_reorder_ikj(s):
    s.sparse_reorder("sddmm", ["I", "K", "J"])
    s.vectorize("j")


def _sd_split_vec_par(s):
    k_0, k_1 = s.split("k", [None, 8])  # non-dividing for feat 20
    s.unroll(k_1)
    s.parallel("i")
    s.parallel("j")


def _sd_split_unroll_reduction(s):
    k_0, k_1 = s.split("k", [None, 4])
    s.unroll(k_1)


def _sd_reorder_k_split(s):
    k_0, k_1 = s.split("k", [None, 4])
    s.reorder(k_1, k_0)


def _sd_fuse_k(s):
    k_0, k_1 = s.split("k", [None, 4])
    s.unroll(s.fuse(k_0, k_1))


def _sd_cache_read_a(s):
    s.specialize(feat_size=20)
    k_0, k_1 = s.split("k", [None, 4])
    s.unroll(k_1)
    s.parallel("i")
    s.cache_read("i", "A", "local")
    s.cache_read("j", "B", "local")


def _sd_rfactor_vectorize(s):
    """The operator's SDDMM recipe: a register accumulator, 16 vector lanes of
    partial sums (rfactor), one horizontal sum per non-zero."""
    s.specialize(feat_size=32)
    i, j, k = s.get_loops("sddmm")
    s.cache_write(j, "Y", "local")
    k_0, k_1 = s.split(k, [None, 16])
    s.rfactor(k_1)
    s.vectorize(k_1)
    s.unroll(k_0)
    s.parallel(i)


def _sd_rfactor_global(s):
    """rfactor straight on the output element (no cache), lanes of 4."""
    s.specialize(feat_size=20)
    k_0, k_1 = s.split("k", [None, 4])
    s.rfactor(k_1)
    s.vectorize(k_1)


def _sd_rfactor_whole_loop(s):
    """rfactor of an unsplit loop: one partial per feature."""
    s.specialize(feat_size=20)
    s.rfactor("k")


def _sd_rfactor_guarded(s):
    """rfactor of a split that does not divide the extent (guarded body)."""
    s.specialize(feat_size=20)
    k_0, k_1 = s.split("k", [None, 8])
    s.rfactor(k_1)
    s.unroll(k_1)


SDDMM_SCHEDULES = {
    "rfactor_guarded": (_sd_rfactor_guarded, 20),
    "rfactor_vectorize": (_sd_rfactor_vectorize, 32),
    "rfactor_global": (_sd_rfactor_global, 20),
    "rfactor_whole_loop": (_sd_rfactor_whole_loop, 20),
    "sparse_reorder_KIJ": (_sd_reorder_kij, 20),
    "sparse_reorder_IKJ": (_sd_reorder_ikj, 20),
    "split_unroll_parallel": (_sd_split_vec_par, 20),
    "split_unroll_reduction": (_sd_split_unroll_reduction, 20),
    "reorder_k_split": (_sd_reorder_k_split, 20),
    "fuse_k": (_sd_fuse_k, 20),
    "cache_read_A_B": (_sd_cache_read_a, 20),
}


@pytest.mark.parametrize("name", sorted(SDDMM_SCHEDULES))
def test_sddmm_schedule_keeps_results(name):
    apply, feat = SDDMM_SCHEDULES[name]
    sch = new_schedule("sddmm")
    apply(sch)
    assert_round_trips(sch)
    check_sddmm(st.compile(sch), feat, what=name)


@pytest.mark.parametrize("dtype,idtype", [("float64", "int64"), ("float64", "int32"), ("float32", "int64")])
@pytest.mark.parametrize("kernel_name", ["csrmm", "sddmm"])
def test_schedule_dtype_variants(kernel_name, dtype, idtype):
    sch = new_schedule(kernel_name, dtype, idtype)
    sch.specialize(feat_size=24)
    k_0, k_1 = sch.split("k", [None, 16])  # 24 = 16 + a guarded tail of 8
    sch.unroll(k_0)
    if kernel_name == "csrmm":
        sch.vectorize(k_1)
        sch.cache_write("i", "C", "local")
    else:
        sch.cache_read("i", "A", "local")
    sch.parallel("i")
    text = sch.mod.script()
    assert f'"{dtype}"' in text and f'"{idtype}"' in text
    assert_round_trips(sch)
    CHECK[kernel_name](st.compile(sch), 24, dtype, idtype, what=f"{dtype}/{idtype}")


def test_specialized_kernel_accepts_its_value_and_rejects_others():
    sch = new_schedule()
    sch.specialize(feat_size=16)
    k = st.compile(sch)
    check_csrmm(k, 16, what="specialize")
    csr = MATRICES[0]
    with pytest.raises(ValueError, match="feat_size"):
        _call_csrmm(k, csr, 8, "float32", "int32", 0)
    with pytest.raises(ValueError, match="feat_size"):
        _call_csrmm(k, csr, 17, "float32", "int32", 0)


def test_specialize_other_scalars():
    """Specializing m as well: the kernel then only runs on matrices with 37 rows."""
    sch = new_schedule()
    sch.specialize(feat_size=8, m=MATRICES[0].m)
    assert '"specialized": {"feat_size": 8, "m": 37}' in sch.mod.script()
    k = st.compile(sch)
    a, b, c = _call_csrmm(k, MATRICES[0], 8, "float32", "int32", 1)
    a64, b64 = a.double().numpy(), b.double().numpy()
    ref = np.asarray(MATRICES[0].scipy(a64) @ b64)
    mag = np.asarray(MATRICES[0].scipy(np.abs(a64)) @ np.abs(b64))
    assert_within_bound(c, ref, mag, MATRICES[0].row_lengths()[:, None], "float32", "csrmm specialized m")
    with pytest.raises(ValueError, match="'m'"):
        _call_csrmm(k, MATRICES[1], 8, "float32", "int32", 1)


def test_rfactor_ir():
    sch = new_schedule("sddmm")
    _sd_rfactor_vectorize(sch)
    assert "sch.rfactor('k_1')" in sch.trace or 'sch.rfactor("k_1")' in sch.trace
    text = sch.mod.script()
    assert 'Y_local_rf = T.alloc_buffer((16,), "float32", scope="local")' in text, text
    assert "for k_1_init in T.serial(16):" in text, text
    # 16 partials are merged as a tree: 8, 4, 2, 1 pairwise additions, then one into Y_local.
    assert "for k_1_tree in T.vectorized(8):" in text and "Y_local_rf[k_1_tree] + Y_local_rf[k_1_tree + 8]" in text, text
    assert "Y_local[0] = Y_local[0] + Y_local_rf[0]" in text, text
    assert "for k_1 in T.vectorized(16):" in text, text
    assert_round_trips(sch)
    replayed = st.Schedule.replay(sch.trace, script("sddmm"))
    assert replayed.mod == sch.mod


def test_rfactor_vectorized_dot_is_simd():
    """The vectorized partial sums compile to explicit SIMD (GCC vector types)."""
    sch = new_schedule("sddmm")
    _sd_rfactor_vectorize(sch)
    source = st.compile(sch).source
    assert "vector_size(64)" in source, source


@pytest.mark.parametrize("loop,message", [
    ("i", r"rfactor: loop 'i' needs a constant extent"),
    ("j", r"rfactor: loop 'j' needs a constant extent"),
])
def test_rfactor_errors(loop, message):
    sch = new_schedule("sddmm")
    sch.specialize(feat_size=16)
    sch.lower_sparse_buffer()
    with pytest.raises(st.ScheduleError, match=message):
        sch.rfactor(loop)


def test_rfactor_refuses_a_spatial_loop():
    sch = new_schedule("csrmm")
    sch.specialize(feat_size=16)
    sch.lower_sparse_buffer()
    with pytest.raises(st.ScheduleError, match=r"rfactor: loop 'k' does not carry a reduction"):
        sch.rfactor("k")


def test_rfactor_refuses_a_loop_with_several_statements():
    sch = new_schedule("sddmm")
    sch.specialize(feat_size=16, m=37)
    sch.lower_sparse_buffer()
    with pytest.raises(st.ScheduleError, match=r"rfactor: loop 'i' must hold exactly one reduction"):
        sch.rfactor("i")


def test_rfactor_inner_spatial_loops_become_dimensions():
    """Factoring a split CSR row: the partials get the row's width as extra
    dimensions (two accumulator sets) and the merge keeps the vector loop."""
    sch = new_schedule("csrmm")
    _two_accumulators(sch)
    text = sch.mod.script()
    assert 'C_local_rf = T.alloc_buffer((2, 2, 16), "float32", scope="local")' in text, text
    assert "for k_1_merge in T.vectorized(16):" in text, text
    assert_round_trips(sch)


def test_prefetch_ir():
    """The B row of the non-zero `offset` ahead, its index reads bounds-guarded;
    the hint prints and parses back, replays, and compiles to cache-line prefetches."""
    sch = new_schedule("csrmm")
    _two_accumulators_prefetch(sch)
    assert "sch.prefetch('j_1', 'B', 32)" in sch.trace or 'sch.prefetch("j_1", "B", 32)' in sch.trace, sch.trace
    text = sch.mod.script()
    assert "if J_indptr[i] + (j_0 * 2 + (j_1 + 32)) < nnz:" in text, text
    assert "T.prefetch(B[J_indices[J_indptr[i] + (j_0 * 2 + (j_1 + 32))], 0], 32)" in text, text
    assert_round_trips(sch)
    assert st.Schedule.replay(sch.trace, script("csrmm")).mod == sch.mod
    source = st.compile(sch).source
    assert "__builtin_prefetch(" in source and "sparsetir_off < 128" in source, source


def test_prefetch_into_l2():
    """cache_level=2 is part of the hint: it prints, parses back, replays,
    differs from the L1 hint, and compiles to GCC's locality 2 (prefetcht1 on
    x86-64) for every line of the span; the results stay those of the kernel
    without it."""
    sch = new_schedule("csrmm")
    _two_accumulators(sch)
    sch.prefetch("j_1", "B", 32, cache_level=2)
    assert 'sch.prefetch("j_1", "B", 32, cache_level=2)' in sch.trace, sch.trace
    text = sch.mod.script()
    assert "T.prefetch(B[J_indices[J_indptr[i] + (j_0 * 2 + (j_1 + 32))], 0], 32, cache_level=2)" in text, text
    assert_round_trips(sch)
    assert st.Schedule.replay(sch.trace, script("csrmm")).mod == sch.mod
    near = new_schedule("csrmm")
    _two_accumulators_prefetch(near)
    assert near.mod != sch.mod and "cache_level" not in near.mod.script()
    source = st.compile(sch).source
    assert "sparsetir_off < 128; sparsetir_off += 64) __builtin_prefetch(sparsetir_line + sparsetir_off, 0, 2);" \
        in source, source
    assert ", 0, 3);" not in source, source
    check_csrmm(st.compile(sch), 32, what="two accumulators + prefetch into L2")


def _feature_tiles_prefetch(s):
    """Feature tiles outside the non-zero loop: each tile's span of a B row is prefetched."""
    s.specialize(feat_size=64)
    i, j, k = s.get_loops("csrmm")
    kt, kv, kl = s.split(k, [None, 2, 16])
    s.reorder(kt, j)
    s.unroll(kv)
    s.vectorize(kl)
    s.cache_write(kt, "C", "local")
    s.prefetch(j, "B", 4)
    s.parallel(i)


def test_prefetch_of_a_feature_tile():
    sch = new_schedule("csrmm")
    _feature_tiles_prefetch(sch)
    text = sch.mod.script()
    assert "T.prefetch(B[J_indices[J_indptr[i] + (j + 4)], k_0 * 2 * 16], 32)" in text, text
    assert_round_trips(sch)
    check_csrmm(st.compile(sch), 64, what="feature tiles + prefetch")


def test_prefetch_behind_checks_the_lower_bound():
    sch = new_schedule("csrmm")
    _prefetch_b(-2)(sch)
    text = sch.mod.script()
    assert "J_indptr[i] + (j - 2) >= 0" in text, text


def test_prefetch_sddmm_keeps_results():
    """The SDDMM recipe with the gathered B rows prefetched (the partial sums
    of rfactor read B inside a split, vectorized k: one 32-element span)."""
    sch = new_schedule("sddmm")
    _sd_rfactor_vectorize(sch)
    sch.prefetch("j", "B", 8)
    assert "T.prefetch(B[J_indices[J_indptr[i] + (j + 8)], 0], 32)" in sch.mod.script(), sch.mod.script()
    assert_round_trips(sch)
    check_sddmm(st.compile(sch), 32, what="prefetch B")


def test_prefetch_of_the_rows_a_group_gathers():
    """A loop over groups of non-zeros whose inner loop picks the gathered row
    (kernels/sddmm_dot_groups.py: Y[J_indices[first + q], k] for q in 4):
    one span per row of the group `offset` iterations ahead, in an unrolled
    loop of a fresh variable, each index read guarded; the kernel's values
    stay those of the plain dot product."""
    sch = st.Schedule(kernel_script("sddmm_dot_groups"))
    sch.specialize(feat_size=64, lanes=8)
    sch.prefetch("g", "Y", 2, cache_level=2)
    sch.prefetch("t", "Y", 8)
    text = sch.mod.script()
    expected = """            for q_ahead in T.unroll(4):
                if J_indptr[i] + (g + 2) * 4 + q_ahead < nnz:
                    T.prefetch(Y[J_indices[J_indptr[i] + (g + 2) * 4 + q_ahead], 0], 64, cache_level=2)
            first: T.int32 = J_indptr[i] + g * 4
"""
    assert expected in text, text
    assert "T.prefetch(Y[J_indices[J_indptr[i] + (J_indptr[i + 1] - J_indptr[i]) // 4 * 4 + (t + 8)], 0], 64)" \
        in text, text
    assert_round_trips(sch)
    assert st.Schedule.replay(sch.trace, kernel_script("sddmm_dot_groups")).mod == sch.mod
    kernel = st.compile(sch)
    for csr in MATRICES:
        x = torch.randn(csr.m, 64)
        y = torch.randn(csr.n, 64)
        out = torch.full((csr.nnz,), float("nan"))
        indptr, indices = torch.from_numpy(csr.indptr).int(), torch.from_numpy(csr.indices).int()
        kernel(x=x, y=y, out=out, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=64, nnz=csr.nnz,
               lanes=8)
        ref = (x.double()[torch.from_numpy(csr.rows())] * y.double()[torch.from_numpy(csr.indices)]).sum(1)
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)


def test_prefetch_of_an_empty_region_changes_nothing():
    sch = new_schedule("csrmm")
    sch.specialize(feat_size=0)
    sch.lower_sparse_buffer()
    before = sch.mod
    sch.prefetch("j", "B", 4)
    assert sch.mod == before


@pytest.mark.parametrize("prepare,args,message", [
    (lambda s: s.specialize(feat_size=20), ("q", "B", 4), r"no loop named 'q'"),
    (lambda s: s.specialize(feat_size=20), ("j", "X", 4), r"prefetch: buffer 'X' is not read inside loop 'j'"),
    (lambda s: s.specialize(feat_size=20), ("j", "B", 0), r"prefetch: the offset must be non-zero"),
    (lambda s: None, ("j", "B", 4), r"prefetch: the span of 'B' one iteration of 'j' reads has no constant size"),
    (lambda s: (s.specialize(feat_size=20), s.reorder("k", "j")), ("k", "B", 4),
     r"prefetch: the region of 'B' one iteration of 'k' reads is not contiguous \(an inner loop moves index 0\)"),
    (lambda s: (s.specialize(feat_size=16), s.vectorize("k")), ("k", "B", 4), r"prefetch: loop 'k' is vectorized"),
    (lambda s: s.specialize(feat_size=20), ("j", "B", 4, 3), r"prefetch: cache_level must be 1 \(L1\) or 2 .*got 3"),
    (lambda s: s.specialize(feat_size=20), ("j", "B", 4, 0), r"prefetch: cache_level must be 1 \(L1\) or 2 .*got 0"),
])
def test_prefetch_errors(prepare, args, message):
    sch = new_schedule("csrmm")
    prepare(sch)
    with pytest.raises(st.ScheduleError, match=message):
        sch.prefetch(*args)
    with pytest.raises(st.ScheduleError) as info:
        sch.prefetch(*args)
    assert "for " in str(info.value) or "no loop" in str(info.value)  # the IR around the loop is printed


@pytest.mark.parametrize("statement,message", [
    ("T.prefetch(B[0, 0])", r"T.prefetch\(buffer\[indices\], extent, cache_level=1\)"),
    ("T.prefetch(B, 4)", r"T.prefetch\(buffer\[indices\], extent, cache_level=1\)"),
    ("T.prefetch(B[0, 0], 0)", r"the extent of a prefetch is a positive integer literal"),
    ("T.prefetch(B[0, 0], n)", r"the extent of a prefetch is a positive integer literal"),
    ("T.prefetch(B[0, 0], 4, cache_level=3)", r"the cache_level of a prefetch is 1 \(L1\) or 2 \(L2, not L1\)"),
    ("T.prefetch(B[0, 0], 4, cache_level=n)", r"the cache_level of a prefetch is 1 \(L1\) or 2 \(L2, not L1\)"),
    ("T.prefetch(B[0, 0], 4, level=2)", r"T.prefetch got an unexpected keyword argument 'level'"),
    ("T.prefetch(B[0, 0], 4, 2, 1)", r"T.prefetch takes at most 3 arguments, got 4"),
])
def test_prefetch_statement_errors(statement, message):
    sch = new_schedule("csrmm")
    sch.lower_sparse_buffer()
    text = sch.mod.script().replace("    for i in T.serial(m):", f"    {statement}\n    for i in T.serial(m):")
    assert statement in text
    with pytest.raises(st.ScriptError, match=message):
        st.parse(text)


def test_prefetch_statement_is_stage_iii_only():
    text = script("csrmm").replace("    with T.sp.iteration", "    T.prefetch(B[0, 0], 4)\n    with T.sp.iteration")
    with pytest.raises(st.ScriptError, match=r"T.prefetch belongs to stage III"):
        st.parse(text)


def test_bound_kernel_does_not_compile_for_cpu():
    sch = new_schedule()
    sch.bind("i", "blockIdx.x")
    with pytest.raises(st.ScheduleError, match=r"loop 'i' is bound to blockIdx\.x.*cpu"):
        st.compile(sch)


# =========================================================================== 3. random schedules


def _random_csrmm_schedule(rnd: random.Random, feat: int) -> st.Schedule:
    sch = new_schedule("csrmm")
    specialized = rnd.random() < 0.5
    if specialized:
        sch.specialize(feat_size=feat)
    if rnd.random() < 0.3:
        sch.sparse_reorder("csrmm", ["I", "J", "K"])  # the identity order: still legal
    i, j, k = sch.get_loops("csrmm")
    for loop in (k, sch.get_loops("csrmm_init")[1]):
        if rnd.random() < 0.8:
            factor = rnd.choice([2, 4, 8, 16, 32])
            outer, inner = sch.split(loop, [None, factor])
            how = rnd.choice(["vectorize", "unroll", "none"])
            if how == "vectorize":
                sch.vectorize(inner)
            elif how == "unroll":
                sch.unroll(inner)
            if rnd.random() < 0.3:
                sch.unroll(outer)
    if rnd.random() < 0.7:
        sch.parallel(i)
    if specialized and rnd.random() < 0.7:
        sch.cache_write(i, "C", rnd.choice(["local", "local", "shared"]))
    if specialized and rnd.random() < 0.4:
        sch.prefetch(j, "B", rnd.choice([-1, 1, 8, 64]))
    return sch


@pytest.mark.parametrize("seed", range(15))
def test_random_schedules_keep_results(seed):
    rnd = random.Random(1234 + seed)
    feat = rnd.choice([1, 7, 16, 20, 33, 64])
    sch = _random_csrmm_schedule(rnd, feat)
    what = f"seed {seed}:\n{sch.trace}"
    assert_round_trips(sch)
    assert st.Schedule.replay(sch.trace, script("csrmm")).mod == sch.mod, what
    check_csrmm(st.compile(sch), feat, what=what)


def test_random_schedules_are_varied():
    """Guards the generator: the 15 draws cover every choice at least once."""
    traces = []
    for seed in range(15):
        rnd = random.Random(1234 + seed)
        feat = rnd.choice([1, 7, 16, 20, 33, 64])
        traces.append(_random_csrmm_schedule(rnd, feat).trace)
    joined = "\n".join(traces)
    for needle in ("specialize", "split", "vectorize", "unroll", "parallel", "cache_write", "sparse_reorder", "prefetch"):
        assert needle in joined, needle
    assert any("specialize" not in t for t in traces)


# =========================================================================== 4. trace


def _trace_schedules():
    def csrmm_full(s):
        s.annotate("csrmm", "tag", "x")
        _fast_spmm(32)(s)
        s.cache_read("j", "B", "local")

    def csrmm_loops(s):
        s.sparse_reorder("csrmm", ["I", "K", "J"])
        f = s.fuse("i", "k")
        s.parallel(f)

    def csrmm_bind(s):
        k_0, k_1 = s.split("k", [None, 32])
        s.bind("i", "blockIdx.x")
        s.bind(k_1, "threadIdx.x")

    def csrmm_reorder(s):
        k_0, k_1, k_2 = s.split("k", [None, 2, 4])
        s.reorder(k_2, k_1, k_0)
        s.unroll(k_1)

    def sddmm_sched(s):
        s.sparse_reorder("sddmm", ["I", "K", "J"])
        s.specialize(feat_size=20)
        k_0, k_1 = s.split("k", [5, None])
        s.parallel("i")
        s.cache_read("i", "A", "local")

    return {
        "csrmm_full": ("csrmm", csrmm_full),
        "csrmm_loops": ("csrmm", csrmm_loops),
        "csrmm_bind": ("csrmm", csrmm_bind),
        "csrmm_reorder": ("csrmm", csrmm_reorder),
        "sddmm": ("sddmm", sddmm_sched),
    }


TRACE_SCHEDULES = _trace_schedules()


@pytest.mark.parametrize("name", sorted(TRACE_SCHEDULES))
def test_trace_replays(name):
    kernel_name, apply = TRACE_SCHEDULES[name]
    original = st.parse(script(kernel_name))
    sch = st.Schedule(original)
    apply(sch)
    trace = sch.trace
    lines = trace.splitlines()
    assert lines, "empty trace"
    for line in lines:
        tree = ast.parse(line)  # every line is one Python statement
        assert len(tree.body) == 1, line
        assert line.startswith("sch.") or " = sch." in line, line
    replayed = st.Schedule.replay(trace, original)
    assert replayed.mod == sch.mod
    assert replayed.mod.script() == sch.mod.script()
    assert replayed.trace == trace
    # a fresh parse of the script text replays the same way
    assert st.Schedule.replay(trace, script(kernel_name)).mod == sch.mod
    # and the original function was not modified by either
    assert original == st.parse(script(kernel_name))


def test_trace_lines_match_primitives():
    sch = new_schedule()
    sch.specialize(feat_size=32)
    k_0, k_1 = sch.split("k", factors=[None, 16])
    sch.vectorize(k_1)
    sch.parallel("i")
    sch.cache_write("i", "C", "local")
    assert sch.trace.splitlines() == [
        "sch.specialize(feat_size=32)",
        "sch.lower_sparse_iter()",
        'k_0, k_1 = sch.split("k", factors=[None, 16])',
        'sch.vectorize("k_1")',
        'sch.parallel("i")',
        "sch.lower_sparse_buffer()",
        'C_local = sch.cache_write("i", "C", "local")',
    ]


def test_trace_replay_compiles_to_the_same_kernel():
    sch = new_schedule()
    _fast_spmm(64)(sch)
    k1 = st.compile(sch)
    k2 = st.compile(st.Schedule.replay(sch.trace, script("csrmm")))
    assert k1.source == k2.source


def test_failed_primitive_leaves_schedule_unchanged():
    sch = new_schedule()
    sch.split("k", [None, 4])
    mod, trace = sch.mod, sch.trace
    with pytest.raises(st.ScheduleError):
        sch.parallel("j")
    with pytest.raises(st.ScheduleError):
        sch.split("k_0", [None, None])
    assert sch.mod == mod
    assert sch.trace == trace


# =========================================================================== 5. errors


def _lowered(name="csrmm", feat=None):
    sch = new_schedule(name)
    if feat is not None:
        sch.specialize(feat_size=feat)
    sch.get_loops(f"{name}")
    return sch


@pytest.mark.parametrize(
    "primitive,call",
    [
        ("split", lambda s: s.split("zz", [None, 4])),
        ("fuse", lambda s: s.fuse("i", "zz")),
        ("reorder", lambda s: s.reorder("zz", "i")),
        ("parallel", lambda s: s.parallel("zz")),
        ("vectorize", lambda s: s.vectorize("zz")),
        ("unroll", lambda s: s.unroll("zz")),
        ("bind", lambda s: s.bind("zz", "threadIdx.x")),
        ("cache_write", lambda s: s.cache_write("zz", "C", "local")),
        ("cache_read", lambda s: s.cache_read("zz", "B", "local")),
    ],
)
def test_unknown_loop(primitive, call):
    sch = _lowered(feat=16)
    with pytest.raises(st.ScheduleError, match=rf"{primitive}: no loop named 'zz' in function 'csrmm' \(its loops: i, k_init, j, k\)"):
        call(sch)


def test_split_of_a_split_away_loop_is_unknown():
    sch = _lowered()
    sch.split("k", [None, 4])
    with pytest.raises(st.ScheduleError, match=r"split: no loop named 'k' .*its loops: i, k_init, j, k_0, k_1"):
        sch.split("k", [None, 4])


def test_unknown_block():
    sch = new_schedule()
    with pytest.raises(st.ScheduleError, match=r"get_loops: no block named 'nope' in function 'csrmm' \(its blocks: csrmm_init, csrmm\)"):
        sch.get_loops("nope")


def test_unknown_iteration():
    sch = new_schedule()
    with pytest.raises(st.ScheduleError, match=r"sparse_reorder: no sparse iteration named 'nope' in 'csrmm'"):
        sch.sparse_reorder("nope", ["I", "J", "K"])


def test_int_arguments_are_not_truncated():
    """int() would make 2.5 a 2 and "4" a 4 without a word: split factors,
    specialize values and prefetch offsets must be ints (numpy ints too)."""
    sch = _lowered()
    for bad in (2.5, "4", True):
        with pytest.raises(st.ScheduleError, match=rf"split: factor 1 must be an int, got {re.escape(repr(bad))}"):
            sch.split("k", [None, bad])
        with pytest.raises(st.ScheduleError,
                           match=rf"specialize: feat_size must be an int, got {re.escape(repr(bad))}"):
            sch.specialize(feat_size=bad)
        with pytest.raises(ValueError, match=rf"st.specialize: m must be an int, got {re.escape(repr(bad))}"):
            st.specialize(sch.mod, m=bad)
    sch.specialize(feat_size=np.int64(8))
    sch.split("k", [None, np.int32(4)])


def test_annotate_unknown_iteration():
    sch = new_schedule()
    with pytest.raises(st.ScheduleError, match=r"annotate: no sparse iteration named 'nope'"):
        sch.annotate("nope", "key", 1)


def test_annotate_bad_value():
    sch = new_schedule()
    with pytest.raises(st.ScheduleError, match=r"annotate: the value must be a bool, int, float or str"):
        sch.annotate("csrmm", "key", [1, 2])


@pytest.mark.parametrize("value,message", [
    (float("nan"), r"annotate: the value of 'key' must be a finite float \(the trace writes it as a literal\), "
                   r"got nan"),
    (float("-inf"), r"must be a finite float .*got -inf"),
    (2**70, r"annotate: the int 1180591620717411303424 does not fit int64"),
])
def test_annotate_refuses_values_a_trace_cannot_write(value, message):
    sch = new_schedule()
    with pytest.raises(st.ScheduleError, match=message):
        sch.annotate("csrmm", "key", value)
    sch.annotate("csrmm", "key", 2.5)  # a finite float replays
    assert st.Schedule.replay(sch.trace, script("csrmm", "float32", "int32")).mod.script() == sch.mod.script()


def test_annotate_keeps_the_function_one_the_parser_accepts():
    """'accumulate' is True or False; setting it False on an iteration that has
    no init (it reduces into an output initialized before) would give a
    function the parser refuses, so annotate refuses it too."""
    text = script("csrmm", "float32", "int32").replace(
        "        with T.init():\n            C[i, k] = 0.0\n", '        T.sp.iteration_attr({"accumulate": True})\n')
    sch = st.Schedule(text)
    with pytest.raises(st.ScheduleError, match=r"annotate: 'accumulate' is True or False"):
        sch.annotate("csrmm", "accumulate", "yes")
    with pytest.raises(st.ScheduleError,
                       match=r"annotate: with 'accumulate' set to False, .*has no 'with T.init\(\):'"):
        sch.annotate("csrmm", "accumulate", False)
    sch.annotate("csrmm", "accumulate", True)
    st.parse(sch.mod.script())


@pytest.mark.parametrize(
    "order,message",
    [
        (["J", "I", "K"], r"iterator 'J' would come before its parent 'I'"),
        (["K", "J", "I"], r"iterator 'J' would come before its parent 'I'"),
        (["I", "J"], r"iteration 'csrmm' has 3 iterators but the new order names 2"),
        (["I", "J", "K", "K"], r"iteration 'csrmm' has 3 iterators but the new order names 4"),
        (["I", "J", "Q"], r"iterator 'Q' is not in iteration 'csrmm'"),
        (["I", "J", "J"], r"iterator 'J' is named twice"),
    ],
)
def test_sparse_reorder_errors(order, message):
    sch = new_schedule()
    with pytest.raises(st.ScheduleError, match=r"sparse_reorder: " + message) as info:
        sch.sparse_reorder("csrmm", order)
    assert 'T.sp.iteration([I, J, K], "SRS", "csrmm")' in str(info.value)  # shows the IR


def test_sddmm_sparse_reorder_child_before_parent():
    sch = new_schedule("sddmm")
    with pytest.raises(st.ScheduleError, match=r"iterator 'J' would come before its parent 'I'"):
        sch.sparse_reorder("sddmm", ["J", "K", "I"])


def test_stage_i_primitives_after_lowering():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"sparse_reorder works on stage-I sparse iterations, but 'csrmm' is at stage II"):
        sch.sparse_reorder("csrmm", ["I", "K", "J"])
    with pytest.raises(st.ScheduleError, match=r"annotate works on stage-I sparse iterations, but 'csrmm' is at stage II"):
        sch.annotate("csrmm", "key", 1)


@pytest.mark.parametrize(
    "factors,message",
    [
        ([None, None], r"split: loop 'k': at most one factor may be None"),
        ([None, 0], r"split: loop 'k': factor 0 is not positive"),
        ([None, -4], r"split: loop 'k': factor -4 is not positive"),
        ([-1, None], r"split: loop 'k': factor -1 is not positive"),
        ([16], r"split: loop 'k': give at least two factors"),
    ],
)
def test_split_bad_factors(factors, message):
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=message) as info:
        sch.split("k", factors)
    assert "for k in T.serial(feat_size):" in str(info.value)


def test_split_factors_cover_too_few_iterations():
    sch = _lowered(feat=64)
    with pytest.raises(st.ScheduleError, match=r"split: loop 'k': the factors cover 32 iterations, fewer than its extent 64"):
        sch.split("k", [2, 16])
    sch.split("k", [8, 16])  # covering more is fine: guarded


def test_fuse_not_directly_nested():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"fuse: loop 'k_init' is not directly inside loop 'i'; only a perfect nest can be fused"):
        sch.fuse("i", "k_init")
    with pytest.raises(st.ScheduleError, match=r"fuse: loop 'j' is not directly inside loop 'i'"):
        sch.fuse("i", "j")
    with pytest.raises(st.ScheduleError, match=r"fuse: loop 'k' is not directly inside loop 'j'"):
        sched = _lowered("sddmm")
        sched.fuse("j", "k")


def test_fuse_inner_extent_depends_on_outer():
    """In sddmm i and j are a perfect nest, but j's extent depends on i."""
    sch = _lowered("sddmm")
    with pytest.raises(st.ScheduleError, match=r"fuse: the extent of loop 'j' depends on loop 'i'") as info:
        sch.fuse("i", "j")
    assert "for j in T.serial(J_indptr[i + 1] - J_indptr[i]):" in str(info.value)


def test_fuse_error_suggests_an_existing_primitive():
    sch = _lowered("sddmm")
    with pytest.raises(st.ScheduleError) as info:
        sch.fuse("i", "j")
    message = str(info.value)
    assert "sparse_fuse" not in message or hasattr(st.Schedule, "sparse_fuse"), message


def test_reorder_j_outside_i():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"reorder: loops \[\"j\", \"i\"\] are not a perfect nest \(loop 'j'"):
        sch.reorder("j", "i")


def test_reorder_j_outside_i_in_a_perfect_nest():
    """In sddmm i and j are perfectly nested, but j's extent depends on i."""
    sch = _lowered("sddmm")
    with pytest.raises(st.ScheduleError, match=r"reorder: loop 'j' has bounds that depend on loop 'i', so it cannot be placed outside it"):
        sch.reorder("j", "i")


def test_parallel_reduction_loop():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"parallel: loop 'j' carries a reduction: its iterations store to the same elements of 'C'") as info:
        sch.parallel("j")
    assert "for j in T.serial(" in str(info.value)
    sd = _lowered("sddmm")
    with pytest.raises(st.ScheduleError, match=r"parallel: loop 'k' carries a reduction.*'Y'"):
        sd.parallel("k")


def test_parallel_reduction_loop_after_split():
    sch = _lowered()
    sch.reorder("k", "j")
    j_0, j_1 = sch.split("j", [None, 4])
    for loop in (j_0, j_1):
        with pytest.raises(st.ScheduleError, match=rf"parallel: loop '{loop}' carries a reduction"):
            sch.parallel(loop)


def test_vectorize_not_innermost():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"vectorize: loop 'j' is not innermost") as info:
        sch.vectorize("j")
    assert "for j in T.serial(" in str(info.value)
    sch.split("k", [None, 4])
    with pytest.raises(st.ScheduleError, match=r"vectorize: loop 'k_0' is not innermost"):
        sch.vectorize("k_0")


def test_vectorize_not_innermost_sddmm_i():
    sch = _lowered("sddmm")
    with pytest.raises(st.ScheduleError, match=r"vectorize: loop 'i' is not innermost"):
        sch.vectorize("i")


@pytest.mark.parametrize("kernel_name,loop", [("csrmm", "i"), ("sddmm", "j")])
def test_vectorize_loop_with_several_children(kernel_name, loop):
    sch = _lowered(kernel_name)
    with pytest.raises(st.ScheduleError, match=rf"vectorize: loop '{loop}' is not innermost"):
        sch.vectorize(loop)


def test_bind_unknown_axis():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"bind: unknown thread axis 'threadIdx.q' \(expected blockIdx.x/y/z or threadIdx.x/y/z\)"):
        sch.bind("i", "threadIdx.q")


@pytest.mark.parametrize("outer_first", [True, False])
@pytest.mark.parametrize("axis", ["blockIdx.x", "threadIdx.x"])
def test_bind_refuses_nested_loops_on_one_axis(axis, outer_first):
    """A thread has one index per axis: two nested loops bound to it would both
    read it and only their diagonal would run. Refused whichever is bound first;
    sibling loops (csrmm_init's k_init and csrmm's k) may share an axis."""
    sch = _lowered()
    first, second = ("i", "k") if outer_first else ("k", "i")
    sch.bind(first, axis)
    with pytest.raises(st.ScheduleError, match=rf"bind: loop '{first}', which nests with loop '{second}', is bound to "
                                                 rf"{re.escape(axis)} already"):
        sch.bind(second, axis)
    sch.bind(first, axis)  # the same loop again: no nesting
    if outer_first:  # csrmm_init's k_init lies inside i too
        with pytest.raises(st.ScheduleError, match="bind: loop 'i', which nests with loop 'k_init'"):
            sch.bind("k_init", axis)
    else:  # k_init and k are siblings inside i
        sch.bind("k_init", axis)


COUNT_2D = """
@T.prim_func
def count(c: T.handle, m: T.int32, n: T.int32) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.dense_fixed(n)
    C = T.sp.match_buffer(c, (I, J), "int32")
    with T.sp.iteration([I, J], "SS", "count") as [i, j]:
        C[i, j] = j + 1
"""


def test_split_and_fuse_refuse_trip_counts_past_the_index_type():
    """An int32 loop of 2^31 or more iterations would wrap and run no
    iteration: split and fuse refuse constant ones, and a call refuses a trip
    count its scalar arguments make too large (m * n after a fuse), naming
    the loop, before the kernel runs. Counts that fit run and are right."""
    sch = _lowered("csrmm", feat=4)
    k = sch.get_loops("csrmm")[2]
    for factors in ([None, 2**31], [2**16, 2**15, 2]):
        with pytest.raises(st.ScheduleError, match=r"split: loop 'k': the factors multiply to more than its int32 "
                                                     r"index holds \(2147483647\)"):
            sch.split(k, factors)
    sch.split(k, [None, 2**31 - 1])  # fits
    big = st.Schedule(COUNT_2D)
    big.specialize(m=3, n=2**30)
    with pytest.raises(st.ScheduleError, match=r"fuse: the loops run more times together than the fused loop's int32 "
                                                 r"index holds"):
        big.fuse(big.get_loops("count"))
    sch = st.Schedule(COUNT_2D)
    sch.fuse(sch.get_loops("count"))
    kernel = st.compile(sch)
    with pytest.raises(ValueError, match=r"count\(\): loop 'i_j_fused' would run 3221225472 times for these "
                                         r"arguments, more than its int32 index holds \(2147483647\)"):
        kernel(c=torch.zeros(1, dtype=torch.int32), m=3, n=2**30)  # refused before the tensors are looked at
    c = torch.zeros(5, 7, dtype=torch.int32)
    kernel(c=c, m=5, n=7)
    assert torch.equal(c, torch.arange(1, 8, dtype=torch.int32).expand(5, 7))


def test_bind_then_compile_for_cpu():
    sch = _lowered()
    sch.bind("k", "threadIdx.x")
    with pytest.raises(st.ScheduleError, match=r"loop 'k' is bound to threadIdx\.x, which only a GPU target has"):
        st.compile(sch)


def test_cache_write_without_specialize():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"cache_write: dimension 1 of buffer 'C' does not have a constant extent; specialize it first") as info:
        sch.cache_write("i", "C", "local")
    assert "for i in T.serial(m):" in str(info.value)


def test_cache_read_without_specialize():
    sch = _lowered()
    with pytest.raises(st.ScheduleError, match=r"cache_read: dimension \d of buffer 'B' does not have a constant extent; specialize it first"):
        sch.cache_read("j", "B", "local")


def test_cache_read_region_not_constant():
    """At loop i the rows of B read are data-dependent: no constant-size copy."""
    sch = _lowered(feat=16)
    with pytest.raises(st.ScheduleError, match=r"cache_read: dimension 0 of buffer 'B' does not have a constant extent"):
        sch.cache_read("i", "B", "local")


def test_cache_write_loop_does_not_touch_buffer():
    sch = _lowered(feat=64)
    sch.split("k_init", [None, 16])
    with pytest.raises(st.ScheduleError, match=r"cache_write: loop 'k_init_0' does not access buffer 'A'"):
        sch.cache_write("k_init_0", "A", "local")
    with pytest.raises(st.ScheduleError, match=r"cache_read: loop 'k_init_0' does not access buffer 'B'"):
        sch.cache_read("k_init_0", "B", "local")


def test_cache_write_of_a_buffer_that_is_only_read():
    sch = _lowered(feat=64)
    with pytest.raises(st.ScheduleError, match=r"cache_write: loop 'j' only reads buffer 'B'; use cache_read"):
        sch.cache_write("j", "B", "local")


def test_cache_unknown_buffer_and_scope():
    sch = _lowered(feat=64)
    with pytest.raises(st.ScheduleError, match=r"cache_write: no buffer named 'Q' in 'csrmm'"):
        sch.cache_write("i", "Q", "local")
    with pytest.raises(st.ScheduleError, match=r'cache_write: scope must be "local" or "shared", got "global2"'):
        sch.cache_write("i", "C", "global2")
    with pytest.raises(st.ScheduleError, match=r'cache_read: scope must be "local" or "shared", got "register"'):
        sch.cache_read("j", "B", "register")


def test_cache_read_written_buffer():
    sch = _lowered(feat=64)
    with pytest.raises(st.ScheduleError, match=r"cache_read: loop 'i' writes buffer 'C'; use cache_write"):
        sch.cache_read("i", "C", "local")


def test_cache_write_single_element_region():
    sch = _lowered(feat=16)
    sch.cache_write("k", "C", "local")
    assert_round_trips(sch)
    check_csrmm(st.compile(sch), 16, what="cache_write at k")


@pytest.mark.parametrize("primitive,buffer", [("cache_write", "Y"), ("cache_read", "X")])
def test_sddmm_cache_single_element_region(primitive, buffer):
    sch = _lowered("sddmm", feat=20)
    getattr(sch, primitive)("j", buffer, "local")
    assert_round_trips(sch)
    check_sddmm(st.compile(sch), 20, what=f"{primitive} {buffer} at j")


def test_specialize_handle_or_unknown_name():
    sch = new_schedule()
    with pytest.raises(ValueError, match=r"specialize: 'a' is not a scalar parameter of 'csrmm' \(its scalar parameters: m, n, feat_size, nnz\)"):
        sch.specialize(a=3)
    with pytest.raises(ValueError, match=r"specialize: 'zz' is not a scalar parameter of 'csrmm'"):
        sch.specialize(zz=3)
    with pytest.raises(ValueError, match=r"'indptr' is not a scalar parameter"):
        st.specialize(st.parse(script("csrmm")), indptr=1)
    assert sch.trace == ""


def test_specialize_twice_with_different_values():
    sch = new_schedule()
    sch.specialize(feat_size=4)
    with pytest.raises(ValueError, match="feat_size"):
        sch.specialize(feat_size=8)


def test_specialize_negative_value():
    sch = new_schedule()
    with pytest.raises(ValueError, match="feat_size"):
        sch.specialize(feat_size=-1)


def test_specialize_same_value_twice_is_harmless():
    sch = new_schedule()
    sch.specialize(feat_size=8)
    sch.get_loops("csrmm")
    sch.specialize(feat_size=8)
    check_csrmm(st.compile(sch), 8, what="specialize twice")


def test_specialized_kernel_called_with_other_feat_size():
    sch = new_schedule()
    sch.specialize(feat_size=32)
    k = st.compile(sch)
    with pytest.raises(ValueError, match=r"argument 'feat_size' must be 32: the kernel was specialized for it \(got 16\)"):
        _call_csrmm(k, MATRICES[0], 16, "float32", "int32", 0)


def test_errors_are_value_errors():
    assert issubclass(st.ScheduleError, ValueError)
    sch = new_schedule()
    with pytest.raises(ValueError):
        sch.get_loops("nope")


def test_vectorize_refuses_a_reduction_loop():
    """Vectorizing a loop whose stores do not depend on it (SDDMM's k) would let
    the C++ compiler reorder a loop-carried dependence: refused with a message."""
    sch = new_schedule("sddmm")
    k_0, k_1 = sch.split("k", [None, 4])
    with pytest.raises(st.ScheduleError, match=r"vectorize: loop 'k_1' carries a reduction into 'Y'"):
        sch.vectorize(k_1)


def test_sparse_fuse_sddmm_keeps_results_and_replays():
    """sparse_fuse(I, J) iterates SDDMM's non-zeros in one loop (row found by
    binary search); in parallel it still matches the unfused kernel."""
    f = st.parse(kernel_script("sddmm"))
    sch = st.Schedule(f)
    sch.sparse_fuse("sddmm", ["I", "J"])
    (ij, k) = sch.get_loops("sddmm")
    sch.parallel(ij)
    assert "T.sp.lower_bound(indptr, 0, m + 1, ij + 1) - 1" in sch.mod.script()
    assert st.parse(sch.mod.script()) == sch.mod
    assert st.Schedule.replay(sch.trace, f).mod == sch.mod
    g = torch.Generator().manual_seed(7)
    dense = torch.rand(23, 17, generator=g)
    dense[dense < 0.7] = 0
    dense[0] = 0
    dense[5] = 1
    A = dense.to_sparse_csr()
    X = torch.randn(23, 6, generator=g, dtype=torch.float64).float()
    Y = torch.randn(17, 6, generator=g, dtype=torch.float64).float()
    vals = A.values()
    out = torch.full_like(vals, float("nan"))
    st.compile(sch)(a=X, b=Y, x=vals, y=out, indptr=A.crow_indices().int(), indices=A.col_indices().int(),
                    m=23, n=17, feat_size=6, nnz=vals.numel())
    rows = torch.repeat_interleave(torch.arange(23), A.crow_indices().diff())
    expected = (X.double()[rows] * Y.double()[A.col_indices()]).sum(1) * vals.double()
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


def test_sparse_fuse_refuses_a_reduction():
    sch = st.Schedule(kernel_script("csrmm"))
    with pytest.raises(st.ScheduleError, match=r"sparse_fuse: iteration 'csrmm': only spatial iterators"):
        sch.sparse_fuse("csrmm", ["I", "J"])
