"""The script language: parse / print round trips at every stage, lowering, and error reporting."""
import glob
import os
import re

import pytest

import sparsetir_torch as st
from conftest import MUST_FAIL_DIR, SCRIPTS_DIR, all_script_names, read_script

SCRIPTS = all_script_names()



def read(name):
    with open(os.path.join(SCRIPTS_DIR, name), encoding="utf-8") as f:
        return f.read()


def test_scripts_are_found():
    assert "csrmm.py" in SCRIPTS and "sddmm.py" in SCRIPTS and "bsrmm_stage_i.py" in SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_stage_i_round_trip(name):
    text = read(name)
    f = st.parse(text)
    assert f.stage == 1
    printed = f.script()
    again = st.parse(printed)
    assert again.script() == printed  # print(parse(print(parse(x)))) == print(parse(x))
    assert again == f and hash(again) == hash(f)
    assert again.name == f.name
    assert re.search(rf"^def {re.escape(f.name)}\(", text, re.M), "the function name is the def name"


@pytest.mark.parametrize("name", SCRIPTS)
def test_stage_ii_round_trip(name):
    f2 = st.lower_sparse_iter(st.parse(read(name)))
    assert f2.stage == 2
    printed = f2.script()
    again = st.parse(printed)
    assert again.stage == 2
    assert again.script() == printed
    assert again == f2


@pytest.mark.parametrize(
    "name",
    SCRIPTS,
)
def test_stage_iii_round_trip(name):
    f3 = st.lower_sparse_buffer(st.lower_sparse_iter(st.parse(read(name))))
    assert f3.stage == 3
    printed = f3.script()
    again = st.parse(printed)
    assert again.stage == 3
    assert again.script() == printed
    assert again == f3


def test_every_script_lowers_to_stage_iii():
    """Lowering itself works for every script (only the printed text is affected by the bug above)."""
    for name in SCRIPTS:
        f3 = st.lower_sparse_buffer(st.lower_sparse_iter(st.parse(read(name))))
        assert f3.stage == 3 and f3.name == st.parse(read(name)).name


def test_parse_accepts_a_path():
    path = os.path.join(SCRIPTS_DIR, "csrmm.py")
    assert st.parse(path) == st.parse(read("csrmm.py"))


def test_parse_rejects_non_text():
    with pytest.raises(TypeError):
        st.parse(b"@T.prim_func")


def test_structural_equality():
    csrmm, sddmm = st.parse(read("csrmm.py")), st.parse(read("sddmm.py"))
    assert csrmm == st.parse(read("csrmm.py"))
    assert csrmm != sddmm
    assert csrmm != st.parse(read_script("csrmm", "float64"))
    assert csrmm != st.parse(read_script("csrmm", "float32", "int64"))
    assert csrmm != st.lower_sparse_iter(csrmm)
    # whitespace and comments do not matter
    assert csrmm == st.parse("# a comment\n" + read("csrmm.py").replace("C[i, k] + A", "C[i, k]  +  A"))


def test_equality_with_other_types_is_false():
    f = st.parse(read("csrmm.py"))
    assert not (f == None)  # noqa: E711
    assert f != 3
    assert f in [None, f]


def test_dtype_substitution_reaches_the_printed_function():
    f = st.parse(read_script("csrmm", "bfloat16", "int64"))
    printed = f.script()
    assert '"bfloat16"' in printed and '"float32"' not in printed
    assert re.search(r'T\.sp\.compressed_varied\(I, \(n, nnz\), \(indptr, indices\), "int64"\)', printed), printed


# --------------------------------------------------------------------------- lowering content


def test_bsrmm_stage_ii_has_the_rfc_structure():
    f2 = st.lower_sparse_iter(st.parse(read("bsrmm_stage_i.py")))
    s = f2.script()
    assert "J_indptr[i + 1] - J_indptr[i]" in s
    assert re.search(r"for j in T\.serial\(J_indptr\[i \+ 1\] - J_indptr\[i\]\)", s), s
    assert "J_indices[i, j]" in s
    assert "T.assume_buffer_domain(J_indptr, [0, nnzb])" in s
    assert "T.assume_buffer_domain(J_indices, [0, mb - 1])" in s
    assert "T.sp.iteration" not in s  # the sparse iteration became loops
    assert '"sparse_tir_level": 1' in s


def test_csrmm_stage_iii_is_flat():
    f3 = st.lower_sparse_buffer(st.lower_sparse_iter(st.parse(read("csrmm.py"))))
    s = f3.script()
    assert "T.sp." not in s
    assert 'A = T.match_buffer(a, (nnz,), "float32")' in s
    assert 'J_indptr = T.match_buffer(indptr, (m + 1,), "int32")' in s
    assert "J_indices[J_indptr[i] + j]" in s


def test_lower_sparse_buffer_rejects_stage_i():
    f = st.parse(read("csrmm.py"))
    with pytest.raises(ValueError, match="stage II"):
        st.lower_sparse_buffer(f)


def test_lower_sparse_iter_rejects_later_stages():
    f2 = st.lower_sparse_iter(st.parse(read("csrmm.py")))
    with pytest.raises(ValueError, match="stage I"):
        st.lower_sparse_iter(f2)
    with pytest.raises(ValueError):
        st.lower_sparse_iter(st.lower_sparse_buffer(f2))
    with pytest.raises(ValueError):
        st.lower_sparse_buffer(st.lower_sparse_buffer(f2))


# --------------------------------------------------------------------------- errors


def _locate(text, needle):
    """1-based (line, column) of the first occurrence of needle."""
    offset = text.index(needle)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def _check_excerpt(message, text, line, column):
    source_line = text.splitlines()[line - 1]
    lines = message.splitlines()
    excerpt = [i for i, l in enumerate(lines) if re.match(rf"^\s*{line} \| ", l)]
    assert excerpt, f"no excerpt of line {line} in:\n{message}"
    i = excerpt[0]
    assert lines[i].endswith(source_line), message
    caret = lines[i + 1]
    bar = lines[i].index("|")
    assert caret.index("|") == bar, message
    assert caret.index("^") == bar + 2 + column - 1, f"caret not under column {column}:\n{message}"


def test_script_error_has_location_and_caret():
    text = read("csrmm.py").replace("A[i, j] * B[j, k]", "A[i, j] * Q[j, k]")
    line, column = _locate(text, "Q[j, k]")
    with pytest.raises(st.ScriptError) as info:
        st.parse(text, "mutated_csrmm.py")
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert f"mutated_csrmm.py:{line}:{column}" in message, message
    assert "'Q'" in message
    _check_excerpt(message, text, line, column)


def test_script_error_default_source_name_and_syntax_error():
    text = read("sddmm.py").replace('"SSR", "sddmm") as [i, j, k]:', '"SSR", "sddmm") as [i, j, k]')
    line, column = _locate(text, '"SSR", "sddmm") as [i, j, k]')
    column += len('"SSR", "sddmm") as [i, j, k]')  # reported at the end of the line
    with pytest.raises(st.ScriptError) as info:
        st.parse(text)
    message = str(info.value)
    assert f"<script>:{line}:{column}" in message, message
    _check_excerpt(message, text, line, column)


def test_script_error_for_a_verification_failure():
    text = read("csrmm.py").replace('"SRS", "csrmm"', '"SR", "csrmm"')
    with pytest.raises(st.ScriptError) as info:
        st.parse(text, "roles.py")
    message = str(info.value)
    assert re.search(r"roles\.py:\d+:\d+", message), message
    assert "^" in message


def test_script_error_on_a_path_names_the_file(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(read("csrmm.py").replace("T.sp.dense_fixed(feat_size)", "T.sp.dense_fixd(feat_size)"))
    with pytest.raises(st.ScriptError) as info:
        st.parse(str(path))
    assert re.search(r"broken\.py:\d+:\d+", str(info.value)), str(info.value)


def test_a_dtype_may_be_written_as_a_type_name():
    """T.float64 names the dtype "float64" names (as TVMScript writes both)."""
    text = read("csrmm.py")
    named = text.replace('"float32")', "T.float64)")
    assert named.count("T.float64)") == 3
    assert st.parse(named) == st.parse(text.replace('"float32")', '"float64")'))


@pytest.mark.parametrize("value,accumulator", [("float32", "float32"), ("float64", "float64"),
                                               ("bfloat16", "float32"), ("float16", "float32")])
def test_kernel_scripts_name_their_accumulator_dtype(value, accumulator):
    """In the built-in scripts "float32" is the values' dtype and T.float32 the
    accumulator's: csrmm_mean's row lengths and division are float32 for
    16-bit values, float64 for float64 ones."""
    from sparsetir_torch.kernels import kernel_script
    text = kernel_script("csrmm_mean", value, "int64")
    assert f'L = T.sp.match_buffer(lengths, (I,), T.{accumulator})' in text
    assert f'T.Cast("{value}", T.{accumulator}(C[i, k]) / L[i])' in text
    f = st.parse(text)
    assert f.name == "csrmm_mean"


MUST_FAIL = sorted(os.path.basename(p) for p in glob.glob(os.path.join(MUST_FAIL_DIR, "*.py")))


@pytest.mark.parametrize("name", MUST_FAIL)
def test_must_fail_scripts(name):
    """Every tests/must_fail script raises ScriptError whose message holds its '# expect:' lines."""
    path = os.path.join(MUST_FAIL_DIR, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    expects = re.findall(r"^# expect: (.*)$", text, re.M)
    assert expects, f"{name} has no '# expect:' line"
    with pytest.raises(st.ScriptError) as info:
        st.parse(text, path)
    message = str(info.value)
    for expected in expects:
        assert expected in message, f"{expected!r} not in:\n{message}"
    assert re.search(r":\d+:\d+", message) and "^" in message, message
