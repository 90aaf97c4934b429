// NVRTC and the CUDA driver, both opened by dlopen (runtime/nvrtc.h,
// runtime/cuda_driver.h). NVRTC needs no GPU, so its tests run wherever the
// nvidia wheels (or a CUDA toolkit) are installed; the driver tests launch a
// kernel only where a GPU is present and otherwise check that the absence is
// reported, never thrown.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "runtime/cache_trust.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_cache.h"
#include "runtime/nvrtc.h"
#include "support/error.h"
#include "support/process.h"

namespace sparsetir {
namespace {

const char* kAxpy =
    "extern \"C\" __global__ void axpy(float a, const float* x, float* y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] += a * x[i];\n"
    "}\n";

// The lib folders of the nvidia wheels beside this machine's python3
// (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib, ...), colon-separated: what the
// Python package puts in $SPARSETIR_NVRTC_DIRS. "" when there are none.
std::string NvidiaWheelLibDirs() {
  const std::string python = FindProgram("python3");
  if (python.empty()) return "";
  const char* script =
      "import os, nvidia\n"
      "dirs = [os.path.join(p, s, 'lib') for p in nvidia.__path__ for s in ('cu13', 'cuda_nvrtc', 'cu12')]\n"
      "print(':'.join(d for d in dirs if os.path.isdir(d)))\n";
  ProcessResult r = RunProcess({python, "-c", script});
  if (r.exit_code != 0) return "";
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.substr(out.find_last_of('\n') + 1);  // the last line: python may warn first
}

// The process-wide NVRTC, after pointing $SPARSETIR_NVRTC_DIRS at the wheels
// (unless the caller set it); nullptr with the reason when it is not found.
const Nvrtc* LoadNvrtc(std::string* why) {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("SPARSETIR_NVRTC_DIRS")) {
      const std::string dirs = NvidiaWheelLibDirs();
      if (!dirs.empty()) setenv("SPARSETIR_NVRTC_DIRS", dirs.c_str(), /*overwrite=*/0);
    }
  });
  try {
    return &Nvrtc::Get();
  } catch (const UserError& e) {
    *why = e.what();
    return nullptr;
  }
}

#define NVRTC_OR_SKIP(var)                   \
  std::string why_##var;                     \
  const Nvrtc* var = LoadNvrtc(&why_##var);  \
  if (!var) GTEST_SKIP() << why_##var

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(Nvrtc, LoadsAndReportsVersionAndArchs) {
  NVRTC_OR_SKIP(nvrtc);
  EXPECT_FALSE(nvrtc->path().empty());
  EXPECT_GE(nvrtc->version().first, 12) << nvrtc->path();
  EXPECT_TRUE(Contains(nvrtc->supported_archs(), 80));
  EXPECT_TRUE(Contains(nvrtc->supported_archs(), 90));
  EXPECT_TRUE(std::is_sorted(nvrtc->supported_archs().begin(), nvrtc->supported_archs().end()));
}

TEST(Nvrtc, CompilesCubinForSm80AndSm90) {
  NVRTC_OR_SKIP(nvrtc);
  for (int arch : {80, 90}) {
    NvrtcResult r = nvrtc->Compile(kAxpy, "axpy.cu", arch, /*want_cubin=*/true, {});
    ASSERT_GT(r.cubin.size(), 4u) << "sm_" << arch;
    EXPECT_EQ(r.cubin.substr(0, 4), "\x7f" "ELF") << "a CUBIN is an ELF image";
    // The PTX NVRTC assembled comes along (cuda_check hands it to ptxas).
    EXPECT_NE(r.ptx.find(".entry axpy"), std::string::npos) << "sm_" << arch;
    EXPECT_NE(r.ptx.find(".target sm_" + std::to_string(arch)), std::string::npos) << r.ptx;
    EXPECT_EQ(r.ptx.find('\0'), std::string::npos) << "the terminating NUL is dropped";
    EXPECT_GT(r.compile_ms, 0);
  }
}

const char* kScale =
    "template <typename T, int kTimes = 2>\n"
    "__global__ void scale(T* y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] *= (T)kTimes;\n"
    "}\n";

// A template kernel's instances by their name expressions: each gets the
// mangled name it has in the output, which the PTX's .entry carries.
TEST(Nvrtc, NamesTheInstancesOfATemplateKernel) {
  NVRTC_OR_SKIP(nvrtc);
  NvrtcResult r =
      nvrtc->Compile(kScale, "scale.cu", 80, /*want_cubin=*/false, {}, {"scale<float>", "scale<double, 3>"});
  ASSERT_EQ(r.lowered_names.size(), 2u);
  EXPECT_NE(r.lowered_names[0], r.lowered_names[1]);
  for (const std::string& lowered : r.lowered_names) {
    EXPECT_EQ(lowered.rfind("_Z", 0), 0u) << lowered;
    EXPECT_NE(r.ptx.find(".entry " + lowered), std::string::npos) << lowered;
  }
  EXPECT_THROW(nvrtc->Compile(kScale, "scale.cu", 80, false, {}, {"scale<float, int>"}), UserError);
}

// The instance's name is cached with its image: a disk hit knows it too.
TEST(KernelCache, KeepsATemplateInstancesNameWithItsImage) {
  NVRTC_OR_SKIP(nvrtc);
  const CudaImage built = GetOrBuildCudaImage(kScale, 80, {}, "scale<float, 5>");
  ASSERT_GT(built.image.size(), 4u);
  EXPECT_EQ(built.image.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(built.lowered_name.rfind("_Z5scale", 0), 0u) << built.lowered_name;
  ClearMemoryCache();
  const CudaImage read = GetOrBuildCudaImage(kScale, 80, {}, "scale<float, 5>");
  EXPECT_EQ(read.image, built.image);
  EXPECT_EQ(read.lowered_name, built.lowered_name);
  EXPECT_NE(GetOrBuildCudaImage(kScale, 80, {}, "scale<int>").lowered_name, built.lowered_name);
  // A plain kernel's image carries no name line.
  EXPECT_EQ(GetOrBuildCudaImage(kAxpy, 80, {}).substr(0, 4), "\x7f" "ELF");
}

TEST(Nvrtc, CompilesPtxForCompute80) {
  NVRTC_OR_SKIP(nvrtc);
  NvrtcResult r = nvrtc->Compile(kAxpy, "axpy.cu", 80, /*want_cubin=*/false, {});
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_NE(r.ptx.find(".entry axpy"), std::string::npos) << r.ptx;
  EXPECT_NE(r.ptx.find(".target sm_80"), std::string::npos) << r.ptx;
  EXPECT_EQ(r.ptx.find('\0'), std::string::npos) << "the terminating NUL is dropped";
}

TEST(Nvrtc, CubinForAnUnlistedArchFallsBackToPtx) {
  NVRTC_OR_SKIP(nvrtc);
  const int newest = nvrtc->supported_archs().back();
  NvrtcResult r = nvrtc->Compile(kAxpy, "axpy.cu", newest + 1, /*want_cubin=*/true, {});
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_NE(r.ptx.find(".target sm_" + std::to_string(newest)), std::string::npos);
  // Below every listed architecture there is nothing to fall back to.
  EXPECT_THROW(nvrtc->Compile(kAxpy, "axpy.cu", 10, /*want_cubin=*/true, {}), UserError);
}

// The machine's ptxas (a CUDA toolkit's) accepts NVRTC's PTX and reports the
// kernel's resources: the offline check the design relies on.
TEST(Nvrtc, PtxasAcceptsThePtx) {
  NVRTC_OR_SKIP(nvrtc);
  const std::string ptxas = FindProgram("ptxas");
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas in $PATH";
  NvrtcResult r = nvrtc->Compile(kAxpy, "axpy.cu", 80, /*want_cubin=*/false, {});
  const std::string dir = MakePrivateTemporaryDirectory();
  WritePrivateFile(dir + "/axpy.ptx", r.ptx);
  ProcessResult p = RunProcess({ptxas, "-arch=sm_90", "-v", dir + "/axpy.ptx", "-o", dir + "/axpy.cubin"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("registers"), std::string::npos) << p.output;
}

TEST(Nvrtc, SyntaxErrorThrowsWithTheLog) {
  NVRTC_OR_SKIP(nvrtc);
  const std::string bad = "extern \"C\" __global__ void broken(float* y) { y[0] = ; }\n";
  try {
    nvrtc->Compile(bad, "broken.cu", 80, /*want_cubin=*/true, {});
    FAIL() << "a syntax error compiled";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), UserErrorKind::kCompile);
    EXPECT_NE(what.find("broken.cu"), std::string::npos) << what;
    EXPECT_NE(what.find("error"), std::string::npos) << what;
    EXPECT_NE(what.find("expected an expression"), std::string::npos) << "NVRTC's own log line: " << what;
  }
}

TEST(CudaDriver, AvailableNeverThrows) {
  std::string why;
  bool available = false;
  EXPECT_NO_THROW(available = CudaDriver::Available(&why));
  if (!available) {
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(CudaDriver::Get(), UserError);  // Get() says why, as a UserError
  } else {
    EXPECT_GT(CudaDriver::Get().device_count(), 0);
    EXPECT_GE(CudaDriver::Get().driver_version().first, 12);
  }
}

// Compiles axpy for device 0, runs it on the legacy default stream and checks
// the numbers; loads both a CUBIN and a PTX image (which the driver compiles).
TEST(CudaDriver, RunsAxpy) {
  std::string why;
  if (!CudaDriver::Available(&why)) GTEST_SKIP() << why;
  NVRTC_OR_SKIP(nvrtc);
  CudaDriver& driver = CudaDriver::Get();
  driver.MakeCurrent(0);
  const auto cc = driver.compute_capability(0);
  const int arch = cc.first * 10 + cc.second;

  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f * i - 7;
    y[i] = 3.0f - i;
  }
  const size_t bytes = n * sizeof(float);
  for (bool cubin : {true, false}) {
    SCOPED_TRACE(cubin ? "CUBIN" : "PTX");
    NvrtcResult r = nvrtc->Compile(kAxpy, "axpy.cu", arch, cubin, {});
    std::shared_ptr<CudaModule> module = CudaModule::Load(r.cubin.empty() ? r.ptx : r.cubin);
    CUfunction f = module->Function("axpy");
    EXPECT_GT(driver.registers(f), 0);
    EXPECT_GE(driver.max_threads_per_block(f), 256);
    EXPECT_THROW(module->Function("no_such_kernel"), UserError);

    CUdeviceptr dx = driver.Allocate(bytes), dy = driver.Allocate(bytes);
    driver.CopyToDevice(dx, x.data(), bytes);
    driver.CopyToDevice(dy, y.data(), bytes);
    float a = 2.5f;
    int count = n;
    void* params[] = {&a, &dx, &dy, &count};
    driver.Launch(f, {(n + 255) / 256, 1, 1}, {256, 1, 1}, 0, nullptr, params);
    driver.Synchronize(nullptr);
    std::vector<float> out(n);
    driver.CopyToHost(out.data(), dy, bytes);
    driver.Free(dx);
    driver.Free(dy);
    for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(out[i], y[i] + a * x[i]) << "i = " << i;
  }
  // A block larger than the device allows fails with the driver's error name.
  NvrtcResult r = nvrtc->Compile(kAxpy, "axpy.cu", arch, true, {});
  std::shared_ptr<CudaModule> module = CudaModule::Load(r.cubin.empty() ? r.ptx : r.cubin);
  float a = 1;
  int count = 0;
  CUdeviceptr null = 0;
  void* params[] = {&a, &null, &null, &count};
  try {
    driver.Launch(module->Function("axpy"), {1, 1, 1}, {4096, 1, 1}, 0, nullptr, params);
    FAIL() << "a 4096-thread block launched";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsetir
