"""python -m sparsetir_torch.datasets: digests, copies, the METIS conversion
and the Debian route (through a stand-in apt-get that serves a package built
here, so no network is needed)."""
import gzip
import hashlib
import os
import shutil
import stat
import subprocess
import sys

import pytest

from conftest import DATASETS_DIR, REPO_ROOT
from sparsetir_torch import datasets
from sparsetir_torch.matrix_market import read_matrix_market

TINY_METIS = """% a comment line METIS allows
4 4
3 2
1 4
1
2
"""


def test_the_shipped_matrices_have_their_registered_digests():
    shipped = [d for d in datasets.DATASETS.values() if d.source == "shipped"]
    assert len(shipped) == 7
    for d in shipped:
        datasets.verify(d, os.path.join(datasets.REPO_MATRICES, d.file))


def test_metis_graphs_become_sorted_matrix_market_text():
    text = datasets.metis_to_matrix_market(TINY_METIS, "%%MatrixMarket matrix coordinate pattern general\n")
    assert text.decode() == ("%%MatrixMarket matrix coordinate pattern general\n4 4 6\n"
                             "1 2\n1 3\n2 1\n2 4\n3 1\n4 2\n")
    with pytest.raises(datasets.DatasetError, match="weights"):
        datasets.metis_to_matrix_market("2 1 011\n1 2 1\n1 1 1\n", "")


def test_fetch_copies_from_a_folder_checks_and_then_reuses(tmp_path, capsys):
    dest = tmp_path / "cache"
    paths = datasets.fetch(["lund_a", "jgl009.mtx.gz"], source=DATASETS_DIR, dest=str(dest))
    assert sorted(paths) == ["jgl009", "lund_a"]
    assert read_matrix_market(paths["lund_a"]).nnz == 2449
    datasets.fetch(["lund_a"], source=DATASETS_DIR, dest=str(dest))
    assert "lund_a: already in" in capsys.readouterr().err


def test_a_file_with_other_text_is_refused_and_replaced(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    with open(os.path.join(DATASETS_DIR, "jgl009.mtx.gz"), "rb") as f:
        text = gzip.decompress(f.read()).replace(b"1 1\n", b"1 2\n", 1)
    (bad / "jgl009.mtx.gz").write_bytes(gzip.compress(text))
    with pytest.raises(datasets.DatasetError, match="not the expected jgl009: its text has SHA-256"):
        datasets.fetch(["jgl009"], source=str(bad), dest=str(tmp_path / "cache"))
    # A damaged copy in the cache is fetched again.
    (tmp_path / "cache" / "jgl009.mtx.gz").write_bytes(b"not gzip")
    path = datasets.fetch(["jgl009"], dest=str(tmp_path / "cache"))["jgl009"]
    datasets.verify(datasets.DATASETS["jgl009"], path)


def test_errors_name_the_matrix_and_what_to_do(tmp_path):
    with pytest.raises(datasets.DatasetError, match="unknown matrix 'nope'; known: arrow, bcsstk16"):
        datasets.fetch(["nope"], dest=str(tmp_path))
    with pytest.raises(datasets.DatasetError, match=r"holds no lund_a\.mtx\.gz"):
        datasets.fetch(["lund_a"], source=str(tmp_path), dest=str(tmp_path / "c"))
    done = subprocess.run([sys.executable, "-m", "sparsetir_torch.datasets", "fetch", "nope", "--dest", str(tmp_path)],
                          capture_output=True, text=True, cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert done.returncode == 1 and "unknown matrix 'nope'" in done.stderr


def test_find_looks_in_the_cache_then_the_shipped_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSETIR_DATASETS", str(tmp_path))
    assert datasets.cache_dir() == str(tmp_path)
    assert datasets.find("lund_a") == os.path.join(datasets.REPO_MATRICES, "lund_a.mtx.gz")
    assert datasets.find("mdual") is None or datasets.find("mdual").startswith(str(tmp_path))
    shutil.copy(os.path.join(DATASETS_DIR, "lund_a.mtx.gz"), tmp_path)
    assert datasets.find("lund_a") == str(tmp_path / "lund_a.mtx.gz")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb (Debian's package tool) is not installed")
def test_the_debian_route_downloads_unpacks_and_converts(tmp_path, monkeypatch):
    """A stand-in apt-get 'downloads' a libmetis-doc package built here with
    dpkg-deb, holding a tiny METIS graph; fetch must unpack it, convert the
    graph and check the text against the registered digest."""
    root = tmp_path / "pkg"
    graphs = root / datasets.METIS_GRAPHS
    graphs.mkdir(parents=True)
    (graphs / "tiny.graph").write_text(TINY_METIS)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text("Package: libmetis-doc\nVersion: 1.0\nArchitecture: all\n"
                                             "Maintainer: test <test@example.org>\nDescription: test package\n")
    deb = tmp_path / "libmetis-doc_1.0_all.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)], check=True,
                   capture_output=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = download ] && [ \"$2\" = libmetis-doc ] && cp {deb} . \n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    header = "%%MatrixMarket matrix coordinate pattern general\n% name: tiny\n"
    text = datasets.metis_to_matrix_market(TINY_METIS, header)
    tiny = datasets.Dataset("tiny", hashlib.sha256(text).hexdigest(), len(text), "metis", header)
    monkeypatch.setitem(datasets.DATASETS, "tiny", tiny)
    path = datasets.fetch(["tiny"], dest=str(tmp_path / "cache"))["tiny"]
    m = read_matrix_market(path)
    assert m.shape == (4, 4) and m.nnz == 6
    with open(path, "rb") as f:
        assert f.read()[4:8] == b"\0\0\0\0"  # gzip mtime 0: reproducible bytes

    wrong = datasets.Dataset("tiny", "0" * 64, len(text), "metis", header)
    monkeypatch.setitem(datasets.DATASETS, "tiny", wrong)
    with pytest.raises(datasets.DatasetError, match="not the expected tiny"):
        datasets.fetch(["tiny"], dest=str(tmp_path / "cache2"))
