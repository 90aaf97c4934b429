// OnHost<Fn, Op>::Call: a structure conversion run on the host for tensors of
// another device. The index tensors are copied to the CPU, converted by the
// CPU operator Fn and the results copied back to the device of the first
// tensor argument. Conversions run once per graph (their results are cached),
// so one round trip is cheaper to keep than a device kernel per format.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace sparsetir::ops {

namespace on_host {

// The device of the first tensor; every other tensor must be on it (the CPU
// operator would accept a mix once all are copied).
inline void NoteDevice(const char* op, std::optional<at::Device>& device, const at::Tensor& t) {
  if (!device) {
    device = t.device();
  } else {
    TORCH_CHECK_VALUE(t.device() == *device, op, ": every tensor argument must be on one device, got ", *device,
                      " and ", t.device());
  }
}
template <typename T>
void NoteDevice(const char*, std::optional<at::Device>&, const T&) {}

inline at::Tensor ToCpu(const at::Tensor& t) { return t.cpu(); }
template <typename T>
const T& ToCpu(const T& v) {
  return v;
}

template <typename... Ts>
std::tuple<Ts...> ToDevice(std::tuple<Ts...> results, at::Device device) {
  std::apply([&](auto&... r) { ((r = r.to(device)), ...); }, results);
  return results;
}

}  // namespace on_host

template <auto Fn, const char* Op>
struct OnHost;

template <typename R, typename... Args, R (*Fn)(Args...), const char* Op>
struct OnHost<Fn, Op> {
  static R Call(Args... args) {
    std::optional<at::Device> device;
    (on_host::NoteDevice(Op, device, args), ...);
    R results = Fn(on_host::ToCpu(args)...);
    return device ? on_host::ToDevice(std::move(results), *device) : results;
  }
};

}  // namespace sparsetir::ops
