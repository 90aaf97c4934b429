// The index simplifier's rules for unit divisors: x / 1 = x and x % 1 = 0,
// so that a one-slot level fused with its parent leaves P[v + 1] - P[v].
#include <gtest/gtest.h>

#include "ir/equal.h"
#include "ir/expr.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

TEST(Simplify, UnitDivisorsFold) {
  Var v = MakeVar("v", DataType::kInt32);
  Expr one = MakeInt(1);
  Expr mod = MakeBinary(BinaryOp::kFloorMod, v, one);
  EXPECT_TRUE(StructuralEqual(Simplify(mod), MakeInt(0)));
  EXPECT_TRUE(StructuralEqual(Simplify(MakeBinary(BinaryOp::kFloorDiv, v, one)), v));
  // v + (v % 1 + 1) -> v + 1
  EXPECT_TRUE(StructuralEqual(Simplify(Add(v, Add(mod, one))), Add(v, one)));
  // A divisor other than 1 stays.
  Expr mod2 = MakeBinary(BinaryOp::kFloorMod, v, MakeInt(2));
  EXPECT_TRUE(StructuralEqual(Simplify(mod2), mod2));
}

}  // namespace
}  // namespace sparsetir
