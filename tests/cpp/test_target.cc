// The Target: parsing, the per-level register facts recipes read, the
// compiler flags of each level, and detection of this CPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "recipes/cpu_recipes.h"
#include "support/error.h"
#include "target.h"

namespace sparsetir {
namespace {

bool Contains(const std::vector<std::string>& flags, const std::string& flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

TEST(Target, LevelsAndAliasesParse) {
  EXPECT_EQ(Target::Cpu("avx2"), Target::Cpu("x86-64-v3"));
  EXPECT_EQ(Target::Cpu("avx512"), Target::Cpu("x86-64-v4"));
  EXPECT_EQ(Target::Cpu("generic"), Target::Cpu("x86-64"));
  EXPECT_EQ(Target::Cpu("neon"), Target::Cpu("armv8-a"));
  EXPECT_EQ(Target::Parse("cpu:avx2").str(), "cpu:avx2");
  EXPECT_EQ(Target::Parse("cuda:sm_90").str(), "cuda:sm_90");
  EXPECT_TRUE(Target::Parse("cuda").is_cuda());
  EXPECT_TRUE(Target::Parse("cpu").is_cpu());
}

TEST(Target, RunnableLevelsStartAtTheDetectedOneAndStayInItsFamily) {
  const std::vector<std::string> levels = Target::RunnableCpuLevels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), Target::DetectedCpu().arch);
  for (const std::string& level : levels) EXPECT_EQ(Target::Cpu(level).is_x86(), Target::DetectedCpu().is_x86());
#if defined(__x86_64__)
  EXPECT_EQ(levels.back(), "generic");  // every x86-64 runs the baseline
#endif
}

TEST(Target, UnknownNamesAreUserErrorsListingTheLevels) {
  try {
    Target::Cpu("avx1024");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("avx1024"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("avx2 (x86-64-v3)"), std::string::npos);
  }
  EXPECT_THROW(Target::Parse("gpu"), UserError);
  EXPECT_THROW(Target::Parse("cuda:sm_x"), UserError);
}

TEST(Target, RegistersOfEachLevel) {
  EXPECT_EQ(Target::Cpu("generic").vector_bytes(), 16);
  EXPECT_EQ(Target::Cpu("avx2").vector_bytes(), 32);
  EXPECT_EQ(Target::Cpu("avx512").vector_bytes(), 64);
  EXPECT_EQ(Target::Cpu("neon").vector_bytes(), 16);
  EXPECT_EQ(Target::Cpu("avx2").vector_registers(), 16);
  EXPECT_EQ(Target::Cpu("avx512").vector_registers(), 32);
  EXPECT_EQ(Target::Cpu("neon").vector_registers(), 32);
  EXPECT_EQ(Target::Cpu("avx2").max_lanes(4), 8);
  EXPECT_EQ(Target::Cpu("avx2").max_lanes(8), 4);
}

TEST(Target, CompilerFlagsNameTheLevel) {
  EXPECT_TRUE(Contains(Target::Cpu("avx2").CompilerFlags(), "-march=x86-64-v3"));
  EXPECT_TRUE(Contains(Target::Cpu("avx512").CompilerFlags(), "-march=x86-64-v4"));
  EXPECT_TRUE(Contains(Target::Cpu("sve").CompilerFlags(), "-march=armv8.2-a+sve"));
  Target bf16 = Target::Cpu("avx512");
  bf16.features = {"avx512bf16"};
  EXPECT_TRUE(Contains(bf16.CompilerFlags(), "-mavx512bf16"));
  EXPECT_EQ(bf16.str(), "cpu:avx512+avx512bf16");
  EXPECT_NE(bf16, Target::Cpu("avx512"));
}

TEST(Target, DetectedLevelRunsHere) {
  const Target host = Target::DetectedCpu();
  EXPECT_TRUE(host.is_cpu());
#if defined(__x86_64__)
  EXPECT_TRUE(host.is_x86());
#if defined(__GNUC__)
  __builtin_cpu_init();
  EXPECT_EQ(host.arch == "avx512", __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"));
  if (host.arch == "generic") EXPECT_FALSE(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
#endif
#endif
}

// The recipe's lanes and register budget follow the level: one register of
// lanes, and accumulators within its register file.
TEST(Target, RecipesSizeVectorsForTheLevel) {
  EXPECT_EQ(VectorLanes(128, 4, Target::Cpu("avx512")), 16);
  EXPECT_EQ(VectorLanes(128, 4, Target::Cpu("avx2")), 8);
  EXPECT_EQ(VectorLanes(128, 4, Target::Cpu("generic")), 4);
  EXPECT_EQ(VectorLanes(128, 8, Target::Cpu("avx2")), 4);
  EXPECT_EQ(VectorLanes(20, 4, Target::Cpu("avx512")), 4);
  EXPECT_EQ(VectorLanes(7, 4, Target::Cpu("avx2")), 1);
  CsrmmPlan wide = PlanCsrmm(256, 4, Target::Cpu("avx512"));
  EXPECT_EQ(wide.vector_lanes, 16);
  EXPECT_EQ(wide.unrolled_vectors, 16);
  EXPECT_EQ(wide.accumulator_sets, 1);
  CsrmmPlan k64 = PlanCsrmm(64, 4, Target::Cpu("avx512"));
  EXPECT_EQ(k64.unrolled_vectors, 4);
  EXPECT_EQ(k64.accumulator_sets, 2);
  // 16 ymm registers: two accumulator sets only up to two vectors a row
  // (measured on a Zen 3 host at K = 32: one set of four as fast or faster).
  CsrmmPlan avx2 = PlanCsrmm(32, 4, Target::Cpu("avx2"));
  EXPECT_EQ(avx2.vector_lanes, 8);
  EXPECT_EQ(avx2.unrolled_vectors, 4);
  EXPECT_EQ(avx2.accumulator_sets, 1);
  EXPECT_EQ(PlanCsrmm(16, 4, Target::Cpu("avx2")).accumulator_sets, 2);
  // 32 ymm vectors, past the 16 registers: tiles of 8 vectors where the
  // gathers are prefetched, the whole row (not unrolled) where they are not.
  CsrmmPlan tiled = PlanCsrmm(256, 4, Target::Cpu("avx2"));
  EXPECT_EQ(tiled.unrolled_vectors, 8);
  EXPECT_EQ(tiled.feature_tile, 64);
  CsrmmPlan whole = PlanCsrmm(256, 4, Target::Cpu("avx2"), GatherPrefetch::kOff);
  EXPECT_EQ(whole.unrolled_vectors, 1);
  EXPECT_EQ(whole.feature_tile, 256);
  // As many vectors as registers (AVX2 at K = 128) keeps the row whole.
  EXPECT_EQ(PlanCsrmm(128, 4, Target::Cpu("avx2"), GatherPrefetch::kToL2).feature_tile, 128);
  EXPECT_EQ(PlanCsrmm(128, 4, Target::Cpu("generic"), GatherPrefetch::kToL2).feature_tile, 32);
  EXPECT_EQ(wide.feature_tile, 256);  // 16 zmm vectors of 32 registers
}

TEST(Target, BsrmmTilesRowsWiderThanHalfTheRegisters) {
  // SSE2 at K = 64: 16 vectors for 16 registers, tiles of 8; not packed (rows 256 bytes apart).
  BsrmmPlan sse = PlanBsrmm(32, 64, 4, Target::Cpu("generic"));
  EXPECT_EQ(sse.vector_lanes, 4);
  EXPECT_EQ(sse.feature_tile, 32);
  EXPECT_FALSE(sse.b_tile_packed);
  // AVX2 at K = 256: tiles of 8 vectors, the slice packed for 32-row blocks only.
  EXPECT_EQ(PlanBsrmm(32, 256, 4, Target::Cpu("avx2")).feature_tile, 64);
  EXPECT_TRUE(PlanBsrmm(32, 256, 4, Target::Cpu("avx2")).b_tile_packed);
  EXPECT_FALSE(PlanBsrmm(16, 256, 4, Target::Cpu("avx2")).b_tile_packed);
  // AVX-512 keeps 16 vectors whole; 25 vectors (K = 100, 4 lanes) stay rolled, not in tiles of 5.
  BsrmmPlan whole = PlanBsrmm(32, 256, 4, Target::Cpu("avx512"));
  EXPECT_EQ(whole.feature_tile, 256);
  EXPECT_EQ(whole.unrolled_vectors, 16);
  BsrmmPlan rolled = PlanBsrmm(4, 100, 4, Target::Cpu("avx512"));
  EXPECT_EQ(rolled.feature_tile, 100);
  EXPECT_EQ(rolled.unrolled_vectors, 1);
  EXPECT_FALSE(PlanBsrmm(32, 512, 4, Target::Cpu("avx2")).output_tile_local);  // 16384 elements
}

TEST(Target, SddmmGroupsTakeRowsOfFourVectorsOrMore) {
  EXPECT_EQ(SddmmGroupLanes(32, 4, Target::Cpu("avx2")), 8);
  EXPECT_EQ(SddmmGroupLanes(32, 4, Target::Cpu("avx512")), 8);  // 4 vectors of 8 lanes, not 2 of 16
  EXPECT_EQ(SddmmGroupLanes(16, 4, Target::Cpu("avx512")), 4);
  EXPECT_EQ(SddmmGroupLanes(8, 4, Target::Cpu("avx512")), 0);  // 2 float32 lanes: under 16 bytes
  EXPECT_EQ(SddmmGroupLanes(64, 4, Target::Cpu("avx512")), 16);
  EXPECT_EQ(SddmmGroupLanes(64, 8, Target::Cpu("generic")), 2);
  EXPECT_EQ(SddmmGroupLanes(7, 4, Target::Cpu("avx2")), 0);  // scalar
}

}  // namespace
}  // namespace sparsetir
