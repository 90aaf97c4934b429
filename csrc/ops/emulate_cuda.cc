#include "emulate_cuda.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "codegen/cuda_kernel_params.h"
#include "codegen/nvrtc_macro_options.h"
#include "codegen/simt_emulator.h"
#include "cuda_param_values.h"
#include "launch_shape.h"
#include "launcher.h"
#include "runtime/emulated_cuda_module.h"
#include "race_checked_tensors.h"
#include "runtime/simt_scheduler.h"
#include "support/error.h"

namespace sparsetir::ops {
namespace {

constexpr const char* kOp = "st.emulate_cuda";

// The C type a kernel parameter takes a tensor of `dtype` as. 16-bit (8-bit)
// floats are their CUDA types where the source includes cuda_fp16.h /
// cuda_bf16.h (cuda_fp8.h), else their bits; either accepts a parameter of
// the bits.
std::string PointerType(at::ScalarType dtype, size_t position, const EmulatorLibraries& libraries) {
  const bool float16_types = libraries.float16_types, float8_types = libraries.float8_types;
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
    case at::kHalf: return float16_types ? "__half*" : "unsigned short*";
    case at::kBFloat16: return float16_types ? "__nv_bfloat16*" : "unsigned short*";
    case at::kFloat8_e4m3fn: return float8_types ? "__nv_fp8_e4m3*" : "unsigned char*";
    case at::kFloat8_e5m2: return float8_types ? "__nv_fp8_e5m2*" : "unsigned char*";
    default: break;
  }
  TORCH_CHECK_VALUE(false, kOp, ": argument ", position, " has dtype ", dtype, ", which has no C type here");
  return "";
}

// NVRTC's macro options as the lines that define them before the source:
// -DNAME (as 1), -DNAME=VALUE, -UNAME and their long forms. Options that
// change nothing the emulator computes (line info, the language standard,
// which NVRTC and the host compiler both take as C++17) are accepted, so that
// st.launch_cuda's option list runs here unchanged; any other is refused by
// name rather than silently ignored.
std::string MacroLines(const std::vector<std::string>& options) {
  static const std::set<std::string> harmless = {"-lineinfo", "--generate-line-info", "-std=c++17", "--std=c++17",
                                                 "-default-device", "--device-as-default-execution-space"};
  std::string lines;
  for (const std::string& option : options) {
    if (harmless.count(option)) continue;
    std::optional<MacroOption> macro;
    try {
      macro = ParseMacroOption(option);
    } catch (const UserError& e) {
      TORCH_CHECK_VALUE(false, kOp, ": ", e.what());
    }
    TORCH_CHECK_VALUE(macro.has_value(), kOp, ": the option '", option,
                      "' has no meaning under the emulator (it takes -D, -U, -lineinfo and -std=c++17)");
    lines += macro->define ? "#define " + macro->name + " " + macro->value + "\n" : "#undef " + macro->name + "\n";
  }
  return lines;
}

// The module of `kernel` in `source` for arguments of these kinds and
// dtypes: made once per process, so that a call neither rewrites nor hashes
// the emulated source again (some 30 kilobytes, 80 with the 16-bit float
// library). The launch dimensions are read after the kernel's arguments.
std::shared_ptr<const EmulatedCudaModule> ModuleFor(const std::string& source, const std::string& kernel,
                                                    const std::vector<HandWrittenArg>& args, size_t shared_bytes,
                                                    const std::string& macros) {
  std::string key = kernel + '\n' + std::to_string(shared_bytes) + '\n' + macros;
  for (const HandWrittenArg& arg : args) {
    switch (arg.kind) {
      case HandWrittenArg::Kind::kTensor: key += c10::toString(arg.tensor.scalar_type()); break;
      case HandWrittenArg::Kind::kFloat: key += "double"; break;
      case HandWrittenArg::Kind::kAggregate: key += "struct"; break;
      default: key += "int"; break;
    }
    key += ',';
  }
  key += '\n' + source;
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const EmulatedCudaModule>> modules;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = modules.find(key); it != modules.end()) return it->second;
  const EmulatorLibraries libraries = EmulatorLibrariesFor(source);
  std::vector<std::string> types;
  for (size_t i = 0; i < args.size(); ++i) {
    const HandWrittenArg& arg = args[i];
    if (arg.kind == HandWrittenArg::Kind::kTensor) {
      types.push_back(PointerType(arg.tensor.scalar_type(), i, libraries));
    } else if (arg.kind == HandWrittenArg::Kind::kAggregate) {
      types.push_back(kSimtStructArg);
    } else {
      types.push_back(arg.kind == HandWrittenArg::Kind::kFloat ? "double" : "long long");
    }
  }
  const std::string emulated = kSimtEmulatorHeader + libraries.text + macros + "\n#line 1 \"kernel.cu\"\n" +
                               EmulatorSourceFromCuda(source) + "\n" + SimtEmulatorEntry(kernel, types);
  const size_t params = args.size();
  auto dims = [params](const SparsetirArg* a) {
    return std::array<int64_t, 6>{a[params].i64,     a[params + 1].i64, a[params + 2].i64,
                                  a[params + 3].i64, a[params + 4].i64, a[params + 5].i64};
  };
  // Editing a kernel over and over makes a module per version; they are
  // dropped all at once now and then rather than kept forever.
  if (modules.size() >= 256) modules.clear();
  auto module = std::make_shared<const EmulatedCudaModule>(emulated, kernel, KernelSynchronizes(source), params, dims,
                                                           shared_bytes);
  modules.emplace(std::move(key), module);
  return module;
}

// The kernel's parameters as read from its source, once per process for
// each source, kernel and options (a call would otherwise read it again).
std::shared_ptr<const std::vector<CudaKernelParam>> ParamsOf(const std::string& source, const std::string& kernel,
                                                             const std::vector<std::string>& options) {
  std::string key = kernel + '\n';
  for (const std::string& option : options) key += option + '\n';
  key += source;
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const std::vector<CudaKernelParam>>> read;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = read.find(key); it != read.end()) return it->second;
  auto params = std::make_shared<const std::vector<CudaKernelParam>>(CudaKernelParams(source, kernel, options));
  if (read.size() >= 256) read.clear();  // as ModuleFor's modules
  read.emplace(std::move(key), params);
  return params;
}

// Checks the arguments against the kernel's parameters where its declaration
// can be read, as st.CudaKernel and st.launch_cuda do: the count, and ints and
// floats (an int the parameter cannot hold, 2^31 for an `int`, or a float for
// an integer is an error, not a value C++ would wrap or truncate). Returns the
// bytes of each struct or vector argument (a tuple, list or dict) as its
// parameter lays them out, behind their count (which the emulated entry
// checks against the parameter's size); empty for the other arguments. A
// declaration the reader cannot read leaves ints and floats to C++, and is an
// error only for a struct argument, which needs its layout.
std::vector<std::vector<unsigned char>> CheckedArgs(const std::string& source, const std::string& kernel,
                                                    const std::vector<HandWrittenArg>& args,
                                                    const std::vector<std::string>& options) {
  std::vector<std::vector<unsigned char>> out(args.size());
  std::shared_ptr<const std::vector<CudaKernelParam>> read;
  try {
    read = ParamsOf(source, kernel, options);
  } catch (const UserError& e) {
    for (size_t i = 0; i < args.size(); ++i) {
      TORCH_CHECK_VALUE(args[i].kind != HandWrittenArg::Kind::kAggregate, kOp, ": argument ", i,
                        " is a tuple, list or dict (a struct's fields), but ", e.what());
    }
    return out;
  }
  TORCH_CHECK_VALUE(read->size() == args.size(), kOp, ": kernel '", kernel, "' takes ", read->size(),
                    " parameters, got ", args.size(), " arguments");
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind == HandWrittenArg::Kind::kTensor) continue;  // taken as the emulator takes pointers
    const CudaParamValue value = CudaParamValueOf(kOp, kernel, (*read)[i], i, args[i]);
    if (args[i].kind != HandWrittenArg::Kind::kAggregate) continue;
    const uint64_t bytes = value.bytes.size();
    out[i].resize(sizeof(bytes) + bytes);
    std::memcpy(out[i].data(), &bytes, sizeof(bytes));
    std::memcpy(out[i].data() + sizeof(bytes), value.bytes.data(), bytes);
  }
  return out;
}

}  // namespace

void EmulateCuda(const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
                 const std::array<int64_t, 3>& block, const std::vector<HandWrittenArg>& args,
                 int64_t dynamic_shared_bytes, const std::vector<std::string>& options) {
  CheckLaunchShape(kOp, grid, block);
  TORCH_CHECK_VALUE(dynamic_shared_bytes >= 0, kOp, ": argument 'shared_bytes' must be non-negative, got ",
                    dynamic_shared_bytes);
  CudaKernelName name;
  try {
    name = ParseCudaKernelName(kernel);
  } catch (const UserError& e) {
    TORCH_CHECK_VALUE(false, kOp, ": ", e.what());
  }
  TORCH_CHECK_VALUE(source.find(name.name) != std::string::npos, kOp, ": the source defines no '", name.name, "'");
  // Every tensor, those in a struct's fields too: on the CPU, contiguous,
  // and restored between the race check's runs.
  std::vector<at::Tensor> tensors;
  std::vector<std::string> names;
  ForEachTensor(args, [&](const at::Tensor& t, const std::string& where) {
    TORCH_CHECK_VALUE(t.device().is_cpu(), kOp, ": ", where, " is on ", t.device(),
                      "; the emulator runs on CPU tensors");
    TORCH_CHECK_VALUE(t.is_contiguous(), kOp, ": ", where, " must be contiguous");
    tensors.push_back(t);
    names.push_back(where);
  });
  const std::vector<std::vector<unsigned char>> structs = CheckedArgs(source, kernel, args, options);
  std::vector<SparsetirArg> packed;
  for (size_t i = 0; i < args.size(); ++i) {
    SparsetirArg a;
    const HandWrittenArg& arg = args[i];
    if (arg.kind == HandWrittenArg::Kind::kTensor) {
      a.ptr = arg.tensor.data_ptr();
    } else if (arg.kind == HandWrittenArg::Kind::kAggregate) {
      a.ptr = const_cast<unsigned char*>(structs[i].data());
    } else if (arg.kind == HandWrittenArg::Kind::kFloat) {
      a.f64 = arg.float_value;
    } else {
      a.i64 = arg.int_value;
    }
    packed.push_back(a);
  }
  const std::shared_ptr<const EmulatedCudaModule> module =
      ModuleFor(source, kernel, args, static_cast<size_t>(dynamic_shared_bytes), MacroLines(options));
  // The launch dimensions follow the kernel's arguments (ModuleFor's LaunchDims).
  for (int64_t d : {grid[0], grid[1], grid[2], block[0], block[1], block[2]}) {
    SparsetirArg dim;
    dim.i64 = d;
    packed.push_back(dim);
  }
  SparsetirLauncher launcher = TorchLauncher();
  if (SimtRaceCheckRequested()) {
    RunRaceCheckedOnTensors(kernel, tensors, names, [&] { module->Launch(packed.data(), &launcher); });
  } else {
    module->Launch(packed.data(), &launcher);
  }
}

}  // namespace sparsetir::ops
