// lower_sparse_iter and lower_sparse_buffer: the output of each pass is well
// formed, prints in the script language, and parses back to an equal function.
#include <gtest/gtest.h>

#include "ir/equal.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "lower.h"
#include "parser/parser.h"
#include "test_util.h"
#include "transforms/lower_sparse_buffer.h"
#include "transforms/lower_sparse_iter.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

using testing::ReadScript;

class LoweringTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LoweringTest, EveryStageIsWellFormedAndRoundTrips) {
  PrimFunc stage_i = Parse(ReadScript(GetParam()));
  PrimFunc stage_ii = LowerSparseIter(stage_i);
  ASSERT_EQ(stage_ii->stage, Stage::kII);
  VerifyWellFormed(stage_ii);
  EXPECT_TRUE(StructuralEqual(stage_ii, Parse(Print(stage_ii)))) << Print(stage_ii);

  PrimFunc stage_iii = Simplify(LowerSparseBuffer(stage_ii));
  ASSERT_EQ(stage_iii->stage, Stage::kIII);
  VerifyWellFormed(stage_iii);
  EXPECT_TRUE(stage_iii->iterators.empty());
  for (const Buffer& b : stage_iii->buffers) EXPECT_TRUE(b->axes.empty()) << b->name;
  EXPECT_TRUE(StructuralEqual(stage_iii, Parse(Print(stage_iii)))) << Print(stage_iii);
}

INSTANTIATE_TEST_SUITE_P(RfcScripts, LoweringTest,
                         ::testing::Values("csrmm.py", "sddmm.py", "bsrmm_stage_i.py"),
                         [](const auto& info) {
                           std::string name = info.param;
                           return name.substr(0, name.find('.'));
                         });

// The RFC's stage-II form of bsrmm: the reduction over J becomes a loop whose
// extent comes from J_indptr, B is read through J_indices, the init lands
// before the BJ loop, and the structure facts are recorded.
TEST(LowerSparseIterTest, BsrmmMatchesTheDesignsStageII) {
  std::string text = Print(LowerSparseIter(Parse(ReadScript("bsrmm_stage_i.py"))));
  for (const char* expected : {
           "J_indptr = T.sp.match_buffer(indptr, (I,), \"int32\", extra_storage=1)",
           "J_indices = T.sp.match_buffer(indices, (I, J_dense), \"int32\")",
           "T.assume_buffer_domain(J_indptr, [0, nnzb])",
           "for j in T.serial(J_indptr[i + 1] - J_indptr[i]):",
           "C[i, bi, f] = C[i, bi, f] + A[i, j, bi, bj] * B[J_indices[i, j], bj, f]",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
  }
  // The init runs before the first reduction loop (BJ), inside I and BI.
  size_t init = text.find("C[i, bi, f_init] = T.float32(0.0)");
  size_t bj_loop = text.find("for bj in");
  ASSERT_NE(init, std::string::npos);
  EXPECT_LT(init, bj_loop);
  EXPECT_LT(text.find("for bi in"), init);
}

TEST(LowerSparseBufferTest, FlattensOnlyVariedDimensions) {
  PrimFunc f = LowerSparseBuffer(LowerSparseIter(Parse(ReadScript("bsrmm_stage_i.py"))));
  std::string text = Print(f);
  EXPECT_NE(text.find("A = T.match_buffer(a, (nnzb, blk, blk), \"float32\")"), std::string::npos) << text;
  EXPECT_NE(text.find("C = T.match_buffer(c, (nb, blk, feat_size), \"float32\")"), std::string::npos) << text;
  EXPECT_NE(text.find("J_indptr = T.match_buffer(indptr, (nb + 1,), \"int32\")"), std::string::npos) << text;
}

TEST(LowerSparseBufferTest, RaggedBufferWithoutNnzIsSizedByItsIndptr) {
  PrimFunc f = LowerSparseBuffer(LowerSparseIter(Parse(ReadScript("iterators_ragged.py"))));
  EXPECT_NE(Print(f).find("A = T.match_buffer(a, (J_indptr[m],), \"float32\")"), std::string::npos) << Print(f);
}

TEST(LowerSparseBufferTest, DcsrOffsetsWalkBothLevels) {
  std::string script = R"(
@T.prim_func
def dcsr_sum(a: T.handle, out: T.handle, indptr_i: T.handle, indices_i: T.handle, indptr_j: T.handle,
             indices_j: T.handle, m: T.int32, n: T.int32, nnz1: T.int32, nnz2: T.int32) -> None:
    O = T.sp.dense_fixed(1)
    I = T.sp.compressed_varied(O, (m, nnz1), (indptr_i, indices_i), "int32")
    J = T.sp.compressed_varied(I, (n, nnz2), (indptr_j, indices_j), "int32")
    I_detach = T.sp.dense_fixed(m)
    A = T.sp.match_buffer(a, (O, I, J), "float32")
    Out = T.sp.match_buffer(out, (I_detach,), "float32")
    with T.sp.iteration([O, I, J], "SSR", "row_sum") as [o, i, j]:
        with T.init():
            Out[i] = 0.0
        Out[i] = Out[i] + A[o, i, j]
)";
  std::string text = Print(Simplify(LowerSparseBuffer(LowerSparseIter(Parse(script)))));
  EXPECT_NE(text.find("A[J_indptr[I_indptr[o] + i] + j]"), std::string::npos) << text;
  EXPECT_NE(text.find("Out[I_indices[I_indptr[o] + i]]"), std::string::npos) << text;
}

// Two iterators under one parent may share their structure arrays: both
// lower onto the same buffers.
TEST(LowerSparseIterTest, IteratorsSharingStructureUnderOneParent) {
  std::string script = R"(
@T.prim_func
def shared(a: T.handle, b: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32,
           nnz: T.int32) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J2 = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (I, J2), "float32")
    with T.sp.iteration([I, J], "SS", "copy") as [i, j]:
        A[i, j] = B[i, j] + 1.0
)";
  PrimFunc f = LowerToStageIII(Parse(script));
  std::string text = Print(f);
  EXPECT_NE(text.find("J_indptr = T.match_buffer(indptr, (m + 1,), \"int32\")"), std::string::npos) << text;
  EXPECT_EQ(text.find("J2_indptr"), std::string::npos) << text;
}

}  // namespace
}  // namespace sparsetir
