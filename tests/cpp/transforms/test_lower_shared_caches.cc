// lower_shared_caches spreads a shared cache's fill over the block's threads,
// and refuses a cache that some threads of the block would skip; specialize
// rebuilds the buffers a stage-III body allocates (their shapes may name the
// specialized scalars).
#include <gtest/gtest.h>

#include <string>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "parser/parser.h"
#include "support/error.h"
#include "test_util.h"
#include "transforms/lower_shared_caches.h"
#include "transforms/specialize.h"

namespace sparsetir {
namespace {

using testing::ReplaceAll;

// Thread t reads the element thread 63 - t copied.
const char* const kReverse = R"(
@T.prim_func
def reverse(a: T.handle, b: T.handle, n: T.int32, w: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (n, 64), "float32")
    B = T.match_buffer(b, (n, 64), "float32")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        for t in T.thread_binding(32, thread="threadIdx.y"):
            for u in T.thread_binding(2, thread="threadIdx.x"):
                A_shared = T.alloc_buffer((64 // w,), "float32", scope="shared")
                for ax in T.serial(64 // w):
                    A_shared[ax] = A[i, ax]
                B[i, t * 2 + u] = A_shared[63 - (t * 2 + u)]
)";

PrimFunc Reverse() { return Specialize(Parse(kReverse), {{"w", 1}}); }

TEST(Specialize, RebuildsTheBuffersTheBodyAllocates) {
  const std::string printed = Print(Reverse());
  EXPECT_NE(printed.find("A_shared = T.alloc_buffer((64,), \"float32\", scope=\"shared\")"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("for ax in T.serial(64):"), std::string::npos) << printed;
  VerifyWellFormed(Reverse());
}

TEST(LowerSharedCaches, SpreadsTheFillOverTheBlock) {
  const std::string printed = Print(LowerSharedCaches(Reverse()));
  // 64 elements, 64 threads (x fastest: u + t * 2): one round each.
  EXPECT_NE(printed.find("for fill_round in T.unroll(1):"), std::string::npos) << printed;
  EXPECT_NE(printed.find("fill_element: T.int32 = fill_round * 64 + (u + t * 2)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("A_shared[fill_element] = A[i, fill_element]"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("for ax in"), std::string::npos) << printed;
}

TEST(LowerSharedCaches, RefusesACacheSomeThreadsSkip) {
  const std::string guarded = ReplaceAll(
      ReplaceAll(kReverse, "                A_shared = T.alloc_buffer",
                 "                if t < 16:\n                    A_shared = T.alloc_buffer"),
      "                for ax", "                    for ax");
  const std::string text =
      ReplaceAll(ReplaceAll(guarded, "                    A_shared[ax]", "                        A_shared[ax]"),
                 "                B[i,", "                    B[i,");
  try {
    LowerSharedCaches(Specialize(Parse(text), {{"w", 1}}));
    FAIL() << "a cache under a condition of the thread was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shared cache 'A_shared' is filled by all the threads of its block"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sparsetir
