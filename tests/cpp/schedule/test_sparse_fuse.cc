// sparse_fuse: SDDMM over one loop of all non-zeros gives the same result as
// the row-by-row loop nest, serially and in parallel; illegal fusions are
// ScheduleErrors naming the iteration.
#include <gtest/gtest.h>

#include <random>

#include "ir/equal.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "runtime/kernel.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "test_util.h"

namespace sparsetir {
namespace {

KernelArg Tensor(void* data, DataType dtype, std::vector<int64_t> shape) {
  KernelArg a;
  a.kind = KernelArg::Kind::kTensor;
  a.data = data;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.type_name = "tensor";
  return a;
}

KernelArg Int(int64_t v) {
  KernelArg a;
  a.kind = KernelArg::Kind::kInt;
  a.int_value = v;
  a.type_name = "int";
  return a;
}

// Runs an SDDMM kernel on a fixed random problem with empty and dense rows.
std::vector<float> RunSddmm(const Kernel& kernel) {
  const int m = 9, n = 7, feat = 5;
  std::mt19937 rng(3);
  std::vector<int32_t> indptr{0}, indices;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == 4 || (i != 0 && i != 8 && rng() % 3 == 0)) indices.push_back(j);  // rows 0, 8 empty; row 4 dense
    }
    indptr.push_back(static_cast<int32_t>(indices.size()));
  }
  const int nnz = static_cast<int>(indices.size());
  std::vector<float> a(m * feat), b(n * feat), x(nnz), y(nnz, -1.0f);
  for (auto* v : {&a, &b, &x}) {
    for (float& e : *v) e = static_cast<float>(rng() % 17) / 8.0f - 1.0f;
  }
  kernel.Run({Tensor(a.data(), DataType::kFloat32, {m, feat}), Tensor(b.data(), DataType::kFloat32, {n, feat}),
              Tensor(x.data(), DataType::kFloat32, {nnz}), Tensor(y.data(), DataType::kFloat32, {nnz}),
              Tensor(indptr.data(), DataType::kInt32, {m + 1}), Tensor(indices.data(), DataType::kInt32, {nnz}),
              Int(m), Int(n), Int(feat), Int(nnz)},
             nullptr);
  // Independent reference.
  for (int i = 0; i < m; ++i) {
    for (int e = indptr[i]; e < indptr[i + 1]; ++e) {
      double dot = 0;
      for (int k = 0; k < feat; ++k) dot += double(a[i * feat + k]) * b[indices[e] * feat + k];
      EXPECT_NEAR(y[e], dot * x[e], 1e-5) << "non-zero " << e;
    }
  }
  return y;
}

TEST(SparseFuseTest, FusedSddmmMatchesReference) {
  PrimFunc f = Parse(testing::ReadScript("sddmm.py"));
  Schedule sch(f);
  sch.SparseFuse("sddmm", {"I", "J"});
  EXPECT_NE(Print(sch.mod()).find("\"sparse_fuse\": [\"I\", \"J\"]"), std::string::npos) << Print(sch.mod());
  std::vector<std::string> loops = sch.GetLoops("sddmm");
  ASSERT_EQ(loops.size(), 2u);  // the fused loop and k
  std::string text = Print(sch.mod());
  EXPECT_NE(text.find("T.sp.lower_bound(indptr, 0, m + 1, ij + 1) - 1"), std::string::npos) << text;
  EXPECT_TRUE(StructuralEqual(sch.mod(), Parse(text))) << text;  // stage II with lets round-trips
  sch.Parallel(loops[0]);  // the fused loop writes one output per iteration
  RunSddmm(*Kernel::Build(sch.mod(), Target::HostCpu()));
}

TEST(SparseFuseTest, RefusesReductionAndNonAdjacentIterators) {
  Schedule csrmm(Parse(testing::ReadScript("csrmm.py")));
  EXPECT_THROW(csrmm.SparseFuse("csrmm", {"I", "J"}), UserError);  // J reduces
  Schedule sddmm(Parse(testing::ReadScript("sddmm.py")));
  EXPECT_THROW(sddmm.SparseFuse("sddmm", {"J", "I"}), UserError);  // wrong order
  EXPECT_THROW(sddmm.SparseFuse("sddmm", {"I", "K"}), UserError);  // K is not I's child
  EXPECT_THROW(sddmm.SparseFuse("nope", {"I", "J"}), UserError);
  try {
    csrmm.SparseFuse("csrmm", {"I", "J"});
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("sparse_fuse: iteration 'csrmm'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsetir
