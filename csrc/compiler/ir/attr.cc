#include "ir/attr.h"

namespace sparsetir {

AttrPtr FindAttr(const AttrMap& attrs, const std::string& key) {
  for (const auto& [name, value] : attrs) {
    if (name == key) return value;
  }
  return nullptr;
}

AttrMap WithAttr(AttrMap attrs, const std::string& key, AttrPtr value) {
  for (auto& entry : attrs) {
    if (entry.first == key) {
      entry.second = std::move(value);
      return attrs;
    }
  }
  attrs.emplace_back(key, std::move(value));
  return attrs;
}

AttrPtr MakeIntAttr(int64_t value) {
  auto a = std::make_shared<AttrValue>();
  a->kind = AttrValue::Kind::kInt;
  a->int_value = value;
  return a;
}

AttrPtr MakeBoolAttr(bool value) {
  auto a = std::make_shared<AttrValue>();
  a->kind = AttrValue::Kind::kBool;
  a->bool_value = value;
  return a;
}

}  // namespace sparsetir
