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
  const std::string unknown = ErrorOf("__global__ void k(float* x, float5 v) {}", "k");
  EXPECT_NE(unknown.find("parameter 1 ('float5 v') has type 'float5'"), std::string::npos) << unknown;
  // A template kernel is named by an instance (ReadsATemplateInstancesParameters); a template parameter
  // of a function that is no template is an unknown type.
  const std::string templated = ErrorOf("template <typename T> __global__ void k(T* x, T v) {}", "k");
  EXPECT_NE(templated.find("it is a template kernel: name an instance of it"), std::string::npos) << templated;
  const std::string untyped = ErrorOf("__global__ void k(T* x, T v) {}", "k");
  EXPECT_NE(untyped.find("parameter 1 ('T v') has type 'T'"), std::string::npos) << untyped;
  const std::string reference = ErrorOf("__global__ void k(const int& n) {}", "k");
  EXPECT_NE(reference.find("parameter 0 ('const int& n') is a reference"), std::string::npos) << reference;
  EXPECT_NE(ErrorOf("__global__ void k(float* x", "k").find("no closing ')'"), std::string::npos);
}

TEST(CudaKernelParams, ParsesAKernelsNameAndTemplateArguments) {
  const CudaKernelName plain = ParseCudaKernelName("saxpy");
  EXPECT_EQ(plain.name, "saxpy");
  EXPECT_FALSE(plain.instance);
  const CudaKernelName instance = ParseCudaKernelName(" scale < Pair<int, 2>, 4 > ");
  EXPECT_EQ(instance.name, "scale");
  EXPECT_TRUE(instance.instance);
  EXPECT_EQ(instance.template_args, (std::vector<std::string>{"Pair<int, 2>", "4"}));
  EXPECT_TRUE(ParseCudaKernelName("k<>").instance);
  EXPECT_TRUE(ParseCudaKernelName("k<>").template_args.empty());
  for (const char* bad : {"", "k<", "1k", "k<int>x", "a b", "k>"}) {
    EXPECT_THROW(ParseCudaKernelName(bad), UserError) << bad;
  }
}

// A template kernel's instance: each template parameter stands for its
// argument, or its default.
TEST(CudaKernelParams, ReadsATemplateInstancesParameters) {
  const std::string source = R"(
    template <typename T, typename Index = int, int kTile = 4>
    __global__ void __launch_bounds__(256)
    gather(const T* __restrict__ x, const Index* idx, T* out, Index n, T scale) {}
  )";
  const auto doubles = CudaKernelParams(source, "gather<double>");
  ASSERT_EQ(doubles.size(), 5u);
  EXPECT_EQ(doubles[0].type, "double*");
  EXPECT_EQ(doubles[0].element_kind, Kind::kFloat);
  EXPECT_EQ(doubles[0].element_bytes, 8u);
  EXPECT_EQ(doubles[1].type, "int*");
  EXPECT_EQ(doubles[3].bytes, 4u);
  EXPECT_EQ(doubles[4].type, "double");
  const auto halves = CudaKernelParams(source, "gather<__half, long long, 8>");
  EXPECT_EQ(halves[0].element_kind, Kind::kHalf);
  EXPECT_EQ(halves[3].bytes, 8u);
  EXPECT_EQ(halves[4].kind, Kind::kHalf);
}

TEST(CudaKernelParams, RefusesAnInstanceThatDoesNotMatchItsDeclaration) {
  const std::string source = "template <typename T, int N> __global__ void k(T* x) {}\n"
                             "template <typename... Ts> __global__ void pack(int* x) {}\n"
                             "extern \"C\" __global__ void plain(float* x) {}\n";
  EXPECT_NE(ErrorOf(source, "k").find("it is a template kernel: name an instance of it, such as 'k<float>'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(source, "plain<float>").find("it is no template"), std::string::npos);
  EXPECT_NE(ErrorOf(source, "k<float, 1, 2>").find("it has 2 template parameters, got 3 arguments"),
            std::string::npos);
  EXPECT_NE(ErrorOf(source, "k<float>").find("its template parameter 'N' has no default"), std::string::npos);
  EXPECT_NE(ErrorOf(source, "pack<int>").find("is a pack"), std::string::npos);
  EXPECT_NE(ErrorOf(source, "k<").find("names no kernel"), std::string::npos);
}

// The field of `param` at `path` ("inner.b"): its offset from the start.
const CudaStructField* FieldAt(const CudaKernelParam& param, const std::string& name) {
  for (const CudaStructField& f : param.fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(CudaKernelParams, VectorTypesAreStructsOfTheirElement) {
  const auto params = CudaKernelParams(
      "__global__ void k(float4 a, int2 b, double3 c, char2 d, __half2 e, ulonglong2 f, float1 g) {}", "k");
  ASSERT_EQ(params.size(), 7u);
  struct Expected {
    size_t bytes, align, fields;
  };
  const Expected expected[] = {{16, 16, 4}, {8, 8, 2}, {24, 8, 3}, {2, 2, 2}, {4, 4, 2}, {16, 16, 2}, {4, 4, 1}};
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].kind, Kind::kStruct) << i;
    EXPECT_EQ(params[i].bytes, expected[i].bytes) << params[i].type;
    EXPECT_EQ(params[i].align, expected[i].align) << params[i].type;
    EXPECT_EQ(params[i].fields.size(), expected[i].fields) << params[i].type;
  }
  EXPECT_EQ(params[2].fields[2].name, "z");
  EXPECT_EQ(params[2].fields[2].offset, 16u);
  EXPECT_EQ(params[4].fields[1].type.kind, Kind::kHalf);
}

// The C rules: padding before a field to its alignment, after the last to
// the struct's; alignas on the struct and on a field; arrays; nested
// structs; member functions, static members and access labels take no room.
TEST(CudaKernelParams, StructsAreLaidOutAsTheDeviceCompilerLaysThemOut) {
  const auto params = CudaKernelParams(R"(
    #define LANES 3
    struct Inner { char tag; double value; };
    typedef struct { short s; } Small;
    struct __align__(16) Params {
     public:
      const float* x;
      char flag;
      int counts[LANES], more;
      Inner inner;
      Small small[2];
      alignas(8) float aligned;
      __half h;
      static constexpr int kTile = 4;
      __device__ float twice() const { return 2 * aligned; }
     private:
      float4 v;
    };
    extern "C" __global__ void k(Params p, Inner i, Small s) {}
  )",
                                       "k");
  ASSERT_EQ(params.size(), 3u);
  const CudaKernelParam& p = params[0];
  EXPECT_EQ(p.kind, Kind::kStruct);
  EXPECT_EQ(p.type, "Params");
  EXPECT_EQ(p.name, "p");
  // x 0-8, flag 8, counts 12-24, more 24, inner 32-48, small 48-52, aligned 56, h 60, v 64-80.
  const std::pair<const char*, size_t> offsets[] = {{"x", 0},      {"flag", 8},  {"counts", 12}, {"more", 24},
                                                    {"inner", 32}, {"small", 48}, {"aligned", 56}, {"h", 60},
                                                    {"v", 64}};
  ASSERT_EQ(p.fields.size(), 9u);
  for (const auto& [name, offset] : offsets) {
    const CudaStructField* f = FieldAt(p, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->offset, offset) << name;
  }
  EXPECT_EQ(FieldAt(p, "counts")->count, 3u);
  EXPECT_EQ(FieldAt(p, "more")->count, 0u);
  EXPECT_EQ(FieldAt(p, "small")->count, 2u);
  EXPECT_EQ(FieldAt(p, "x")->type.kind, Kind::kPointer);
  EXPECT_EQ(FieldAt(p, "x")->type.element_kind, Kind::kFloat);
  EXPECT_EQ(FieldAt(p, "inner")->type.bytes, 16u);
  EXPECT_EQ(p.bytes, 80u);
  EXPECT_EQ(p.align, 16u);
  EXPECT_EQ(params[1].bytes, 16u);
  EXPECT_EQ(params[2].bytes, 2u);
  EXPECT_EQ(params[2].align, 2u);
}

TEST(CudaKernelParams, RefusesStructsItCannotLayOutNamingWhy) {
  auto error = [](const std::string& definition) {
    return ErrorOf(definition + "\n__global__ void k(S s) {}", "k");
  };
  EXPECT_NE(error("struct B { int b; }; struct S : B { int a; };").find("struct S derives from another"),
            std::string::npos);
  EXPECT_NE(error("struct S { int a : 3; };").find("struct S has a bit-field"), std::string::npos);
  EXPECT_NE(error("union S { int a; float b; };").find("'S' is a union"), std::string::npos);
  EXPECT_NE(error("struct S { virtual void f(); int a; };").find("struct S has a virtual function"),
            std::string::npos);
  EXPECT_NE(error("struct S { T a; };").find("struct S's field 'a' has type 'T'"), std::string::npos);
  EXPECT_NE(error("struct S { int a[n]; };").find("struct S's array size is 'n'"), std::string::npos);
  EXPECT_NE(error("struct S { static int a; };").find("struct S has no fields"), std::string::npos);
  EXPECT_NE(error("struct S { struct { int a; } in; };").find("struct S defines a struct inside it"),
            std::string::npos);
  EXPECT_NE(error("struct alignas(3) S { int a; };").find("alignment of 3, not a power of two"), std::string::npos);
  EXPECT_NE(error("struct S { S* next; S self; };").find("struct S holds itself"), std::string::npos);
  EXPECT_NE(error("struct S { char a[30000]; int b[1000]; };").find("struct S is over 32764 bytes"), std::string::npos);
  EXPECT_NE(error("struct S { char a[1000][1000]; };").find("has over 32764 elements"), std::string::npos);
  EXPECT_NE(error("struct S { char a[99999999999999999999]; };").find("far more than"), std::string::npos);
  // An unclosed body is the compiler's to report: here the type is unknown.
  EXPECT_NE(error("struct S { int a;").find("has type 'S'"), std::string::npos);
  const std::string message = error("struct S { int a : 3; };");
  EXPECT_NE(message.find("parameter 0 ('S s')"), std::string::npos) << message;
}

}  // namespace
}  // namespace sparsetir
