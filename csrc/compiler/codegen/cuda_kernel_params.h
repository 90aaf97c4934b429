// The parameters of a hand-written CUDA kernel, read from its source.
//
// cuLaunchKernel takes the address of each argument and copies as many bytes
// as the kernel's parameter has, whatever the caller stored there: an `int n`
// handed a 64-bit integer reads its low half, a `float a` handed a double
// reads garbage. So before a launch each argument is converted to its
// parameter's own type, which only the source tells.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sparsetir {

struct CudaStructField;

struct CudaKernelParam {
  // kStruct: a struct passed by value, or a CUDA vector type (float4, int2,
  // __half2, ...), which is one of its element.
  enum class Kind { kPointer, kSigned, kUnsigned, kBool, kFloat, kHalf, kBFloat16, kStruct };
  std::string declaration;  // as written, e.g. "const float* __restrict__ x"
  std::string type;         // without qualifiers or name, e.g. "float*", "unsigned int", "__half"
  std::string name;         // "" where the parameter is unnamed
  Kind kind = Kind::kSigned;
  size_t bytes = 0;         // its size on the device (pointers: 8)
  // A pointer's element where it is an arithmetic type, __half or
  // __nv_bfloat16 (element_bytes 0 for any other: float4, void, a struct,
  // a pointer).
  Kind element_kind = Kind::kSigned;
  size_t element_bytes = 0;
  size_t align = 0;                     // its alignment on the device
  std::vector<CudaStructField> fields;  // a struct's, in order
};

// A field of a struct parameter: its name, where it starts, and its type
// (`type.name` is empty); `count` elements of that type for an array (0: a
// lone one).
struct CudaStructField {
  std::string name;
  size_t offset = 0;
  size_t count = 0;
  CudaKernelParam type;
};

// A kernel named as an instance of a template kernel ("k<float, 4>"): the
// template's name and its arguments as written; a plain name ("k") has none.
struct CudaKernelName {
  std::string name;
  std::vector<std::string> template_args;
  bool instance = false;  // named with <...>, perhaps empty
};
// Throws a UserError where `kernel` is neither an identifier nor one followed
// by a balanced <...>.
CudaKernelName ParseCudaKernelName(const std::string& kernel);

// The parameters, in order, of the first `__global__` function named
// `kernel` in `source` (comments, string literals and preprocessor lines are
// skipped). A parameter is a pointer (or an array, which is one), one of C's
// arithmetic types or their fixed-width names (int32_t, size_t, ...),
// `__half` or `__nv_bfloat16`, a CUDA vector type (float4, int2, __half2,
// ...), a struct the source defines (`struct S {...};` or `typedef struct
// {...} S;`, with `alignas` / `__align__`) whose fields are any of these or
// arrays of them (member functions and static members aside), or a name for
// one of them: an object-like
// macro of the source or of `options` (NVRTC's -DNAME=VALUE, which wins over
// the source's, and -UNAME, which undoes a -D before it), a typedef or a
// using-declaration. Conditional compilation is not followed (the last
// definition of a name counts). Throws a UserError naming the kernel and the
// parameter where the source has no such kernel or a parameter is of another
// type (a template parameter, a reference, a struct with a base, a bit-field
// or a union), or an option is a malformed -D / -U.
// A template kernel is named by an instance ("k<float, 4>", its omitted
// trailing arguments their defaults): its parameters as that instance has
// them, each template parameter standing for its argument.
std::vector<CudaKernelParam> CudaKernelParams(const std::string& source, const std::string& kernel,
                                              const std::vector<std::string>& options = {});

}  // namespace sparsetir
