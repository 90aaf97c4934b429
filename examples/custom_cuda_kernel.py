"""Debugging a hand-written CUDA kernel without a GPU: a CSR SpMM over float16
features (one warp a row, __half2 pairs, cooperative-groups tiles, the row's
non-zeros staged in shared memory) run on CPU tensors under the SIMT
emulator, checked against torch.sparse, then run again in the race-check
mode. With --plant-race the warp skips the barrier between staging and
reading, and the race check names the kernel and the buffer that came out
different. The kernel is one st.CudaKernel: where there is a GPU, the same
object runs the source there with the same arguments on CUDA tensors.

    python3 examples/custom_cuda_kernel.py --graph email-Enron --max-nodes 2000
"""
import argparse
import os

import torch

import sparsetir_torch as st
from _data import load_graph

SOURCE = r'''
#include <cuda_fp16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

constexpr int kWarps = 4;  // a block's warps: a row each

// Y = A X: A in CSR, X and Y float16 with `pairs` feature pairs a row (at
// most 32: one pair a lane), sums in float.
extern "C" __global__ void csr_spmm_half(const int* indptr, const int* indices, const float* values,
                                         const __half2* x, __half2* y, int rows, int pairs, int plant_race) {
  __shared__ int columns[kWarps][32];
  __shared__ float weights[kWarps][32];
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const int w = warp.meta_group_rank(), lane = warp.thread_rank();
  const int row = blockIdx.x * kWarps + w;
  if (row >= rows) return;
  const int end = indptr[row + 1];
  float2 sum = make_float2(0.0f, 0.0f);
  for (int start = indptr[row]; start < end; start += 32) {
    // The warp stages up to 32 non-zeros, a lane each ...
    if (start + lane < end) {
      columns[w][lane] = indices[start + lane];
      weights[w][lane] = values[start + lane];
    }
    // ... and every lane reads all of them: the others' writes must be done.
    if (!plant_race) warp.sync();
    const int count = min(32, end - start);
    for (int j = 0; lane < pairs && j < count; ++j) {
      const float2 v = __half22float2(x[columns[w][j] * pairs + lane]);
      sum.x += weights[w][j] * v.x;
      sum.y += weights[w][j] * v.y;
    }
    warp.sync();  // every lane has read the stage before the next chunk overwrites it
  }
  if (lane < pairs) y[row * pairs + lane] = __floats2half2_rn(sum.x, sum.y);
}
'''
WARPS = 4

# Read once: its parameters' types, against which every call's arguments are
# converted (an int a parameter cannot hold fails on either device).
KERNEL = st.CudaKernel(SOURCE, "csr_spmm_half")


def csr(edge_index: torch.Tensor, values: torch.Tensor, n: int):
    """(indptr, indices, values) of the n x n matrix, int32, rows sorted."""
    order = torch.argsort(edge_index[0] * n + edge_index[1])
    rows, cols = edge_index[0][order], edge_index[1][order]
    indptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(rows, minlength=n).cumsum(0)])
    return indptr.int(), cols.int(), values[order].contiguous()


def run(matrix, x: torch.Tensor, plant_race: bool) -> torch.Tensor:
    """The kernel on x's device: under the emulator for CPU tensors, on the
    GPU for CUDA tensors (the same source and arguments)."""
    indptr, indices, values = matrix
    rows, features = indptr.numel() - 1, x.shape[1]
    y = torch.zeros(rows, features, dtype=torch.float16, device=x.device)
    KERNEL((rows + WARPS - 1) // WARPS, 32 * WARPS, indptr, indices, values, x, y, rows, features // 2,
           int(plant_race))
    return y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", default="email-Enron")
    parser.add_argument("--max-nodes", type=int, default=2000)
    parser.add_argument("--features", type=int, default=64, help="even, at most 64")
    parser.add_argument("--plant-race", action="store_true", help="skip the barrier after staging")
    args = parser.parse_args()
    if args.features % 2 or not 2 <= args.features <= 64:
        raise SystemExit("--features must be even, from 2 to 64 (one pair a lane)")

    edge_index, n = load_graph(args.graph, args.max_nodes)
    g = torch.Generator().manual_seed(0)
    values = torch.rand(edge_index.shape[1], generator=g)
    matrix = csr(edge_index, values, n)  # load_graph gives each edge once
    x = torch.randn(n, args.features, generator=g).half()
    print(f"graph {args.graph}: {n} nodes, {values.numel()} non-zeros, {args.features} float16 features")

    a = torch.sparse_coo_tensor(edge_index, values.double(), (n, n), check_invariants=True)
    reference = torch.sparse.mm(a, x.double())
    y = run(matrix, x, plant_race=False)
    error = (y.double() - reference).abs().max().item()
    scale = reference.abs().max().item()
    print(f"emulated csr_spmm_half: max |error| {error:.3g} against torch.sparse in float64 (largest |y| {scale:.3g}; "
          f"float16 keeps 11 bits)")
    if error > 2.0 ** -9 * max(scale, 1.0):
        raise SystemExit("the kernel's result is wrong")

    no_gpu = st.cuda_unavailable_reason()
    if no_gpu:
        print(f"no GPU here ({no_gpu}): the same st.CudaKernel runs the source on CUDA tensors")
    else:
        on_gpu = run([t.cuda() for t in matrix], x.cuda(), plant_race=False).cpu()
        gpu_error = (on_gpu.double() - reference).abs().max().item()
        apart = (on_gpu.double() - y.double()).abs().max().item()
        print(f"csr_spmm_half on {torch.cuda.get_device_name()}: max |error| {gpu_error:.3g} against torch.sparse, "
              f"{apart:.3g} from the emulated result")
        if gpu_error > 2.0 ** -9 * max(scale, 1.0):
            raise SystemExit("the kernel's result on the GPU is wrong")

    os.environ["SPARSETIR_EMULATE_ORDER"] = "check"  # every launch in order, reversed and shuffled
    try:
        run(matrix, x, plant_race=args.plant_race)
        print("race check: the same bytes in every order")
    except RuntimeError as race:
        print(f"race check: {race}")
        if not args.plant_race:
            raise SystemExit("a race in the kernel") from race


if __name__ == "__main__":
    main()
