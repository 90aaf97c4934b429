#include "hand_written_args.h"

namespace sparsetir::ops {
namespace {

void Visit(const HandWrittenArg& arg, const std::string& where,
           const std::function<void(const at::Tensor&, const std::string&)>& visit) {
  if (arg.kind == HandWrittenArg::Kind::kTensor) visit(arg.tensor, where);
  for (size_t i = 0; i < arg.items.size(); ++i) {
    const std::string key = arg.keys.empty() ? std::to_string(i) : "'" + arg.keys[i] + "'";
    Visit(arg.items[i], where + " [" + key + "]", visit);
  }
}

}  // namespace

void ForEachTensor(const std::vector<HandWrittenArg>& args,
                   const std::function<void(const at::Tensor&, const std::string&)>& visit) {
  for (size_t i = 0; i < args.size(); ++i) Visit(args[i], "argument " + std::to_string(i), visit);
}

}  // namespace sparsetir::ops
