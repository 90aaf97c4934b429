// CSR -> BSR conversion of a structure, torch-free. The values are not copied
// here: the conversion returns, for every non-zero, its slot in the flat
// (nnzb, block_h, block_w) blocks array, so values move with one scatter
// (blocks.view(-1)[slot] += values) whenever they change, while the
// structure is converted once per graph.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/abi.h"

namespace sparsetir {

template <typename Index>
struct BsrStructure {
  std::vector<Index> indptr;   // block rows + 1
  std::vector<Index> indices;  // block column of each stored block
  std::vector<int64_t> slot;   // per CSR non-zero: flat index into the blocks array
  int64_t blocks() const { return static_cast<int64_t>(indices.size()); }
};

// `rows` and `columns` need not be multiples of the block sizes: the last
// block row / column is padded with zeros. Block columns within a block row
// come out sorted. The CSR structure must be valid (ValidateCsr) with every
// index < columns; duplicate (row, column) pairs map to one slot.
// Parallel over block rows through `launcher` (nullptr: serial).
template <typename Index>
BsrStructure<Index> CsrToBsr(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                             int64_t block_w, const SparsetirLauncher* launcher = nullptr);

// How many blocks a CSR -> BSR(block_h, block_w) conversion would store,
// without building it (for choosing a block size); parallel over block rows
// through `launcher` (nullptr: serial).
template <typename Index>
int64_t CountBsrBlocks(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                       int64_t block_w, const SparsetirLauncher* launcher = nullptr);

}  // namespace sparsetir
