"""Names chosen by a script never change what the generated code does.

A corpus of hostile names (names the code generator itself uses, C/C++ keywords
and alternative tokens, library macros and functions, very long names) is given
to the parameters, iterators, iteration variables and buffers of the csrmm
script, unscheduled and under the parallel CPU schedule; each kernel must
compile and give the float64 reference result. Names that could break out of a
generated comment (newlines, backslashes, non-ASCII) are refused by the parser
with a ScriptError naming the construct (tests/must_fail/ holds those scripts).
"""
import re

import pytest
import torch

import sparsetir_torch as st
from conftest import make_csr, read_script

# Locals and parameters the CPU code generator emits, keywords, macros and
# library names that generated code or its headers use.
HOSTILE = [
    "i_end", "j_end", "k_end", "rows_begin", "rows_end", "tasks", "t", "t_begin", "t_end", "task_begin",
    "task_end", "body", "launcher", "args", "xor", "try", "bitand", "new", "template", "this", "volatile", "int", "int64_t", "size_t", "NAN",
    "NULL", "INFINITY", "INT32_MAX", "M_PI", "errno", "free", "calloc", "exp", "sparsetir_kernel",
    "sparsetir_task0", "v_m", "x" * 200,
]

MATRIX = make_csr(23, 17, density=0.25, seed=3, empty_rows=(0, 22), dense_rows=(5,))
FEAT = 8


def rename(text: str, mapping: dict) -> str:
    """Replaces whole-word names of the script (never inside strings' dtypes)."""
    for old, new in mapping.items():
        text = re.sub(rf"(?<![\w\"]){re.escape(old)}(?![\w\"])", new, text)
    return text


def run_csrmm(text: str, names: dict, schedule: bool) -> torch.Tensor:
    f = st.parse(text)
    if schedule:
        sch = st.Schedule(f)
        sch.specialize(**{names["feat_size"]: FEAT})
        loops = sch.get_loops("csrmm")
        k0, k1 = sch.split(loops[2], factors=[None, 4])
        sch.vectorize(k1)
        sch.parallel(loops[0])
        kernel = st.compile(sch)
    else:
        kernel = st.compile(f)
    a = MATRIX
    values = torch.tensor(a.values, dtype=torch.float32)
    b = torch.randn(a.n, FEAT, generator=torch.Generator().manual_seed(1))
    c = torch.full((a.m, FEAT), float("nan"))
    args = {
        names["a"]: values, names["b"]: b, names["c"]: c,
        names["indptr"]: torch.tensor(a.indptr, dtype=torch.int32),
        names["indices"]: torch.tensor(a.indices, dtype=torch.int32),
        names["m"]: a.m, names["n"]: a.n, names["nnz"]: a.nnz, names["feat_size"]: FEAT,
    }
    kernel(**args)
    expected = torch.tensor(a.scipy().toarray(), dtype=torch.float64) @ b.double()
    torch.testing.assert_close(c.double(), expected, rtol=1e-5, atol=1e-5)
    return kernel


PARAMS = ["a", "b", "c", "indptr", "indices", "m", "n", "feat_size", "nnz"]


@pytest.mark.parametrize("schedule", [False, True], ids=["plain", "parallel"])
@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_parameter_names_compute_the_same(hostile, schedule):
    # The hostile name replaces each scalar parameter in turn and, once, an
    # iteration variable; every other name stays.
    for target in ("m", "n", "nnz", "feat_size", "i", "j", "k"):
        names = {p: p for p in PARAMS}
        if target in names:
            names[target] = hostile
        text = rename(read_script("csrmm"), {target: hostile})
        if schedule and target in ("i", "j", "k"):
            continue  # the schedule names loops by their variables; covered by the buffer case below
        run_csrmm(text, names, schedule)


@pytest.mark.parametrize("keyword", ["and", "not", "lambda", "None"])
def test_python_keywords_are_not_names_in_a_script(keyword):
    with pytest.raises(st.ScriptError, match=f"found '{keyword}'"):
        st.parse(rename(read_script("csrmm"), {"m": keyword}))


@pytest.mark.parametrize("hostile", ["rows_end", "tasks", "body", "NAN", "int64_t", "free", "xor"])
def test_hostile_buffer_and_iterator_names_compute_the_same(hostile):
    text = rename(read_script("csrmm"), {"B": hostile, "J": hostile + "_it" if hostile != "int64_t" else "Jx"})
    run_csrmm(text, {p: p for p in PARAMS}, schedule=True)


def test_generated_source_keeps_user_comment_text_inert():
    kernel = run_csrmm(read_script("csrmm"), {p: p for p in PARAMS}, schedule=True)
    for line in kernel.source.splitlines():
        if "//" in line:
            comment = line.split("//", 1)[1]
            assert "\\" not in comment and all(32 <= ord(ch) < 127 for ch in comment), line


@pytest.mark.parametrize(
    "name, shown",
    [
        ('csrmm\\nsystem(\\"id\\");\\n//', "csrmm_system"),
        ("csrmm\\\\", "csrmm_"),
        ("caf\u00e9", "caf"),
        ("9lives", "9lives"),
        ("x" * 300, "xxxx"),
    ],
)
def test_iteration_names_that_are_not_identifiers_are_refused(name, shown):
    text = read_script("csrmm").replace('"SRS", "csrmm"', f'"SRS", "{name}"')
    with pytest.raises(st.ScriptError) as info:
        st.parse(text)
    message = str(info.value)
    assert "the name of T.sp.iteration must be an identifier" in message
    assert shown in message


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07", "\x7f"])
def test_control_characters_are_escaped_in_error_messages(char):
    """A NUL would end a message where C strings end (the location and the
    excerpt were lost), an escape sequence would act on the terminal: errors
    quote them as \\xNN, whole."""
    escaped = f"\\x{ord(char):02x}"
    with pytest.raises(st.ScriptError) as info:
        st.parse(read_script("csrmm").replace("csrmm", f"csr{char}mm", 1))
    message = str(info.value)
    assert char not in message and escaped in message and "-->" in message and "^" in message
    sch = st.Schedule(read_script("csrmm"))
    with pytest.raises(st.ScheduleError) as info:
        sch.get_loops(f"csrmm{char}zz")
    assert str(info.value).startswith(f"get_loops: no block named 'csrmm{escaped}zz' in function 'csrmm'")
