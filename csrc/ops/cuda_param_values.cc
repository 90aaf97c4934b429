#include "cuda_param_values.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tensor_args.h"

namespace sparsetir::ops {
namespace {

using Kind = CudaKernelParam::Kind;

std::string Describe(const CudaKernelParam& param, size_t i) {
  return "parameter " + std::to_string(i) + " ('" + param.declaration + "')";
}

std::string ArgumentName(const HandWrittenArg& arg) {
  switch (arg.kind) {
    case HandWrittenArg::Kind::kTensor: return TorchDtypeName(arg.tensor.scalar_type());
    case HandWrittenArg::Kind::kFloat: return c10::str("the float ", arg.float_value);
    case HandWrittenArg::Kind::kInt:
      return "the int " + (arg.above_int64 ? std::to_string(static_cast<uint64_t>(arg.int_value))
                                           : std::to_string(arg.int_value));
    case HandWrittenArg::Kind::kAggregate:
      return std::string(arg.keys.empty() ? "a tuple or list" : "a dict") + " of " + std::to_string(arg.items.size());
  }
  return "";
}

// A scalar's or a pointer's bytes (at most 8).
struct Scalar {
  unsigned char bytes[8] = {};
};

template <typename T> Scalar ValueOf(T v) {
  static_assert(sizeof(T) <= sizeof(Scalar::bytes));
  Scalar value;
  std::memcpy(value.bytes, &v, sizeof(T));
  return value;
}

// `d` rounded to odd at float's precision: toward zero, then the last bit
// set where that was inexact. Rounding this float to a 16-bit format (2 + 11
// or 2 + 8 bits below float's 24) gives what rounding `d` there directly
// would: no double rounding.
float RoundedToOddFloat(long double d) {
  float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<long double>(f) == d) return f;
  if (std::fabs(static_cast<long double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

// `d` (a Python float, or an int: long double holds every int64 exactly)
// rounded once to the parameter's type.
Scalar FloatingValue(const CudaKernelParam& param, long double d) {
  switch (param.kind) {
    case Kind::kHalf: return ValueOf(c10::Half(RoundedToOddFloat(d)).x);
    case Kind::kBFloat16: return ValueOf(c10::BFloat16(RoundedToOddFloat(d)).x);
    default: return param.bytes == 4 ? ValueOf(static_cast<float>(d)) : ValueOf(static_cast<double>(d));
  }
}

Scalar IntegerValue(const std::string& where, const CudaKernelParam& param, const HandWrittenArg& arg) {
  const int64_t v = arg.int_value;
  const int bits = static_cast<int>(param.bytes * 8);
  bool fits;
  if (arg.above_int64) {
    fits = param.kind == Kind::kUnsigned && bits == 64;
  } else if (param.kind == Kind::kBool) {
    fits = v == 0 || v == 1;
  } else if (param.kind == Kind::kUnsigned) {
    fits = v >= 0 && (bits == 64 || v < (int64_t{1} << bits));
  } else {
    fits = bits == 64 || (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)));
  }
  TORCH_CHECK_VALUE(fits, where, " cannot hold ", ArgumentName(arg));
  switch (param.bytes) {
    case 1: return ValueOf(static_cast<uint8_t>(v));
    case 2: return ValueOf(static_cast<uint16_t>(v));
    case 4: return ValueOf(static_cast<uint32_t>(v));
    default: return ValueOf(static_cast<uint64_t>(v));
  }
}

// Whether a pointer to `param`'s element may point into a tensor of `dtype`.
bool ElementMatches(const CudaKernelParam& param, at::ScalarType dtype) {
  if (param.element_bytes == 0) return true;  // float4*, __half2*, void*, a struct: the kernel's business
  const bool bits16 = param.element_bytes == 2 && param.element_kind == Kind::kUnsigned;
  switch (dtype) {
    case at::kFloat: return param.element_kind == Kind::kFloat && param.element_bytes == 4;
    case at::kDouble: return param.element_kind == Kind::kFloat && param.element_bytes == 8;
    case at::kHalf: return param.element_kind == Kind::kHalf || bits16;
    case at::kBFloat16: return param.element_kind == Kind::kBFloat16 || bits16;
    case at::kFloat8_e4m3fn:
    case at::kFloat8_e5m2:  // their bits
      return param.element_bytes == 1 &&
             (param.element_kind == Kind::kSigned || param.element_kind == Kind::kUnsigned);
    case at::kBool:
      return param.element_kind == Kind::kBool ||
             (param.element_bytes == 1 && param.element_kind != Kind::kFloat);
    default:
      // Integers: either signedness of their width.
      return (param.element_kind == Kind::kSigned || param.element_kind == Kind::kUnsigned) &&
             static_cast<size_t>(c10::elementSize(dtype)) == param.element_bytes && at::isIntegralType(dtype, false);
  }
}

// Writes `arg` converted to `param` at `out` (param.bytes of them); `prefix`
// names the parameter or field in errors.
void Pack(const std::string& prefix, const CudaKernelParam& param, const HandWrittenArg& arg, unsigned char* out);
Scalar ScalarFor(const std::string& prefix, const CudaKernelParam& param, const HandWrittenArg& arg);

void PackStruct(const std::string& prefix, const CudaKernelParam& param, const HandWrittenArg& arg,
                unsigned char* out) {
  TORCH_CHECK_VALUE(arg.kind == HandWrittenArg::Kind::kAggregate, prefix, " is a ", param.type,
                    " by value: pass a tuple, a list or a dict of its fields, got ", ArgumentName(arg));
  const std::vector<CudaStructField>& fields = param.fields;
  std::vector<const HandWrittenArg*> items(fields.size(), nullptr);
  if (arg.keys.empty()) {
    TORCH_CHECK_VALUE(arg.items.size() == fields.size(), prefix, " is a ", param.type, " of ", fields.size(),
                      " fields, got ", ArgumentName(arg));
    for (size_t f = 0; f < fields.size(); ++f) items[f] = &arg.items[f];
  } else {
    for (size_t k = 0; k < arg.keys.size(); ++k) {
      size_t f = 0;
      while (f < fields.size() && fields[f].name != arg.keys[k]) ++f;
      TORCH_CHECK_VALUE(f < fields.size(), prefix, " is a ", param.type, ", which has no field '", arg.keys[k], "'");
      items[f] = &arg.items[k];
    }
    for (size_t f = 0; f < fields.size(); ++f) {
      TORCH_CHECK_VALUE(items[f] != nullptr, prefix, " is a ", param.type, ": the dict has no '", fields[f].name,
                        "'");
    }
  }
  for (size_t f = 0; f < fields.size(); ++f) {
    const CudaStructField& field = fields[f];
    const std::string where = prefix + " field '" + field.name + "'";
    if (field.count == 0) {
      Pack(where, field.type, *items[f], out + field.offset);
      continue;
    }
    const HandWrittenArg& array = *items[f];
    TORCH_CHECK_VALUE(array.kind == HandWrittenArg::Kind::kAggregate && array.keys.empty() &&
                          array.items.size() == field.count,
                      where, " is an array of ", field.count, ": pass a tuple or list of as many, got ",
                      ArgumentName(array));
    for (size_t e = 0; e < field.count; ++e) {
      unsigned char* element = out + field.offset + e * field.type.bytes;
      Pack(where + "[" + std::to_string(e) + "]", field.type, array.items[e], element);
    }
  }
}

void Pack(const std::string& prefix, const CudaKernelParam& param, const HandWrittenArg& arg, unsigned char* out) {
  if (param.kind == Kind::kStruct) return PackStruct(prefix, param, arg, out);
  const Scalar value = ScalarFor(prefix, param, arg);
  std::memcpy(out, value.bytes, param.bytes);
}

Scalar ScalarFor(const std::string& prefix, const CudaKernelParam& param, const HandWrittenArg& arg) {
  TORCH_CHECK_VALUE(arg.kind != HandWrittenArg::Kind::kAggregate, prefix, " is a ",
                    param.kind == Kind::kPointer ? "pointer: pass a tensor" : "value: pass a Python int or float",
                    ", got ", ArgumentName(arg));
  if (param.kind == Kind::kPointer) {
    TORCH_CHECK_VALUE(arg.kind == HandWrittenArg::Kind::kTensor, prefix, " is a pointer: pass a tensor, got ",
                      ArgumentName(arg));
    TORCH_CHECK_VALUE(ElementMatches(param, arg.tensor.scalar_type()), prefix, " points to ",
                      param.type.substr(0, param.type.size() - 1), ", but got ", ArgumentName(arg));
    return ValueOf(arg.tensor.data_ptr());
  }
  TORCH_CHECK_VALUE(arg.kind != HandWrittenArg::Kind::kTensor, prefix, " is a value, not a pointer: got ",
                    ArgumentName(arg), " (pass a Python int or float)");
  const bool floating = param.kind == Kind::kFloat || param.kind == Kind::kHalf || param.kind == Kind::kBFloat16;
  if (arg.kind == HandWrittenArg::Kind::kFloat) {
    TORCH_CHECK_VALUE(floating, prefix, " takes an integer: got ", ArgumentName(arg));
    return FloatingValue(param, arg.float_value);
  }
  const long double integer = arg.above_int64 ? static_cast<long double>(static_cast<uint64_t>(arg.int_value))
                                              : static_cast<long double>(arg.int_value);
  return floating ? FloatingValue(param, integer) : IntegerValue(prefix, param, arg);
}

}  // namespace

CudaParamValue CudaParamValueOf(const std::string& op, const std::string& kernel, const CudaKernelParam& param,
                                size_t i, const HandWrittenArg& arg) {
  CudaParamValue value;
  value.bytes.assign(param.bytes, 0);
  Pack(op + ": kernel '" + kernel + "' " + Describe(param, i), param, arg, value.bytes.data());
  return value;
}

std::vector<CudaParamValue> CudaParamValues(const std::string& op, const std::string& kernel,
                                            const std::vector<CudaKernelParam>& params,
                                            const std::vector<HandWrittenArg>& args) {
  TORCH_CHECK_VALUE(params.size() == args.size(), op, ": kernel '", kernel, "' takes ", params.size(),
                    " parameters, got ", args.size(), " arguments");
  std::vector<CudaParamValue> values;
  values.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) values.push_back(CudaParamValueOf(op, kernel, params[i], i, args[i]));
  return values;
}

}  // namespace sparsetir::ops
