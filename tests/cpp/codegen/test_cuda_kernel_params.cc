// Reading a hand-written kernel's parameters from its source: every type a
// launch converts arguments to, what the reader skips, and what it refuses.
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda_kernel_params.h"
#include "support/error.h"

namespace sparsetir {
namespace {

using Kind = CudaKernelParam::Kind;

std::string ErrorOf(const std::string& source, const std::string& kernel) {
  try {
    CudaKernelParams(source, kernel);
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserErrorKind::kArgument);
    return e.what();
  }
  return "";
}

TEST(CudaKernelParams, ReadsPointersScalarsAndTheirNames) {
  const auto params = CudaKernelParams(R"(
    extern "C" __global__ void __launch_bounds__(256)
    spmm(const int* __restrict__ indptr, float *const out, unsigned n, long long k,
         float alpha, double beta, unsigned long long, bool flag, __half h, __nv_bfloat16 b,
         std::size_t bytes, signed char c, unsigned short u16, float rows[]) {}
  )",
                                       "spmm");
  ASSERT_EQ(params.size(), 14u);
  struct Expected {
    const char* type;
    const char* name;
    Kind kind;
    size_t bytes;
  };
  const Expected expected[] = {
      {"int*", "indptr", Kind::kPointer, 8},
      {"float*", "out", Kind::kPointer, 8},
      {"unsigned", "n", Kind::kUnsigned, 4},
      {"long long", "k", Kind::kSigned, 8},
      {"float", "alpha", Kind::kFloat, 4},
      {"double", "beta", Kind::kFloat, 8},
      {"unsigned long long", "", Kind::kUnsigned, 8},
      {"bool", "flag", Kind::kBool, 1},
      {"__half", "h", Kind::kHalf, 2},
      {"__nv_bfloat16", "b", Kind::kBFloat16, 2},
      {"std::size_t", "bytes", Kind::kUnsigned, 8},
      {"signed char", "c", Kind::kSigned, 1},
      {"unsigned short", "u16", Kind::kUnsigned, 2},
      {"float*", "rows", Kind::kPointer, 8},
  };
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].type, expected[i].type) << i;
    EXPECT_EQ(params[i].name, expected[i].name) << i;
    EXPECT_EQ(params[i].kind, expected[i].kind) << i;
    EXPECT_EQ(params[i].bytes, expected[i].bytes) << i;
  }
  EXPECT_EQ(params[0].declaration, "const int* __restrict__ indptr");
  // A pointer's element, where it is an arithmetic type.
  EXPECT_EQ(params[0].element_kind, Kind::kSigned);
  EXPECT_EQ(params[0].element_bytes, 4u);
  EXPECT_EQ(params[13].element_kind, Kind::kFloat);
  EXPECT_EQ(params[13].element_bytes, 4u);
  EXPECT_EQ(params[2].element_bytes, 0u);  // not a pointer
}

TEST(CudaKernelParams, APointerToAnythingElseHasNoElementType) {
  const auto params = CudaKernelParams("__global__ void k(float4* v, void* p, float** rows, __half* h) {}", "k");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].type, "float4*");
  EXPECT_EQ(params[0].element_bytes, 0u);
  EXPECT_EQ(params[1].element_bytes, 0u);
  EXPECT_EQ(params[2].type, "float**");
  EXPECT_EQ(params[2].element_bytes, 0u);
  EXPECT_EQ(params[3].element_kind, Kind::kHalf);
  EXPECT_EQ(params[3].element_bytes, 2u);
}

TEST(CudaKernelParams, SkipsCommentsStringsCallsAndOtherFunctions) {
  const std::string source = R"SRC(
    #define LAUNCH(k) k(1, 2)   // a macro that names the kernel
    // __global__ void scale(double* wrong);
    /* __global__ void scale(int wrong) */
    __device__ float scale(float x) { return x; }        // a device function of the same name
    const char* text = "__global__ void scale(char* s)";
    extern "C" __global__ void scale_all(float* x) {}  // a longer name
    extern "C"
    __global__
    void
    scale  (  float* x ,
              int   n  ) { x[0] = scale(x[0]) + n; }
  )SRC";
  const auto params = CudaKernelParams(source, "scale");
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].type, "float*");
  EXPECT_EQ(params[1].type, "int");
  EXPECT_EQ(params[1].name, "n");
  EXPECT_EQ(params[1].declaration, "int n");
}

TEST(CudaKernelParams, AKernelWithoutParameters) {
  EXPECT_TRUE(CudaKernelParams("extern \"C\" __global__ void tick() {}", "tick").empty());
  EXPECT_TRUE(CudaKernelParams("extern \"C\" __global__ void tick(void) {}", "tick").empty());
}

TEST(CudaKernelParams, LoneTypeWordsAreTypesNotNames) {
  const auto params = CudaKernelParams("__global__ void k(long long, unsigned int, unsigned, int) {}", "k");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].type, "long long");
  EXPECT_EQ(params[1].type, "unsigned int");
  EXPECT_EQ(params[2].type, "unsigned");
  EXPECT_EQ(params[3].type, "int");
  for (const auto& p : params) EXPECT_EQ(p.name, "");
}

TEST(CudaKernelParams, NamesForTypesAreFollowed) {
  const std::string source = R"(
    #define real float   // the precision
    #define RESTRICT __restrict__
    #define index_t idx
    typedef unsigned int idx;
    using count_t = long long;
    typedef float* floatp;
    extern "C" __global__ void k(const real* RESTRICT x, real a, index_t i, count_t n, floatp y, acc_t s) {}
  )";
  const auto params = CudaKernelParams(source, "k", {"-DTILE=32", "--define-macro=acc_t=double"});
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[0].type, "float*");
  EXPECT_EQ(params[0].element_kind, Kind::kFloat);
  EXPECT_EQ(params[1].type, "float");
  EXPECT_EQ(params[1].name, "a");
  EXPECT_EQ(params[2].type, "unsigned int");
  EXPECT_EQ(params[2].bytes, 4u);
  EXPECT_EQ(params[3].type, "long long");
  EXPECT_EQ(params[4].type, "float*");
  EXPECT_EQ(params[5].type, "double");
  EXPECT_EQ(params[5].bytes, 8u);
  EXPECT_EQ(params[1].declaration, "real a");  // as written
  // Without the option, acc_t is a name the reader cannot follow.
  EXPECT_NE(ErrorOf(source, "k").find("has type 'acc_t'"), std::string::npos);
}

TEST(CudaKernelParams, OptionsWinOverTheSourceUntilUndefined) {
  // The usual default under #ifndef: the option's definition is the one compiled.
  const std::string source = R"(
    #ifndef real
    #define real float
    #endif
    extern "C" __global__ void k(real a, acc_t s) {}
  )";
  const auto doubled = CudaKernelParams(source, "k", {"-Dreal=double", "-Dacc_t=int"});
  ASSERT_EQ(doubled.size(), 2u);
  EXPECT_EQ(doubled[0].type, "double");
  EXPECT_EQ(doubled[1].type, "int");
  // -U undoes the -D before it: real is the source's again, acc_t unknown.
  const auto undone = CudaKernelParams(source, "k", {"-Dreal=double", "-Dacc_t=int", "-Ureal"});
  EXPECT_EQ(undone[0].type, "float");
  try {
    CudaKernelParams(source, "k", {"-Dacc_t=int", "--undefine-macro=acc_t"});
    ADD_FAILURE() << "acc_t was undefined";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("has type 'acc_t'"), std::string::npos) << e.what();
  }
}

TEST(CudaKernelParams, RefusesWhatItCannotPassNamingTheParameter) {
  EXPECT_NE(ErrorOf("__global__ void k(float* x) {}", "missing").find("declares no __global__ function"),
            std::string::npos);
  EXPECT_NE(ErrorOf("__device__ void k(float* x) {}", "k").find("declares no __global__ function"),
            std::string::npos);
  const std::string vector = ErrorOf("__global__ void k(float* x, float4 v) {}", "k");
  EXPECT_NE(vector.find("parameter 1 ('float4 v') has type 'float4'"), std::string::npos) << vector;
  const std::string templated = ErrorOf("template <typename T> __global__ void k(T* x, T v) {}", "k");
  EXPECT_NE(templated.find("parameter 1 ('T v') has type 'T'"), std::string::npos) << templated;
  const std::string reference = ErrorOf("__global__ void k(const int& n) {}", "k");
  EXPECT_NE(reference.find("parameter 0 ('const int& n') is a reference"), std::string::npos) << reference;
  EXPECT_NE(ErrorOf("__global__ void k(float* x", "k").find("no closing ')'"), std::string::npos);
}

}  // namespace
}  // namespace sparsetir
