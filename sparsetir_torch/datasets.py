"""The real matrices the examples and benchmarks use, found or fetched.

    python -m sparsetir_torch.datasets list
    python -m sparsetir_torch.datasets fetch                        # every matrix not yet in the cache
    python -m sparsetir_torch.datasets fetch mdual --dest DIR
    python -m sparsetir_torch.datasets fetch --from ../shared/datasets

Every matrix is a gzip-compressed Matrix Market file in one layout
(tests/data/matrices/README.md), identified by the SHA-256 of its text: a file
is accepted, wherever it comes from, only when its text has that digest.

Sources, in the order tried by `fetch`:
  --from DIR   a folder holding the files (a copy made elsewhere);
  the repository's tests/data/matrices, for the matrices shipped with it;
  Debian's libmetis-doc package, for the two larger METIS graphs (mdual,
               copter2): `apt-get download` (apt checks the package against the
               archive's signed index), `dpkg-deb -x`, then the METIS graph is
               written out in the layout above.

The cache is $SPARSETIR_DATASETS when set, else $XDG_CACHE_HOME/sparsetir/datasets
(~/.cache/sparsetir/datasets). `find(name)` looks there, then in the shipped folder.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

REPO_MATRICES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "tests", "data", "matrices"))
METIS_PACKAGE = "libmetis-doc"
METIS_GRAPHS = "usr/share/doc/libmetis-dev/examples/graphs"

_METIS_COMMON = (
    "% structure: undirected graph adjacency as stored by METIS (both directions already present, not symmetrized "
    "here); pattern, symmetric, no diagonal\n"
    "% indexing: METIS vertex k (1-based) is row/column k\n"
    "% license (package copyright file, Files: *): Apache-2.0 (Regents of the University of Minnesota)\n"
    "% written as Matrix Market coordinate general (full), 1-based, sorted by row then column, no duplicate entries\n")


@dataclass(frozen=True)
class Dataset:
    name: str
    sha256: str  # of the decompressed Matrix Market text
    text_bytes: int
    source: str  # "shipped" (tests/data/matrices) or "metis" (Debian's libmetis-doc)
    header: str = ""  # "metis": the comment lines written above the size line

    @property
    def file(self) -> str:
        return f"{self.name}.mtx.gz"


def _metis_header(name: str, vertices: int, edges: int, collection: str) -> str:
    return ("%%MatrixMarket matrix coordinate pattern general\n"
            f"% name: {name}\n"
            f"% origin: Debian package libmetis-doc 5.1.0.dfsg-7 (bookworm), file {METIS_GRAPHS}/{name}.graph "
            f"(METIS graph format, {vertices} vertices, {edges} edges)\n"
            f"% collection: {collection}\n" + _METIS_COMMON)


DATASETS = {d.name: d for d in (
    Dataset("arrow", "8dcf50d1d13f6d3e83475f3876ae4fbc50bd5500800caa86b90e655f1b529ab0", 1537456, "shipped"),
    Dataset("bcsstk16", "7aaf1dd0546a849801f6f4e53db414ed8cc4702134652f48ca1400e22e66d95e", 7440753, "shipped"),
    Dataset("cond-mat-2005", "6842cfb09606bb55af76a729951a39778e417e779f9c63a3353513f49b49cc9e", 3845452, "shipped"),
    Dataset("email-Enron", "a33136e7aec97e84859712ea845777b38badaab4591da25db406f9f6060b2235", 3682461, "shipped"),
    Dataset("horse-laplacian", "4efbd5ce60922bed6750f5b7647029057b0b28a8fbcf92009db029cdacf66997", 3917830,
            "shipped"),
    Dataset("jgl009", "0e6acd30588055d0ac082885d240c3546e7978fca58c238540ed11ad77a2643e", 800, "shipped"),
    Dataset("lund_a", "c3e7eb7f697fca90f26cd6938d127f8e96a56f77d4286f649b0755b6e42f41ec", 66561, "shipped"),
    Dataset("mdual", "4b7c6abfcd491609ae84dbf282f67092967c9a1a572b1927e4c219cdde95c291", 13497545, "metis",
            _metis_header("mdual", 258569, 513132,
                          "METIS 5.1.0 example graphs (dual graph of a 3D finite-element mesh; the package README: "
                          "graphs of 2D and 3D finite element meshes)")),
    Dataset("copter2", "40ecc7fd61290a47a56073f4d05d584dedb0512011e78a831f873054780195b6", 8171430, "metis",
            _metis_header("copter2", 55476, 352238,
                          "METIS 5.1.0 example graphs (graph of a finite-element mesh; SuiteSparse GHS_psdef/copter2 "
                          "and GHS_indef/copter2 (kind: computational fluid dynamics problem) have the same size and "
                          "759952 = 704476 + 55476 diagonal nnz; structure not compared)")),
)}


class DatasetError(RuntimeError):
    pass


def cache_dir() -> str:
    if os.environ.get("SPARSETIR_DATASETS"):
        return os.path.abspath(os.environ["SPARSETIR_DATASETS"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sparsetir", "datasets")


def _dataset(name: str) -> Dataset:
    key = name[:-len(".mtx.gz")] if name.endswith(".mtx.gz") else name
    if key not in DATASETS:
        raise DatasetError(f"st.datasets: unknown matrix {name!r}; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[key]


def find(name: str) -> Optional[str]:
    """The path of matrix `name` in the cache or the shipped folder, or None."""
    d = _dataset(name)
    for folder in (cache_dir(), REPO_MATRICES):
        path = os.path.join(folder, d.file)
        if os.path.isfile(path):
            return path
    return None


def text_digest(path: str) -> str:
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(d: Dataset, path: str) -> None:
    try:
        got = text_digest(path)
    except (OSError, EOFError) as e:
        raise DatasetError(f"st.datasets: {path} is not a readable gzip file ({e})") from None
    if got != d.sha256:
        raise DatasetError(f"st.datasets: {path} is not the expected {d.name}: its text has SHA-256 {got}, "
                           f"expected {d.sha256}")


class Progress:
    """A one-line progress bar on stderr (tqdm's look without needing it)."""

    def __init__(self, label: str, stream=None):
        self.label, self.total, self.stream, self.start, self.shown = label, 1, stream or sys.stderr, time.time(), -1

    def update(self, done: int, total: int) -> None:
        self.total = max(total, 1)
        percent = min(100, 100 * done // self.total)
        if percent != self.shown and (percent == 100 or self.stream.isatty()):  # a log gets the last state only
            self.shown = percent
            bar = "#" * (percent // 4)
            self.stream.write(f"\r  {self.label:<18} [{bar:<25}] {percent:3d}% {time.time() - self.start:5.1f} s")
            self.stream.flush()

    def close(self) -> None:
        self.update(self.total, self.total)
        self.stream.write("\n")


def metis_to_matrix_market(graph_text: str, header: str,
                           progress: Callable[[int, int], None] = lambda done, total: None) -> bytes:
    """A METIS graph (unweighted) as the Matrix Market text of its adjacency:
    both directions as METIS stores them, sorted by row then column."""
    lines = [line for line in graph_text.splitlines() if not line.startswith("%")]
    first = lines[0].split()
    n = int(first[0])
    if len(first) > 2 and first[2].strip("0"):
        raise DatasetError(f"st.datasets: METIS graphs with weights (format {first[2]}) are not supported")
    rows = []
    for v in range(n):
        neighbours = sorted(set(int(t) for t in lines[v + 1].split())) if v + 1 < len(lines) else []
        rows.append("".join(f"{v + 1} {u}\n" for u in neighbours))
        if v % 4096 == 0:
            progress(v, n)
    nnz = sum(row.count("\n") for row in rows)
    return (header + f"{n} {n} {nnz}\n" + "".join(rows)).encode()


def _write_gzip(text: bytes, path: str) -> None:
    # gzip -9 without a name and with mtime 0, as the shipped files are written.
    tmp = path + ".part"
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as f:
        f.write(text)
    os.replace(tmp, path)


def _from_debian(d: Dataset, dest: str, work: str) -> str:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise DatasetError(f"st.datasets: {d.name} is built from Debian's {METIS_PACKAGE} package, which needs "
                           "apt-get and dpkg-deb (Debian or Ubuntu); on another system copy the file and use --from")
    debs = [f for f in os.listdir(work) if f.startswith(METIS_PACKAGE + "_") and f.endswith(".deb")]
    if not debs:
        print(f"  downloading {METIS_PACKAGE} (apt-get download)", file=sys.stderr)
        done = subprocess.run(["apt-get", "download", METIS_PACKAGE], cwd=work, capture_output=True, text=True)
        debs = [f for f in os.listdir(work) if f.startswith(METIS_PACKAGE + "_") and f.endswith(".deb")]
        if done.returncode != 0 or not debs:
            raise DatasetError(f"st.datasets: `apt-get download {METIS_PACKAGE}` failed: "
                               f"{(done.stderr or done.stdout).strip()[-400:]}")
        subprocess.run(["dpkg-deb", "-x", os.path.join(work, debs[0]), os.path.join(work, "root")], check=True)
    source = os.path.join(work, "root", METIS_GRAPHS, f"{d.name}.graph")
    if not os.path.isfile(source):
        raise DatasetError(f"st.datasets: {debs[0]} holds no {METIS_GRAPHS}/{d.name}.graph")
    with open(source) as f:
        graph_text = f.read()
    bar = Progress(d.name)
    text = metis_to_matrix_market(graph_text, d.header, bar.update)
    bar.close()
    path = os.path.join(dest, d.file)
    _write_gzip(text, path)
    return path


def _copy(d: Dataset, folder: str, dest: str) -> Optional[str]:
    source = os.path.join(folder, d.file)
    if not os.path.isfile(source):
        return None
    verify(d, source)
    path = os.path.join(dest, d.file)
    if os.path.abspath(source) != os.path.abspath(path):
        shutil.copyfile(source, path + ".part")
        os.replace(path + ".part", path)
    return path


def fetch(names: Iterable[str] = (), source: Optional[str] = None, dest: Optional[str] = None, log=None) -> dict:
    """Brings each named matrix (all by default) into `dest` (the cache),
    checked against its digest: name -> path."""
    log = log or sys.stderr
    dest = os.path.abspath(dest or cache_dir())
    os.makedirs(dest, exist_ok=True)
    wanted = [_dataset(n) for n in names] or list(DATASETS.values())
    paths = {}
    with tempfile.TemporaryDirectory(prefix="sparsetir-datasets-") as work:
        for d in wanted:
            start = time.time()
            have = os.path.join(dest, d.file)
            if os.path.isfile(have):
                try:
                    verify(d, have)
                    paths[d.name] = have
                    print(f"{d.name}: already in {dest}", file=log)
                    continue
                except DatasetError:
                    print(f"{d.name}: the copy in {dest} does not match; fetching it again", file=log)
            path = None
            if source is not None:
                path = _copy(d, source, dest)
                if path is None:
                    raise DatasetError(f"st.datasets: {source} holds no {d.file}")
            elif d.source == "shipped":
                path = _copy(d, REPO_MATRICES, dest)
                if path is None:
                    raise DatasetError(f"st.datasets: {d.name} ships with the repository (tests/data/matrices), "
                                       "which this installation lacks; copy it from a clone with --from")
            else:
                path = _from_debian(d, dest, work)
            verify(d, path)
            paths[d.name] = path
            print(f"{d.name}: {path} ({os.path.getsize(path):,} bytes, checked, {time.time() - start:.1f} s)",
                  file=log)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sparsetir_torch.datasets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the matrices, their source and where each is found")
    f = sub.add_parser("fetch", help="bring matrices into the cache, checked against their digests")
    f.add_argument("names", nargs="*", help="matrices (default: all)")
    f.add_argument("--from", dest="source", help="a folder holding the .mtx.gz files")
    f.add_argument("--dest", help=f"the folder to fill (default: the cache, now {cache_dir()})")
    args = p.parse_args(argv)
    if args.command == "list":
        for d in DATASETS.values():
            print(f"{d.name:<16} {d.source:<8} {d.text_bytes:>11,} bytes of text  {find(d.name) or '-'}")
        return 0
    try:
        fetch(args.names, args.source, args.dest)
    except DatasetError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
