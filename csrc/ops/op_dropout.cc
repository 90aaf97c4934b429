// torch.ops.sparsetir.dropout: each element of `input` kept with
// probability 1 - p and scaled by 1 / (1 - p), or zeroed, in one pass.
//
// Why not torch's: on the CPU it fills a tensor of the input's size with
// bernoulli_ draws one element at a time (about 13 ns each on the AMD host
// of the README's figures: 28 ms for a 36,692 x 64 hidden layer, more than
// a GraphSAGE layer's whole forward and backward), divides it by 1 - p,
// multiplies, and keeps that tensor for the backward. Here the mask comes
// from a counter-based generator (dropout_keep.h), vectorized at the
// level the kernels are built for and applied as it is drawn, and it is
// never stored: the backward is this operator again on the gradient with
// the same seed, the same mask (a dropout is linear in its input).
//
// As torch's, a dropped element is input * 0, so that a NaN or an infinity
// stays NaN rather than vanishing; float16 and bfloat16 are scaled in
// float32 and rounded once.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "target.h"
#include "dropout_keep.h"
#include "op_checks.h"
#include "ops.h"

namespace sparsetir::ops {
namespace {

constexpr char kOp[] = "sparsetir.dropout";
constexpr int64_t kGrainChunks = 8;  // chunks a thread takes at least: 32 K elements

uint64_t CheckSeed(const at::Tensor& seed) {
  TORCH_CHECK_VALUE(seed.device().is_cpu() && seed.scalar_type() == at::kLong && seed.numel() == 1, kOp,
                    ": argument 'seed' must be an int64 tensor of one element on the CPU, got a ",
                    seed.scalar_type(), " tensor of shape ", ShapeString(seed.sizes()), " on ", seed.device());
  return static_cast<uint64_t>(seed.item<int64_t>());
}

// p * 2^32, rounded: the draws below it drop their element. p < 1 here, so
// at most 2^32 - 1 (a p within 2^-33 of 1 drops all but 1 in 2^32).
uint32_t Threshold(double p) {
  const double t = std::nearbyint(std::ldexp(p, 32));
  return t >= 4294967295.0 ? std::numeric_limits<uint32_t>::max() : static_cast<uint32_t>(t);
}

// y = x * (kept ? scale : 0) over [first, first + count), count < kBlock,
// through a keep buffer: the last partial block of the tensor.
template <typename scalar_t>
void ScaleThroughKeep(const dropout::Kernels& k, const scalar_t* x, scalar_t* y, int64_t first, int64_t count,
                      uint64_t seed, uint32_t threshold, at::opmath_type<scalar_t> scale) {
  using acc_t = at::opmath_type<scalar_t>;
  alignas(64) uint8_t keep[dropout::kBlock];
  k.keep(seed, first, dropout::kBlock, threshold, keep);
  for (int64_t i = 0; i < count; ++i) {
    y[first + i] = static_cast<scalar_t>(static_cast<acc_t>(x[first + i]) * (keep[i] ? scale : acc_t(0)));
  }
}

template <typename scalar_t>
void Apply(const scalar_t* x, scalar_t* y, int64_t n, uint64_t seed, uint32_t threshold, double p) {
  using acc_t = at::opmath_type<scalar_t>;
  const acc_t scale = static_cast<acc_t>(1.0 / (1.0 - p));
  const dropout::Kernels& k = dropout::KernelsFor(Target::HostCpu().arch);
  const int64_t chunks = (n + dropout::kChunk - 1) / dropout::kChunk;
  at::parallel_for(0, chunks, kGrainChunks, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * dropout::kChunk;
      const int64_t count = std::min(dropout::kChunk, n - first);
      const int64_t whole = count / dropout::kBlock * dropout::kBlock;  // the level's vector loop scales these
      if constexpr (std::is_same_v<scalar_t, float>) {
        k.scale_float(x + first, y + first, seed, first, whole, threshold, scale);
      } else if constexpr (std::is_same_v<scalar_t, double>) {
        k.scale_double(x + first, y + first, seed, first, whole, threshold, scale);
      } else {
        const auto scale_16 = std::is_same_v<scalar_t, at::BFloat16> ? k.scale_bf16 : k.scale_half;
        scale_16(reinterpret_cast<const uint16_t*>(x + first), reinterpret_cast<uint16_t*>(y + first), seed, first,
                 whole, threshold, scale);
      }
      if (whole < count) ScaleThroughKeep(k, x, y, first + whole, count - whole, seed, threshold, scale);
    }
  });
}

}  // namespace

at::Tensor Dropout(const at::Tensor& input, double p, const at::Tensor& seed) {
  const at::Tensor x = CheckFloat(kOp, "input", input, -1);
  TORCH_CHECK_VALUE(p >= 0.0 && p <= 1.0, kOp, ": argument 'p' must be a probability in [0, 1], got ", p);
  const uint64_t s = CheckSeed(seed);
  if (p == 0.0) return x.clone(at::MemoryFormat::Contiguous);
  if (p == 1.0) return x.mul(at::zeros({}, x.options())).contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (x.numel() == 0) return y;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "sparsetir_dropout", [&] {
    Apply<scalar_t>(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), x.numel(), s, Threshold(p), p);
  });
  return y;
}

std::vector<int64_t> PhiloxWords(const std::vector<int64_t>& counter, const std::vector<int64_t>& key) {
  TORCH_CHECK_VALUE(counter.size() == 4 && key.size() == 2, "philox4x32: expected 4 counter words and 2 key words");
  uint32_t c[4], k[2], out[4];
  for (int i = 0; i < 4; ++i) c[i] = static_cast<uint32_t>(counter[i]);
  for (int i = 0; i < 2; ++i) k[i] = static_cast<uint32_t>(key[i]);
  dropout::Philox4x32(c, k, out);
  return {out[0], out[1], out[2], out[3]};
}

}  // namespace sparsetir::ops
