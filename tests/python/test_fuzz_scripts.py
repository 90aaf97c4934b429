"""A mutation fuzzer over the scripts the project ships (kernels/, tests/scripts/).

Every mutant (a line deleted, duplicated or swapped, a name or number replaced,
a hostile character or name inserted, the text cut short) must either be
refused with one of the library's user errors (ScriptError, ScheduleError,
ValueError) or lower to stage III and generate code. An internal error, any
other exception or a crash is a bug. A sample of the mutants that reach code
generation is compiled by the system C++ compiler, and the CUDA source of
each is generated too: generated code the compiler rejects is a bug as well.

Deterministic (seeded) and bounded in count and time, so that CI runs it on
every change; SPARSETIR_FUZZ_MUTANTS, SPARSETIR_FUZZ_SECONDS and SPARSETIR_FUZZ_SEED
make longer or other local runs. The same property also runs under
hypothesis, which chooses the mutations and shrinks a failing mutant.
"""
import glob
import os
import random
import re
import time

import hypothesis
import pytest
from hypothesis import strategies

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import REPO_ROOT

MUTANTS = int(os.environ.get("SPARSETIR_FUZZ_MUTANTS", "1500"))
COMPILE_EVERY = 8  # compile one mutant in this many of those that generate code
TIME_BUDGET_S = float(os.environ.get("SPARSETIR_FUZZ_SECONDS", "90"))

HOSTILE_NAMES = ["i_end", "rows_end", "xor", "int64_t", "NAN", "free", "sparsetir_kernel", "launcher", "x" * 300]
HOSTILE_TEXT = ["\\", "\\n", '"', "'", "\u00e9", "#", ":", "(", ")", "[", "]", "0", "-1", "2**31", "1e9", "T.", "\t",
                "\x00", "  ", "lambda", "None"]
NUMBERS = ["0", "1", "-1", "2", "3", "7", "2147483647", "9223372036854775807", "1.5", "1e30"]
USER_ERRORS = (st.ScriptError, st.ScheduleError, ValueError)


def corpus():
    paths = sorted(glob.glob(os.path.join(REPO_ROOT, "kernels", "*.py")) +
                   glob.glob(os.path.join(REPO_ROOT, "kernels", "formats", "*.py")) +
                   glob.glob(os.path.join(REPO_ROOT, "tests", "scripts", "*.py")))
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            texts.append((os.path.relpath(path, REPO_ROOT), f.read()))
    return texts


def mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(8)
    if kind == 0 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif kind == 1:
        k = rng.randrange(len(lines))
        lines.insert(k, lines[k])
    elif kind == 2 and len(lines) > 1:
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    elif kind == 3:
        names = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text)))
        old = rng.choice(names)
        new = rng.choice(names + HOSTILE_NAMES)
        return re.sub(rf"\b{re.escape(old)}\b", new, text, count=rng.choice([1, 0]))
    elif kind == 4:
        numbers = list(re.finditer(r"\b\d+(\.\d+)?\b", text))
        if numbers:
            m = rng.choice(numbers)
            return text[: m.start()] + rng.choice(NUMBERS) + text[m.end():]
    elif kind == 5:
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(HOSTILE_TEXT) + text[at:]
    elif kind == 6:
        return text[: rng.randrange(len(text) + 1)]
    else:
        strings = list(re.finditer(r'"[^"\n]*"', text))
        if strings:
            m = rng.choice(strings)
            return text[: m.start()] + '"' + rng.choice(HOSTILE_NAMES + HOSTILE_TEXT) + '"' + text[m.end():]
    return "\n".join(lines)


def check_mutant(mutant: str, where: str, outcomes: dict) -> None:
    """The property every mutant must hold: refused with a user error, or
    lowered with CPU and CUDA code generated; every COMPILE_EVERY-th mutant
    that generates code is also compiled by the system compiler."""
    try:
        f = st.parse(mutant)
        source = _C.generate(f, "cpu")
    except USER_ERRORS:
        outcomes["refused"] += 1
        return
    except Exception as e:  # noqa: BLE001 - any other exception is the finding
        raise AssertionError(f"{type(e).__name__}: {e}\n{where}") from e
    try:
        _C.generate(f, "cuda")  # the same function for the other backend
    except USER_ERRORS:
        pass  # e.g. a workspace, which the cuda target does not allocate
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"cuda: {type(e).__name__}: {e}\n{where}") from e
    outcomes["generated"] += 1
    assert source
    if outcomes["generated"] % COMPILE_EVERY == 0:
        try:
            st.compile(f)
        except USER_ERRORS:
            pass  # e.g. a size the compile-time checks refuse
        except st.CompileError as e:
            raise AssertionError(f"generated C++ the compiler rejects: {e}\n{where}") from e
        outcomes["compiled"] += 1


def test_mutated_scripts_give_user_errors_or_valid_code():
    rng = random.Random(int(os.environ.get("SPARSETIR_FUZZ_SEED", "20261124")))
    texts = corpus()
    assert len(texts) >= 20, texts
    start = time.monotonic()
    outcomes = {"refused": 0, "generated": 0, "compiled": 0}
    for n in range(MUTANTS):
        if time.monotonic() - start > TIME_BUDGET_S:
            break
        name, text = rng.choice(texts)
        mutant = mutate(text, rng)
        if rng.random() < 0.3:
            mutant = mutate(mutant, rng)
        check_mutant(mutant, f"mutant {n} of {name}:\n{mutant}", outcomes)
    print(outcomes)
    # The fuzzer must exercise both outcomes, or it tests nothing.
    assert outcomes["refused"] > 20 and outcomes["generated"] > 20, outcomes


# The same property driven by hypothesis: it chooses the script and the
# mutations (through a Random it controls), and on a failure it shrinks them
# to a small case and prints it. derandomize keeps CI's examples the same
# from run to run; HYPOTHESIS_EXAMPLES makes a longer local run.
HYPOTHESIS_OUTCOMES = {"refused": 0, "generated": 0, "compiled": 0}


@hypothesis.settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "400")), deadline=None,
                     derandomize=True, suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(script=strategies.sampled_from(corpus()), rng=strategies.randoms(use_true_random=False),
                  rounds=strategies.integers(1, 3))
def test_hypothesis_mutants_give_user_errors_or_valid_code(script, rng, rounds):
    name, mutant = script
    for _ in range(rounds):
        mutant = mutate(mutant, rng)
    check_mutant(mutant, f"a mutant of {name}:\n{mutant}", HYPOTHESIS_OUTCOMES)
