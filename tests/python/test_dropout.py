"""st.nn.functional.dropout / st.nn.Dropout and torch.ops.sparsetir.dropout:
the generator (Philox4x32-10's known answers), the mask's distribution, the
values (x / (1 - p) where kept, x * 0 where dropped) against float64, the
same mask at every thread count and instruction-set level, the backward (the
same mask, nothing of the input's size saved), torch.compile, and errors."""
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from sparsetir_torch.recipes import runnable_levels

ops = torch.ops.sparsetir
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def seed(s: int = 12345) -> torch.Tensor:
    return torch.tensor(s, dtype=torch.int64)


def nonzero_input(shape, dtype=torch.float32, generator_seed=0) -> torch.Tensor:
    """Values in +-[0.5, 1.5]: none is zero, so an output zero means dropped."""
    g = torch.Generator().manual_seed(generator_seed)
    magnitude = torch.rand(shape, generator=g, dtype=torch.float64) + 0.5
    sign = torch.randint(0, 2, shape, generator=g) * 2 - 1
    return (magnitude * sign).to(dtype)


# --------------------------------------------------------------------------- the generator

@pytest.mark.parametrize("counter,key,expected", [
    # Random123's known-answer vectors for philox4x32_10 (kat_vectors).
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_philox_known_answers(counter, key, expected):
    assert _C.philox4x32(counter, key) == expected


def test_element_draws_are_the_philox_words_of_the_documented_layout():
    # Element e of block b is word (e // 16) % 4 of counter 16 b + e % 16
    # (dropout_keep.h); with p = 1/2 the element is kept iff its word >= 2^31.
    s = 0x0123456789ABCDEF
    n = 3 * 64 + 5
    y = ops.dropout(torch.ones(n, dtype=torch.float64), 0.5, seed(s))
    key = [s & 0xFFFFFFFF, s >> 32]
    for e in range(n):
        b, lane, word = e // 64, e % 16, (e // 16) % 4
        c = 16 * b + lane
        kept = _C.philox4x32([c & 0xFFFFFFFF, c >> 32, 0, 0], key)[word] >= 2 ** 31
        assert (y[e].item() == 2.0) == kept, e


# --------------------------------------------------------------------------- distribution

@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_drop_rate_is_p_within_five_sigma(p):
    n = 1 << 18
    y = ops.dropout(torch.ones(n), p, seed(7))
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_each_position_of_a_block_and_neighbouring_pairs_are_unbiased():
    # The 64 positions of a block come from 16 lanes x 4 words of the
    # generator: each must drop at rate p on its own, and a pair of
    # neighbours (in a lane, across words, across blocks) at p^2.
    p, blocks = 0.5, 1 << 13
    kept = (ops.dropout(torch.ones(blocks * 64), p, seed(11)) != 0).double().view(blocks, 64)
    sigma = math.sqrt(p * (1 - p) / blocks)
    assert ((kept.mean(0) - (1 - p)).abs() < 5 * sigma).all()
    for a, b in [(kept[:, :-1], kept[:, 1:]), (kept[:, :48], kept[:, 16:]), (kept[:-1], kept[1:])]:
        both = (a * b).mean().item()
        assert abs(both - (1 - p) ** 2) < 5 * math.sqrt(0.25 * 0.75 / a.numel())


def test_same_seed_same_mask_other_seed_other_mask():
    x = torch.ones(5000)
    a, b, c = ops.dropout(x, 0.5, seed(1)), ops.dropout(x, 0.5, seed(1)), ops.dropout(x, 0.5, seed(2))
    assert torch.equal(a, b)
    assert 0.4 < (a != c).double().mean().item() < 0.6  # independent masks disagree half the time


def test_the_high_half_of_the_seed_matters():
    x = torch.ones(4096)
    assert not torch.equal(ops.dropout(x, 0.5, seed(5)), ops.dropout(x, 0.5, seed(5 + (1 << 40))))


# --------------------------------------------------------------------------- values

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 63, 64, 65, 4095, 4096, 4097, 3 * 4096 + 70])
def test_values_are_the_input_scaled_or_zero(dtype, n):
    p = 0.3
    x = nonzero_input((n,), dtype)
    y = ops.dropout(x, p, seed(n))
    assert y.dtype == dtype and y.shape == x.shape
    kept = y != 0
    # Scaled in float32 (float64 for float64) and rounded once to the dtype.
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    scale = torch.tensor(1 / (1 - p), dtype=torch.float64).to(compute)
    expected = torch.where(kept, (x.to(compute) * scale).to(dtype), torch.zeros((), dtype=dtype))
    assert torch.equal(y, expected)
    # And against float64 arithmetic, to the dtype's rounding.
    ref = torch.where(kept, x.double() / (1 - p), torch.zeros((), dtype=torch.float64))
    tol = {torch.float32: 1e-6, torch.float64: 1e-15, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_draws_the_same_mask(dtype):
    x = nonzero_input((3, 1000), dtype)
    reference = ops.dropout(nonzero_input((3, 1000)), 0.4, seed(3)) != 0
    assert torch.equal(ops.dropout(x, 0.4, seed(3)) != 0, reference)


def test_shapes_and_layouts():
    x = nonzero_input((40, 70))
    y = ops.dropout(x.t(), 0.5, seed(9))  # a transposed view: the mask follows the logical order
    assert y.shape == (70, 40) and y.is_contiguous()
    assert torch.equal(y, ops.dropout(x.t().contiguous(), 0.5, seed(9)))
    assert ops.dropout(torch.empty(0, 5), 0.5, seed()).shape == (0, 5)
    scalar = ops.dropout(torch.tensor(2.0), 0.5, seed())
    assert scalar.shape == () and scalar.item() in (0.0, 4.0)


def test_p_zero_and_one():
    x = torch.tensor([1.0, -2.0, float("nan"), float("inf")])
    y0 = ops.dropout(x, 0.0, seed())
    assert torch.equal(y0[:2], x[:2]) and y0[2].isnan() and y0[3] == float("inf")
    assert y0.data_ptr() != x.data_ptr()  # an operator's output never aliases its input
    y1 = ops.dropout(x, 1.0, seed())
    assert torch.equal(y1[:2], torch.zeros(2)) and y1[2:].isnan().all()  # x * 0, as torch's dropout


def test_a_dropped_nan_stays_nan_as_in_torch():
    x = torch.full((4096,), float("nan"))
    assert ops.dropout(x, 0.5, seed()).isnan().all()
    assert torch.nn.functional.dropout(x, 0.5).isnan().all()


def test_a_p_within_2_pow_minus_33_of_one_drops_nearly_everything():
    y = ops.dropout(torch.ones(1 << 16), 1 - 2 ** -40, seed())
    assert (y != 0).sum().item() <= 1


# --------------------------------------------------------------------------- threads and levels

def test_same_mask_at_one_and_two_threads():
    x = nonzero_input((300_000,))  # several chunks per thread
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = ops.dropout(x, 0.5, seed(4))
        torch.set_num_threads(2)
        two = ops.dropout(x, 0.5, seed(4))
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)


@pytest.mark.parametrize("level", runnable_levels())
def test_same_mask_at_every_instruction_set_level(level):
    code = textwrap.dedent("""
        import sys, torch, sparsetir_torch
        out = torch.ops.sparsetir.dropout(torch.arange(1.0, 10_000.0), 0.5, torch.tensor(77))
        bf = torch.ops.sparsetir.dropout(torch.arange(1.0, 200.0).bfloat16(), 0.5, torch.tensor(77))
        sys.stdout.write(repr(((out != 0).nonzero().flatten().tolist(), (bf != 0).nonzero().flatten().tolist())))
    """)
    env = dict(os.environ, SPARSETIR_CPU_ISA=level)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    expected_out = (ops.dropout(torch.arange(1.0, 10_000.0), 0.5, seed(77)) != 0).nonzero().flatten().tolist()
    expected_bf = (ops.dropout(torch.arange(1.0, 200.0).bfloat16(), 0.5, seed(77)) != 0).nonzero().flatten().tolist()
    assert eval(result.stdout) == (expected_out, expected_bf)


# --------------------------------------------------------------------------- autograd

@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_is_the_same_mask_and_scale(dtype):
    p = 0.25
    x = nonzero_input((33, 65), dtype).requires_grad_()
    y = ops.dropout(x, p, seed(21))
    g = nonzero_input((33, 65), dtype, generator_seed=1)
    y.backward(g)
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    scale = torch.tensor(1 / (1 - p), dtype=torch.float64).to(compute)
    expected = torch.where(y != 0, (g.to(compute) * scale).to(dtype), torch.zeros((), dtype=dtype))
    assert torch.equal(x.grad, expected)


def test_gradcheck_and_gradgradcheck():
    x = torch.randn(7, 19, dtype=torch.float64, requires_grad=True)
    fn = lambda t: ops.dropout(t, 0.4, seed(8))  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


def test_opcheck():
    for dtype in (torch.float32, torch.float64):
        torch.library.opcheck(ops.dropout.default, (torch.randn(70, 3, dtype=dtype, requires_grad=True), 0.25, seed()))
    torch.library.opcheck(ops.dropout.default, (torch.randn(5), 0.0, seed()))


def test_backward_keeps_nothing_of_the_input_size():
    saved = []

    def pack(t):
        saved.append(t.numel())
        return t

    x = torch.randn(1000, 64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        st.nn.functional.dropout(x, 0.5).sum().backward()
    assert saved == [1]  # the seed
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        torch.nn.functional.dropout(x, 0.5).sum().backward()
    assert max(saved) == x.numel()  # torch's keeps a mask of the input's size


def test_under_torch_compile():
    x = nonzero_input((2000, 16)).requires_grad_()

    @torch.compile(fullgraph=True)
    def f(t):
        return st.nn.functional.dropout(t, 0.5) * 3

    y = f(x)
    kept = y != 0
    assert torch.equal(y[kept], (x * 2 * 3)[kept])
    assert 0.45 < kept.double().mean().item() < 0.55
    y.sum().backward()
    assert torch.equal(x.grad, torch.where(kept, torch.full_like(x, 6.0), torch.zeros_like(x)))


# --------------------------------------------------------------------------- the Python API

def test_functional_follows_torch_seed_and_generator():
    x = torch.randn(10_000)
    torch.manual_seed(3)
    a = st.nn.functional.dropout(x, 0.5)
    torch.manual_seed(3)
    b = st.nn.functional.dropout(x, 0.5)
    assert torch.equal(a, b)
    c = st.nn.functional.dropout(x, 0.5)
    assert not torch.equal(a, c)  # the next call draws a new seed
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert torch.equal(st.nn.functional.dropout(x, 0.5, generator=g1), st.nn.functional.dropout(x, 0.5, generator=g2))


def test_functional_identity_cases_return_the_input():
    x = torch.randn(10)
    assert st.nn.functional.dropout(x, 0.5, training=False) is x
    assert st.nn.functional.dropout(x, 0.0) is x


def test_inplace():
    x = nonzero_input((1000,))
    before = x.clone()
    y = st.nn.functional.dropout(x, 0.5, inplace=True)
    assert y is x
    kept = x != 0
    assert torch.equal(x[kept], before[kept] * 2) and 0.4 < kept.double().mean().item() < 0.6


def test_module_matches_torch_dropout_interface():
    m = st.nn.Dropout(0.2)
    assert repr(m) == "Dropout(p=0.2, inplace=False)" and m.state_dict() == {}
    x = torch.randn(64, 8)
    m.eval()
    assert m(x) is x
    m.train()
    y = torch.nn.Sequential(torch.nn.Linear(8, 8), m)(x)
    assert 0.05 < (y == 0).double().mean().item() < 0.4


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), "0.5", True])
def test_bad_p_is_named(p):
    with pytest.raises(ValueError, match="st.nn.functional.dropout: argument 'p' must be a probability"):
        st.nn.functional.dropout(torch.randn(3), p)
    with pytest.raises(ValueError, match=r"st.nn.Dropout: argument 'p'"):
        st.nn.Dropout(p)


def test_operator_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"sparsetir.dropout: argument 'p' must be a probability in \[0, 1\]"):
        ops.dropout(torch.randn(3), 1.5, seed())
    with pytest.raises(ValueError, match="sparsetir.dropout: argument 'input' must have a floating dtype"):
        ops.dropout(torch.arange(4), 0.5, seed())
    with pytest.raises(ValueError, match="sparsetir.dropout: argument 'seed' must be an int64 tensor of one element"):
        ops.dropout(torch.randn(3), 0.5, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="argument 'seed'"):
        ops.dropout(torch.randn(3), 0.5, torch.tensor(1.0))
    with pytest.raises(TypeError, match="st.nn.functional.dropout: argument 'input' must be a tensor"):
        st.nn.functional.dropout([1.0, 2.0], 0.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_dropout_runs_torchs_fused_kernel():
    x = torch.randn(10_000, device="cuda", requires_grad=True)
    y = st.nn.functional.dropout(x, 0.5)
    assert y.device == x.device and 0.45 < (y == 0).double().mean().item() < 0.55
    y.sum().backward()
    assert torch.equal(x.grad != 0, y != 0)
    with pytest.raises(ValueError, match="argument 'generator' is supported for CPU tensors only"):
        st.nn.functional.dropout(x, 0.5, generator=torch.Generator())


def test_the_benchmark_runs_and_prints_a_ratio_per_case():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "bench_dropout.py"), "--shapes", "100x7",
                           "--dtypes", "float32,bfloat16", "--threads", "1", "--rounds", "1"], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.split()[:1] == ["1"]]
    assert [(r[2], r[3]) for r in rows] == [("float32", "forward"), ("float32", "forward+backward"),
                                           ("bfloat16", "forward"), ("bfloat16", "forward+backward")]
    assert all(float(r[-1]) > 0 for r in rows)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("p", [0.5, 0.3, 0.9])
def test_every_16_bit_pattern_is_scaled_and_rounded_as_torch_rounds(dtype, p):
    # Subnormals, infinities, NaNs and the values that round up to infinity
    # included: the vector loops convert with bit operations of their own.
    x = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    y = ops.dropout(x, p, seed(3))
    kept = ops.dropout(torch.ones(x.numel()), p, seed(3)) != 0
    scale = torch.tensor(1 / (1 - p), dtype=torch.float64).float()
    expected = torch.where(kept, (x.float() * scale).to(dtype), (x.float() * 0).to(dtype))
    same = (expected.view(torch.int16) == y.view(torch.int16)) | (expected.isnan() & y.isnan())
    assert same.all(), x[~same][:8]
