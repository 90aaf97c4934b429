// Linear forms of integer indices: what merge, tensorize and the mma
// fragments read the coefficients of split, fused and cached indices from.
#include <gtest/gtest.h>

#include "ir/linear_form.h"

namespace sparsetir {
namespace {

TEST(LinearFormTest, NestedSplitsExpandIntoCoefficients) {
  Var f0 = MakeVar("f_0", DataType::kInt32), f1 = MakeVar("f_1", DataType::kInt32), f2 = MakeVar("f_2", DataType::kInt32);
  // (f_0 * 4 + f_1) * 8 + f_2 + 3: a three-way split, offset.
  Expr e = Add(Add(Mul(Add(Mul(f0, MakeInt(4)), f1), MakeInt(8)), f2), MakeInt(3));
  std::optional<LinearForm> form = AsLinear(e);
  ASSERT_TRUE(form);
  EXPECT_EQ(form->CoefficientOf(f0.get()), 32);
  EXPECT_EQ(form->CoefficientOf(f1.get()), 8);
  EXPECT_EQ(form->CoefficientOf(f2.get()), 1);
  EXPECT_EQ(form->constant, 3);
}

TEST(LinearFormTest, TermsThatCancelLeaveNoCoefficient) {
  Var i = MakeVar("i", DataType::kInt64), j = MakeVar("j", DataType::kInt64);
  std::optional<LinearForm> form = AsLinear(Sub(Add(Mul(MakeInt(2, DataType::kInt64), i), j), Add(i, i)));
  ASSERT_TRUE(form);
  EXPECT_EQ(form->coefficients.size(), 1u);
  EXPECT_EQ(form->CoefficientOf(i.get()), 0);
  EXPECT_EQ(form->CoefficientOf(j.get()), 1);
}

TEST(LinearFormTest, WideningCastsKeepTheFormNarrowingOnesDoNot) {
  Var i = MakeVar("i", DataType::kInt32);
  std::optional<LinearForm> wide = AsLinear(MakeCast(DataType::kInt64, Mul(i, MakeInt(16))));
  ASSERT_TRUE(wide);
  EXPECT_EQ(wide->CoefficientOf(i.get()), 16);
  Var w = MakeVar("w", DataType::kInt64);
  EXPECT_FALSE(AsLinear(MakeCast(DataType::kInt32, w)));  // may wrap
}

TEST(LinearFormTest, ProductsOfVariablesAndDivisionsAreNotLinear) {
  Var i = MakeVar("i", DataType::kInt32), j = MakeVar("j", DataType::kInt32);
  EXPECT_FALSE(AsLinear(Mul(i, j)));
  EXPECT_FALSE(AsLinear(MakeBinary(BinaryOp::kFloorDiv, i, MakeInt(2))));
  EXPECT_FALSE(AsLinear(MakeCast(DataType::kFloat32, i)));
}

}  // namespace
}  // namespace sparsetir
