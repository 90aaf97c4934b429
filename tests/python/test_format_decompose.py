"""format_decompose: composable formats for a stage-I computation.

The design document's example (a CSR SpMM rewritten into BSR 4, 16 and 32)
must produce its documented structure; decomposed kernels, preprocess and
compute run separately, must match a float64 dense reference; bad rules
and computations get errors naming what is wrong.
"""
import os
import re

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch.kernels import kernel_script

from conftest import REPO_ROOT, SCRIPTS_DIR

CSRMM = os.path.join(REPO_ROOT, "kernels", "csrmm.py")
SDDMM = os.path.join(REPO_ROOT, "kernels", "sddmm.py")
ELL_ROWS = os.path.join(REPO_ROOT, "kernels", "formats", "ell_rows.py")
CSR_PART = os.path.join(REPO_ROOT, "kernels", "formats", "csr_part.py")
EXPECTED_RFC = os.path.join(os.path.dirname(__file__), "data", "bsr_rewrite_with_preprocess.py")


def bsr_format(block_size: int) -> str:
    """The design document's bsr(block_size) format function."""
    return f'''
@T.prim_func
def func(a: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32, nnz: T.int32) -> None:
    IO = T.sp.dense_fixed(m)
    JO = T.sp.compressed_varied(IO, (n, nnz), (indptr, indices), "int32")
    II = T.sp.dense_fixed({block_size})
    JI = T.sp.dense_fixed({block_size})
    A = T.sp.match_buffer(a, (IO, JO, II, JI), "float32")
    pass
'''


def bsr_rule(b: int) -> st.FormatRewriteRule:
    return st.FormatRewriteRule(
        str(b), bsr_format(b), ["A"], {"I": ["IO", "II"], "J": ["JO", "JI"]},
        lambda i, j: (i // b, j // b, i % b, j % b),
        lambda io, jo, ii, ji: (io * b + ii, jo * b + ji))


def iterations(f):
    """(name, [iterators], roles, attrs text) of every top-level iteration, in order."""
    pattern = re.compile(r'with T\.sp\.iteration\(\[([^\]]*)\], "([SR]+)", "(\w+)"\)[^\n]*\n(\s+T\.sp\.iteration_attr\(([^\n]*)\))?')
    return [(m.group(3), [s.strip() for s in m.group(1).split(",")], m.group(2), m.group(5) or "")
            for m in pattern.finditer(f.script())]


# --------------------------------------------------------------------------- the design document's example


def test_rfc_example_has_the_documented_structure():
    g = st.format_decompose(st.parse(CSRMM), [bsr_rule(b) for b in (4, 16, 32)])
    its = iterations(g)
    preprocess = [it for it in its if '"preprocess": True' in it[3]]
    compute = [it for it in its if it[0].startswith("csrmm_") and it[0] != "csrmm_init"]
    assert [it[0] for it in preprocess] == ["rewrite_A_4", "rewrite_A_16", "rewrite_A_32"]
    for (name, iters, roles, _), b in zip(preprocess, (4, 16, 32)):
        assert iters == [f"IO_{b}", f"JO_{b}", f"II_{b}", f"JI_{b}"] and roles == "SSSS"
    assert [it[0] for it in compute] == ["csrmm_4", "csrmm_16", "csrmm_32"]
    for (name, iters, roles, attrs), b in zip(compute, (4, 16, 32)):
        assert iters == [f"IO_{b}", f"II_{b}", f"JO_{b}", f"JI_{b}", "K"] and roles == "SSRRS"
        assert '"accumulate": True' in attrs
    # The preprocess runs first; one init before the copies that accumulate.
    assert [it[0] for it in its] == ["rewrite_A_4", "rewrite_A_16", "rewrite_A_32", "csrmm_init",
                                     "csrmm_4", "csrmm_16", "csrmm_32"]
    names = [p for p, _ in g.params]
    for b in (4, 16, 32):
        assert names[names.index(f"a_{b}"):names.index(f"a_{b}") + 6] == [
            f"a_{b}", f"indptr_{b}", f"indices_{b}", f"m_{b}", f"n_{b}", f"nnz_{b}"]
    assert '"composable": 1' in g.script()
    assert "A_16[io_16, jo_16, ii_16, ji_16] = T.Select(io_16 * 16 + ii_16 < m" in g.script()


def test_rfc_example_matches_the_reviewed_ir():
    g = st.format_decompose(st.parse(CSRMM), [bsr_rule(b) for b in (4, 16, 32)])
    with open(EXPECTED_RFC, encoding="utf-8") as f:
        expected = st.parse(f.read(), EXPECTED_RFC)
    assert g == expected, g.script()


def test_decomposed_ir_round_trips_through_the_parser():
    for rules in ([bsr_rule(4)], [st.FormatRewriteRule("ell", ELL_ROWS)]):
        g = st.format_decompose(st.parse(CSRMM), rules)
        assert st.parse(g.script()) == g
        for part in (st.preprocess_part(g), st.compute_part(g), st.compute_part(g, with_init=False)):
            assert st.parse(part.script()) == part


def test_single_script_rule_equals_the_class_form():
    single = st.FormatRewriteRule("4", os.path.join(SCRIPTS_DIR, "bsr_format_attr.py"), params={"block_size": 4})
    script = st.FormatRewriteRule(
        "4", os.path.join(SCRIPTS_DIR, "bsr_format.py"), ["A"], {"I": ["IO", "II"], "J": ["JO", "JI"]},
        lambda i, j: (i // 4, j // 4, i % 4, j % 4), lambda io, jo, ii, ji: (io * 4 + ii, jo * 4 + ji),
        params={"block_size": 4})  # the document's closure form: block_size becomes a parameter
    a = st.format_decompose(st.parse(CSRMM), [single])
    b = st.format_decompose(st.parse(CSRMM), [script])
    assert iterations(a) == iterations(b)
    assert a.script().split("\n", 1)[1] == b.script().split("\n", 1)[1]


def test_symbolic_block_size_stays_a_parameter():
    rule = st.FormatRewriteRule("b", os.path.join(SCRIPTS_DIR, "bsr_format_attr.py"))
    g = st.format_decompose(st.parse(CSRMM), [rule])
    assert ("block_size_b", "int32") in g.params
    assert "io_b * block_size_b + ii_b" in g.script()


def test_parts():
    g = st.format_decompose(st.parse(CSRMM), [bsr_rule(4)])
    pre, comp = st.preprocess_part(g), st.compute_part(g)
    assert [it[0] for it in iterations(pre)] == ["rewrite_A_4"]
    assert [it[0] for it in iterations(comp)] == ["csrmm_init", "csrmm_4"]
    assert [it[0] for it in iterations(st.compute_part(g, with_init=False))] == ["csrmm_4"]
    # The compute part needs the new format only, not the CSR it came from.
    names = [p for p, _ in comp.params]
    assert "a" not in names and "indptr" not in names and "a_4" in names
    assert [p for p, _ in pre.params if p in ("b", "c", "feat_size")] == []


# --------------------------------------------------------------------------- numbers


def random_csr(rng, m, n, density, empty_rows=()):
    dense = np.where(rng.random((m, n)) < density, rng.uniform(0.25, 1.0, (m, n)) * rng.choice([-1, 1], (m, n)), 0.0)
    dense[list(empty_rows), :] = 0.0
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m))])
    return dense, indptr.astype(np.int32), cols.astype(np.int32), dense[rows, cols].astype(np.float32)


def run_bsr_decomposition(dense, indptr, indices, values, b, K, rng):
    m, n = dense.shape
    g = st.format_decompose(st.parse(CSRMM), [bsr_rule(b)])
    ip, ix, v = torch.from_numpy(indptr), torch.from_numpy(indices), torch.from_numpy(values)
    bip, bix, _ = torch.ops.sparsetir._csr_to_bsr(ip, ix, n, b, b)
    mb, nb, nnzb = bip.numel() - 1, (n + b - 1) // b, bix.numel()
    fmt = dict(a_4=None)
    blocks = torch.full((nnzb, b, b), float("nan"))  # the preprocess must write every slot
    fmt = {f"a_{b}": blocks, f"indptr_{b}": bip, f"indices_{b}": bix, f"m_{b}": mb, f"n_{b}": nb, f"nnz_{b}": nnzb}
    st.compile(st.preprocess_part(g))(a=v, indptr=ip, indices=ix, m=m, n=n, nnz=v.numel(), **fmt)
    B = torch.from_numpy(rng.standard_normal((n, K)).astype(np.float32))
    C = torch.full((m, K), float("nan"))
    st.compile(st.compute_part(g))(b=B, c=C, m=m, n=n, feat_size=K, **fmt)
    return blocks, C, B


@pytest.mark.parametrize("b", [2, 3, 4])
@pytest.mark.parametrize("shape,density,empty", [((30, 22), 0.15, (3, 4)), ((16, 16), 0.3, ()), ((1, 1), 1.0, ()),
                                                 ((9, 13), 0.0, ()), ((7, 40), 0.5, (0,))])
def test_bsr_decomposition_matches_dense(b, shape, density, empty):
    rng = np.random.default_rng(hash((b, shape)) % 2**32)
    dense, indptr, indices, values = random_csr(rng, *shape, density, [r for r in empty if r < shape[0]])
    blocks, C, B = run_bsr_decomposition(dense, indptr, indices, values, b, 16, rng)
    assert not torch.isnan(blocks).any()
    # Every stored value landed in its block, and the blocks hold nothing else.
    assert float(blocks.abs().sum()) == pytest.approx(float(np.abs(values).sum()), rel=1e-6)
    expected = dense @ B.double().numpy()
    np.testing.assert_allclose(C.double().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_two_formats_share_one_result():
    """BSR(2) takes the first rows' non-zeros, a CSR part the rest; the
    copies accumulate into one output after one init."""
    rng = np.random.default_rng(7)
    m, n, K, split = 21, 18, 8, 10
    dense, indptr, indices, values = random_csr(rng, m, n, 0.3, (12,))
    g = st.format_decompose(st.parse(CSRMM), [bsr_rule(2), st.FormatRewriteRule("rest", CSR_PART)])
    ip, ix, v = torch.from_numpy(indptr), torch.from_numpy(indices), torch.from_numpy(values)
    top = dense.copy()
    top[split:] = 0
    _, tip, tix, _ = random_csr_from(top)
    bip, bix, _ = torch.ops.sparsetir._csr_to_bsr(torch.from_numpy(tip), torch.from_numpy(tix), n, 2, 2)
    rest = dense.copy()
    rest[:split] = 0
    _, rip, rix, _ = random_csr_from(rest)
    args = dict(a_2=torch.zeros(bix.numel(), 2, 2), indptr_2=bip, indices_2=bix, m_2=bip.numel() - 1, n_2=n // 2,
                nnz_2=bix.numel(), a_rest=torch.zeros(rix.size, dtype=torch.float32), indptr_rest=torch.from_numpy(rip),
                indices_rest=torch.from_numpy(rix), nnz_rest=int(rix.size))
    pre = st.preprocess_part(g)
    st.compile(pre)(**{p: x for p, x in dict(a=v, indptr=ip, indices=ix, m=m, n=n, nnz=v.numel(), **args).items()
                       if p in dict(pre.params)})
    B = torch.from_numpy(rng.standard_normal((n, K)).astype(np.float32))
    C = torch.full((m, K), float("nan"))
    comp = st.compute_part(g)
    st.compile(comp)(**{p: x for p, x in dict(b=B, c=C, m=m, n=n, feat_size=K, **args).items()
                        if p in dict(comp.params)})
    np.testing.assert_allclose(C.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-5)


def random_csr_from(dense):
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return dense, indptr.astype(np.int32), cols.astype(np.int32), dense[rows, cols].astype(np.float32)


def ell_buckets(indptr, indices, values, width):
    """Rows of length in (width/2, width] as one ELL bucket (padding: the row's
    last column, value 0), the way the runtime's hyb conversion stores them."""
    lengths = np.diff(indptr)
    rows = np.nonzero((lengths > width // 2) & (lengths <= width))[0]
    idx = np.zeros((rows.size, width), np.int32)
    val = np.zeros((rows.size, width), np.float32)
    for t, r in enumerate(rows):
        s, e = indptr[r], indptr[r + 1]
        idx[t, :e - s], idx[t, e - s:] = indices[s:e], indices[e - 1]
        val[t, :e - s] = values[s:e]
    return rows.astype(np.int32), idx, val


def test_ell_buckets_with_row_maps_match_dense():
    rng = np.random.default_rng(3)
    m, n, K = 40, 33, 12
    dense, indptr, indices, values = random_csr(rng, m, n, 0.2, (5, 6))
    dense[17, :] = rng.uniform(0.5, 1.0, n)  # a dense row: width 64
    dense, indptr, indices, values = random_csr_from(dense)
    g = st.format_decompose(st.parse(CSRMM), [st.FormatRewriteRule("ell", ELL_ROWS)])
    comp = st.compute_part(g, with_init=False)
    assert '"atomic": True' in comp.script()  # row maps may repeat a row
    kernel = st.compile(comp)
    B = torch.from_numpy(rng.standard_normal((n, K)).astype(np.float32))
    C = torch.zeros(m, K)
    covered = 0
    for width in (1, 2, 4, 8, 16, 32, 64):
        rows, idx, val = ell_buckets(indptr, indices, values, width)
        covered += rows.size
        kernel(b=B, c=C, m=m, n=n, feat_size=K, a_ell=torch.from_numpy(val).view(-1),
               row_map_ell=torch.from_numpy(rows), indices_ell=torch.from_numpy(idx).view(-1),
               rows_ell=rows.size, width_ell=width)
    assert covered == int((np.diff(indptr) > 0).sum())
    np.testing.assert_allclose(C.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-5)


ELL_XY = '''
@T.prim_func
def ell_xy(x: T.handle, y: T.handle, row_map: T.handle, indices: T.handle, rows: T.int32, m: T.int32,
           n: T.int32, width: T.int32) -> None:
    O = T.sp.dense_fixed(rows)
    I = T.sp.compressed_fixed(O, (m, 1), row_map, "int32")
    J = T.sp.compressed_fixed(I, (n, width), indices, "int32")
    X = T.sp.match_buffer(x, (O, I, J), "float32")
    Y = T.sp.match_buffer(y, (O, I, J), "float32")
    T.func_attr({"buffer_to_rewrite": ["X", "Y"], "iterator_map": {"I": ["O", "I"], "J": ["J"]},
                 "idx_map": (lambda i, j: (0, i, j)), "inv_idx_map": (lambda o, i, j: (i, j))})
    pass
'''


def test_sddmm_with_its_output_in_the_format():
    """SDDMM reads X and writes Y over the same pattern: both move to the ELL
    bucket; each copy keeps its own T.init() and nothing is copied into Y."""
    rng = np.random.default_rng(11)
    m, n, K, width = 25, 19, 8, 8
    dense, indptr, indices, values = random_csr(rng, m, n, 0.25, (2,))
    g = st.format_decompose(st.parse(SDDMM), [st.FormatRewriteRule("e", ELL_XY)])
    its = iterations(g)
    assert [it[0] for it in its] == ["rewrite_X_e", "sddmm_e"]
    assert "with T.init():" in g.script() and "accumulate" not in g.script()
    comp = st.compute_part(g)
    lengths = np.diff(indptr)
    rows = np.nonzero((lengths > 0) & (lengths <= width))[0].astype(np.int32)
    idx = np.zeros((rows.size, width), np.int32)
    xv = np.zeros((rows.size, width), np.float32)
    for t, r in enumerate(rows):
        s, e = indptr[r], indptr[r + 1]
        idx[t, :e - s], idx[t, e - s:] = indices[s:e], indices[e - 1]
        xv[t, :e - s] = values[s:e]
    A = rng.standard_normal((m, K)).astype(np.float32)
    Bm = rng.standard_normal((n, K)).astype(np.float32)
    y = torch.full((rows.size * width,), float("nan"))
    st.compile(comp)(a=torch.from_numpy(A), b=torch.from_numpy(Bm), m=m, n=n, feat_size=K,
                     x_e=torch.from_numpy(xv).view(-1), y_e=y, row_map_e=torch.from_numpy(rows),
                     indices_e=torch.from_numpy(idx).view(-1), rows_e=rows.size, width_e=width)
    expected = (A.astype(np.float64) @ Bm.astype(np.float64).T)[rows[:, None], idx] * xv
    np.testing.assert_allclose(y.view(rows.size, width).double().numpy(), expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- errors


def format_with_attrs(attrs: str) -> str:
    return f'''
@T.prim_func
def fmt(a: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32, nnz: T.int32) -> None:
    I2 = T.sp.dense_fixed(m)
    J2 = T.sp.compressed_varied(I2, (n, nnz), (indptr, indices), "int32")
    A = T.sp.match_buffer(a, (I2, J2), "float32")
    T.func_attr({{{attrs}}})
    pass
'''


GOOD = ('"buffer_to_rewrite": "A", "iterator_map": {"I": ["I2"], "J": ["J2"]}, '
        '"idx_map": (lambda i, j: (i, j)), "inv_idx_map": (lambda i, j: (i, j))')


@pytest.mark.parametrize("attrs,message", [
    ('"iterator_map": {"I": ["I2"], "J": ["J2"]}', 'has no "buffer_to_rewrite"'),
    (GOOD.replace('["J2"]', '["J3"]'), "names 'J3', which the format does not declare"),
    (GOOD.replace('"J": ["J2"]', '"J": ["I2"]'), "maps format iterator 'I2' twice"),
    (GOOD.replace(', "J": ["J2"]', ''), "maps no original iterator to format iterator 'J2' of buffer 'A'"),
    (GOOD.replace('"inv_idx_map": (lambda i, j: (i, j))', '"inv_idx_map": (lambda i, j: (i,))'),
     '"inv_idx_map" must map 2 coordinates to 2, but it maps 2 to 1'),
    (GOOD.replace('(lambda i, j: (i, j)), "inv', '(lambda i: (i, i)), "inv'), '"idx_map" must map'),
    (GOOD.replace('"A", "iterator', '"Z", "iterator'), "rewrites buffer 'Z', which 'csrmm' does not declare"),
    (GOOD.replace('"idx_map": (lambda i, j: (i, j))', '"idx_map": 3'), '"idx_map" must be a lambda'),
])
def test_bad_rules(attrs, message):
    rule = st.FormatRewriteRule("r", format_with_attrs(attrs))
    with pytest.raises(st.ScriptError) as e:
        st.format_decompose(st.parse(CSRMM), [rule])
    assert message in str(e.value)
    assert "format rewrite rule 'fmt'" in str(e.value) or "format_decompose" in str(e.value)


def test_bad_rule_name_and_duplicate_names():
    with pytest.raises(st.ScriptError, match="must be letters, digits and '_'"):
        st.format_decompose(st.parse(CSRMM), [st.FormatRewriteRule("a-b", format_with_attrs(GOOD))])
    with pytest.raises(st.ScriptError, match="must be letters, digits and '_'"):  # would end a generated comment
        st.format_decompose(st.parse(CSRMM), [st.FormatRewriteRule("a\n//", format_with_attrs(GOOD))])
    with pytest.raises(st.ScriptError, match="is already a parameter"):
        st.format_decompose(st.parse(CSRMM), [st.FormatRewriteRule("r", format_with_attrs(GOOD))] * 2)


def test_computation_the_rule_cannot_rewrite():
    lookup = st.parse(os.path.join(SCRIPTS_DIR, "formats", "csr_lookup_dense.py"))
    with pytest.raises(st.ScriptError, match="reads 'A' but does not iterate its axis 'J'"):
        st.format_decompose(lookup, [st.FormatRewriteRule("r", format_with_attrs(GOOD))])
    with pytest.raises(st.ScriptError, match="expects a stage I function"):
        st.format_decompose(st.lower_sparse_iter(st.parse(CSRMM)), [st.FormatRewriteRule("r", format_with_attrs(GOOD))])
    with pytest.raises(st.ScriptError, match="needs at least one format rewrite rule"):
        st.format_decompose(st.parse(CSRMM), [])


def test_rule_constructor_errors():
    with pytest.raises(ValueError, match="together, or none of them"):
        st.FormatRewriteRule("r", bsr_format(4), ["A"])
    with pytest.raises(TypeError, match="arithmetic on its coordinates"):
        st.FormatRewriteRule("r", bsr_format(4), ["A"], {"I": ["IO", "II"], "J": ["JO", "JI"]},
                             lambda i, j: (i // 4, j // 4, i % 4, j % 4),
                             lambda io, jo, ii, ji: (io * 4 + ii if io else 0, jo))
    with pytest.raises(TypeError, match="combine coordinates with ints only"):
        st.FormatRewriteRule("r", bsr_format(4), ["A"], {"I": ["IO", "II"], "J": ["JO", "JI"]},
                             lambda i, j: (i * 0.5, j, i, j), lambda io, jo, ii, ji: (io, jo))
    with pytest.raises(TypeError, match="use // and %, not /"):
        st.FormatRewriteRule("r", bsr_format(4), ["A"], {"I": ["IO", "II"], "J": ["JO", "JI"]},
                             lambda i, j: (i / 4, j, i, j), lambda io, jo, ii, ji: (io, jo))
    with pytest.raises(TypeError, match="rules must be FormatRewriteRule objects"):
        st.format_decompose(st.parse(CSRMM), ["bsr"])


# --------------------------------------------------------------------------- atomics


def split_bucket(indptr, indices, values, width):
    """Every non-empty row in pieces of `width` slots (a long row gives several
    ELL rows with the same row map), as the hyb conversion splits long rows."""
    rows, idx, val = [], [], []
    for r in range(len(indptr) - 1):
        s, e = int(indptr[r]), int(indptr[r + 1])
        for start in range(s, e, width):
            stop = min(start + width, e)
            rows.append(r)
            idx.append(list(indices[start:stop]) + [indices[stop - 1]] * (width - (stop - start)))
            val.append(list(values[start:stop]) + [0.0] * (width - (stop - start)))
    return (np.array(rows, np.int32), np.array(idx, np.int32).reshape(-1, width),
            np.array(val, np.float32).reshape(-1, width))


@pytest.mark.parametrize("threads", [1, 2])
def test_split_rows_in_parallel_add_atomically(threads):
    rng = np.random.default_rng(5)
    m, n, K, width = 12, 300, 16, 4
    dense, indptr, indices, values = random_csr(rng, m, n, 0.4, (3,))
    rows, idx, val = split_bucket(indptr, indices, values, width)
    assert len(set(rows.tolist())) < rows.size  # rows do repeat
    comp = st.compute_part(st.format_decompose(st.parse(CSRMM), [st.FormatRewriteRule("ell", ELL_ROWS)]),
                           with_init=False)
    sch = st.Schedule(comp)
    sch.specialize(feat_size=K, width_ell=width)
    sch.lower_sparse_iter()
    assert "T.atomic_add(C[" in sch.mod.script()
    o, _, _, _ = sch.get_loops("csrmm_ell")
    sch.parallel(o)
    kernel = st.compile(sch)
    assert "sparsetir_atomic_add(&C[" in kernel.source
    B = torch.from_numpy(rng.standard_normal((n, K)).astype(np.float32))
    C = torch.zeros(m, K)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        kernel(b=B, c=C, m=m, n=n, feat_size=K, a_ell=torch.from_numpy(val).view(-1),
               row_map_ell=torch.from_numpy(rows), indices_ell=torch.from_numpy(idx).view(-1),
               rows_ell=rows.size, width_ell=width)
    finally:
        torch.set_num_threads(previous)
    np.testing.assert_allclose(C.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-4)


ATOMIC_STORE = '''
@T.prim_func
def scale(a: T.handle, c: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32, nnz: T.int32) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    C = T.sp.match_buffer(c, (I, J), "float32")
    with T.sp.iteration([I, J], "SS", "scale") as [i, j]:
        T.sp.iteration_attr({"atomic": True})
        C[i, j] = STORE
'''


def test_atomic_lowering_of_an_accumulation_in_either_order():
    for store, addend in (("C[i, j] + A[i, j] * 2.0", "A[i, j] * T.float32(2.0)"),
                          ("A[i, j] * 2.0 + C[i, j]", "A[i, j] * T.float32(2.0)")):
        f = st.parse(ATOMIC_STORE.replace("STORE", store))
        lowered = st.lower_sparse_iter(f)
        assert "T.atomic_add(C[" in lowered.script()
        assert st.parse(lowered.script()) == lowered  # T.atomic_add prints and parses back
        assert f"T.atomic_add(C[i, j], {addend})" in st._C.lower_atomic(f).script()


def test_atomic_iteration_errors():
    with pytest.raises(st.ScriptError, match="is atomic, but its store into 'C' is not a floating-point accumulation"):
        st.lower_sparse_iter(st.parse(ATOMIC_STORE.replace("STORE", "A[i, j] * 2.0")))
    with pytest.raises(st.ScriptError, match=r"T.atomic_add\(buffer\[indices\], value\)"):
        st.parse(ATOMIC_STORE.replace("        C[i, j] = STORE", "        T.atomic_add(C)"))
    with pytest.raises(st.ScriptError, match="dtype mismatch: adding a int32 value"):
        st.parse(ATOMIC_STORE.replace("        C[i, j] = STORE", "        T.atomic_add(C[i, j], i)"))


# --------------------------------------------------------------------------- sparse attention


def exact_width_rule(name: str, width: int) -> st.FormatRewriteRule:
    """ELL rows holding the attention probabilities P, for rows of exactly
    `width` non-zeros: no padding, so the softmax sees no extra slot."""
    script = kernel_script("formats/ell_rows").replace('"buffer_to_rewrite": "A"', '"buffer_to_rewrite": "P"')
    script = script.replace("A = T.sp.match_buffer(a, (O, I, J)", "P = T.sp.match_buffer(a, (O, I, J)")
    return st.FormatRewriteRule(name, script, params={"width": width})


@pytest.mark.parametrize("threads", [1, 2])
def test_sparse_attention_decomposed_by_row_length_matches_csr(threads):
    """Sparse attention decomposed into ELL buckets of exact row lengths
    (format_decompose with disjoint=True: each bucket owns its rows, the
    row-wise max, exp, sum and division included) equals the CSR operator
    and a float64 dense softmax; rows without non-zeros stay 0."""
    rng = np.random.default_rng(5)
    m, n, D, DV = 23, 17, 8, 5
    lengths = rng.choice([0, 1, 3, 5, n], size=m)  # n: a dense row
    lengths[0], lengths[1] = 0, n
    rows = [np.sort(rng.choice(n, size=w, replace=False)) for w in lengths]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate(rows).astype(np.int32)
    q = torch.from_numpy(rng.standard_normal((m, D)).astype(np.float32))
    k = torch.from_numpy(rng.standard_normal((n, D)).astype(np.float32))
    v = torch.from_numpy(rng.standard_normal((n, DV)).astype(np.float32))

    widths = sorted({int(w) for w in lengths if w > 0})
    rules = [exact_width_rule(f"w{w}", w) for w in widths]
    comp = st.compute_part(st.format_decompose(st.parse(kernel_script("sparse_attention")), rules, disjoint=True))
    sch = st.Schedule(comp)
    if threads > 1:
        for w in widths:
            sch.parallel(sch.get_loops(f"scores_w{w}")[0])
    kernel = st.compile(sch)
    out = torch.zeros(m, DV)  # rows in no bucket (empty rows) keep these zeros
    args = dict(q=q, k=k, v=v, out=out, row_max=torch.empty(m), row_sum=torch.empty(m), m=m, n=n, head_dim=D,
                value_dim=DV)
    for w in widths:
        members = np.nonzero(lengths == w)[0].astype(np.int32)
        ell = np.stack([rows[r] for r in members]).astype(np.int32)
        args.update({f"a_w{w}": torch.empty(members.size * w), f"row_map_w{w}": torch.from_numpy(members),
                     f"indices_w{w}": torch.from_numpy(ell).reshape(-1), f"rows_w{w}": members.size})
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        kernel(**args)
    finally:
        torch.set_num_threads(previous)

    csr = torch.ops.sparsetir.sparse_attention(torch.from_numpy(indptr), torch.from_numpy(indices), q, k, v, 1.0)
    torch.testing.assert_close(out, csr, rtol=1e-5, atol=1e-6)
    scores = q.double() @ k.double().T
    allowed = torch.zeros(m, n, dtype=torch.bool)
    for r, cols in enumerate(rows):
        allowed[r, torch.from_numpy(cols).long()] = True
    probs = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=1).nan_to_num(0.0)
    torch.testing.assert_close(out.double(), probs @ v.double(), rtol=1e-5, atol=1e-6)
    assert out[lengths == 0].abs().max() == 0
