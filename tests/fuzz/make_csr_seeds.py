"""Writes the seed inputs of csr_structure_fuzzer into tests/fuzz/corpus/csr_structure/.

The layout is the fuzzer's: byte 0 picks the index type (bit 0: int64), bytes
1-2 (little endian) hold len(indptr) - 1, then indptr and indices as
little-endian integers. Run it again after changing the layout.
"""
import os
import struct

SEEDS = {
    # name: (wide, indptr, indices)
    "valid_int32": (False, [0, 2, 2, 5], [1, 0, 4, 2, 3]),
    "valid_int64": (True, [0, 2, 2, 5], [1, 0, 4, 2, 3]),
    "empty_rows_int32": (False, [0, 0, 0], []),
    "no_rows_int64": (True, [0], []),
    "diagonal_int64": (True, [0, 1, 2, 3, 4], [0, 1, 2, 3]),
    "bad_start_int32": (False, [1, 2], [0, 0]),
    "decreasing_int64": (True, [0, 2, 1], [0, 0]),
    "bad_end_int32": (False, [0, 1], [0, 0]),
    "negative_index_int64": (True, [0, 2], [0, -3]),
    # a decrease between extremes: their difference overflows int64
    "extreme_values_int64": (True, [0, 2**63 - 1, -(2**63)], [0]),
    "extreme_values_int32": (False, [0, 2**31 - 1, -(2**31)], [2**31 - 1]),
}


def encode(wide, indptr, indices):
    fmt = "<q" if wide else "<i"
    body = b"".join(struct.pack(fmt, v) for v in indptr + indices)
    return struct.pack("<BH", 1 if wide else 0, len(indptr) - 1) + body


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "csr_structure")
    os.makedirs(out, exist_ok=True)
    for name, seed in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(encode(*seed))


if __name__ == "__main__":
    main()
