// libFuzzer target: the CSR structure validation every operator runs on the
// caller's (indptr, indices) before a kernel trusts them, for int32 and int64.
//
// Input layout: byte 0 picks the index type (bit 0: int64), bytes 1-2 (little
// endian) where the values split, then native-endian index values: the first
// 1 + split % count form indptr, the rest indices. Each array gets a buffer of
// its exact size, so a read past either end is an AddressSanitizer report.
//
// A refusal (UserError) is normal. A structure that is accepted must be one
// CountNearGathers (the prefetch decision) counts, never more than once per
// non-zero, and one TransposeCsr (what backward passes build from it)
// handles: the transpose is computed, must validate in turn, and its
// permutation must hold up.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/csr_structure.h"
#include "support/error.h"

namespace {

#define FUZZ_CHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "check failed: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                          \
    }                                                                        \
  } while (0)

// Above this many columns the transpose's buffers grow large for a fuzz input;
// validation itself is still run.
constexpr int64_t kMaxTransposeColumns = 1 << 16;

template <typename Index>
void Run(const uint8_t* data, size_t size, unsigned split) {
  const size_t count = size / sizeof(Index);
  if (count == 0) return;
  const size_t indptr_size = 1 + split % count;
  std::vector<Index> indptr(indptr_size), indices(count - indptr_size);
  std::memcpy(indptr.data(), data, indptr_size * sizeof(Index));
  if (!indices.empty()) std::memcpy(indices.data(), data + indptr_size * sizeof(Index), indices.size() * sizeof(Index));

  const int64_t rows = static_cast<int64_t>(indptr_size) - 1, nnz = static_cast<int64_t>(indices.size());
  sparsetir::CsrSummary s;
  try {
    s = sparsetir::ValidateCsr<Index>("fuzz", indptr.data(), rows, indices.data(), nnz);
  } catch (const sparsetir::UserError&) {
    return;
  }
  FUZZ_CHECK(s.rows == rows && s.nnz == nnz);
  FUZZ_CHECK(s.max_index >= (nnz > 0 ? 0 : -1));
  FUZZ_CHECK(s.empty_rows >= 0 && s.empty_rows <= rows);
  FUZZ_CHECK(s.max_row_length >= 0 && s.max_row_length <= nnz);
  FUZZ_CHECK(s.mean_distance >= 0);
  int64_t near[sparsetir::kNearBits];
  sparsetir::CountNearGathers<Index>(indptr.data(), rows, indices.data(), near);
  for (int b = 0; b < sparsetir::kNearBits; ++b) FUZZ_CHECK(near[b] >= (b > 0 ? near[b - 1] : 0) && near[b] <= nnz);
  if (s.max_index >= kMaxTransposeColumns) return;

  const int64_t columns = s.max_index + 1;
  std::vector<Index> t_indptr(columns + 1), t_indices(nnz), perm(nnz);
  sparsetir::TransposeCsr<Index>(indptr.data(), indices.data(), rows, columns, t_indptr.data(), t_indices.data(),
                                 perm.data());
  try {
    sparsetir::ValidateCsr<Index>("fuzz transpose", t_indptr.data(), columns, t_indices.data(), nnz);
  } catch (const sparsetir::UserError&) {
    FUZZ_CHECK(!"the transpose of a valid structure is refused");
  }
  // perm is a permutation that maps every non-zero of the transpose back to
  // one of the original in the same column.
  std::vector<bool> seen(nnz, false);
  for (int64_t c = 0; c < columns; ++c) {
    for (int64_t e = t_indptr[c]; e < t_indptr[c + 1]; ++e) {
      const int64_t original = perm[e];
      FUZZ_CHECK(original >= 0 && original < nnz && !seen[original]);
      seen[original] = true;
      FUZZ_CHECK(indices[original] == c);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const bool wide = data[0] & 1;
  const unsigned split = data[1] | (data[2] << 8);
  if (wide) {
    Run<int64_t>(data + 3, size - 3, split);
  } else {
    Run<int32_t>(data + 3, size - 3, split);
  }
  return 0;
}
