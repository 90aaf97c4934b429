// CSR -> hyb conversion (runtime/ell_conversion.h) against a brute-force
// layout built from the definition and a dense reconstruction, int32 and
// int64: empty rows, zero nnz, 1x1, a dense row (split into max_width
// pieces), rectangular shapes, parts > columns, unsorted columns and
// duplicates, bucketed ELL (parts = 1), the argument errors, and a
// multi-threaded launcher giving the serial result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "conversion_test_util.h"
#include "runtime/ell_conversion.h"
#include "support/error.h"
#include "thread_launcher.h"

namespace sparsetir {
namespace {

using testing::FromRows;
using testing::RandomCsr;
using testing::TestCsr;

template <typename T>
class HybConversion : public ::testing::Test {};
using IndexTypes = ::testing::Types<int32_t, int64_t>;
TYPED_TEST_SUITE(HybConversion, IndexTypes);

template <typename Index>
HybStructure<Index> Hyb(const TestCsr<Index>& csr, int64_t parts, int64_t max_width,
                        const SparsetirLauncher* launcher = nullptr) {
  return CsrToHyb<Index>("op", csr.indptr.data(), csr.indices.data(), csr.rows, csr.columns, parts, max_width,
                         launcher);
}

int64_t NextPowerOfTwo(int64_t x) {
  int64_t w = 1;
  while (w < x) w *= 2;
  return w;
}

template <typename Index>
void CheckHyb(const TestCsr<Index>& csr, int64_t parts, int64_t max_width) {
  SCOPED_TRACE(::testing::Message() << csr.rows << "x" << csr.columns << " nnz " << csr.nnz() << " parts " << parts
                                    << " max_width " << max_width << " index bytes " << sizeof(Index));
  const HybStructure<Index> h = Hyb(csr, parts, max_width);
  const int64_t part_columns = std::max<int64_t>(1, (csr.columns + parts - 1) / parts);
  EXPECT_EQ(h.parts, parts);
  EXPECT_EQ(h.max_width, max_width);
  EXPECT_EQ(h.part_columns, part_columns);

  // The layout from the definition: (part, width) -> its ELL rows' CSR rows.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> expected;
  for (int64_t r = 0; r < csr.rows; ++r) {
    std::map<int64_t, int64_t> length;  // per part
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) ++length[csr.indices[e] / part_columns];
    for (auto [p, l] : length) {
      const int64_t width = l <= max_width ? NextPowerOfTwo(l) : max_width;
      expected[{p, width}].insert(expected[{p, width}].end(), (l + width - 1) / width, r);
    }
  }
  std::vector<int64_t> part, width, rows, row_map;
  for (const auto& [key, ell_rows] : expected) {
    part.push_back(key.first);
    width.push_back(key.second);
    rows.push_back(static_cast<int64_t>(ell_rows.size()));
    row_map.insert(row_map.end(), ell_rows.begin(), ell_rows.end());
  }
  EXPECT_EQ(h.bucket_part, part);
  EXPECT_EQ(h.bucket_width, width);
  ASSERT_EQ(h.bucket_rows, rows);
  ASSERT_EQ(h.row_map.size(), row_map.size());
  for (size_t g = 0; g < row_map.size(); ++g) ASSERT_EQ(static_cast<int64_t>(h.row_map[g]), row_map[g]);
  const int64_t buckets = h.buckets();
  ASSERT_EQ(static_cast<int64_t>(h.row_offset.size()), buckets + 1);
  ASSERT_EQ(static_cast<int64_t>(h.slot_offset.size()), buckets + 1);
  EXPECT_EQ(h.row_offset[0], 0);
  EXPECT_EQ(h.slot_offset[0], 0);
  for (int64_t b = 0; b < buckets; ++b) {
    EXPECT_EQ(h.row_offset[b + 1], h.row_offset[b] + rows[b]);
    EXPECT_EQ(h.slot_offset[b + 1], h.slot_offset[b] + rows[b] * width[b]);
  }
  ASSERT_EQ(static_cast<int64_t>(h.indices.size()), h.slot_offset.back());
  ASSERT_EQ(static_cast<int64_t>(h.slot.size()), csr.nnz());

  // Where every slot lies: its bucket and ELL row.
  std::vector<int64_t> slot_row(h.indices.size()), slot_bucket(h.indices.size());
  for (int64_t b = 0; b < buckets; ++b) {
    for (int64_t s = h.slot_offset[b]; s < h.slot_offset[b + 1]; ++s) {
      slot_bucket[s] = b;
      slot_row[s] = h.row_offset[b] + (s - h.slot_offset[b]) / width[b];
    }
  }
  // The entries of a row in a part fill consecutive slots from the start of
  // an ELL row, in CSR order; each holds its column, in its row and part.
  std::vector<double> values(h.indices.size(), 0.0);
  std::vector<int64_t> real(h.indices.size(), 0);
  for (int64_t r = 0; r < csr.rows; ++r) {
    std::map<int64_t, int64_t> next_slot;  // per part
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) {
      const int64_t s = h.slot[e], p = csr.indices[e] / part_columns;
      ASSERT_GE(s, 0);
      ASSERT_LT(s, static_cast<int64_t>(h.indices.size()));
      auto [it, first] = next_slot.insert({p, s});
      if (first) {
        EXPECT_EQ((s - h.slot_offset[slot_bucket[s]]) % width[slot_bucket[s]], 0) << "entry " << e;
      } else {
        EXPECT_EQ(s, it->second) << "entry " << e;
      }
      it->second = s + 1;
      EXPECT_EQ(h.indices[s], csr.indices[e]);
      EXPECT_EQ(static_cast<int64_t>(h.row_map[slot_row[s]]), r);
      EXPECT_EQ(part[slot_bucket[s]], p);
      values[s] += e + 1.0;
      ++real[s];
    }
  }
  // Padding repeats the last real column of its ELL row (none is all padding).
  for (int64_t s = 0; s < static_cast<int64_t>(h.indices.size()); ++s) {
    ASSERT_LE(real[s], 1) << "two entries in slot " << s;
    const bool row_start = (s - h.slot_offset[slot_bucket[s]]) % width[slot_bucket[s]] == 0;
    if (row_start) {
      EXPECT_EQ(real[s], 1) << "an ELL row without entries at slot " << s;
    } else if (!real[s]) {
      EXPECT_EQ(h.indices[s], h.indices[s - 1]) << "padding at slot " << s;
    }
  }
  std::vector<double> got(csr.rows * csr.columns, 0.0);
  for (int64_t s = 0; s < static_cast<int64_t>(h.indices.size()); ++s) {
    ASSERT_GE(h.indices[s], 0);
    ASSERT_LT(static_cast<int64_t>(h.indices[s]), csr.columns);
    got[h.row_map[slot_row[s]] * csr.columns + h.indices[s]] += values[s];
  }
  EXPECT_EQ(got, csr.Dense());
}

template <typename Index>
void CheckManyParameters(const TestCsr<Index>& csr) {
  for (int64_t parts : {1, 2, 3, 7}) {
    for (int64_t max_width : {1, 2, 8, 32}) CheckHyb(csr, parts, max_width);
  }
  CheckHyb(csr, csr.columns + 3, 4);  // parts > columns: one column per part, the rest empty
}

TYPED_TEST(HybConversion, RandomMatricesMatchTheDefinition) {
  CheckManyParameters(RandomCsr<TypeParam>(60, 60, 1));
  CheckManyParameters(RandomCsr<TypeParam>(120, 17, 2, {3}));     // tall, a dense row
  CheckManyParameters(RandomCsr<TypeParam>(9, 150, 3, {0, 8}));   // wide, dense first and last rows
  CheckManyParameters(RandomCsr<TypeParam>(40, 33, 4, {}, true, 12));  // unsorted, duplicates
}

TYPED_TEST(HybConversion, DegenerateShapes) {
  CheckManyParameters(FromRows<TypeParam>(1, 1, {{0}}));
  CheckManyParameters(FromRows<TypeParam>(1, 1, {{}}));
  CheckManyParameters(FromRows<TypeParam>(5, 4, {{}, {}, {}, {}, {}}));
  CheckManyParameters(FromRows<TypeParam>(0, 6, {}));
  CheckManyParameters(FromRows<TypeParam>(3, 0, {{}, {}, {}}));
  auto none = Hyb(FromRows<TypeParam>(4, 4, {{}, {}, {}, {}}), 2, 4);
  EXPECT_EQ(none.buckets(), 0);
  EXPECT_TRUE(none.row_map.empty() && none.indices.empty() && none.slot.empty());
  EXPECT_EQ(none.row_offset, (std::vector<int64_t>{0}));
}

TYPED_TEST(HybConversion, HandComputedLayout) {
  // 4 x 8, parts of 4 columns, max_width 2:
  //   row 0: 0 1 2 | 5        -> part 0: 3 entries, split 2 + 1; part 1: width 1
  //   row 1: (empty)
  //   row 2: 3 | 7 6          -> part 0: width 1; part 1: width 2 (unsorted kept)
  //   row 3: 1 3              -> part 0: width 2
  auto csr = FromRows<TypeParam>(4, 8, {{0, 1, 2, 5}, {}, {3, 7, 6}, {1, 3}});
  auto h = Hyb(csr, 2, 2);
  EXPECT_EQ(h.part_columns, 4);
  EXPECT_EQ(h.bucket_part, (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(h.bucket_width, (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(h.bucket_rows, (std::vector<int64_t>{1, 3, 1, 1}));
  EXPECT_EQ(h.row_map, (std::vector<TypeParam>{2, 0, 0, 3, 0, 2}));
  //                  bucket (0,1): [3]  (0,2): [0 1][2 2][1 3]  (1,1): [5]  (1,2): [7 6]
  EXPECT_EQ(h.indices, (std::vector<TypeParam>{3, 0, 1, 2, 2, 1, 3, 5, 7, 6}));
  EXPECT_EQ(h.slot, (std::vector<int64_t>{1, 2, 3, 7, 0, 8, 9, 5, 6}));
  CheckHyb(csr, 2, 2);
}

TYPED_TEST(HybConversion, DenseRowSplitsIntoMaxWidthPieces) {
  std::vector<std::vector<int64_t>> rows(3);
  for (int64_t c = 0; c < 70; ++c) rows[1].push_back(c);
  rows[2] = {5};
  auto csr = FromRows<TypeParam>(3, 70, rows);
  auto h = Hyb(csr, 1, 16);  // bucketed ELL: 70 = 4 x 16 + 6
  EXPECT_EQ(h.bucket_width, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(h.bucket_rows, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(h.row_map, (std::vector<TypeParam>{2, 1, 1, 1, 1, 1}));
  // The last piece (slots 1 + 4 * 16 ...) holds columns 64..69, then pads with 69.
  for (int64_t j = 0; j < 16; ++j) EXPECT_EQ(static_cast<int64_t>(h.indices[65 + j]), std::min<int64_t>(64 + j, 69));
  CheckHyb(csr, 1, 16);
  CheckHyb(csr, 3, 8);
}

TYPED_TEST(HybConversion, BadArgumentsAreUserErrors) {
  auto csr = RandomCsr<TypeParam>(10, 10, 5);
  auto message = [&](int64_t parts, int64_t max_width) {
    try {
      Hyb(csr, parts, max_width);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(0, 4), "op: argument 'parts' must be positive, got 0");
  EXPECT_EQ(message(-2, 4), "op: argument 'parts' must be positive, got -2");
  EXPECT_EQ(message(1, 3), "op: argument 'max_width' must be a positive power of two, got 3");
  EXPECT_EQ(message(1, 0), "op: argument 'max_width' must be a positive power of two, got 0");
  EXPECT_EQ(message(1, -8), "op: argument 'max_width' must be a positive power of two, got -8");
  EXPECT_EQ(message(2, 12), "op: argument 'max_width' must be a positive power of two, got 12");
}

TYPED_TEST(HybConversion, ThreadedEqualsSerial) {
  testing::ThreadLauncher threads(4);
  for (unsigned seed : {1u, 2u, 3u}) {
    auto csr = RandomCsr<TypeParam>(5000 + seed * 33, 700, seed, {0, 123, 4999}, seed == 2, 40);
    for (auto [parts, max_width] : std::vector<std::pair<int64_t, int64_t>>{{1, 32}, {4, 8}, {900, 2}}) {
      auto serial = Hyb(csr, parts, max_width), threaded = Hyb(csr, parts, max_width, threads.get());
      EXPECT_EQ(serial.bucket_part, threaded.bucket_part);
      EXPECT_EQ(serial.bucket_width, threaded.bucket_width);
      EXPECT_EQ(serial.bucket_rows, threaded.bucket_rows);
      EXPECT_EQ(serial.row_map, threaded.row_map);
      EXPECT_EQ(serial.indices, threaded.indices);
      EXPECT_EQ(serial.slot, threaded.slot);
    }
    CheckHyb(csr, 4, 8);
  }
}

}  // namespace
}  // namespace sparsetir
