"""A non-editable install carries the kernel scripts: setup.py's build_py
copies kernels/ into the package as kernel_scripts/, and kernels.py looks
there before the source tree."""
import filecmp
import importlib.util
import os
import subprocess
import sys

from conftest import REPO_ROOT


def test_build_py_ships_every_kernel_script(tmp_path):
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(tmp_path)], cwd=REPO_ROOT, check=True,
                   capture_output=True)
    shipped = tmp_path / "sparsetir_torch" / "kernel_scripts"
    source = os.path.join(REPO_ROOT, "kernels")
    expected = sorted(os.path.relpath(os.path.join(d, f), source) for d, _, files in os.walk(source)
                      for f in files if "__pycache__" not in d)
    got = sorted(os.path.relpath(os.path.join(d, f), shipped) for d, _, files in os.walk(shipped) for f in files)
    assert got == expected and "formats/ell_rows.py" in got
    assert all(filecmp.cmp(os.path.join(source, f), shipped / f, shallow=False) for f in got)

    # The copied kernels.py, loaded from the built tree, resolves to the shipped scripts.
    spec = importlib.util.spec_from_file_location("shipped_kernels", tmp_path / "sparsetir_torch" / "kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.KERNELS_DIR == str(shipped)
    assert "def csrmm(" in module.kernel_script("csrmm")


def test_the_source_tree_uses_its_own_kernels():
    from sparsetir_torch import kernels

    assert kernels.KERNELS_DIR == os.path.join(REPO_ROOT, "kernels")


def test_no_file_names_a_path_of_one_machine():
    """A clone works anywhere: no tracked text file names an absolute path of a
    developer's machine (data folders are found relative to the repository)."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        import pytest

        pytest.skip("not a git checkout")
    offenders = []
    for name in files.stdout.splitlines():
        path = os.path.join(REPO_ROOT, name)
        if not os.path.isfile(path) or name.endswith((".png", ".gz")):
            continue
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        for marker in ("/" + top + "/" for top in ("work", "root", "home")):  # spelled so this file has none
            if marker in text:
                offenders.append(f"{name}: {marker}")
    assert not offenders, offenders


def _build_ext_with_core(tmp_path, core_build, sanitize=""):
    env = dict(os.environ, SPARSETIR_CORE_BUILD=str(core_build), SPARSETIR_SANITIZE=sanitize)
    return subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path / "temp"),
                           "--build-lib", str(tmp_path / "lib")], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True)


def test_a_reused_core_build_must_be_a_cmake_build_folder(tmp_path):
    """SPARSETIR_CORE_BUILD (the sanitized extension linking the C++ suite's
    sanitized core) refuses a folder CMake did not configure, before compiling."""
    result = _build_ext_with_core(tmp_path, tmp_path / "nothing")
    assert result.returncode != 0
    assert "SPARSETIR_CORE_BUILD=" in result.stderr and "is not a configured CMake build folder" in result.stderr


def test_a_reused_core_build_must_have_the_extensions_sanitizers(tmp_path):
    core = tmp_path / "core"
    core.mkdir()
    (core / "CMakeCache.txt").write_text("CMAKE_CXX_FLAGS:STRING=-O1 -g -fsanitize=address,undefined "
                                         "-fno-sanitize-recover=undefined\n")
    result = _build_ext_with_core(tmp_path, core)  # an extension without sanitizers
    assert result.returncode != 0
    assert "built with sanitizers ['address,undefined'], this extension asks for none" in result.stderr
    result = _build_ext_with_core(tmp_path, core, sanitize="address")
    assert "built with sanitizers ['address,undefined'], this extension asks for address" in result.stderr
