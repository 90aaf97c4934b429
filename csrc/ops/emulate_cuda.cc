#include "emulate_cuda.h"

#include <c10/util/Exception.h>

#include "codegen/simt_emulator.h"
#include "launcher.h"
#include "runtime/emulated_cuda_module.h"
#include "race_checked_tensors.h"
#include "runtime/simt_scheduler.h"

namespace sparsetir::ops {
namespace {

constexpr const char* kOp = "st.emulate_cuda";

// The C type a kernel parameter takes a tensor of `dtype` as.
std::string PointerType(at::ScalarType dtype, size_t position) {
  switch (dtype) {
    case at::kFloat: return "float*";
    case at::kDouble: return "double*";
    case at::kInt: return "int*";
    case at::kLong: return "long long*";
    case at::kShort: return "short*";
    case at::kChar: return "signed char*";
    case at::kByte: return "unsigned char*";
    case at::kUInt16: return "unsigned short*";
    case at::kUInt32: return "unsigned int*";
    case at::kUInt64: return "unsigned long long*";
    case at::kBool: return "bool*";
    case at::kHalf:
    case at::kBFloat16: return "unsigned short*";  // the bits; the kernel converts
    default: break;
  }
  TORCH_CHECK_VALUE(false, kOp, ": argument ", position, " has dtype ", dtype, ", which has no C type here");
  return "";
}

void CheckDims(const char* what, const std::array<int64_t, 3>& dims) {
  for (int64_t d : dims) {
    TORCH_CHECK_VALUE(d >= 1 && d <= INT32_MAX, kOp, ": every dimension of '", what, "' must be from 1 to 2^31 - 1, got (",
                      dims[0], ", ", dims[1], ", ", dims[2], ")");
  }
}

}  // namespace

void EmulateCuda(const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
                 const std::array<int64_t, 3>& block, const std::vector<EmulatedArg>& args,
                 int64_t dynamic_shared_bytes) {
  CheckDims("grid", grid);
  CheckDims("block", block);
  TORCH_CHECK_VALUE(block[0] * block[1] * block[2] <= 1024, kOp, ": a block has at most 1024 threads, got ",
                    block[0] * block[1] * block[2]);
  TORCH_CHECK_VALUE(dynamic_shared_bytes >= 0, kOp, ": argument 'shared_bytes' must be non-negative, got ",
                    dynamic_shared_bytes);
  TORCH_CHECK_VALUE(!kernel.empty() && source.find(kernel) != std::string::npos, kOp, ": the source defines no '",
                    kernel, "'");
  std::vector<std::string> types;
  std::vector<SparsetirArg> packed;
  std::vector<at::Tensor> tensors(args.size());
  std::vector<std::string> names;
  for (size_t i = 0; i < args.size(); ++i) {
    names.push_back("argument " + std::to_string(i));
    SparsetirArg a;
    const EmulatedArg& arg = args[i];
    if (arg.kind == EmulatedArg::Kind::kTensor) {
      const at::Tensor& t = arg.tensor;
      TORCH_CHECK_VALUE(t.device().is_cpu(), kOp, ": argument ", i, " is on ", t.device(),
                        "; the emulator runs on CPU tensors");
      TORCH_CHECK_VALUE(t.is_contiguous(), kOp, ": argument ", i, " must be contiguous");
      types.push_back(PointerType(t.scalar_type(), i));
      a.ptr = t.data_ptr();
      tensors[i] = t;
    } else if (arg.kind == EmulatedArg::Kind::kFloat) {
      types.push_back("double");
      a.f64 = arg.float_value;
    } else {
      types.push_back("long long");
      a.i64 = arg.int_value;
    }
    packed.push_back(a);
  }
  const std::array<int64_t, 6> dims = {grid[0], grid[1], grid[2], block[0], block[1], block[2]};
  EmulatedCudaModule module(kSimtEmulatorHeader + "\n#line 1 \"kernel.cu\"\n" + EmulatorSourceFromCuda(source) + "\n" +
                                SimtEmulatorEntry(kernel, types),
                            kernel, KernelSynchronizes(source), packed.size(),
                            [dims](const SparsetirArg*) { return dims; }, static_cast<size_t>(dynamic_shared_bytes));
  SparsetirLauncher launcher = TorchLauncher();
  if (SimtRaceCheckRequested()) {
    RunRaceCheckedOnTensors(kernel, tensors, names, [&] { module.Launch(packed.data(), &launcher); });
  } else {
    module.Launch(packed.data(), &launcher);
  }
}

}  // namespace sparsetir::ops
