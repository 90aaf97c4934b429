// CSR -> BSR conversion of a structure (runtime/bsr_conversion.h): CsrToBsr
// against a dense reconstruction (int32 and int64, square and rectangular
// blocks, padded last block row / column, empty rows, zero nnz, 1x1,
// duplicates, unsorted columns), sorted block columns, and CountBsrBlocks
// equal to the number of blocks CsrToBsr stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "runtime/bsr_conversion.h"
#include "thread_launcher.h"

namespace sparsetir {
namespace {

template <typename Index>
struct TestCsr {
  int64_t rows = 0, columns = 0;
  std::vector<Index> indptr{0};
  std::vector<Index> indices;
  std::vector<double> values;  // distinct, non-zero
};

// A seeded random CSR. `duplicates` repeats that many random (row, column)
// pairs inside their row; `shuffle` leaves columns unsorted within rows.
template <typename Index>
TestCsr<Index> RandomCsr(int64_t rows, int64_t columns, double density, unsigned seed,
                         const std::set<int64_t>& empty_rows = {}, int duplicates = 0, bool shuffle = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<int64_t>> row_columns(rows);
  for (int64_t r = 0; r < rows; ++r) {
    if (empty_rows.count(r)) continue;
    for (int64_t c = 0; c < columns; ++c) {
      if (u(rng) < density) row_columns[r].push_back(c);
    }
  }
  for (int d = 0; d < duplicates && rows > 0; ++d) {
    int64_t r = static_cast<int64_t>(rng() % rows);
    if (row_columns[r].empty()) continue;
    row_columns[r].push_back(row_columns[r][rng() % row_columns[r].size()]);
  }
  TestCsr<Index> csr;
  csr.rows = rows;
  csr.columns = columns;
  for (int64_t r = 0; r < rows; ++r) {
    auto& cs = row_columns[r];
    if (shuffle) {
      std::shuffle(cs.begin(), cs.end(), rng);
    } else {
      std::sort(cs.begin(), cs.end());
    }
    for (int64_t c : cs) {
      csr.indices.push_back(static_cast<Index>(c));
      csr.values.push_back(static_cast<double>(csr.values.size() + 1));
    }
    csr.indptr.push_back(static_cast<Index>(csr.indices.size()));
  }
  return csr;
}

template <typename Index>
TestCsr<Index> FromRows(int64_t rows, int64_t columns, const std::vector<std::vector<int64_t>>& row_columns) {
  TestCsr<Index> csr;
  csr.rows = rows;
  csr.columns = columns;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c : row_columns[r]) {
      csr.indices.push_back(static_cast<Index>(c));
      csr.values.push_back(static_cast<double>(csr.values.size() + 1));
    }
    csr.indptr.push_back(static_cast<Index>(csr.indices.size()));
  }
  return csr;
}

// Converts, checks every structural invariant of the result, and compares the
// dense matrix rebuilt from the blocks (values scattered at `slot`, summed for
// duplicates) with the dense matrix of the CSR, padding included.
template <typename Index>
void CheckConversion(const TestCsr<Index>& csr, int64_t bh, int64_t bw) {
  SCOPED_TRACE(::testing::Message() << csr.rows << "x" << csr.columns << " nnz " << csr.indices.size() << " block "
                                    << bh << "x" << bw << " index bytes " << sizeof(Index));
  const int64_t nnz = static_cast<int64_t>(csr.indices.size());
  BsrStructure<Index> b = CsrToBsr<Index>(csr.indptr.data(), csr.indices.data(), csr.rows, csr.columns, bh, bw);
  const int64_t block_rows = (csr.rows + bh - 1) / bh, block_columns = (csr.columns + bw - 1) / bw;
  const int64_t nnzb = b.blocks();

  // Structure.
  ASSERT_EQ(static_cast<int64_t>(b.indptr.size()), block_rows + 1);
  EXPECT_EQ(b.indptr.front(), 0);
  EXPECT_EQ(static_cast<int64_t>(b.indptr.back()), nnzb);
  ASSERT_EQ(static_cast<int64_t>(b.slot.size()), nnz);
  for (int64_t br = 0; br < block_rows; ++br) {
    ASSERT_LE(b.indptr[br], b.indptr[br + 1]);
    for (int64_t e = b.indptr[br]; e < b.indptr[br + 1]; ++e) {
      ASSERT_GE(b.indices[e], 0);
      ASSERT_LT(static_cast<int64_t>(b.indices[e]), block_columns);
      if (e > b.indptr[br]) EXPECT_LT(b.indices[e - 1], b.indices[e]) << "block row " << br << " not sorted/unique";
    }
  }

  // The exact set of stored blocks: the distinct (row / bh, column / bw) pairs.
  std::set<std::pair<int64_t, int64_t>> expected_blocks, got_blocks;
  for (int64_t r = 0; r < csr.rows; ++r) {
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) expected_blocks.insert({r / bh, csr.indices[e] / bw});
  }
  for (int64_t br = 0; br < block_rows; ++br) {
    for (int64_t e = b.indptr[br]; e < b.indptr[br + 1]; ++e) got_blocks.insert({br, b.indices[e]});
  }
  EXPECT_EQ(got_blocks, expected_blocks);
  EXPECT_EQ(nnzb, static_cast<int64_t>(expected_blocks.size()));

  // Dense reconstruction (padded shape).
  const int64_t padded_rows = block_rows * bh, padded_columns = block_columns * bw;
  std::vector<double> expected(padded_rows * padded_columns, 0.0), got(padded_rows * padded_columns, 0.0);
  for (int64_t r = 0; r < csr.rows; ++r) {
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) {
      expected[r * padded_columns + csr.indices[e]] += csr.values[e];
    }
  }
  std::vector<double> blocks(nnzb * bh * bw, 0.0);
  for (int64_t e = 0; e < nnz; ++e) {
    ASSERT_GE(b.slot[e], 0);
    ASSERT_LT(b.slot[e], nnzb * bh * bw);
    blocks[b.slot[e]] += csr.values[e];
  }
  for (int64_t br = 0; br < block_rows; ++br) {
    for (int64_t e = b.indptr[br]; e < b.indptr[br + 1]; ++e) {
      for (int64_t i = 0; i < bh; ++i) {
        for (int64_t j = 0; j < bw; ++j) {
          got[(br * bh + i) * padded_columns + b.indices[e] * bw + j] += blocks[(e * bh + i) * bw + j];
        }
      }
    }
  }
  EXPECT_EQ(got, expected);

  // The counter agrees without building anything.
  EXPECT_EQ(CountBsrBlocks<Index>(csr.indptr.data(), csr.indices.data(), csr.rows, csr.columns, bh, bw), nnzb);
}

template <typename Index>
void CheckAllBlockShapes(const TestCsr<Index>& csr) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {8, 8},
                                                           {1, 4}, {4, 1}, {2, 3}, {3, 2}, {5, 7}};
  for (auto [bh, bw] : shapes) CheckConversion(csr, bh, bw);
}

template <typename T>
class BsrConversion : public ::testing::Test {};
using IndexTypes = ::testing::Types<int32_t, int64_t>;
TYPED_TEST_SUITE(BsrConversion, IndexTypes);

TYPED_TEST(BsrConversion, RandomMatricesDivisibleAndPadded) {
  // 24x24 divides every square block up to 8; the others pad.
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{24, 24}, {25, 31}, {7, 40}, {50, 9}, {13, 13}}) {
    for (double density : {0.05, 0.3, 1.0}) {
      CheckAllBlockShapes(RandomCsr<TypeParam>(m, n, density, static_cast<unsigned>(m * 1000 + n + density * 10)));
    }
  }
}

TYPED_TEST(BsrConversion, EmptyRowsAndBlockRows) {
  // Rows 0..7 empty: the first block rows (up to 8 high) are empty too.
  CheckAllBlockShapes(RandomCsr<TypeParam>(30, 22, 0.3, 7, {0, 1, 2, 3, 4, 5, 6, 7, 15, 29}));
  // Only the last (padded) row has entries.
  CheckAllBlockShapes(FromRows<TypeParam>(11, 10, {{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {0, 9}}));
}

TYPED_TEST(BsrConversion, ZeroNnzAndDegenerateShapes) {
  CheckAllBlockShapes(RandomCsr<TypeParam>(12, 9, 0.0, 1));
  CheckAllBlockShapes(RandomCsr<TypeParam>(0, 5, 0.5, 1));
  CheckAllBlockShapes(RandomCsr<TypeParam>(4, 0, 0.5, 1));
  CheckAllBlockShapes(RandomCsr<TypeParam>(0, 0, 0.5, 1));
  BsrStructure<TypeParam> b = CsrToBsr<TypeParam>(std::vector<TypeParam>(13, 0).data(), nullptr, 12, 9, 4, 4);
  EXPECT_EQ(b.blocks(), 0);
  EXPECT_EQ(b.indptr, std::vector<TypeParam>(4, 0));
  EXPECT_TRUE(b.slot.empty());
}

TYPED_TEST(BsrConversion, OneByOne) {
  CheckAllBlockShapes(FromRows<TypeParam>(1, 1, {{0}}));
  CheckAllBlockShapes(FromRows<TypeParam>(1, 1, {{}}));
  auto csr = FromRows<TypeParam>(1, 1, {{0}});
  BsrStructure<TypeParam> b = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), 1, 1, 4, 4);
  EXPECT_EQ(b.indptr, (std::vector<TypeParam>{0, 1}));
  EXPECT_EQ(b.indices, (std::vector<TypeParam>{0}));
  EXPECT_EQ(b.slot, (std::vector<int64_t>{0}));
}

TYPED_TEST(BsrConversion, HandComputedSlots) {
  // 5x7, blocks 2x3: block columns 0 (cols 0-2), 1 (3-5), 2 (6, padded).
  //   row 0: 6, 1     row 1: 4     row 2: (empty)   row 3: 0     row 4: 2, 6
  auto csr = FromRows<TypeParam>(5, 7, {{6, 1}, {4}, {}, {0}, {2, 6}});
  BsrStructure<TypeParam> b = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), 5, 7, 2, 3);
  EXPECT_EQ(b.indptr, (std::vector<TypeParam>{0, 3, 4, 6}));
  EXPECT_EQ(b.indices, (std::vector<TypeParam>{0, 1, 2, 0, 0, 2}));
  // slot = position * 6 + (row in block) * 3 + (column in block)
  EXPECT_EQ(b.slot, (std::vector<int64_t>{2 * 6 + 0, 0 * 6 + 1, 1 * 6 + 3 + 1, 3 * 6 + 3 + 0, 4 * 6 + 2, 5 * 6 + 0}));
  CheckConversion(csr, 2, 3);
}

TYPED_TEST(BsrConversion, DuplicatesShareOneSlot) {
  // (0, 1) twice and (2, 5) three times.
  auto csr = FromRows<TypeParam>(3, 6, {{1, 3, 1}, {0}, {5, 5, 2, 5}});
  for (auto [bh, bw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}, {3, 3}, {2, 4}, {4, 4}}) {
    BsrStructure<TypeParam> b = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), 3, 6, bh, bw);
    EXPECT_EQ(b.slot[0], b.slot[2]);
    EXPECT_EQ(b.slot[4], b.slot[5]);
    EXPECT_EQ(b.slot[4], b.slot[7]);
    EXPECT_NE(b.slot[0], b.slot[1]);
    EXPECT_NE(b.slot[4], b.slot[6]);
    std::set<int64_t> distinct(b.slot.begin(), b.slot.end());
    EXPECT_EQ(distinct.size(), 5u);  // 5 distinct (row, column) pairs
    CheckConversion(csr, bh, bw);
  }
  CheckAllBlockShapes(RandomCsr<TypeParam>(30, 20, 0.2, 11, {}, 25, true));
}

TYPED_TEST(BsrConversion, UnsortedColumnsGiveSortedBlockColumns) {
  // Columns in decreasing order within every row.
  std::vector<std::vector<int64_t>> rows(9);
  for (int64_t r = 0; r < 9; ++r) {
    for (int64_t c = 20; c >= 0; c -= 1 + r % 3) rows[r].push_back(c);
  }
  auto csr = FromRows<TypeParam>(9, 21, rows);
  for (auto [bh, bw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}, {3, 4}, {4, 3}, {8, 8}}) {
    BsrStructure<TypeParam> b = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), 9, 21, bh, bw);
    for (size_t br = 0; br + 1 < b.indptr.size(); ++br) {
      EXPECT_TRUE(std::is_sorted(b.indices.begin() + b.indptr[br], b.indices.begin() + b.indptr[br + 1]));
    }
    CheckConversion(csr, bh, bw);
  }
  CheckAllBlockShapes(RandomCsr<TypeParam>(40, 33, 0.15, 5, {3, 4}, 0, true));
}

TYPED_TEST(BsrConversion, BlocksLargerThanTheMatrix) {
  auto csr = RandomCsr<TypeParam>(5, 3, 0.5, 3);
  CheckConversion(csr, 16, 16);
  CheckConversion(csr, 1, 64);
  CheckConversion(csr, 64, 1);
  BsrStructure<TypeParam> b = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), 5, 3, 16, 16);
  EXPECT_EQ(b.blocks(), csr.indices.empty() ? 0 : 1);
}

TYPED_TEST(BsrConversion, CountAndThreadedConversionMatchSerialConversion) {
  std::mt19937 rng(42);
  testing::ThreadLauncher threads(3);
  for (int trial = 0; trial < 40; ++trial) {
    // Some shapes have more block rows than the count's 64 chunks, so chunks
    // hold several block rows and the threads share them.
    int64_t m = 1 + rng() % (trial % 4 == 0 ? 600 : 60), n = 1 + rng() % 60;
    double density = (rng() % 100) / 200.0;
    auto csr = RandomCsr<TypeParam>(m, n, density, rng(), {}, static_cast<int>(rng() % 5), rng() % 2);
    for (int64_t bh = 1; bh <= 9; bh += 2) {
      for (int64_t bw = 1; bw <= 9; bw += 3) {
        auto b = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), m, n, bh, bw);
        auto threaded = CsrToBsr<TypeParam>(csr.indptr.data(), csr.indices.data(), m, n, bh, bw, threads.get());
        EXPECT_EQ(threaded.indptr, b.indptr);
        EXPECT_EQ(threaded.indices, b.indices);
        EXPECT_EQ(threaded.slot, b.slot);
        EXPECT_EQ(CountBsrBlocks<TypeParam>(csr.indptr.data(), csr.indices.data(), m, n, bh, bw), b.blocks())
            << m << "x" << n << " block " << bh << "x" << bw;
        EXPECT_EQ(CountBsrBlocks<TypeParam>(csr.indptr.data(), csr.indices.data(), m, n, bh, bw, threads.get()),
                  b.blocks())
            << m << "x" << n << " block " << bh << "x" << bw << ", 3 threads";
      }
    }
  }
}

}  // namespace
}  // namespace sparsetir
