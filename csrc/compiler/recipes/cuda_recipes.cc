#include "recipes/cuda_recipes.h"

#include "support/error.h"

namespace sparsetir {
namespace {

constexpr int64_t kWarp = 32;
// Threads per block: enough warps to hide a gather's latency, few enough
// that a block's rows are a small tail on the last block.
constexpr int64_t kBlockThreads = 128;
// Non-zeros of a row whose loads a thread issues together (csrmm).
constexpr int64_t kNonZerosInFlight = 4;
// Non-zeros per block of the fused sddmm loop.
constexpr int64_t kSddmmBlock = 128;

int64_t Size(const std::map<std::string, int64_t>& sizes, const char* name) {
  auto found = sizes.find(name);
  ICHECK(found != sizes.end()) << "recipe needs the size '" << name << "'";
  return found->second;
}

// Splits `loop` into a block index and a thread index of `threads`.
void BindSplit(Schedule& sch, const std::string& loop, int64_t threads, const char* block_axis,
               const char* thread_axis) {
  auto parts = sch.Split(loop, {std::nullopt, threads});
  sch.Bind(parts[0], block_axis);
  sch.Bind(parts[1], thread_axis);
}

// Loops of csrmm: i, j, k (init: i, k_init). Rows over blockIdx.x and
// threadIdx.y, features over blockIdx.y and threadIdx.x, the non-zeros j
// serial inside a thread.
void Csrmm(Schedule& sch, int64_t feat) {
  const int64_t lanes = CudaRowLanes(feat);
  auto loops = sch.GetLoops("csrmm");
  BindSplit(sch, loops[0], kBlockThreads / lanes, "blockIdx.x", "threadIdx.y");
  loops = sch.GetLoops("csrmm");  // i_0, i_1, j, k
  sch.Reorder({loops[3], loops[2]});
  loops = sch.GetLoops("csrmm");  // i_0, i_1, k, j
  auto k = sch.Split(loops[2], {std::nullopt, lanes});
  sch.Bind(k[0], "blockIdx.y");
  sch.Bind(k[1], "threadIdx.x");
  // A row's non-zeros in unrolled groups: the gathers of a group are in
  // flight together instead of one dependent load after another.
  auto j = sch.Split(sch.GetLoops("csrmm").back(), {std::nullopt, kNonZerosInFlight});
  sch.Unroll(j[1]);
  auto init = sch.GetLoops("csrmm_init");  // i_0, i_1, k_init
  BindSplit(sch, init[2], lanes, "blockIdx.y", "threadIdx.x");
  sch.CacheWrite(k[1], "C", "local");
}

// sddmm_dot: the (i, j) pairs fused into one loop over the non-zeros.
void Sddmm(Schedule& sch) {
  sch.SparseFuse("sddmm", {"I", "J"});
  auto loops = sch.GetLoops("sddmm");  // ij, k
  BindSplit(sch, loops[0], kSddmmBlock, "blockIdx.x", "threadIdx.x");
  loops = sch.GetLoops("sddmm");  // ij_0, ij_1, k
  sch.CacheWrite(loops[1], "O", "local");
}

}  // namespace

int64_t CudaRowLanes(int64_t feat) {
  int64_t lanes = 1;
  while (lanes < feat && lanes < kWarp) lanes *= 2;
  return lanes;
}

bool HasCudaRecipe(const std::string& recipe) { return recipe == "csrmm" || recipe == "sddmm"; }

Schedule ScheduleForCuda(const PrimFunc& f, const std::string& recipe, const std::map<std::string, int64_t>& sizes) {
  if (!HasCudaRecipe(recipe)) {
    throw UserError(UserErrorKind::kSchedule, "the '" + recipe + "' kernel has no cuda schedule yet");
  }
  Schedule sch(f);
  sch.Specialize(sizes);
  if (recipe == "csrmm") {
    Csrmm(sch, Size(sizes, "feat_size"));
  } else {
    Sddmm(sch);
  }
  return sch;
}

}  // namespace sparsetir
