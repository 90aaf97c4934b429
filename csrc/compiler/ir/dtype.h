// Scalar data types of the IR. `kHandle` is the type of a pointer parameter.
#pragma once

#include <cstdint>

#include <optional>
#include <string>

namespace sparsetir {

enum class DataType {
  kBool,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kHandle,
  kVoid,  // statements-as-expressions; never the type of a value
};

// "float32", "int64", ... as written in scripts.
std::string ToString(DataType dtype);
// Parses a script dtype name; nullopt when unknown.
std::optional<DataType> ParseDataType(const std::string& name);

inline bool IsInteger(DataType t) { return t == DataType::kInt32 || t == DataType::kInt64; }
inline bool IsFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64;
}
inline bool IsNumeric(DataType t) { return IsInteger(t) || IsFloat(t); }
// The type a kernel accumulates values of type `t` in: float32 for float16 /
// bfloat16 (as the code generators compute them), `t` otherwise.
inline DataType AccumulatorOf(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 ? DataType::kFloat32 : t;
}
// Size of one element in bytes (handles: 8).
int BytesOf(DataType t);
// The largest value of an integer type (int32 or int64).
inline int64_t MaxValue(DataType t) { return t == DataType::kInt32 ? INT32_MAX : INT64_MAX; }

}  // namespace sparsetir
