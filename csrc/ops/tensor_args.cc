#include "tensor_args.h"

#include <torch/csrc/autograd/python_variable.h>

namespace sparsetir::ops {

DataType FromTorch(at::ScalarType type) {
  switch (type) {
    case at::kBool: return DataType::kBool;
    case at::kInt: return DataType::kInt32;
    case at::kLong: return DataType::kInt64;
    case at::kHalf: return DataType::kFloat16;
    case at::kBFloat16: return DataType::kBFloat16;
    case at::kFloat: return DataType::kFloat32;
    case at::kDouble: return DataType::kFloat64;
    default: return DataType::kVoid;
  }
}

std::string TorchDtypeName(at::ScalarType type) {
  std::string name = c10::toString(type);  // "Float", "Long", ...
  DataType ours = FromTorch(type);
  return "a tensor of dtype " + (ours == DataType::kVoid ? name : ToString(ours));
}

KernelArg ToKernelArg(const pybind11::handle& value) {
  KernelArg arg;
  PyObject* obj = value.ptr();
  if (value.is_none()) {
    arg.kind = KernelArg::Kind::kOther;
    arg.type_name = "None";
    return arg;
  }
  if (THPVariable_Check(obj)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    arg.type_name = TorchDtypeName(t.scalar_type());
    if (t.layout() != at::kStrided) {
      arg.kind = KernelArg::Kind::kOther;
      arg.type_name = "a sparse tensor (pass its component tensors: indptr, indices, values)";
      return arg;
    }
    arg.kind = KernelArg::Kind::kTensor;
    arg.dtype = FromTorch(t.scalar_type());
    arg.shape = t.sizes().vec();
    arg.contiguous = t.is_contiguous();
    arg.device = t.device().str();
    arg.data = t.device().is_cpu() ? t.data_ptr() : nullptr;
    return arg;
  }
  if (PyBool_Check(obj)) {
    arg.kind = KernelArg::Kind::kOther;
    arg.type_name = "bool";
    return arg;
  }
  if (PyIndex_Check(obj)) {
    PyObject* index = PyNumber_Index(obj);
    if (index == nullptr) {  // e.g. a numpy array: index-like type, but not an integer
      PyErr_Clear();
      arg.kind = KernelArg::Kind::kOther;
      arg.type_name = Py_TYPE(obj)->tp_name;
      return arg;
    }
    pybind11::int_ as_int = pybind11::reinterpret_steal<pybind11::int_>(index);
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
    if (overflow) {
      arg.kind = KernelArg::Kind::kOther;
      arg.type_name = "an int that does not fit 64 bits";
      return arg;
    }
    arg.kind = KernelArg::Kind::kInt;
    arg.int_value = v;
    arg.type_name = "int";
    return arg;
  }
  arg.kind = KernelArg::Kind::kOther;
  arg.type_name = Py_TYPE(obj)->tp_name;
  return arg;
}

}  // namespace sparsetir::ops
