#include "ir/dtype.h"

namespace sparsetir {

namespace {
struct DataTypeName {
  DataType dtype;
  const char* name;
};
constexpr DataTypeName kNames[] = {
    {DataType::kBool, "bool"},         {DataType::kInt32, "int32"},
    {DataType::kInt64, "int64"},       {DataType::kFloat16, "float16"},
    {DataType::kBFloat16, "bfloat16"}, {DataType::kFloat32, "float32"},
    {DataType::kFloat64, "float64"},   {DataType::kHandle, "handle"},
    {DataType::kVoid, "void"},
};
}  // namespace

std::string ToString(DataType dtype) {
  for (const auto& entry : kNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "?";
}

std::optional<DataType> ParseDataType(const std::string& name) {
  for (const auto& entry : kNames) {
    if (name == entry.name && entry.dtype != DataType::kVoid) return entry.dtype;
  }
  return std::nullopt;
}

int BytesOf(DataType t) {
  switch (t) {
    case DataType::kBool: return 1;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kHandle: return 8;
    case DataType::kVoid: return 0;
  }
  return 0;
}

}  // namespace sparsetir
