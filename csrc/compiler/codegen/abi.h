// The calling convention between the host and a generated CPU kernel. The same
// declarations are compiled into the host (here) and pasted, as text, into every
// generated source (kAbiText), so the two can never disagree.
#pragma once

#include <stdint.h>

// clang-format off
#define SPARSETIR_ABI_DECLS                                                              \
  /* One argument: a data pointer (tensors), an integer or a floating-point scalar. */    \
  typedef union { void* ptr; int64_t i64; double f64; } SparsetirArg;                     \
  /* Runs iterations [begin, end) of a parallel loop. */                                  \
  typedef void (*SparsetirTask)(void* closure, int64_t begin, int64_t end);               \
  /* The host's parallel-for: splits [begin, end) into chunks of at least `grain`   */    \
  /* iterations and calls `task` on each, on the host's threads (at::parallel_for   */    \
  /* in the extension), so the kernel links no threading runtime of its own.        */    \
  typedef struct {                                                                        \
    void* ctx;                                                                            \
    void (*parallel_for)(void* ctx, int64_t begin, int64_t end, int64_t grain,            \
                         SparsetirTask task, void* closure);                              \
    int32_t num_threads; /* how many threads parallel_for uses */                         \
  } SparsetirLauncher;                                                                    \
  /* The entry point of every generated CPU module; returns 0 on success. */              \
  typedef int32_t (*SparsetirEntry)(const SparsetirArg* args, const SparsetirLauncher* launcher);
// clang-format on

SPARSETIR_ABI_DECLS

#define SPARSETIR_STRINGIFY_IMPL(...) #__VA_ARGS__
#define SPARSETIR_STRINGIFY(...) SPARSETIR_STRINGIFY_IMPL(__VA_ARGS__)

namespace sparsetir {
inline constexpr const char* kEntrySymbol = "sparsetir_main";
// What the entry returns besides 0: a kernel that divides integers by a divisor
// that may be 0 stores 1 in its status when one is (prelude_cpu.h).
inline constexpr int32_t kStatusDivisionByZero = 1;
inline constexpr const char* kAbiText = SPARSETIR_STRINGIFY(SPARSETIR_ABI_DECLS);
}  // namespace sparsetir
