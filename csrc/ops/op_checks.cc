#include <algorithm>
#include "op_checks.h"

#include <sstream>

namespace sparsetir::ops {
namespace {

bool IsIndexDtype(at::ScalarType t) { return t == at::kInt || t == at::kLong; }

// CPU tensors, or CUDA tensors for the operators that have CUDA kernels
// (registered for the CUDA key; any other device never reaches them).
void CheckCpu(const std::string& op, const char* name, const at::Tensor& t) {
  TORCH_CHECK_VALUE(t.device().is_cpu() || t.is_cuda(), op, ": argument '", name, "' is on ", t.device(),
                    "; the operators run on CPU and CUDA tensors");
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, op, ": argument '", name,
                    "' must be a dense (strided) tensor, got layout ", t.layout(),
                    "; pass a sparse matrix's component tensors (or use the sparsetir_torch wrappers)");
}

}  // namespace

std::string ShapeString(at::IntArrayRef shape) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << (shape.size() == 1 ? ",)" : ")");
  return s.str();
}

CheckedCsr CheckCsr(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices, int64_t columns,
                    const std::string& columns_name) {
  CheckCpu(op, "indptr", indptr);
  CheckCpu(op, "indices", indices);
  CheckSameDevice(op, "indices", indices, indptr, "indptr");
  TORCH_CHECK_VALUE(IsIndexDtype(indptr.scalar_type()), op, ": argument 'indptr' must have dtype int32 or int64, got ",
                    indptr.scalar_type());
  TORCH_CHECK_VALUE(indices.scalar_type() == indptr.scalar_type(), op,
                    ": arguments 'indptr' and 'indices' must have the same dtype, got ", indptr.scalar_type(), " and ",
                    indices.scalar_type());
  TORCH_CHECK_VALUE(indptr.dim() == 1 && indptr.numel() >= 1, op,
                    ": argument 'indptr' must be 1-D with at least one element (rows + 1), got shape ",
                    ShapeString(indptr.sizes()));
  TORCH_CHECK_VALUE(indices.dim() == 1, op, ": argument 'indices' must be 1-D, got shape ",
                    ShapeString(indices.sizes()));
  CheckedCsr csr{indptr.contiguous(), indices.contiguous(), nullptr};
  csr.info = ValidatedGraph(op, csr.indptr, csr.indices);
  TORCH_CHECK_VALUE(csr.info->summary().max_index < columns, op, ": argument 'indices' holds column ",
                    csr.info->summary().max_index, ", out of range for ", columns, " columns (", columns_name, ")");
  return csr;
}

at::Tensor CheckIndexTensor(const std::string& op, const char* name, const at::Tensor& t) {
  CheckCpu(op, name, t);
  TORCH_CHECK_VALUE(IsIndexDtype(t.scalar_type()), op, ": argument '", name, "' must have dtype int32 or int64, got ",
                    t.scalar_type());
  TORCH_CHECK_VALUE(t.dim() == 1, op, ": argument '", name, "' must be 1-D, got shape ", ShapeString(t.sizes()));
  return t.contiguous();
}

at::Tensor CheckFloat(const std::string& op, const char* name, const at::Tensor& t, int64_t dim) {
  CheckCpu(op, name, t);
  auto type = t.scalar_type();
  TORCH_CHECK_VALUE(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16, op,
                    ": argument '", name, "' must have a floating dtype (float32, float64, float16 or bfloat16), got ",
                    type);
  TORCH_CHECK_VALUE(dim < 0 || t.dim() == dim, op, ": argument '", name, "' must be ", dim, "-D, got shape ",
                    ShapeString(t.sizes()));
  return t.contiguous();
}

void CheckSameDtype(const std::string& op, const char* name, const at::Tensor& t, at::ScalarType dtype,
                    const char* like_name) {
  TORCH_CHECK_VALUE(t.scalar_type() == dtype, op, ": argument '", name, "' must have the dtype of '", like_name,
                    "' (", dtype, "), got ", t.scalar_type());
}

void CheckSameDevice(const std::string& op, const char* name, const at::Tensor& t, const at::Tensor& like,
                     const char* like_name) {
  TORCH_CHECK_VALUE(t.device() == like.device(), op, ": argument '", name, "' is on ", t.device(), " but '",
                    like_name, "' is on ", like.device(), "; all tensors must be on one device");
}

// A derived format holds `rows * width` slots: refuse sizes whose product
// overflows or that no machine could allocate, naming the argument, instead
// of failing inside the conversion (std::bad_alloc, or a wrapped size).
void CheckSlotCount(const std::string& op, const char* arg, int64_t rows, int64_t width) {
  constexpr int64_t kMaxSlots = int64_t{1} << 40;
  int64_t slots = 0;
  TORCH_CHECK_VALUE(!__builtin_mul_overflow(std::max<int64_t>(rows, 1), width, &slots) && slots <= kMaxSlots, op,
                    ": argument '", arg, "' = ", width, " would make ", std::max<int64_t>(rows, 1), " x ", width,
                    " slots, more than the 2^40 a format may hold");
}

}  // namespace sparsetir::ops
