// DivideBy (runtime/divide.h) against the hardware division: every divisor
// up to 4096 on the dividends where rounding would go wrong first (multiples
// of the divisor and their neighbours, the top of the range) and at random.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "runtime/divide.h"

namespace sparsetir {
namespace {

TEST(DivideBy, MatchesDivisionBelowTheLimit) {
  std::mt19937_64 rng(7);
  for (int64_t d = 1; d <= 4096; ++d) {
    const DivideBy divide(d);
    for (int64_t n : {int64_t{0}, int64_t{1}, d - 1, d, d + 1, DivideBy::kLimit - 1, DivideBy::kLimit - d}) {
      ASSERT_EQ(divide(n), n / d) << n << " / " << d;
    }
    for (int64_t k = 1; k * d < DivideBy::kLimit; k = k * 3 + 1) {
      ASSERT_EQ(divide(k * d), k) << k * d << " / " << d;
      ASSERT_EQ(divide(k * d - 1), k - 1) << k * d - 1 << " / " << d;
    }
    for (int i = 0; i < 2000; ++i) {
      const int64_t n = static_cast<int64_t>(rng() % static_cast<uint64_t>(DivideBy::kLimit));
      ASSERT_EQ(divide(n), n / d) << n << " / " << d;
    }
  }
}

}  // namespace
}  // namespace sparsetir
