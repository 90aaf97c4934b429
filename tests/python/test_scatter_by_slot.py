"""torch.ops.sparsetir._scatter_by_slot: a CSR matrix's values moved into a
converted form through each non-zero's slot (BSR blocks, ELL and hyb slots).

- Equal to numpy's np.add.at in float64 for the BSR slots of _csr_to_bsr
  (block sizes 1-4, duplicates sharing a slot) and the ELL slots, on the shared
  CSR cases (empty rows, zero nnz, 1x1, a dense row, unsorted columns with
  duplicates) and a larger matrix whose duplicates cross the parallel chunks,
  at 1 and 2 threads, int32 and int64 row pointers, every dtype it takes.
  Values are small integers, so every sum is exact in float16 too.
- Differentiable: gradcheck, and opcheck (schema, fake, autograd).
- Bad input raises a ValueError naming the op and the argument.
"""
import numpy as np
import pytest
import torch

from conftest import CSR_CASES, INDEX_DTYPES, make_csr

ops = torch.ops.sparsetir
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64)


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    previous = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(previous)


def small_integers(nnz, seed=0):
    return np.random.default_rng(seed).integers(1, 5, nnz).astype(np.float64)


def check_scatter(csr, slot, size, group_rows, idtype, dtype, what):
    values = small_integers(csr.nnz)
    expected = np.zeros(size)
    np.add.at(expected, slot.numpy(), values)
    indptr, _ = csr.torch_structure(idtype)
    got = ops._scatter_by_slot(torch.from_numpy(values).to(dtype), slot, indptr, size, group_rows)
    assert got.dtype == dtype and got.shape == (size,)
    assert torch.equal(got, torch.from_numpy(expected).to(dtype)), what


def bsr_slots(csr, b, idtype):
    indptr, indices = csr.torch_structure(idtype)
    _, block_indices, slot = ops._csr_to_bsr(indptr, indices, csr.n, b, b)
    return slot, block_indices.numel() * b * b


@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize("case", CSR_CASES)
def test_bsr_and_ell_slots_match_numpy(case, idtype, threads):
    csr = make_csr(**CSR_CASES[case], seed=7)
    for b in (1, 2, 3, 4):
        slot, size = bsr_slots(csr, b, idtype)
        for dtype in DTYPES:
            check_scatter(csr, slot, size, b, idtype, dtype, f"{case}: BSR {b}x{b}, {dtype}")
    width = int(csr.row_lengths().max(initial=0))
    indptr, indices = csr.torch_structure(idtype)
    _, slot = ops._csr_to_ell(indptr, indices, width)
    check_scatter(csr, slot, csr.m * width, 1, idtype, torch.float32, f"{case}: ELL")


@pytest.mark.parametrize("idtype", INDEX_DTYPES)
def test_duplicates_across_parallel_chunks(idtype, threads):
    # ~20k non-zeros: several chunks of 4096, with duplicates in every part.
    csr = make_csr(3000, 300, density=0.02, seed=11, shuffle=True, duplicates=2000)
    for b in (2, 3):
        slot, size = bsr_slots(csr, b, idtype)
        check_scatter(csr, slot, size, b, idtype, torch.float64, f"BSR {b}x{b}")


def test_gradient_reaches_every_duplicate():
    csr = make_csr(30, 20, density=0.2, seed=2, shuffle=True, duplicates=15)
    slot, size = bsr_slots(csr, 2, "int64")
    indptr, _ = csr.torch_structure("int64")
    values = torch.from_numpy(csr.values).requires_grad_()
    assert torch.autograd.gradcheck(lambda v: ops._scatter_by_slot(v, slot, indptr, size, 2), (values,))
    torch.library.opcheck(ops._scatter_by_slot.default, (values, slot, indptr, size, 2))
    torch.library.opcheck(ops._scatter_by_slot.default, (values.detach().float(), slot, indptr.int(), size, 2))


def t(*values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


BAD_CALLS = [
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 5), t(0, 2), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'slot' has 5 at 1, outside \[0, 4\)"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(-1, 0), t(0, 1, 2), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'slot' has -1 at 0, outside \[0, 4\)"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1), t(0, 1), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'indptr' must run from 0 to the 2 non-zeros of 'values', got 0 to 1"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1), t(0, 3, 2), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'indptr' is not a CSR row pointer of 2 non-zeros"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1), t(), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'indptr' must hold rows \+ 1 >= 1 entries"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1, dtype=torch.int32), t(0, 2), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'slot' must be a 1-D int64 tensor, got 1-D Int"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0), t(0, 2), 4, 1),
     r"^sparsetir\._scatter_by_slot: arguments 'slot' and 'values' must have the same length, got 1 and 2"),
    (lambda: ops._scatter_by_slot(torch.ones(1, 2), t(0, 1), t(0, 2), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'values' must be a 1-D numeric tensor, got 2-D"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1), t(0, 2).double(), 4, 1),
     r"^sparsetir\._scatter_by_slot: argument 'indptr' must have dtype int32 or int64"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1), t(0, 2), -1, 1),
     r"^sparsetir\._scatter_by_slot: argument 'size' must be non-negative, got -1"),
    (lambda: ops._scatter_by_slot(torch.ones(2), t(0, 1), t(0, 2), 4, 0),
     r"^sparsetir\._scatter_by_slot: argument 'group_rows' must be positive, got 0"),
]


@pytest.mark.parametrize("call,pattern", BAD_CALLS, ids=[str(i) for i in range(len(BAD_CALLS))])
def test_bad_input_names_the_op_and_argument(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
