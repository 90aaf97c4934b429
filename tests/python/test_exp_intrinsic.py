"""T.exp in generated C: float32 goes through the prelude's branch-free
sparsetir_expf (so loops over it vectorize); it must stay within 2 ulp of
the correctly rounded exp over the whole float range, with exact special
values (overflow to inf, underflow through the denormals to 0, NaN)."""
import numpy as np
import pytest
import torch

import sparsetir_torch as st

SCRIPT = '''
@T.prim_func
def ex(a: T.handle, b: T.handle, n: T.int32) -> None:
    I = T.sp.dense_fixed(n)
    A = T.sp.match_buffer(a, (I,), "float32")
    B = T.sp.match_buffer(b, (I,), "float32")
    with T.sp.iteration([I], "S", "e") as [i]:
        B[i] = T.exp(A[i])
'''


def run(dtype, x):
    kernel = st.compile(SCRIPT.replace('"float32"', f'"{dtype}"'))
    a = torch.from_numpy(x)
    b = torch.empty_like(a)
    kernel(a=a, b=b, n=a.numel())
    return kernel, b.numpy()


def test_float32_exp_is_within_two_ulp_everywhere():
    x = np.linspace(-110, 95, 1_000_003, dtype=np.float32)
    kernel, got = run("float32", x)
    assert "sparsetir_expf(" in kernel.source
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    normal = np.isfinite(ref) & (ref >= np.finfo(np.float32).tiny)
    ulp = np.abs(got[normal].view(np.int32).astype(np.int64) - ref[normal].view(np.int32).astype(np.int64))
    assert ulp.max() <= 2
    denormal = np.isfinite(ref) & (ref < np.finfo(np.float32).tiny)
    assert np.abs(got[denormal] - ref[denormal]).max() <= 2 * np.float32(1.4e-45)
    assert np.array_equal(np.isinf(got), np.isinf(ref))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exp_special_values(dtype):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 1000.0, -1000.0], dtype=dtype)
    _, got = run(dtype, x)
    with np.errstate(over="ignore"):
        expected = np.exp(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=2e-7 if dtype == "float32" else 1e-15)
