// The SIMT emulator's fibers and meeting points, on hand-written CUDA kernels
// (what a user debugging their own kernel runs): block barriers over shared
// memory, warp shuffles and votes with partial warps and returned lanes,
// dynamic shared memory, the race check, and the deadlocks and oversized
// blocks the emulator must name instead of hanging.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/simt_emulator.h"
#include "runtime/emulated_cuda_module.h"
#include "runtime/simt_race_check.h"
#include "support/fiber.h"
#include "thread_launcher.h"

namespace sparsetir {
namespace {

// A kernel with its parameter types, run on a grid through the emulator.
struct EmulatedKernel {
  std::string name;
  std::string source;
  std::vector<std::string> types;

  void Run(std::vector<SparsetirArg> args, std::array<int64_t, 6> dims, size_t dynamic_shared = 0) const {
    const size_t params = args.size();
    EmulatedCudaModule module(kSimtEmulatorHeader + source + SimtEmulatorEntry(name, types), name,
                              KernelSynchronizes(source), params,
                              [dims](const SparsetirArg*) { return dims; }, dynamic_shared);
    testing::ThreadLauncher launcher(2);
    module.Launch(args.data(), launcher.get());
  }
};

SparsetirArg Ptr(void* p) {
  SparsetirArg a;
  a.ptr = p;
  return a;
}
SparsetirArg Int(int64_t v) {
  SparsetirArg a;
  a.i64 = v;
  return a;
}

// Runs `body` once per thread order of the race check.
template <typename Body> void ForEachOrder(Body body) {
  for (const char* order : {"forward", "reverse", "shuffle"}) {
    SCOPED_TRACE(order);
    setenv("SPARSETIR_EMULATE_ORDER", order, 1);
    body();
  }
  unsetenv("SPARSETIR_EMULATE_ORDER");
}

TEST(Fiber, SuspendsAndResumesInTurn) {
  std::vector<int> trace;
  struct Arg {
    std::vector<int>* trace;
    int id;
  };
  auto main = [](void* p) {
    Arg* arg = static_cast<Arg*>(p);
    for (int step = 0; step < 3; ++step) {
      arg->trace->push_back(arg->id * 10 + step);
      Fiber::Suspend();
    }
  };
  Arg a{&trace, 1}, b{&trace, 2};
  Fiber fa(main, &a), fb(main, &b);
  for (int round = 0; round < 4; ++round) {
    if (!fa.finished()) fa.Resume();
    if (!fb.finished()) fb.Resume();
  }
  EXPECT_TRUE(fa.finished());
  EXPECT_TRUE(fb.finished());
  EXPECT_EQ(trace, (std::vector<int>{10, 20, 11, 21, 12, 22}));
  EXPECT_TRUE(std::string(Fiber::Switcher()) == "fcontext" || std::string(Fiber::Switcher()) == "ucontext");
}

// Values a fiber keeps in registers across its suspensions (callee-saved
// ones included: six live integers and doubles) survive while other fibers
// run the same code with other values, and the stack a fiber starts on is
// aligned for SSE (a 16-byte aligned local).
struct RegisterWork {
  int64_t seed;
  Fiber* next = nullptr;  // where a pause switches to (nullptr: Resume()'s caller)
  int64_t sum = 0;
  double mix = 0.0;
  bool aligned = false;

  template <typename Pause> void Run(Pause pause) {
    alignas(16) volatile double probe[2] = {0.0, 0.0};
    aligned = reinterpret_cast<uintptr_t>(&probe[0]) % 16 == 0;
    int64_t a = seed, b = a * 3 + 1, c = b ^ 0x55, d = c + a, e = d * 7, f = e - b;
    double x = static_cast<double>(a) * 0.5, y = x + 1.25;
    for (int step = 0; step < 5; ++step) {
      pause();
      a += b, b += c, c += d, d += e, e += f, f += a;
      x = x * 1.5 + y, y = y - x * 0.25;
    }
    sum = a + b + c + d + e + f;
    mix = x + y;
  }
};

// Twice: each pause suspends to Resume()'s caller, then each pause of the
// first two fibers switches to the next fiber directly (unless it finished).
TEST(Fiber, KeepsItsRegistersAcrossSwitches) {
  for (bool direct : {false, true}) {
    std::vector<RegisterWork> works = {{1}, {20}, {300}};
    std::vector<std::unique_ptr<Fiber>> fibers;
    for (RegisterWork& work : works) {
      fibers.push_back(std::make_unique<Fiber>(
          [](void* p) {
            RegisterWork* work = static_cast<RegisterWork*>(p);
            work->Run([work] {
              work->next && !work->next->finished() ? Fiber::SwitchTo(work->next) : Fiber::Suspend();
            });
          },
          &work));
    }
    if (direct) works[0].next = fibers[1].get(), works[1].next = fibers[2].get();
    for (bool running = true; running;) {
      running = false;
      for (auto& fiber : fibers) {
        if (!fiber->finished()) fiber->Resume(), running = true;
      }
    }
    for (const RegisterWork& work : works) {
      RegisterWork plain{work.seed};
      plain.Run([] {});
      EXPECT_EQ(work.sum, plain.sum) << work.seed << (direct ? " (switching directly)" : "");
      EXPECT_EQ(work.mix, plain.mix) << work.seed << (direct ? " (switching directly)" : "");
      EXPECT_TRUE(work.aligned) << work.seed;
    }
  }
}

// A fiber hands the turn to another without a stop in Resume(): the chain
// a -> b -> c runs in one Resume(), which returns the fiber that suspended;
// b and c start when switched to; each fiber goes on after its switch when
// next resumed, and one that finishes returns to Resume() too.
TEST(Fiber, SwitchesToAnotherFiberDirectly) {
  struct Link {
    std::vector<int>* trace;
    int id;
    Fiber* next;
  };
  auto main = [](void* p) {
    Link* link = static_cast<Link*>(p);
    for (int step = 0; step < 2; ++step) {
      link->trace->push_back(link->id * 10 + step);
      link->next ? Fiber::SwitchTo(link->next) : Fiber::Suspend();
    }
    link->trace->push_back(link->id * 10 + 9);
  };
  std::vector<int> trace;
  Link c{&trace, 3, nullptr};
  Fiber fc(main, &c);
  Link b{&trace, 2, &fc};
  Fiber fb(main, &b);
  Link a{&trace, 1, &fb};
  Fiber fa(main, &a);
  EXPECT_EQ(fa.Resume(), &fc);
  EXPECT_EQ(fa.Resume(), &fc);
  EXPECT_EQ(fa.Resume(), &fa);
  EXPECT_TRUE(fa.finished());
  EXPECT_FALSE(fb.finished());
  EXPECT_EQ(fb.Resume(), &fb);
  EXPECT_EQ(fc.Resume(), &fc);
  EXPECT_TRUE(fb.finished() && fc.finished());
  EXPECT_EQ(trace, (std::vector<int>{10, 20, 30, 11, 21, 31, 19, 29, 39}));
}

// A fiber restarted after it finished, or while suspended midway (a
// deadlocked thread's), runs its new main from the start on the same stack.
TEST(Fiber, RestartsFromItsStart) {
  std::vector<int> trace;
  auto count = [](void* p) {
    auto* trace = static_cast<std::vector<int>*>(p);
    for (int step = 0; step < 3; ++step) {
      trace->push_back(step);
      Fiber::Suspend();
    }
  };
  auto once = [](void* p) { static_cast<std::vector<int>*>(p)->push_back(7); };
  Fiber fiber(count, &trace);
  while (!fiber.finished()) fiber.Resume();
  fiber.Restart(count, &trace);
  EXPECT_FALSE(fiber.finished());
  fiber.Resume();  // suspended after step 0: abandoned there
  fiber.Restart(once, &trace);
  fiber.Resume();
  EXPECT_TRUE(fiber.finished());
  EXPECT_EQ(trace, (std::vector<int>{0, 1, 2, 0, 7}));
}

// Line for line: runtime headers dropped, an unemulated one named by an
// #error, each form of `extern __shared__ T name[];` a reference to the
// block's dynamic shared memory, alignas moved before __shared__; other
// lines untouched.
TEST(EmulatorSourceFromCuda, RewritesIncludesAndExternSharedLineForLine) {
  const std::string source =
      "#include <cuda_runtime.h>\n"
      "  #  include \"cassert\"\n"
      "#include <cuda/std/chrono>\n"
      "#include <stdio.h>\n"
      "extern __shared__ float tile[];\n"
      "  extern __shared__ __align__(sizeof(double)) unsigned char raw [ ] ; int x = 1;\n"
      "extern __shared__ float4 quads[] __align__(16);\n"
      "extern __shared__ int fixed[4];\n"
      "// extern int not_shared[];\n"
      "  __shared__ alignas(sizeof(float4)) float staged[64]; __shared__ alignas (16) int x;\n";
  const std::string out = EmulatorSourceFromCuda(source);
  std::vector<std::string> lines;
  for (size_t at = 0, end; (end = out.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(out.substr(at, end - at));
  }
  ASSERT_EQ(lines.size(), 10u) << out;
  EXPECT_EQ(lines[0], "// (declared by the SIMT emulator) #include <cuda_runtime.h>");
  EXPECT_EQ(lines[1].rfind("// (declared by the SIMT emulator)", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], "#error \"the SIMT emulator has no cuda/std/chrono\"");
  EXPECT_EQ(lines[3], "#include <stdio.h>");
  EXPECT_EQ(lines[4], "static thread_local float(&tile)[] = *(float(*)[])sparsetir_dynamic_shared();");
  EXPECT_EQ(lines[5], "  static thread_local unsigned char(&raw)[] = *(unsigned char(*)[])sparsetir_dynamic_shared(); "
                      "int x = 1;");
  EXPECT_EQ(lines[6], "static thread_local float4(&quads)[] = *(float4(*)[])sparsetir_dynamic_shared();");
  EXPECT_EQ(lines[7], "extern __shared__ int fixed[4];");  // not dynamic: the compiler reports it
  EXPECT_EQ(lines[8], "// extern int not_shared[];");
  // alignas before __shared__ (static thread_local): C++ takes no attribute among decl-specifiers.
  EXPECT_EQ(lines[9], "  alignas(sizeof(float4)) __shared__ float staged[64]; alignas (16) __shared__ int x;");
}

// cuda_fp16.h and cuda_bf16.h are emulated: the include is dropped and the
// 16-bit float types pasted before the source, for either header only.
TEST(EmulatorSourceFromCuda, DeclaresTheFloat16TypesWhereTheSourceIncludesTheirHeader) {
  for (const char* header : {"cuda_fp16.h", "cuda_bf16.h"}) {
    const std::string source = std::string("  #include <") + header + ">\n__half x;\n";
    EXPECT_EQ(EmulatorSourceFromCuda(source).rfind("// (declared by the SIMT emulator)", 0), 0u) << header;
    const EmulatorLibraries libraries = EmulatorLibrariesFor(source);
    EXPECT_TRUE(libraries.float16_types) << header;
    const std::string& library = libraries.text;
    EXPECT_NE(library.find("struct __attribute__((aligned(2))) __half {"), std::string::npos) << header;
    EXPECT_NE(library.find("struct __attribute__((aligned(4))) __nv_bfloat162 {"), std::string::npos) << header;
    EXPECT_EQ(library.find('@'), std::string::npos) << "a placeholder was left";
  }
  const EmulatorLibraries none = EmulatorLibrariesFor("#include <cuda_runtime.h>\n// #include <cuda_fp16.h>\n");
  EXPECT_EQ(none.text, "");
  EXPECT_FALSE(none.float16_types);
  const EmulatorLibraries groups = EmulatorLibrariesFor("#include <cooperative_groups/reduce.h>\n");
  EXPECT_NE(groups.text.find("namespace cooperative_groups {"), std::string::npos);
  EXPECT_EQ(groups.text.find("struct __attribute__((aligned(2))) __half {"), std::string::npos);
  EXPECT_FALSE(groups.float16_types);
  // mma.h includes the 16-bit float headers, as CUDA's does.
  const EmulatorLibraries wmma = EmulatorLibrariesFor("#include <mma.h>\n");
  EXPECT_NE(wmma.text.find("namespace wmma {"), std::string::npos);
  EXPECT_NE(wmma.text.find("struct __attribute__((aligned(2))) __half {"), std::string::npos);
  EXPECT_TRUE(wmma.float16_types);
  EXPECT_FALSE(wmma.float8_types);
  // cuda_fp8.h too; its own types come after the 16-bit ones they convert from.
  const std::string fp8_source = "#include <cuda_fp8.h>\n";
  EXPECT_EQ(EmulatorSourceFromCuda(fp8_source).rfind("// (declared by the SIMT emulator)", 0), 0u);
  const EmulatorLibraries fp8 = EmulatorLibrariesFor(fp8_source);
  EXPECT_TRUE(fp8.float16_types);
  EXPECT_TRUE(fp8.float8_types);
  const size_t half = fp8.text.find("struct __attribute__((aligned(2))) __half {");
  const size_t e4m3 = fp8.text.find("struct __attribute__((aligned(1))) __nv_fp8_e4m3 {");
  ASSERT_NE(half, std::string::npos);
  ASSERT_NE(e4m3, std::string::npos);
  EXPECT_LT(half, e4m3);
  EXPECT_NE(fp8.text.find("struct __attribute__((aligned(4))) __nv_fp8x4_e5m2 {"), std::string::npos);
  EXPECT_EQ(fp8.text.find('@'), std::string::npos) << "a placeholder was left";
  // CUB's collectives for any of their headers; the rest of CUB is an #error naming what there is.
  for (const char* header : {"cub/cub.cuh", "cub/warp/warp_scan.cuh", "cuda/functional"}) {
    EXPECT_NE(EmulatorLibrariesFor(std::string("#include <") + header + ">\n").text.find("namespace cub {"),
              std::string::npos)
        << header;
  }
  EXPECT_EQ(EmulatorLibrariesFor("#include <cub/block/block_load.cuh>\n").text, "");
  EXPECT_EQ(EmulatorSourceFromCuda("#include <cub/block/block_load.cuh>\n"),
            "#error \"the SIMT emulator has no cub/block/block_load.cuh (of CUB it has WarpReduce, WarpScan, "
            "BlockReduce and BlockScan: include cub/cub.cuh)\"\n");
}

TEST(KernelSynchronizes, FindsBarriersAndWarpOperations) {
  EXPECT_FALSE(KernelSynchronizes("y[i] = x[i];"));
  EXPECT_TRUE(KernelSynchronizes("__syncthreads();"));
  EXPECT_TRUE(KernelSynchronizes("__syncwarp(m);"));
  EXPECT_TRUE(KernelSynchronizes("v += __shfl_down_sync(0xffffffff, v, 1);"));
  EXPECT_TRUE(KernelSynchronizes("b = __ballot_sync(m, p);"));
  EXPECT_TRUE(KernelSynchronizes("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\ng.sync();"));
  // CUB's collectives meet inside the library, unseen in the kernel's text.
  EXPECT_TRUE(KernelSynchronizes("s = cub::BlockReduce<float, 128>(storage).Sum(x);"));
  // Spin points: a thread may wait there for another thread's write.
  EXPECT_TRUE(KernelSynchronizes("while (atomicCAS(lock, 0, 1) != 0) {}"));
  EXPECT_TRUE(KernelSynchronizes("while (flag == 0) __threadfence();"));
  EXPECT_TRUE(KernelSynchronizes("while (!ready()) __nanosleep(64);"));
  EXPECT_TRUE(KernelSynchronizes("#include <cuda/std/latch>\nl->wait();"));
  EXPECT_TRUE(KernelSynchronizes("#include <cuda/semaphore>\ns.acquire();"));
}

// A tree reduction over shared memory: every level reads what other threads
// wrote before the barrier. Threads past n return before the first barrier
// (a barrier waits for the live threads only).
const EmulatedKernel kBlockSum{"block_sum", R"(
extern "C" __global__ void block_sum(const float* x, float* out, long long n) {
  __shared__ float partial[256];
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  partial[threadIdx.x] = 0.0f;
  if (i < n) partial[threadIdx.x] = x[i];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
)",
                                 {"float*", "float*", "long long"}};

TEST(SimtEmulator, BlockReductionThroughSharedMemory) {
  const int64_t n = 1000, threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7);
  ForEachOrder([&] {
    std::vector<float> out(blocks, -1.0f);
    kBlockSum.Run({Ptr(x.data()), Ptr(out.data()), Int(n)}, {blocks, 1, 1, threads, 1, 1});
    for (int64_t b = 0; b < blocks; ++b) {
      float expect = 0.0f;
      for (int64_t i = b * threads; i < std::min(n, (b + 1) * threads); ++i) expect += x[i];
      EXPECT_EQ(out[b], expect) << "block " << b;
    }
  });
}

// Warp shuffles: a butterfly sum (xor), a tree sum (down), an inclusive scan
// (up), a broadcast of lane 3, and the same within groups of 8 lanes.
const EmulatedKernel kShuffles{"shuffles", R"(
extern "C" __global__ void shuffles(const int* x, int* out) {
  const int t = threadIdx.x + blockIdx.x * blockDim.x;
  const int v = x[t];
  int butterfly = v, tree = v, scan = v, group = v;
  for (int d = 16; d > 0; d /= 2) butterfly += __shfl_xor_sync(0xffffffffu, butterfly, d);
  for (int d = 16; d > 0; d /= 2) tree += __shfl_down_sync(0xffffffffu, tree, d);
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, scan, d);
    if ((threadIdx.x % 32) >= d) scan += up;
  }
  for (int d = 4; d > 0; d /= 2) group += __shfl_xor_sync(0xffffffffu, group, d, 8);
  out[5 * t + 0] = butterfly;
  out[5 * t + 1] = tree;
  out[5 * t + 2] = scan;
  out[5 * t + 3] = __shfl_sync(0xffffffffu, v, 3);
  out[5 * t + 4] = group;
}
)",
                                 {"int*", "int*"}};

TEST(SimtEmulator, WarpShufflesMatchTheirDefinitions) {
  const int64_t threads = 64, blocks = 3, n = threads * blocks;
  std::vector<int> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<int>((i * 37) % 101) - 50;
  ForEachOrder([&] {
    std::vector<int> out(5 * n, 0);
    kShuffles.Run({Ptr(x.data()), Ptr(out.data())}, {blocks, 1, 1, threads, 1, 1});
    for (int64_t t = 0; t < n; ++t) {
      const int64_t warp = t - t % 32, lane = t % 32, group = t - t % 8;
      const int warp_sum = std::accumulate(x.begin() + warp, x.begin() + warp + 32, 0);
      EXPECT_EQ(out[5 * t + 0], warp_sum) << t;
      if (lane == 0) EXPECT_EQ(out[5 * t + 1], warp_sum) << t;
      EXPECT_EQ(out[5 * t + 2], std::accumulate(x.begin() + warp, x.begin() + t + 1, 0)) << t;
      EXPECT_EQ(out[5 * t + 3], x[warp + 3]) << t;
      EXPECT_EQ(out[5 * t + 4], std::accumulate(x.begin() + group, x.begin() + group + 8, 0)) << t;
    }
  });
}

// The two halves of each warp shuffle apart, with masks of their own and
// different numbers of meetings (the lower half runs ahead), then the whole
// warp exchanges: every lane gets the value its source passed to that very
// meeting, whichever lanes ran on since.
const EmulatedKernel kHalves{"halves", R"(
extern "C" __global__ void halves(const int* x, int* out) {
  const int t = threadIdx.x + blockIdx.x * blockDim.x, lane = threadIdx.x % 32;
  int v = x[t];
  if (lane < 16) {
    for (int d = 8; d > 0; d /= 2) v += __shfl_xor_sync(0x0000ffffu, v, d);
  } else {
    v = __shfl_down_sync(0xffff0000u, v, 1);
  }
  out[2 * t] = v;
  out[2 * t + 1] = __shfl_sync(0xffffffffu, v, 31 - lane);
}
)",
                               {"int*", "int*"}};

TEST(SimtEmulator, HalvesOfAWarpShuffleApartThenTogether) {
  const int64_t threads = 64, blocks = 2, n = threads * blocks;
  std::vector<int> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<int>((i * 29) % 97) - 40;
  auto half = [&](int64_t t) {  // what lane t holds after its half's shuffles
    const int64_t warp = t - t % 32, lane = t % 32;
    if (lane < 16) return std::accumulate(x.begin() + warp, x.begin() + warp + 16, 0);
    return lane < 31 ? x[t + 1] : x[t];
  };
  ForEachOrder([&] {
    std::vector<int> out(2 * n, 0);
    kHalves.Run({Ptr(x.data()), Ptr(out.data())}, {blocks, 1, 1, threads, 1, 1});
    for (int64_t t = 0; t < n; ++t) {
      EXPECT_EQ(out[2 * t], half(t)) << t;
      EXPECT_EQ(out[2 * t + 1], half(t - t % 32 + 31 - t % 32)) << t;
    }
  });
}

// Votes in a block of 40 threads (a full warp and one of 8 lanes) in which
// lane 5 of each warp returns first: the vote counts the live lanes only.
const EmulatedKernel kVotes{"votes", R"(
extern "C" __global__ void votes(const int* x, unsigned* out) {
  if (threadIdx.x % 32 == 5) return;
  const unsigned ballot = __ballot_sync(0xffffffffu, x[threadIdx.x] > 0);
  const int any = __any_sync(0xffffffffu, x[threadIdx.x] > 0);
  const int all = __all_sync(0xffffffffu, x[threadIdx.x] > 0);
  out[3 * threadIdx.x + 0] = ballot;
  out[3 * threadIdx.x + 1] = any;
  out[3 * threadIdx.x + 2] = all;
}
)",
                              {"int*", "unsigned*"}};

TEST(SimtEmulator, VotesCountTheLiveLanes) {
  std::vector<int> x(40, 1);
  x[2] = 0;              // warp 0: one lane votes no
  x[37] = 0;             // warp 1: lane 5, which returned, votes nothing
  std::vector<unsigned> out(3 * 40, 7);
  kVotes.Run({Ptr(x.data()), Ptr(out.data())}, {1, 1, 1, 40, 1, 1});
  const unsigned warp0 = 0xffffffffu & ~(1u << 5) & ~(1u << 2), warp1 = 0xffu & ~(1u << 5);
  for (int t = 0; t < 40; ++t) {
    if (t % 32 == 5) {
      EXPECT_EQ(out[3 * t], 7u);
      continue;
    }
    EXPECT_EQ(out[3 * t + 0], t < 32 ? warp0 : warp1) << t;
    EXPECT_EQ(out[3 * t + 1], 1u) << t;
    EXPECT_EQ(out[3 * t + 2], t < 32 ? 0u : 1u) << t;
  }
}

// __syncthreads_count / _and / _or over the threads that have not returned.
const EmulatedKernel kBlockVotes{"block_votes", R"(
extern "C" __global__ void block_votes(const int* x, int* out) {
  const int t = threadIdx.x;
  if (x[t] < 0) return;
  out[3 * t] = __syncthreads_count(x[t] > 1);
  out[3 * t + 1] = __syncthreads_and(x[t] > 0);
  out[3 * t + 2] = __syncthreads_or(x[t] > 2);
}
)",
                                   {"int*", "int*"}};

TEST(SimtEmulator, BlockVotesCountTheThreadsThatHaveNotReturned) {
  ForEachOrder([] {
    std::vector<int> x(70, 1);
    x[3] = x[40] = -1;  // they return
    x[10] = x[50] = x[69] = 2;
    std::vector<int> out(3 * 70, 7);
    kBlockVotes.Run({Ptr(x.data()), Ptr(out.data())}, {1, 1, 1, 70, 1, 1});
    for (int t = 0; t < 70; ++t) {
      const std::vector<int> want = x[t] < 0 ? std::vector<int>{7, 7, 7} : std::vector<int>{3, 1, 0};
      EXPECT_EQ(std::vector<int>(out.begin() + 3 * t, out.begin() + 3 * t + 3), want) << t;
    }
  });
}

// coalesced_threads(): the lanes at one call site once nothing else of the
// warp can run; the even lanes wait at a __syncwarp of their own first.
const std::string kCoalescedSource = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void coalesced(const int* x, int* out) {
  const int t = threadIdx.x;
  if (x[t] % 2) {
    cg::coalesced_group g = cg::coalesced_threads();
    out[2 * t] = g.num_threads();
    out[2 * t + 1] = g.thread_rank();
  } else {
    __syncwarp(0x55555555u);
    out[2 * t] = -1;
    out[2 * t + 1] = -1;
  }
}
)";
const EmulatedKernel kCoalesced{"coalesced",
                                EmulatorLibrariesFor(kCoalescedSource).text + EmulatorSourceFromCuda(kCoalescedSource),
                                {"int*", "int*"}};

TEST(SimtEmulator, CoalescedGroupsAreTheLanesAtOneCallSite) {
  ForEachOrder([] {
    std::vector<int> x(32);
    std::iota(x.begin(), x.end(), 0);  // odd lanes take the first branch
    std::vector<int> out(64, 7);
    kCoalesced.Run({Ptr(x.data()), Ptr(out.data())}, {1, 1, 1, 32, 1, 1});
    for (int t = 0; t < 32; ++t) {
      EXPECT_EQ(out[2 * t], t % 2 ? 16 : -1) << t;
      EXPECT_EQ(out[2 * t + 1], t % 2 ? t / 2 : -1) << t;
    }
  });
}

// Dynamic shared memory: a block reverses its slice of x through it.
const EmulatedKernel kReverse{"reverse_block", R"(
extern "C" __global__ void reverse_block(const double* x, double* y) {
  SPARSETIR_DYNAMIC_SHARED(double, tile);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = x[i];
  __syncthreads();
  y[i] = tile[blockDim.x - 1 - threadIdx.x];
}
)",
                                {"double*", "double*"}};

TEST(SimtEmulator, DynamicSharedMemoryIsPerBlock) {
  const int64_t threads = 96, blocks = 5;
  std::vector<double> x(threads * blocks), y(x.size());
  std::iota(x.begin(), x.end(), 0.5);
  ForEachOrder([&] {
    kReverse.Run({Ptr(x.data()), Ptr(y.data())}, {blocks, 1, 1, threads, 1, 1}, threads * sizeof(double));
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t t = 0; t < threads; ++t) EXPECT_EQ(y[b * threads + t], x[b * threads + threads - 1 - t]);
    }
  });
}

// Thread 0 reads what thread 1 writes, with no barrier between: the race
// check's orders give different answers, which is what it is for.
const EmulatedKernel kRacy{"racy", R"(
extern "C" __global__ void racy(int* out) {
  __shared__ int cell;
  if (threadIdx.x == 0) cell = 0;
  __syncthreads();
  if (threadIdx.x == 1) cell = 42;
  if (threadIdx.x == 0) out[0] = cell;
}
)",
                           {"int*"}};

TEST(SimtEmulator, RaceCheckOrdersExposeARace) {
  std::vector<int> seen;
  ForEachOrder([&] {
    int out = -1;
    kRacy.Run({Ptr(&out)}, {1, 1, 1, 2, 1, 1});
    seen.push_back(out);
  });
  EXPECT_EQ(seen[0], 0);   // forward: thread 0 reads before thread 1 writes
  EXPECT_EQ(seen[1], 42);  // reverse: after
}

// Warp 1 reads what warp 0 writes to shared memory with no __syncthreads
// between, each after a warp shuffle: the orders expose the race between
// warps too.
const EmulatedKernel kRacyWarps{"racy_warps", R"(
extern "C" __global__ void racy_warps(int* out) {
  __shared__ int cell;
  if (threadIdx.x == 0) cell = 0;
  __syncthreads();
  const int lane = __shfl_sync(0xffffffffu, (int)threadIdx.x % 32, 0);
  if (threadIdx.x == 0) cell = 42;
  if (threadIdx.x == 32) out[0] = cell + lane;
}
)",
                                {"int*"}};

TEST(SimtEmulator, RaceCheckOrdersExposeARaceBetweenWarps) {
  std::vector<int> seen;
  ForEachOrder([&] {
    int out = -1;
    kRacyWarps.Run({Ptr(&out)}, {1, 1, 1, 64, 1, 1});
    seen.push_back(out);
  });
  EXPECT_EQ(seen[0], 42);  // forward: warp 0 writes before warp 1 reads
  EXPECT_EQ(seen[1], 0);   // reverse: after
}

TEST(SimtEmulator, RaceCheckModeNamesTheBufferThatDiffers) {
  int out = -1;
  try {
    RunRaceChecked("racy", {{"out", &out, sizeof(out), sizeof(out)}},
                   [&] { kRacy.Run({Ptr(&out)}, {1, 1, 1, 2, 1, 1}); });
    FAIL() << "the race was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("race check: kernel 'racy' wrote different values to 'out' (first at "
                                         "element 0)"),
              std::string::npos)
        << e.what();
  }
  // A kernel whose threads meet where they exchange data passes, and keeps
  // its inputs: the second run starts from them again.
  const int64_t threads = 256;
  std::vector<float> x(threads, 1.5f), sums(1, 7.0f);
  RunRaceChecked("block_sum", {{"x", x.data(), x.size() * 4, 4}, {"out", sums.data(), 4, 4}},
                 [&] { kBlockSum.Run({Ptr(x.data()), Ptr(sums.data()), Int(threads)}, {1, 1, 1, threads, 1, 1}); });
  EXPECT_EQ(sums[0], 1.5f * threads);
}

// Half the threads wait at __syncthreads, the other half at __syncwarp
// for lanes that never come: the emulator names the kernel, the block and
// where each thread waits, and the launch throws instead of hanging.
const EmulatedKernel kDeadlock{"divergent_barriers", R"(
extern "C" __global__ void divergent_barriers(int* out) {
  if (threadIdx.x % 2) __syncthreads(); else __syncwarp();
  out[threadIdx.x] = 1;
}
)",
                               {"int*"}};

TEST(SimtEmulator, DeadlockIsReportedWithKernelBlockAndBarriers) {
  std::vector<int> out(4, 0);
  try {
    kDeadlock.Run({Ptr(out.data())}, {2, 1, 1, 4, 1, 1});
    FAIL() << "a deadlocked kernel returned";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock in kernel 'divergent_barriers'"), std::string::npos) << what;
    EXPECT_NE(what.find(", 0, 0) of 4 threads"), std::string::npos) << what;
    EXPECT_NE(what.find("thread 0 wait at __syncwarp(0xffffffff)"), std::string::npos) << what;
    EXPECT_NE(what.find("thread 1 wait at __syncthreads"), std::string::npos) << what;
  }
}

// Each thread waits for the one before it (a failed compare-and-swap on its
// flag is the spin point), in a block of several warps: the chain goes
// through every lane and warp whatever order they run in.
const EmulatedKernel kChain{"chain", R"(
extern "C" __global__ void chain(unsigned* flags, int* out) {
  const int t = threadIdx.x;
  if (t > 0) {
    while (atomicCAS(&flags[t - 1], 1u, 1u) != 1u) {
    }
  }
  out[t] = t == 0 ? 1 : out[t - 1] * 3 % 1000003;
  atomicExch(&flags[t], 1u);
}
)",
                            {"unsigned*", "int*"}};

TEST(SimtEmulator, SpinningThreadsLetTheOthersRun) {
  for (int64_t threads : {1, 31, 70, 1024}) {
    ForEachOrder([&] {
      std::vector<unsigned> flags(threads, 0);
      std::vector<int> out(threads, 0);
      kChain.Run({Ptr(flags.data()), Ptr(out.data())}, {1, 1, 1, threads, 1, 1});
      int expect = 1;
      for (int64_t t = 0; t < threads; ++t) {
        EXPECT_EQ(out[t], expect) << "thread " << t << " of " << threads;
        expect = static_cast<int>(expect * 3LL % 1000003);
      }
    });
  }
}

// Half a warp shuffles with the whole warp while the other half waits at
// __syncwarp of the whole warp: CUDA leaves that undefined, and the
// emulator does not pair them up but reports the deadlock with each mask.
const EmulatedKernel kMismatched{"mismatched_warp_operations", R"(
extern "C" __global__ void mismatched_warp_operations(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_sync(0xffffffffu, v, 0); else __syncwarp(0xffffffffu);
  out[threadIdx.x] = v;
}
)",
                                 {"int*"}};

TEST(SimtEmulator, DifferentWarpOperationsDoNotMeet) {
  std::vector<int> out(32, -1);
  try {
    kMismatched.Run({Ptr(out.data())}, {1, 1, 1, 32, 1, 1});
    FAIL() << "a shuffle met a __syncwarp";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock in kernel 'mismatched_warp_operations'"), std::string::npos) << what;
    EXPECT_NE(what.find("threads 0-15 wait at a warp shuffle (__shfl*_sync) of 0xffffffff; "
                        "threads 16-31 wait at __syncwarp(0xffffffff)"),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(out[0], -1);
}

// A module that runs fewer threads than its launch asked (as one that
// misreads its thread-local blockDim would) fails the launch.
TEST(SimtEmulator, ALaunchThatRanFewerThreadsIsAnError) {
  const std::string source = R"(
extern "C" __global__ void fill(int* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1; }
)";
  std::string entry = SimtEmulatorEntry("fill", {"int*"});
  const std::string call = "sparsetir_emulate_blocks(sparsetir_launch, sparsetir_grid, sparsetir_block,";
  ASSERT_NE(entry.find(call), std::string::npos);
  entry.replace(entry.find(call), call.size(),
                "sparsetir_emulate_blocks(sparsetir_launch, sparsetir_grid, "
                "sparsetir_uint3{sparsetir_block.x - 1, sparsetir_block.y, sparsetir_block.z},");
  std::vector<int> out(64, 0);
  const std::array<int64_t, 6> dims = {2, 1, 1, 32, 1, 1};
  EmulatedCudaModule module(kSimtEmulatorHeader + source + entry, "fill", false, 1,
                            [dims](const SparsetirArg*) { return dims; });
  testing::ThreadLauncher launcher(2);
  std::vector<SparsetirArg> args = {Ptr(out.data())};
  try {
    module.Launch(args.data(), launcher.get());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'fill' ran 62 of its launch's 64 threads"), std::string::npos)
        << e.what();
  }
}

TEST(SimtEmulator, OversizedBlockIsRefused) {
  int out = 0;
  try {
    kRacy.Run({Ptr(&out)}, {1, 1, 1, 2048, 1, 1});
    FAIL() << "a block of 2048 threads ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks of 2048 threads; CUDA allows at most 1024"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sparsetir
