// Which accesses of a vectorized loop the cuda target moves as vectors
// (codegen/vector_access.h): contiguous in the lane, unconditional, of a
// buffer the loop does not write, from a provably aligned first element.
#include <gtest/gtest.h>

#include <string>

#include "codegen/vector_access.h"
#include "ir/functor.h"
#include "parser/parser.h"
#include "test_util.h"

namespace sparsetir {
namespace {

using testing::ReplaceAll;

int64_t NoFacts(const VarNode*) { return 1; }

TEST(VectorAccess, KnowsThePowerOfTwoFactorsOfIndices) {
  const Var i = MakeVar("i", DataType::kInt32), t = MakeVar("t", DataType::kInt32);
  EXPECT_EQ(KnownPowerOfTwoFactor(MakeInt(48), NoFacts), 16);
  EXPECT_EQ(KnownPowerOfTwoFactor(MakeInt(0), NoFacts), int64_t{1} << 20);
  EXPECT_EQ(KnownPowerOfTwoFactor(i, NoFacts), 1);
  EXPECT_EQ(KnownPowerOfTwoFactor(Add(Mul(i, MakeInt(256)), Mul(t, MakeInt(4))), NoFacts), 4);
  EXPECT_EQ(KnownPowerOfTwoFactor(Add(Mul(i, MakeInt(256)), Add(Mul(t, MakeInt(4)), MakeInt(1))), NoFacts), 1);
  EXPECT_EQ(KnownPowerOfTwoFactor(Mul(Mul(i, MakeInt(2)), Mul(t, MakeInt(8))), NoFacts), 16);
  // A let-bound variable: what the caller knows of its value.
  EXPECT_EQ(KnownPowerOfTwoFactor(Add(i, MakeInt(8)), [&](const VarNode* v) { return v == i.get() ? 8 : 1; }), 8);
}

const char* const kScale = R"(
@T.prim_func
def scale(a: T.handle, b: T.handle, n: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (n, WIDTH), "float32")
    B = T.match_buffer(b, (n, WIDTH), "float32")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        for t in T.thread_binding(8, thread="threadIdx.x"):
            for v in T.vectorized(4):
                BODY
)";

// A plan points into the function's IR (its loads and store): the function
// is kept with it.
struct Planned {
  PrimFunc f;
  VectorAccesses plan;
};

Planned Plan(const std::string& body, int width = 32) {
  const PrimFunc f = Parse(ReplaceAll(ReplaceAll(kScale, "BODY", body), "WIDTH", std::to_string(width)));
  struct Find : IRVisitor {
    const ForNode* loop = nullptr;
    void Visit(const ForNode* n) override {
      if (n->for_kind == ForKind::kVectorized) loop = n;
      IRVisitor::Visit(n);
    }
  } find;
  find.VisitStmt(f->body);
  EXPECT_NE(find.loop, nullptr);
  return {f, PlanVectorAccesses(find.loop, NoFacts)};
}

TEST(VectorAccess, MovesAContiguousLoadAndStoreAsVectors) {
  const Planned planned = Plan("B[i, t * 4 + v] = A[i, t * 4 + v] + A[i, t * 4 + v] * 2.0");
  const VectorAccesses& plan = planned.plan;
  EXPECT_EQ(plan.lanes, 4);
  ASSERT_EQ(plan.loads.size(), 1u);  // the two loads of one element share a vector
  EXPECT_EQ(plan.loads[0].buffer->name, "A");
  EXPECT_EQ(plan.loads[0].uses.size(), 2u);
  ASSERT_TRUE(plan.store.has_value());
  EXPECT_EQ(plan.store->store->buffer->name, "B");
}

TEST(VectorAccess, LeavesAccessesThatAreNotProvablyAligned) {
  EXPECT_TRUE(Plan("B[i, t * 4 + v] = A[i, t * 4 + v + 2]").plan.loads.empty());    // 2 elements past a vector
  EXPECT_FALSE(Plan("B[i, t * 4 + v] = A[i, t * 4 + v + 8]").plan.loads.empty());   // two vectors past
  EXPECT_TRUE(Plan("B[i, t * 4 + v] = A[i, t * 4 + v]", 34).plan.empty());          // rows of 34: 2 past at i = 1
  EXPECT_FALSE(Plan("B[i, t * 4 + v] = A[i, t * 4 + v]", 36).plan.empty());         // rows of 36: 9 vectors
  EXPECT_TRUE(Plan("B[i, t * 4 + v] = A[i, t * 8 + v * 2]").plan.loads.empty());    // two elements a lane
  EXPECT_TRUE(Plan("B[i, t * 4 + v] = A[v, t * 4]").plan.loads.empty());            // across rows
}

TEST(VectorAccess, LeavesLoadsUnderAConditionAndBuffersTheLoopWrites) {
  const Planned guarded_plan = Plan("if t < 7:\n                    B[i, t * 4 + v] = A[i, t * 4 + v]");
  const VectorAccesses& guarded = guarded_plan.plan;
  EXPECT_TRUE(guarded.loads.empty());
  EXPECT_FALSE(guarded.store.has_value());  // not the loop's only statement
  const Planned selected_plan = Plan("B[i, t * 4 + v] = T.Select(t < 7, A[i, t * 4 + v], 0.0)");
  const VectorAccesses& selected = selected_plan.plan;
  EXPECT_TRUE(selected.loads.empty());
  EXPECT_TRUE(selected.store.has_value());
  const Planned updated_plan = Plan("B[i, t * 4 + v] = B[i, t * 4 + v] + A[i, t * 4 + v]");
  const VectorAccesses& updated = updated_plan.plan;
  ASSERT_EQ(updated.loads.size(), 1u);
  EXPECT_EQ(updated.loads[0].buffer->name, "A");
  EXPECT_FALSE(updated.store.has_value());  // the loop reads B too
}

}  // namespace
}  // namespace sparsetir
