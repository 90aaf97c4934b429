#include "schedule/schedule.h"

#include "ir/printer.h"
#include "ir_dump.h"
#include "lower.h"
#include "ir/verifier.h"
#include "schedule/loop_utils.h"
#include "schedule/trace_format.h"
#include "support/error.h"
#include "transforms/specialize.h"

namespace sparsetir {

void ThrowScheduleError(const std::string& message, const std::string& context) {
  std::string text = message;
  if (!context.empty()) text += "\nin:\n" + context;
  throw UserError(UserErrorKind::kSchedule, text);
}

Schedule::Schedule(PrimFunc f) : func_(std::move(f)) {
  if (!func_->body) ThrowScheduleError("function '" + func_->name + "' has no body to schedule", "");
  DumpFirstStep(func_, "input");
}

namespace {
// "split" from "i0, i1 = sch.split('i', factors=[None, 4])".
std::string PrimitiveOf(const std::string& line) {
  const size_t start = line.find("sch.") + 4;
  return line.substr(start, line.find('(', start) - start);
}
}  // namespace

void Schedule::Record(const std::string& line) {
  trace_.push_back(line);
  const std::string primitive = PrimitiveOf(line);
  // Queries change nothing, and a stage change was dumped pass by pass.
  if (primitive.rfind("get_", 0) == 0 || primitive.rfind("lower_", 0) == 0) return;
  DumpStep(func_, "sch_" + primitive);
}

std::string Schedule::TraceText() const {
  std::string out;
  for (const std::string& line : trace_) out += line + "\n";
  return out;
}

void Schedule::LowerSparseIter() {
  if (func_->stage != Stage::kI) {
    ThrowScheduleError("lower_sparse_iter: function '" + func_->name + "' is already at " + ToString(func_->stage), "");
  }
  func_ = RunPipeline(func_, "lower_sparse_iter");
  Record("sch.lower_sparse_iter()");
}

void Schedule::LowerSparseBuffer() {
  EnsureStageII("lower_sparse_buffer");
  if (func_->stage != Stage::kII) {
    ThrowScheduleError("lower_sparse_buffer: function '" + func_->name + "' is already at " + ToString(func_->stage), "");
  }
  func_ = RunPipeline(func_, "lower_sparse_buffer");
  Record("sch.lower_sparse_buffer()");
}

void Schedule::EnsureStageIII(const char* primitive) {
  if (func_->stage != Stage::kIII) LowerSparseBuffer();
  (void)primitive;
}

void Schedule::EnsureStageII(const char* primitive) {
  if (func_->stage == Stage::kI) LowerSparseIter();
  (void)primitive;
}

void Schedule::Specialize(const std::map<std::string, int64_t>& values) {
  func_ = sparsetir::Specialize(func_, values);
  std::string args;
  for (const auto& [name, value] : values) args += (args.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  Record("sch.specialize(" + args + ")");
}

std::vector<std::string> Schedule::GetBlocks() {
  EnsureStageII("get_blocks");
  return BlockNames(func_);
}

std::vector<std::string> Schedule::GetLoops(const std::string& block) {
  EnsureStageII("get_loops");
  std::vector<std::string> names;
  for (const ForNode* loop : LoopsAround(func_, block, "get_loops")) names.push_back(loop->var->name);
  Record(PyTuple(names) + " = sch.get_loops(" + PyStr(block) + ")");
  return names;
}

}  // namespace sparsetir
