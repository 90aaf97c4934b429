"""T.sp.horizontal_sum(P[r, 0], lanes): the sum of a span of a local buffer.

Alone it folds the span in halves (the prelude's sparsetir_horizontal_sum);
in a vectorized loop over rows of spans, the rows merge into one vector of
sums with in-register shuffles (sparsetir_horizontal_sums). Both against
float64 sums at every level this CPU runs, both float dtypes, every span
width, rows the fast paths take and rows they leave to the per-span sums;
the script and kernel-build errors name the call and what is wrong; the
cuda target sums the span in the SIMT emulator."""
import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch.recipes import runnable_levels
from conftest import needs_nvrtc

SCRIPT = '''
@T.prim_func
def row_sums(x: T.handle, out: T.handle, m: T.int32, lanes: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, ROWS * lanes), "DTYPE")
    O = T.match_buffer(out, (m, ROWS), "DTYPE")
    for i in T.serial(m):
        P = T.alloc_buffer((ROWS, lanes), "DTYPE", scope="local")
        for r in T.unroll(ROWS):
            for l in T.serial(lanes):
                P[r, l] = X[i, r * lanes + l]
        for r in T.LOOP(ROWS):
            O[i, r] = SUM
'''


def script(rows, dtype="float32", loop="vectorized", total="T.sp.horizontal_sum(P[r, 0], lanes)"):
    return (SCRIPT.replace("ROWS", str(rows)).replace("DTYPE", dtype).replace("LOOP", loop)
            .replace("SUM", total))


def build(text, lanes, target="cpu"):
    return st.compile(st.specialize(st.parse(text), lanes=lanes), target=target)


def check_sums(kernel, rows, lanes, dtype, m=5):
    rng = np.random.default_rng(rows * 100 + lanes)
    x = torch.from_numpy(rng.uniform(-1, 1, (m, rows * lanes)).astype(dtype))
    out = torch.full((m, rows), float("nan"), dtype=x.dtype)
    kernel(x=x, out=out, m=m, lanes=lanes)
    expected = x.double().reshape(m, rows, lanes).sum(-1)
    tolerance = 1e-6 if dtype == "float32" else 1e-14
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=tolerance * lanes)


@pytest.mark.parametrize("isa", runnable_levels())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [4, 2, 8])
@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
def test_rows_of_spans_sum_in_one_vector(isa, dtype, rows, lanes):
    kernel = build(script(rows, dtype), lanes, target=f"cpu:{isa}")
    assert f"sparsetir_horizontal_sums<sparsetir_{'float' if dtype == 'float32' else 'double'}x{rows}, {lanes}, " \
           f"{lanes}>(&P[" in kernel.source
    check_sums(kernel, rows, lanes, dtype)


@pytest.mark.parametrize("isa", runnable_levels())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lanes", [1, 2, 8, 16, 64])
def test_a_span_alone_folds_in_halves(isa, dtype, lanes):
    kernel = build(script(3, dtype, loop="serial"), lanes, target=f"cpu:{isa}")
    assert f"sparsetir_horizontal_sum<{lanes}>(&P[" in kernel.source
    assert "sparsetir_horizontal_sums<" not in kernel.source
    check_sums(kernel, 3, lanes, dtype)


def test_spans_further_apart_than_their_width():
    # P is (rows, 2 * lanes): the spans are the first half of each row.
    text = script(4).replace("P = T.alloc_buffer((4, lanes), ", "P = T.alloc_buffer((4, lanes * 2), ")
    kernel = build(text, 8)
    assert "sparsetir_horizontal_sums<sparsetir_floatx4, 8, 16>" in kernel.source
    check_sums(kernel, 4, 8, "float32")


def test_a_sum_inside_an_expression_of_the_rows():
    kernel = build(script(4, total="T.sp.horizontal_sum(P[r, 0], lanes) * 2.0 + X[i, r]"), 8)
    assert "sparsetir_horizontal_sums<" in kernel.source
    x = torch.randn(3, 32, generator=torch.Generator().manual_seed(3))
    out = torch.empty(3, 4)
    kernel(x=x, out=out, m=3, lanes=8)
    torch.testing.assert_close(out, x.reshape(3, 4, 8).sum(-1) * 2 + x[:, :4], rtol=1e-5, atol=1e-5)


def test_a_float16_local_buffer_sums_in_float32():
    text = script(4, "float16").replace('"float16", scope="local"', '"float32", scope="local"')
    text = text.replace("P[r, l] = X[i, r * lanes + l]", "P[r, l] = T.Cast(\"float32\", X[i, r * lanes + l])")
    text = text.replace("O[i, r] = T.sp.horizontal_sum(P[r, 0], lanes)",
                        "O[i, r] = T.Cast(\"float16\", T.sp.horizontal_sum(P[r, 0], lanes))")
    kernel = build(text, 8)
    x = torch.randn(3, 32, generator=torch.Generator().manual_seed(5)).half()
    out = torch.empty(3, 4, dtype=torch.float16)
    kernel(x=x, out=out, m=3, lanes=8)
    torch.testing.assert_close(out, x.float().reshape(3, 4, 8).sum(-1).half(), rtol=1e-3, atol=1e-3)


def test_printed_as_parsed():
    text = script(4)
    assert st.parse(text).script().count("T.sp.horizontal_sum(P[r, 0], lanes)") == 1


@pytest.mark.parametrize("total,message", [
    ("T.sp.horizontal_sum(P[r, 0] + 1.0, lanes)",
     "T.sp.horizontal_sum sums a span of a buffer: its first argument names the span's first element"),
    ("T.sp.horizontal_sum(X[i, r], lanes)",
     "T.sp.horizontal_sum sums a span of a local buffer .*; 'X' is in scope \"global\""),
    ("T.sp.horizontal_sum(P[r, 0], 12)", "T.sp.horizontal_sum: the lanes must be a constant power of two from 1 to 64"),
    ("T.sp.horizontal_sum(P[r, 0], 128)", "the lanes must be a constant power of two from 1 to 64"),
    ("T.sp.horizontal_sum(P[r, 0], m * 2)", "the lanes must be a constant power of two"),
    ("T.sp.horizontal_sum(P[r, 0])", "T.sp.horizontal_sum takes 2 arguments"),
])
def test_script_errors_name_the_call(total, message):
    with pytest.raises(st.ScriptError, match=message):
        st.parse(script(4, total=total))


def test_integer_spans_are_refused():
    text = script(4, "int32").replace("DTYPE", "int32")
    with pytest.raises(st.ScriptError, match="T.sp.horizontal_sum sums floating-point elements; 'P' holds int32"):
        st.parse(text)


def test_lanes_must_be_specialized_and_fit_the_row():
    # P of a constant size, the span's lanes a parameter left unspecialized.
    text = script(4).replace("P = T.alloc_buffer((4, lanes), ", "P = T.alloc_buffer((4, 16), ")
    with pytest.raises(st.ScheduleError, match=r"T.sp.horizontal_sum\(P\[...\], lanes\): the lanes must be a power "
                                               "of two from 1 to 64 when the kernel is built; specialize"):
        st.compile(text)
    with pytest.raises(st.ScheduleError, match="the lanes must be a power of two"):
        build(text, 12)
    # A span of 8 from element 4 of an 8-element row leaves the row.
    text = script(4, total="T.sp.horizontal_sum(P[r, 4], lanes)")
    with pytest.raises(st.ScheduleError, match=r"a span of 8 elements from 4 leaves the last axis of 'P' \(8 "
                                               "elements\\)"):
        build(text, 8)


def cuda_script():
    return script(4).replace("for i in T.serial(m):", 'for i in T.thread_binding(m, thread="blockIdx.x"):')


def test_cuda_target_sums_the_span():
    kernel = build(cuda_script(), 8, target="cuda")
    assert "sparsetir_horizontal_sum<8>(&P[" in kernel.source
    check_sums(kernel, 4, 8, "float32")


@needs_nvrtc
def test_cuda_kernel_compiles_with_nvrtc():
    """NVRTC (no GPU needed) compiles the prelude's sum; ptxas, where
    installed, accepts the PTX."""
    import shutil

    from sparsetir_torch.cuda_check import ptxas_report

    kernel = build(cuda_script(), 16, target="cuda")
    ptx = kernel.ptx("sm_90")
    assert ".entry" in ptx
    ptxas = shutil.which("ptxas")
    if ptxas:  # raises with ptxas's log if it refuses the PTX
        assert ptxas_report(ptxas, ptx.encode(), 90)["spills"] == 0
