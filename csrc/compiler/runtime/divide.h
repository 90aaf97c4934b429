// Division of non-negative integers below 2^31 by a divisor fixed at run time,
// as a multiply and a shift (Granlund and Montgomery, "Division by Invariant
// Integers using Multiplication", 1994: with l = ceil(log2 d) and
// m = ceil(2^(31 + l) / d), floor(n * m / 2^(31 + l)) = floor(n / d) for every
// n < 2^31, and n * m < 2^64). The conversions' inner loops divide every
// column index by a block width; a hardware division costs them 3-5x more.
#pragma once

#include <cstdint>

namespace sparsetir {

class DivideBy {
 public:
  static constexpr int64_t kLimit = int64_t{1} << 31;  // dividends must stay below

  explicit DivideBy(int64_t divisor) {
    int shift = 0;
    while ((int64_t{1} << shift) < divisor) ++shift;  // l = ceil(log2 d)
    shift_ = 31 + shift;
    const unsigned __int128 numerator = static_cast<unsigned __int128>(1) << shift_;
    multiplier_ = static_cast<uint64_t>((numerator + static_cast<unsigned __int128>(divisor) - 1) / divisor);
  }

  int64_t operator()(int64_t n) const {
    return static_cast<int64_t>((static_cast<uint64_t>(n) * multiplier_) >> shift_);
  }

 private:
  uint64_t multiplier_;
  int shift_;
};

}  // namespace sparsetir
