#include "transforms/format_rule.h"

#include "codegen/identifiers.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "ir/functor.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/simplify.h"
#include "transforms/specialize.h"

namespace sparsetir {
namespace {

[[noreturn]] void RuleError(const PrimFunc& format, const std::string& message) {
  ThrowScriptError("format rewrite rule '" + format->name + "': " + message, Span{});
}

// Renames variables and buffers inside the maps' expressions (a row map
// loaded in an inverse map is one of the format's own buffers).
class Renamer : public IRMutator {
 public:
  Renamer(const VarMap& vars, const std::map<const BufferNode*, Buffer>& buffers) : vars_(vars), buffers_(buffers) {}

 protected:
  Expr Mutate(const VarNode* node, const Expr& self) override {
    auto found = vars_.find(node);
    return found == vars_.end() ? self : found->second;
  }
  Expr Mutate(const BufferLoadNode* node, const Expr& self) override {
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(node->indices, &changed);
    auto found = buffers_.find(node->buffer.get());
    return MakeLoad(found == buffers_.end() ? node->buffer : found->second, indices);
  }

 private:
  const VarMap& vars_;
  const std::map<const BufferNode*, Buffer>& buffers_;
};

std::vector<std::string> StringList(const PrimFunc& format, const AttrPtr& attr, const std::string& what) {
  if (attr->kind == AttrValue::Kind::kString) return {attr->string_value};
  std::vector<std::string> out;
  bool ok = attr->kind == AttrValue::Kind::kList || attr->kind == AttrValue::Kind::kTuple;
  for (const AttrPtr& item : attr->items) {
    ok = ok && item->kind == AttrValue::Kind::kString;
    if (ok) out.push_back(item->string_value);
  }
  if (!ok || out.empty()) RuleError(format, "\"" + what + "\" must be a name or a non-empty list of names");
  return out;
}

AttrPtr Required(const PrimFunc& format, const std::string& key) {
  AttrPtr attr = FindAttr(format->attrs, key);
  if (!attr) {
    RuleError(format, "T.func_attr has no \"" + key +
                          "\" (a format rule needs buffer_to_rewrite, iterator_map, idx_map and inv_idx_map)");
  }
  return attr;
}

IndexMap ReadMap(const PrimFunc& format, const std::string& key, size_t arity, size_t results, Renamer& rename) {
  AttrPtr attr = Required(format, key);
  if (attr->kind != AttrValue::Kind::kLambda) RuleError(format, "\"" + key + "\" must be a lambda");
  if (attr->lambda_params.size() != arity || attr->items.size() != results) {
    RuleError(format, "\"" + key + "\" must map " + std::to_string(arity) + " coordinates to " +
                          std::to_string(results) + ", but it maps " + std::to_string(attr->lambda_params.size()) +
                          " to " + std::to_string(attr->items.size()));
  }
  IndexMap map{attr->lambda_params, {}};
  for (const AttrPtr& item : attr->items) map.results.push_back(Simplify(rename.VisitExpr(item->expr)));
  return map;
}

// A format level whose coordinate is, unchanged, an original coordinate (an
// ELL row's mapped row, its columns) ranges over the original extent: its
// extent parameter is bound to that extent, so the runtime's check of the
// level's index array (< extent) also keeps the original access in range.
VarMap BoundExtents(const PrimFunc& format, const PrimFunc& computation) {
  VarMap bound;
  AttrPtr inv = FindAttr(format->attrs, "inv_idx_map");
  AttrPtr targets = FindAttr(format->attrs, "buffer_to_rewrite");
  if (!inv || inv->kind != AttrValue::Kind::kLambda || !targets) return bound;
  std::vector<std::string> names = StringList(format, targets, "buffer_to_rewrite");
  Buffer original, stored;
  for (const Buffer& b : computation->buffers) if (b->name == names[0]) original = b;
  for (const Buffer& b : format->buffers) if (b->name == names[0]) stored = b;
  if (!stored && format->buffers.size() == 1) stored = format->buffers[0];
  if (!original || !stored || inv->lambda_params.size() != stored->axes.size() ||
      inv->items.size() != original->axes.size()) {
    return bound;  // InstantiateFormatRule reports what is wrong
  }
  for (size_t t = 0; t < inv->items.size(); ++t) {
    const Expr& result = inv->items[t]->expr;
    for (size_t q = 0; q < inv->lambda_params.size(); ++q) {
      if (result != inv->lambda_params[q]) continue;
      const auto* extent = stored->axes[q]->extent->as<VarNode>();
      const Expr& to = original->axes[t]->extent;
      bool is_param = std::any_of(format->params.begin(), format->params.end(),
                                  [&](const Var& p) { return p.get() == extent; });
      if (is_param && extent->dtype == to->dtype) bound[extent] = to;
    }
  }
  return bound;
}

}  // namespace

std::vector<Expr> IndexMap::Apply(const std::vector<Expr>& args) const {
  ICHECK(args.size() == params.size()) << "index map applied to " << args.size() << " coordinates, expects "
                                       << params.size();
  VarMap map;
  for (size_t q = 0; q < params.size(); ++q) map[params[q].get()] = args[q];
  std::vector<Expr> out;
  for (const Expr& r : results) out.push_back(Simplify(Substitute(r, map)));
  return out;
}

FormatRule InstantiateFormatRule(const std::string& name, const PrimFunc& format, const PrimFunc& computation) {
  // The name only suffixes identifiers ("A" + "_" + name), so it may start
  // with a digit ("4"); otherwise it follows the rule for script names.
  if (!IsScriptName("r" + name)) {
    RuleError(format, "the rule's name '" + name + "' must be letters, digits and '_' (it suffixes generated names)");
  }
  if (format->stage != Stage::kI) RuleError(format, "the format function must be at stage I");
  const std::string suffix = "_" + name;
  FormatRule rule;
  rule.name = name;
  VarMap vars;
  const std::map<std::string, int64_t> fixed = SpecializedValues(format);
  const VarMap bound = BoundExtents(format, computation);
  for (const Var& p : format->params) {
    auto constant = fixed.find(p->name);
    if (constant != fixed.end()) {
      vars[p.get()] = MakeInt(constant->second, p->dtype);
      continue;
    }
    if (auto b = bound.find(p.get()); b != bound.end()) {
      vars[p.get()] = b->second;
      continue;
    }
    Var renamed = MakeVar(p->name + suffix, p->dtype);
    vars[p.get()] = renamed;
    rule.params.push_back(renamed);
  }
  auto sub = [&](const Expr& e) { return e ? Simplify(Substitute(e, vars)) : e; };
  auto sub_var = [&](const Var& v) -> Var {
    if (!v) return v;
    auto found = vars.find(v.get());
    ICHECK(found != vars.end()) << "format handle " << v->name << " is not a parameter";
    return std::static_pointer_cast<const VarNode>(found->second);
  };
  std::map<const SparseIteratorNode*, SparseIterator> iterators;
  std::map<std::string, SparseIterator> by_name;
  for (const SparseIterator& it : format->iterators) {
    SparseIteratorNode copy = *it;
    copy.name += suffix;
    if (copy.parent) copy.parent = iterators.at(copy.parent.get());
    for (SparseIterator& f : copy.fused) f = iterators.at(f.get());
    copy.extent = sub(copy.extent);
    copy.nnz = sub(copy.nnz);
    copy.length = sub(copy.length);
    copy.indptr = sub_var(copy.indptr);
    copy.indices = sub_var(copy.indices);
    SparseIterator made = MakeIterator(std::move(copy));
    iterators[it.get()] = made;
    by_name[it->name] = made;
    rule.iterators.push_back(made);
  }
  std::map<const BufferNode*, Buffer> buffers;
  for (const Buffer& b : format->buffers) {
    BufferNode copy = *b;
    copy.name += suffix;
    copy.data = sub_var(copy.data);
    for (SparseIterator& axis : copy.axes) axis = iterators.at(axis.get());
    for (Expr& dim : copy.shape) dim = sub(dim);
    Buffer made = MakeBuffer(std::move(copy));
    buffers[b.get()] = made;
    rule.buffers.push_back(made);
  }
  Renamer rename(vars, buffers);

  const std::vector<std::string> targets = StringList(format, Required(format, "buffer_to_rewrite"), "buffer_to_rewrite");
  AttrPtr iterator_map = Required(format, "iterator_map");
  if (iterator_map->kind != AttrValue::Kind::kDict) RuleError(format, "\"iterator_map\" must be a dict");
  for (const std::string& target : targets) {
    FormatTarget t;
    t.buffer = target;
    for (const Buffer& b : format->buffers) {
      if (b->name == target) t.format_buffer = buffers.at(b.get());
    }
    if (!t.format_buffer && targets.size() == 1 && format->buffers.size() == 1) {
      t.format_buffer = buffers.at(format->buffers[0].get());
    }
    if (!t.format_buffer) {
      RuleError(format, "no buffer of the format stands for '" + target +
                            "' (name it the same, or declare a single buffer)");
    }
    // Every axis of the replacement is named by exactly one entry.
    std::set<const SparseIteratorNode*> mapped;
    for (const auto& [key, value] : iterator_map->entries) {
      if (key->kind != AttrValue::Kind::kString) RuleError(format, "\"iterator_map\" keys must be iterator names");
      std::vector<SparseIterator> to;
      for (const std::string& n : StringList(format, value, "iterator_map[\"" + key->string_value + "\"]")) {
        auto found = by_name.find(n);
        if (found == by_name.end()) {
          RuleError(format, "\"iterator_map\" names '" + n + "', which the format does not declare");
        }
        if (!mapped.insert(found->second.get()).second) {
          RuleError(format, "\"iterator_map\" maps format iterator '" + n + "' twice");
        }
        to.push_back(found->second);
      }
      t.iterator_map.emplace_back(key->string_value, std::move(to));
    }
    for (const SparseIterator& axis : t.format_buffer->axes) {
      if (!mapped.count(axis.get())) {
        RuleError(format, "\"iterator_map\" maps no original iterator to format iterator '" +
                              axis->name.substr(0, axis->name.size() - suffix.size()) + "' of buffer '" + target + "'");
      }
    }
    const size_t original = t.iterator_map.size(), stored = t.format_buffer->axes.size();
    t.idx_map = ReadMap(format, "idx_map", original, stored, rename);
    t.inv_idx_map = ReadMap(format, "inv_idx_map", stored, original, rename);
    rule.targets.push_back(std::move(t));
  }
  return rule;
}

}  // namespace sparsetir
