// COO -> CSR and CSR -> ELL conversions (runtime/coo_conversion.h,
// runtime/ell_conversion.h) against a brute-force dense reconstruction, int32
// and int64: empty rows, zero nnz, 1x1, a dense row, rectangular shapes,
// duplicates, unsorted input, the padding rule, the user errors, and a
// multi-threaded launcher giving the serial result. The hyb conversion is in
// test_hyb_conversion.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "conversion_test_util.h"
#include "runtime/coo_conversion.h"
#include "runtime/ell_conversion.h"
#include "support/error.h"
#include "thread_launcher.h"

namespace sparsetir {
namespace {

using testing::FromRows;
using testing::RandomCsr;
using testing::TestCsr;

template <typename T>
class Conversions : public ::testing::Test {};
using IndexTypes = ::testing::Types<int32_t, int64_t>;
TYPED_TEST_SUITE(Conversions, IndexTypes);

// ---------------------------------------------------------------- COO -> CSR

template <typename Index>
struct TestCoo {
  int64_t rows = 0, columns = 0;
  std::vector<Index> row, col;
};

// A random COO in random order, `duplicates` of its entries repeated.
template <typename Index>
TestCoo<Index> RandomCoo(int64_t rows, int64_t columns, int64_t nnz, int duplicates, unsigned seed) {
  std::mt19937 rng(seed);
  TestCoo<Index> coo{rows, columns, {}, {}};
  for (int64_t e = 0; e < nnz && rows > 0 && columns > 0; ++e) {
    coo.row.push_back(static_cast<Index>(rng() % rows));
    coo.col.push_back(static_cast<Index>(rng() % columns));
  }
  for (int d = 0; d < duplicates && !coo.row.empty(); ++d) {
    const size_t from = rng() % coo.row.size(), to = rng() % (coo.row.size() + 1);
    const Index r = coo.row[from], c = coo.col[from];
    coo.row.insert(coo.row.begin() + to, r);
    coo.col.insert(coo.col.begin() + to, c);
  }
  return coo;
}

template <typename Index>
void CheckCooToCsr(const TestCoo<Index>& coo, bool sum_duplicates) {
  SCOPED_TRACE(::testing::Message() << coo.rows << "x" << coo.columns << " nnz " << coo.row.size() << " sum "
                                    << sum_duplicates << " index bytes " << sizeof(Index));
  const int64_t nnz = static_cast<int64_t>(coo.row.size());
  CsrFromCoo<Index> csr =
      CooToCsr<Index>("op", coo.row.data(), coo.col.data(), nnz, coo.rows, coo.columns, sum_duplicates);
  ASSERT_EQ(static_cast<int64_t>(csr.indptr.size()), coo.rows + 1);
  ASSERT_EQ(csr.indptr.front(), 0);
  ASSERT_EQ(static_cast<int64_t>(csr.indptr.back()), csr.nnz());
  ASSERT_EQ(static_cast<int64_t>(csr.slot.size()), nnz);
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (int64_t e = 0; e < nnz; ++e) pairs.insert({coo.row[e], coo.col[e]});
  EXPECT_EQ(csr.nnz(), sum_duplicates ? static_cast<int64_t>(pairs.size()) : nnz);
  for (int64_t r = 0; r < coo.rows; ++r) {
    ASSERT_LE(csr.indptr[r], csr.indptr[r + 1]);
    for (int64_t k = csr.indptr[r] + 1; k < csr.indptr[r + 1]; ++k) {
      if (sum_duplicates) {
        EXPECT_LT(csr.indices[k - 1], csr.indices[k]) << "row " << r;
      } else {
        EXPECT_LE(csr.indices[k - 1], csr.indices[k]) << "row " << r;
      }
    }
  }
  // Each entry's slot lies in its row and holds its column; kept duplicates
  // keep their COO order (the sort is stable).
  std::map<std::pair<int64_t, int64_t>, int64_t> last_slot;
  for (int64_t e = 0; e < nnz; ++e) {
    ASSERT_GE(csr.slot[e], csr.indptr[coo.row[e]]);
    ASSERT_LT(csr.slot[e], csr.indptr[coo.row[e] + 1]);
    EXPECT_EQ(csr.indices[csr.slot[e]], coo.col[e]);
    auto [it, fresh] = last_slot.insert({{coo.row[e], coo.col[e]}, csr.slot[e]});
    if (!fresh) {
      if (sum_duplicates) {
        EXPECT_EQ(it->second, csr.slot[e]);
      } else {
        EXPECT_LT(it->second, csr.slot[e]);
      }
      it->second = csr.slot[e];
    }
  }
  // Dense: the COO entries summed against the CSR rebuilt from the slots.
  std::vector<double> expected(coo.rows * coo.columns, 0.0), values(csr.nnz(), 0.0), got(expected.size(), 0.0);
  for (int64_t e = 0; e < nnz; ++e) {
    expected[coo.row[e] * coo.columns + coo.col[e]] += e + 1.0;
    values[csr.slot[e]] += e + 1.0;
  }
  for (int64_t r = 0; r < coo.rows; ++r) {
    for (int64_t k = csr.indptr[r]; k < csr.indptr[r + 1]; ++k) got[r * coo.columns + csr.indices[k]] += values[k];
  }
  EXPECT_EQ(got, expected);
}

TYPED_TEST(Conversions, CooToCsrMatchesDense) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {7, 7}, {40, 13}, {13, 40}, {200, 3}, {5, 300}};
  for (auto [m, n] : shapes) {
    for (int64_t nnz : {int64_t{0}, int64_t{1}, m * n / 3 + 1, 2 * m * n}) {
      for (int duplicates : {0, 5}) {
        auto coo = RandomCoo<TypeParam>(m, n, nnz, duplicates, static_cast<unsigned>(m * 31 + n + nnz));
        CheckCooToCsr(coo, true);
        CheckCooToCsr(coo, false);
      }
    }
  }
  CheckCooToCsr(TestCoo<TypeParam>{0, 0, {}, {}}, true);
  CheckCooToCsr(TestCoo<TypeParam>{3, 0, {}, {}}, true);
  CheckCooToCsr(TestCoo<TypeParam>{0, 4, {}, {}}, false);
}

TYPED_TEST(Conversions, CooToCsrHandComputed) {
  // (2, 1) (0, 3) (2, 1) (0, 0) (1, 2) (0, 3): rows 0: 0, 3, 3   1: 2   2: 1, 1
  TestCoo<TypeParam> coo{4, 4, {2, 0, 2, 0, 1, 0}, {1, 3, 1, 0, 2, 3}};
  auto summed = CooToCsr<TypeParam>("op", coo.row.data(), coo.col.data(), 6, 4, 4, true);
  EXPECT_EQ(summed.indptr, (std::vector<TypeParam>{0, 2, 3, 4, 4}));
  EXPECT_EQ(summed.indices, (std::vector<TypeParam>{0, 3, 2, 1}));
  EXPECT_EQ(summed.slot, (std::vector<int64_t>{3, 1, 3, 0, 2, 1}));
  auto kept = CooToCsr<TypeParam>("op", coo.row.data(), coo.col.data(), 6, 4, 4, false);
  EXPECT_EQ(kept.indptr, (std::vector<TypeParam>{0, 3, 4, 6, 6}));
  EXPECT_EQ(kept.indices, (std::vector<TypeParam>{0, 3, 3, 2, 1, 1}));
  EXPECT_EQ(kept.slot, (std::vector<int64_t>{4, 1, 5, 0, 3, 2}));
}

TYPED_TEST(Conversions, CooToCsrErrorsNameTheArgumentAndEntry) {
  auto message = [](std::vector<TypeParam> row, std::vector<TypeParam> col, int64_t rows, int64_t columns) {
    try {
      CooToCsr<TypeParam>("sparsetir._coo_to_csr", row.data(), col.data(), static_cast<int64_t>(row.size()), rows,
                          columns, true);
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), UserErrorKind::kArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({0, 1, 5, 9}, {0, 0, 0, 0}, 5, 3),
            "sparsetir._coo_to_csr: argument 'row' holds row[2] = 5, out of range for 5 rows (it must be in [0, 5))");
  EXPECT_EQ(message({0, -1}, {0, 0}, 5, 3),
            "sparsetir._coo_to_csr: argument 'row' holds row[1] = -1, out of range for 5 rows (it must be in [0, 5))");
  EXPECT_EQ(message({0, 1, 2}, {2, -4, 3}, 5, 3), "sparsetir._coo_to_csr: argument 'col' holds col[1] = -4, out of "
                                                  "range for 3 columns (it must be in [0, 3))");
  EXPECT_EQ(message({0}, {0}, 1, 0),
            "sparsetir._coo_to_csr: argument 'col' holds col[0] = 0, out of range for 0 columns (it must be in [0, 0))");
}

// ---------------------------------------------------------------- CSR -> ELL

template <typename Index>
EllStructure<Index> Ell(const TestCsr<Index>& csr, int64_t width, const SparsetirLauncher* launcher = nullptr) {
  return CsrToEll<Index>("op", csr.indptr.data(), csr.indices.data(), csr.rows, width, launcher);
}

template <typename Index>
void CheckEll(const TestCsr<Index>& csr, int64_t width) {
  SCOPED_TRACE(::testing::Message() << csr.rows << "x" << csr.columns << " nnz " << csr.nnz() << " width " << width
                                    << " index bytes " << sizeof(Index));
  EllStructure<Index> ell = Ell(csr, width);
  ASSERT_EQ(ell.rows, csr.rows);
  ASSERT_EQ(ell.width, width);
  ASSERT_EQ(static_cast<int64_t>(ell.indices.size()), csr.rows * width);
  ASSERT_EQ(static_cast<int64_t>(ell.slot.size()), csr.nnz());
  std::vector<double> padded(ell.indices.size(), 0.0);
  std::vector<bool> real(ell.indices.size(), false);
  for (int64_t r = 0; r < csr.rows; ++r) {
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) {
      // In its row, in CSR order, holding its column.
      ASSERT_EQ(ell.slot[e], r * width + (e - csr.indptr[r]));
      EXPECT_EQ(ell.indices[ell.slot[e]], csr.indices[e]);
      padded[ell.slot[e]] = e + 1.0;
      real[ell.slot[e]] = true;
    }
    const int64_t length = csr.indptr[r + 1] - csr.indptr[r];
    const Index pad = length > 0 ? csr.indices[csr.indptr[r + 1] - 1] : Index{0};
    for (int64_t j = length; j < width; ++j) EXPECT_EQ(ell.indices[r * width + j], pad) << "padding of row " << r;
  }
  std::vector<double> got(csr.rows * csr.columns, 0.0);
  for (int64_t s = 0; s < csr.rows * width; ++s) {
    ASSERT_GE(ell.indices[s], 0);
    if (csr.columns > 0) {
      ASSERT_LT(static_cast<int64_t>(ell.indices[s]), csr.columns);
    }
    if (real[s]) got[(s / width) * csr.columns + ell.indices[s]] += padded[s];
  }
  EXPECT_EQ(got, csr.Dense());
}

int64_t LongestRow(const std::vector<int64_t>& lengths) {
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

template <typename Index>
std::vector<int64_t> RowLengths(const TestCsr<Index>& csr) {
  std::vector<int64_t> lengths(csr.rows);
  for (int64_t r = 0; r < csr.rows; ++r) lengths[r] = csr.indptr[r + 1] - csr.indptr[r];
  return lengths;
}

TYPED_TEST(Conversions, EllMatchesDense) {
  std::vector<TestCsr<TypeParam>> cases = {
      RandomCsr<TypeParam>(30, 30, 1),
      RandomCsr<TypeParam>(50, 9, 2, {4}),  // a dense row, tall
      RandomCsr<TypeParam>(7, 64, 3, {0, 6}),
      RandomCsr<TypeParam>(25, 20, 4, {}, true, 6),  // unsorted, duplicates
      FromRows<TypeParam>(1, 1, {{0}}),
      FromRows<TypeParam>(1, 1, {{}}),
      FromRows<TypeParam>(4, 5, {{}, {}, {}, {}}),
      FromRows<TypeParam>(0, 5, {}),
      FromRows<TypeParam>(3, 0, {{}, {}, {}}),
      FromRows<TypeParam>(4, 6, {{}, {5, 2, 0}, {}, {3}}),
  };
  for (const auto& csr : cases) {
    const int64_t longest = LongestRow(RowLengths(csr));
    for (int64_t width : {longest, longest + 1, longest + 5}) CheckEll(csr, width);
  }
}

TYPED_TEST(Conversions, EllHandComputedPadding) {
  auto csr = FromRows<TypeParam>(3, 6, {{4, 1}, {}, {5}});
  auto ell = Ell(csr, 3);
  EXPECT_EQ(ell.indices, (std::vector<TypeParam>{4, 1, 1, 0, 0, 0, 5, 5, 5}));
  EXPECT_EQ(ell.slot, (std::vector<int64_t>{0, 1, 6}));
}

TYPED_TEST(Conversions, EllRowLongerThanWidthIsAUserError) {
  auto csr = FromRows<TypeParam>(4, 8, {{1}, {0, 1, 2}, {}, {0, 1, 2, 3, 4}});
  try {
    Ell(csr, 2);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "op: row 1 has 3 non-zeros, more than the ELL width 2 (argument 'width'); the width must be at least "
              "the longest row");
  }
  EXPECT_THROW(Ell(csr, 4), UserError);
  EXPECT_THROW(Ell(FromRows<TypeParam>(1, 1, {{}}), -1), UserError);
  EXPECT_NO_THROW(Ell(csr, 5));
}

TYPED_TEST(Conversions, EllThreadedEqualsSerial) {
  testing::ThreadLauncher threads(4);
  for (unsigned seed : {1u, 2u, 3u}) {
    auto csr = RandomCsr<TypeParam>(3000 + seed * 77, 500, seed, {17, 2999}, seed == 2, 30);
    const int64_t width = LongestRow(RowLengths(csr)) + (seed == 3);
    auto serial = Ell(csr, width), threaded = Ell(csr, width, threads.get());
    EXPECT_EQ(serial.indices, threaded.indices);
    EXPECT_EQ(serial.slot, threaded.slot);
  }
}

}  // namespace
}  // namespace sparsetir
