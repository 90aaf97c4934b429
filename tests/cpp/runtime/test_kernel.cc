// Builds the design's csrmm and SDDMM scripts, runs them on a small CSR matrix
// and compares with a dense reference computed here in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "parser/parser.h"
#include "runtime/kernel.h"
#include "support/error.h"

namespace sparsetir {
namespace {

std::string ReadScript(const std::string& name) {
  std::ifstream in(std::string(SPARSETIR_SOURCE_DIR) + "/tests/scripts/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

// A random m x n CSR matrix with an empty row (1) and a dense row (2).
struct Csr {
  int m, n;
  std::vector<int32_t> indptr{0}, indices;
  std::vector<float> values;
};

Csr RandomCsr(int m, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  Csr a{m, n};
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      bool keep = i == 2 || (i != 1 && rng() % 4 == 0);
      if (keep) {
        a.indices.push_back(j);
        a.values.push_back(value(rng));
      }
    }
    a.indptr.push_back(static_cast<int32_t>(a.indices.size()));
  }
  return a;
}

TEST(KernelTest, CsrmmMatchesDenseReference) {
  auto kernel = Kernel::Build(Parse(ReadScript("csrmm.py")), Target::HostCpu());
  Csr a = RandomCsr(7, 5, 1);
  const int k = 3;
  std::vector<float> b(a.n * k), c(a.m * k, 123.0f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  int nnz = static_cast<int>(a.values.size());
  kernel->Run({Tensor(a.values.data(), DataType::kFloat32, {nnz}), Tensor(b.data(), DataType::kFloat32, {a.n, k}),
               Tensor(c.data(), DataType::kFloat32, {a.m, k}), Tensor(a.indptr.data(), DataType::kInt32, {a.m + 1}),
               Tensor(a.indices.data(), DataType::kInt32, {nnz}), Int(a.m), Int(a.n), Int(k), Int(nnz)},
              nullptr);
  for (int i = 0; i < a.m; ++i) {
    for (int f = 0; f < k; ++f) {
      double expected = 0;
      for (int e = a.indptr[i]; e < a.indptr[i + 1]; ++e) expected += double(a.values[e]) * b[a.indices[e] * k + f];
      EXPECT_NEAR(c[i * k + f], expected, 1e-5) << "row " << i << " column " << f;
    }
  }
}

TEST(KernelTest, MalformedIndptrIsAnArgumentError) {
  auto kernel = Kernel::Build(Parse(ReadScript("csrmm.py")), Target::HostCpu());
  Csr a = RandomCsr(4, 4, 2);
  std::swap(a.indptr[1], a.indptr[3]);  // no longer non-decreasing
  int nnz = static_cast<int>(a.values.size());
  std::vector<float> b(4 * 2), c(4 * 2);
  try {
    kernel->Run({Tensor(a.values.data(), DataType::kFloat32, {nnz}), Tensor(b.data(), DataType::kFloat32, {4, 2}),
                 Tensor(c.data(), DataType::kFloat32, {4, 2}), Tensor(a.indptr.data(), DataType::kInt32, {5}),
                 Tensor(a.indices.data(), DataType::kInt32, {nnz}), Int(4), Int(4), Int(2), Int(nnz)},
                nullptr);
    FAIL() << "expected an argument error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserErrorKind::kArgument);
    EXPECT_NE(std::string(e.what()).find("argument 'indptr'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("non-decreasing"), std::string::npos) << e.what();
  }
}

TEST(KernelTest, StructureParamsAreTheIndexArrays) {
  auto kernel = Kernel::Build(Parse(ReadScript("csrmm.py")), Target::HostCpu());
  // csrmm(a, b, c, indptr, indices, m, n, feat_size, nnz)
  EXPECT_EQ(kernel->structure_params(), (std::vector<size_t>{3, 4}));
}

TEST(KernelTest, CheckWithoutContentsStillChecksShapes) {
  auto kernel = Kernel::Build(Parse(ReadScript("csrmm.py")), Target::HostCpu());
  Csr a = RandomCsr(4, 4, 3);
  int nnz = static_cast<int>(a.values.size());
  a.indices[0] = 99;  // out of range: only a contents check sees it
  std::vector<float> b(4 * 2), c(4 * 2);
  std::vector<KernelArg> args = {Tensor(a.values.data(), DataType::kFloat32, {nnz}),
                                 Tensor(b.data(), DataType::kFloat32, {4, 2}),
                                 Tensor(c.data(), DataType::kFloat32, {4, 2}),
                                 Tensor(a.indptr.data(), DataType::kInt32, {5}),
                                 Tensor(a.indices.data(), DataType::kInt32, {nnz}),
                                 Int(4), Int(4), Int(2), Int(nnz)};
  EXPECT_THROW(kernel->Check(args), UserError);
  EXPECT_NO_THROW(kernel->Check(args, /*contents=*/false));
  args[1] = Tensor(b.data(), DataType::kFloat32, {4, 3});  // wrong shape for b
  EXPECT_THROW(kernel->Check(args, /*contents=*/false), UserError);
}

}  // namespace
}  // namespace sparsetir
