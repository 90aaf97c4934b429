// The CSR runtime classes: validation (every rule, with the message naming
// the operator and argument) and the transpose (against a dense reference,
// int32 and int64, empty rows and columns).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "runtime/csr_structure.h"
#include "support/error.h"

namespace sparsetir {
namespace {

template <typename Index>
std::string ValidationError(std::vector<Index> indptr, std::vector<Index> indices) {
  try {
    ValidateCsr<Index>("op", indptr.data(), static_cast<int64_t>(indptr.size()) - 1, indices.data(),
                       static_cast<int64_t>(indices.size()));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(CsrStructure, ValidationAcceptsAndSummarizes) {
  std::vector<int32_t> indptr = {0, 2, 2, 5}, indices = {1, 0, 4, 2, 3};
  CsrSummary s = ValidateCsr<int32_t>("op", indptr.data(), 3, indices.data(), 5);
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.nnz, 5);
  EXPECT_EQ(s.max_index, 4);
  EXPECT_EQ(s.empty_rows, 1);
  EXPECT_EQ(s.max_row_length, 3);
  EXPECT_DOUBLE_EQ(s.mean_distance, (1 + 0 + 2 + 0 + 1) / 5.0);  // |column - row| of (0,1) (0,0) (2,4) (2,2) (2,3)
  EXPECT_DOUBLE_EQ(s.row_length_squares, 2 * 2 + 0 + 3 * 3);
  EXPECT_EQ(s.padded_slots, 2 + 4);  // rows of 2 and 3 padded to powers of two; the empty row takes none
  std::vector<int64_t> empty_indptr = {0};
  CsrSummary e = ValidateCsr<int64_t>("op", empty_indptr.data(), 0, nullptr, 0);
  EXPECT_EQ(e.max_index, -1);
  EXPECT_EQ(e.mean_distance, 0);
  EXPECT_EQ(e.padded_slots, 0);
}

// The summary of random structures against a direct count: the distance's
// integer sum (columns below 2^32) and its floating-point one (a column of
// 2^40), the extremes and the first negative index wherever it sits.
template <typename Index>
void CheckSummary(int64_t rows, int64_t columns, int64_t max_length, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<Index> indptr = {0}, indices;
  double distance = 0;
  int64_t largest = -1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = static_cast<int64_t>(rng() % (max_length + 1));
    for (int64_t k = 0; k < length; ++k) {
      const int64_t c = static_cast<int64_t>(rng() % columns);
      indices.push_back(static_cast<Index>(c));
      distance += std::abs(static_cast<double>(c) - static_cast<double>(r));
      largest = std::max(largest, c);
    }
    indptr.push_back(static_cast<Index>(indices.size()));
  }
  const int64_t nnz = static_cast<int64_t>(indices.size());
  CsrSummary s = ValidateCsr<Index>("op", indptr.data(), rows, indices.data(), nnz);
  EXPECT_EQ(s.max_index, largest);
  EXPECT_NEAR(s.mean_distance, nnz ? distance / nnz : 0, 1e-12 * (1 + distance / std::max<int64_t>(nnz, 1)));
  // The gather each non-zero follows: the previous row's at its position,
  // else its row's previous one, else (a row's first) the row number.
  std::vector<int64_t> near(kNearBits, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      const int64_t p = e - indptr[r];
      const int64_t before = r > 0 && p < indptr[r] - indptr[r - 1] ? int64_t{indices[indptr[r - 1] + p]}
                             : p > 0                                ? int64_t{indices[e - 1]}
                                                                    : r;
      const int64_t d = std::abs(int64_t{indices[e]} - before);
      for (int b = 0; b < kNearBits; ++b) near[b] += d <= (int64_t{1} << b);
    }
  }
  int64_t counted[kNearBits];
  CountNearGathers<Index>(indptr.data(), rows, indices.data(), counted);
  for (int b = 0; b < kNearBits; ++b) EXPECT_EQ(counted[b], near[b]) << b;
  if (nnz == 0) return;
  for (int64_t at : {int64_t{0}, nnz / 2, nnz - 1}) {
    std::vector<Index> bad = indices;
    bad[at] = -1;
    if (at + 1 < nnz) bad[nnz - 1] = -7;  // a later negative one is not the one named
    const std::string message = ValidationError<Index>(indptr, bad);
    EXPECT_NE(message.find("indices[" + std::to_string(at) + "] = -1"), std::string::npos) << message;
  }
}

// An arrow (a dense first row, then the first column and the diagonal)
// gathers in streams: every non-zero follows the one before within a row.
TEST(CsrStructure, AnArrowGathersInStreams) {
  const int64_t n = 50;
  std::vector<int64_t> indptr = {0}, indices;
  for (int64_t c = 0; c < n; ++c) indices.push_back(c);
  indptr.push_back(n);
  for (int64_t r = 1; r < n; ++r) {
    indices.push_back(0);
    indices.push_back(r);
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  const int64_t nnz = static_cast<int64_t>(indices.size());
  CsrSummary s = ValidateCsr<int64_t>("op", indptr.data(), n, indices.data(), nnz);
  int64_t near[kNearBits];
  CountNearGathers<int64_t>(indptr.data(), n, indices.data(), near);
  EXPECT_EQ(near[0], nnz);  // each within one row of the gather it follows
  EXPECT_GT(s.mean_distance, n / 4.0);  // while far from the diagonal
}

TEST(CsrStructure, SummaryMatchesADirectCount) {
  CheckSummary<int32_t>(300, 1000, 12, 1);
  CheckSummary<int64_t>(300, 1000, 12, 2);
  CheckSummary<int64_t>(50, int64_t{1} << 40, 30, 3);  // columns past 2^32: the floating-point sum
  CheckSummary<int32_t>(1, 5, 5, 4);
  CheckSummary<int64_t>(20, 3, 0, 5);  // no non-zeros
}

TEST(CsrStructure, ValidationErrorsNameTheArgument) {
  EXPECT_NE(ValidationError<int32_t>({1, 2}, {0, 0}).find("op: indptr must start at 0"), std::string::npos);
  EXPECT_NE(ValidationError<int64_t>({0, 2, 1}, {0, 0}).find("indptr must be non-decreasing"), std::string::npos);
  EXPECT_NE(ValidationError<int32_t>({0, 1}, {0, 0}).find("indptr must end at nnz = 2"), std::string::npos);
  EXPECT_NE(ValidationError<int64_t>({0, 2}, {0, -3}).find("indices must be non-negative, got indices[1] = -3"),
            std::string::npos);
}

// A decrease between extreme int64 entries is refused as one: the entries are
// compared, not subtracted (their difference overflows).
TEST(CsrStructure, ValidationRefusesDecreaseBetweenExtremeValues) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  EXPECT_NE(ValidationError<int64_t>({0, kMax, kMin}, {0}).find("indptr must be non-decreasing, but indptr[2]"),
            std::string::npos);
  EXPECT_NE(ValidationError<int64_t>({0, kMax, -2}, {0}).find("indptr must be non-decreasing, but indptr[2]"),
            std::string::npos);
}

template <typename Index>
void CheckTranspose(int64_t rows, int64_t columns, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Index> indptr = {0}, indices;
  std::vector<std::vector<int>> dense(rows, std::vector<int>(columns, -1));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) {
      if (u(rng) < density) {
        dense[r][c] = static_cast<int>(indices.size());
        indices.push_back(static_cast<Index>(c));
      }
    }
    indptr.push_back(static_cast<Index>(indices.size()));
  }
  const size_t nnz = indices.size();
  std::vector<Index> t_indptr(columns + 1), t_indices(nnz), perm(nnz);
  TransposeCsr<Index>(indptr.data(), indices.data(), rows, columns, t_indptr.data(), t_indices.data(), perm.data());
  ASSERT_EQ(t_indptr[0], 0);
  ASSERT_EQ(static_cast<size_t>(t_indptr[columns]), nnz);
  for (int64_t c = 0; c < columns; ++c) {
    Index previous = -1;
    for (Index e = t_indptr[c]; e < t_indptr[c + 1]; ++e) {
      Index r = t_indices[e];
      EXPECT_GT(r, previous) << "rows of a column must ascend";
      previous = r;
      EXPECT_EQ(dense[r][c], perm[e]) << "perm must point at the original non-zero";
    }
    int count = 0;
    for (int64_t r = 0; r < rows; ++r) count += dense[r][c] >= 0;
    EXPECT_EQ(count, t_indptr[c + 1] - t_indptr[c]);
  }
}

TEST(CsrStructure, TransposeMatchesDense) {
  CheckTranspose<int32_t>(17, 9, 0.3, 1);
  CheckTranspose<int64_t>(5, 31, 0.2, 2);
  CheckTranspose<int32_t>(1, 1, 1.0, 3);
  CheckTranspose<int64_t>(8, 8, 0.0, 4);
  CheckTranspose<int32_t>(0, 4, 0.5, 5);
  CheckTranspose<int64_t>(4, 0, 0.5, 6);
}

}  // namespace
}  // namespace sparsetir
