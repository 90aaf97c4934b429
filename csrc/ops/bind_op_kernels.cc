// Python bindings that show the built-in operators' kernels: their sources
// and schedules for any target (cuda_check, explain), and what each recipe
// chooses for a CPU level, a feature width or a graph.
#include <torch/extension.h>

#include <map>
#include <optional>

#include "codegen/codegen_cpu.h"
#include "codegen/codegen_cuda.h"
#include "csr_kernels.h"
#include "hyb_plan.h"
#include "ir/dtype.h"
#include "ir_dump.h"
#include "kernel_library.h"
#include "lower.h"
#include "op_checks.h"
#include "ops.h"
#include "python_bindings.h"
#include "recipes/cpu_recipes.h"
#include "recipes/cuda_recipes.h"
#include "support/error.h"
#include "target.h"

namespace sparsetir::ops {
namespace {

// A KernelRequest from the names Python passes.
KernelRequest OpRequest(const std::string& script, const std::string& recipe, const std::string& value_dtype,
                        const std::string& index_dtype, const std::map<std::string, int64_t>& sizes,
                        const std::string& target) {
  auto dtype = [](const std::string& name) {
    static const std::map<std::string, at::ScalarType> types = {
        {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf},
        {"bfloat16", at::kBFloat16}, {"int32", at::kInt}, {"int64", at::kLong}};
    auto found = types.find(name);
    if (found == types.end()) throw UserError(UserErrorKind::kArgument, "unknown dtype '" + name + "'");
    return found->second;
  };
  return KernelRequest{script, recipe, dtype(value_dtype), dtype(index_dtype), sizes,
      GatherPrefetch::kToL1, Target::Parse(target)};
}

// The cpu level `isa` names ("avx2", an -march alias, ...), or this CPU's
// (or $SPARSETIR_CPU_ISA's) when it is empty.
Target CpuTargetNamed(const std::string& isa) { return isa.empty() ? Target::HostCpu() : Target::Parse("cpu:" + isa); }


}  // namespace

void BindOpKernels(py::module_& m) {
  m.def("has_cuda_recipe", &HasCudaRecipe, py::arg("recipe"),
        "Whether the built-in kernel recipe `recipe` has a cuda schedule.");
  m.def(
      "op_kernel",
      [](const std::string& script, const std::string& recipe, const std::string& value_dtype,
         const std::string& index_dtype, const std::map<std::string, int64_t>& sizes, const std::string& target) {
        return GetOpKernel(OpRequest(script, recipe, value_dtype, index_dtype, sizes, target))->shared();
      },
      "The built-in operator kernel for a request (as the operators build it).");
  m.def(
      "op_kernel_source",
      [](const std::string& script, const std::string& recipe, const std::string& value_dtype,
         const std::string& index_dtype, const std::map<std::string, int64_t>& sizes, const std::string& target) {
        const KernelRequest request = OpRequest(script, recipe, value_dtype, index_dtype, sizes, target);
        IrDumpScope scope;  // numbered as the kernel library's build numbers it
        PrimFunc lowered = LowerToStageIII(ScheduledOpFunction(request));
        return request.target.is_cpu() ? CodegenCpu(lowered) : CodegenCuda(lowered).source;
      },
      "The generated source of a built-in operator kernel for any target, without compiling it.");

  m.def(
      "recipe_trace",
      [](const std::string& script, const std::string& recipe, const std::string& value_dtype,
         const std::string& index_dtype, const std::map<std::string, int64_t>& sizes, const std::string& target,
         int prefetch) {
        if (prefetch < 0 || prefetch > 2) {
          throw UserError(UserErrorKind::kArgument,
                          "recipe_trace: prefetch is 0 (none), 1 (into L1) or 2 (into L2), got " +
                              std::to_string(prefetch));
        }
        KernelRequest request = OpRequest(script, recipe, value_dtype, index_dtype, sizes, target);
        request.prefetch = static_cast<GatherPrefetch>(prefetch);
        return ScheduleOpKernel(request).TraceText();
      },
      py::arg("script"), py::arg("recipe"), py::arg("value_dtype"), py::arg("index_dtype"), py::arg("sizes"),
      py::arg("target"), py::arg("prefetch") = 1,
      "The schedule a built-in kernel's recipe applies for a request, as a replayable trace (from the stage-I "
      "script with the dtypes put in).");
  m.def(
      "put_dtypes",
      [](const std::string& text, const std::string& value_dtype, const std::string& index_dtype) {
        auto parse = [](const std::string& dtype) {
          std::optional<DataType> parsed = ParseDataType(dtype);
          if (!parsed || !IsNumeric(*parsed)) throw UserError(UserErrorKind::kArgument, "unknown dtype '" + dtype + "'");
          return *parsed;
        };
        return PutDtypes(text, parse(value_dtype), parse(index_dtype));
      },
      py::arg("text"), py::arg("value_dtype"), py::arg("index_dtype"),
      "A built-in script's text with the value and index dtypes put in for its \"float32\" and \"int32\".");

  m.def("runnable_cpu_levels", &Target::RunnableCpuLevels,
        "The CPU levels this machine executes, best first (the detected level and those below it).");
  m.def(
      "cpu_target",
      [](const std::string& isa) {
        const Target t = CpuTargetNamed(isa);
        py::dict out;
        out["target"] = t.str();
        out["isa"] = t.arch;
        out["features"] = t.features;
        out["vector_bytes"] = t.vector_bytes();
        out["vector_registers"] = t.vector_registers();
        out["compiler_flags"] = t.CompilerFlags();
        out["detected"] = Target::DetectedCpu().str();
        return out;
      },
      py::arg("isa") = "",
      "The cpu target kernels are built for (this CPU's level, or $SPARSETIR_CPU_ISA), or the level `isa`.");
  m.def("cpu_levels", &CpuLevels, "The cpu instruction-set levels the compiler knows.");
  m.def(
      "csrmm_plan",
      [](int64_t feat, int64_t element_bytes, const std::string& isa, int prefetch) {
        if (prefetch < 0 || prefetch > 2) {
          throw UserError(UserErrorKind::kArgument, "csrmm_plan: prefetch is 0 (none), 1 (into L1) or 2 (into L2), got " +
                                                        std::to_string(prefetch));
        }
        const Target t = CpuTargetNamed(isa);
        const CsrmmPlan plan = PlanCsrmm(feat, element_bytes, t, static_cast<GatherPrefetch>(prefetch));
        py::dict out;
        out["vector_lanes"] = plan.vector_lanes;
        out["unrolled_vectors"] = plan.unrolled_vectors;
        out["output_row_in_registers"] = plan.output_row_local;
        out["feature_tile"] = plan.feature_tile;
        out["accumulator_sets"] = plan.accumulator_sets;
        return out;
      },
      py::arg("feat"), py::arg("element_bytes"), py::arg("isa") = "", py::arg("prefetch") = 1,
      "What the cpu recipe chooses for an SpMM row of `feat` elements (lanes, unrolling, accumulators).");
  m.def(
      "bsrmm_plan",
      [](int64_t block_h, int64_t feat, int64_t element_bytes, const std::string& isa) {
        const Target t = CpuTargetNamed(isa);
        const BsrmmPlan plan = PlanBsrmm(block_h, feat, element_bytes, t);
        py::dict out;
        out["vector_lanes"] = plan.vector_lanes;
        out["unrolled_vectors"] = plan.unrolled_vectors;
        out["feature_tile"] = plan.feature_tile;
        out["output_tile_local"] = plan.output_tile_local;
        out["b_tile_packed"] = plan.b_tile_packed;
        return out;
      },
      py::arg("block_h"), py::arg("feat"), py::arg("element_bytes"), py::arg("isa") = "",
      "What the cpu recipe chooses for bsrmm's output rows of `feat` elements (lanes, feature tile).");
  m.def(
      "sddmm_group_lanes",
      [](int64_t feat, int64_t element_bytes, const std::string& isa) {
        return SddmmGroupLanes(feat, element_bytes, CpuTargetNamed(isa));
      },
      py::arg("feat"), py::arg("element_bytes"), py::arg("isa") = "",
      "The lanes of the cpu sddmm that computes four of a row's dot products at a time (0: it does not apply).");
  m.def(
      "vector_lanes",
      [](int64_t extent, int64_t element_bytes, const std::string& isa) {
        return VectorLanes(extent, element_bytes, CpuTargetNamed(isa));
      },
      py::arg("extent"), py::arg("element_bytes") = 4, py::arg("isa") = "",
      "The widest vector the cpu recipes split `extent` into on the target.");
  m.def(
      "hyb_plan",
      [](const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t parts, int64_t max_width) {
        const std::string op = "sparsetir.hyb_plan";
        CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
        py::list buckets;
        for (const HybBucket& b : HybPlanFor(op, csr, columns, parts, max_width)->buckets()) {
          buckets.append(py::dict(py::arg("width") = b.width, py::arg("rows") = b.rows, py::arg("mode") = b.mode));
        }
        return buckets;
      },
      "The ELL buckets _spmm_hyb runs for hyb(parts, max_width) of this structure: width, ELL rows and how its "
      "kernel writes the output (overwrite, add or atomic).");
  m.def(
      "sddmm_cpu_plan",
      [](const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat, const at::Tensor& like) {
        const SddmmCpuPlan plan = SddmmCpuPlanFor(indptr, indices, columns, feat, like.scalar_type());
        return py::dict(py::arg("prefetch") = static_cast<int64_t>(plan.prefetch),
                        py::arg("group_lanes") = plan.group_lanes);
      },
      "What sddmm's dot product runs on this structure on the cpu with operands of `feat` columns of like's dtype "
      "(y of `columns` rows): where it prefetches the gathered rows (0 not at all, 1 into L1, 2 into L2) and the "
      "lanes of the kernel that computes four of a row's dot products at a time (0: one at a time).");
  m.def("spmm_prefetch_level", &SpmmPrefetchLevel,
        "Where spmm prefetches the gathered dense rows (columns rows of row_bytes bytes) on this structure: 0 not at "
        "all, 1 into L1, 2 into L2.");
  m.def(
      "spmm_cuda_row_segment",
      [](const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat, const at::Tensor& like,
         const std::string& device) {
        return SpmmCudaRowSegment(indptr, indices, columns, feat, like.scalar_type(), c10::Device(device));
      },
      "The row segment length of spmm's cuda kernel on this structure with a dense operand of feat columns of "
      "like's dtype (0: rows whole); device 'cpu' = emulated.");
  m.def("sddmm_cuda_row_segment", &CudaSddmmSegmentLength, py::arg("feat"),
        "The row segment length of sddmm's cuda kernel at this feature width (0: the fused loop over the "
        "non-zeros).");
  m.def("cuda_attention_column_lanes", &CudaAttentionColumnLanes, py::arg("head_dim"), py::arg("element_bytes"),
        "The lanes that score one column in sparse_attention's one-pass cuda kernel for heads of head_dim "
        "features, k's elements of element_bytes (0: a warp per column).");
  m.def(
      "cuda_attention_tile",
      [](int64_t head_dim, int64_t value_dim, int64_t element_bytes, int64_t column_lanes, int64_t rows) {
        const AttentionTile tile = CudaAttentionTile(head_dim, value_dim, element_bytes, column_lanes, rows);
        py::dict d;
        d["rows"] = tile.rows;
        d["columns"] = tile.columns;
        d["piece"] = tile.piece;
        d["k_stride"] = tile.k_stride;
        return d;
      },
      py::arg("head_dim"), py::arg("value_dim"), py::arg("element_bytes"), py::arg("column_lanes"),
      py::arg("rows") = -1,
      "The tiles of sparse_attention's cuda forward in shared memory (rows == 0: the column-group kernel); rows "
      "-1 reads $SPARSETIR_CUDA_ATTENTION_TILE_ROWS.");
  m.def(
      "cuda_attention_forward",
      [](int64_t head_dim, int64_t value_dim, int64_t element_bytes, bool rows_sorted) {
        const AttentionForwardPlan forward = CudaAttentionForward(head_dim, value_dim, element_bytes, rows_sorted);
        return py::make_tuple(forward.script, forward.sizes);
      },
      py::arg("head_dim"), py::arg("value_dim"), py::arg("element_bytes"), py::arg("rows_sorted") = true,
      "(script, sizes) of sparse_attention's one-pass cuda forward, as the operator picks them: the sizes besides "
      "head_dim and value_dim.");
  m.def(
      "cuda_bsrmm_tile",
      [](int64_t block_h, int64_t block_w, int64_t feat, const at::Tensor& like, int64_t block_rows,
         const std::string& device) {
        const BsrmmTile tile =
            CudaBsrmmTileFor(block_rows, block_h, block_w, feat, like.scalar_type(), c10::Device(device));
        py::dict out;
        out["rows"] = tile.rows;
        out["features"] = tile.features;
        out["columns"] = tile.columns;
        out["lanes"] = tile.lanes;
        out["row_threads"] = tile.row_threads;
        out["row_slices"] = tile.row_slices;
        return out;
      },
      py::arg("block_h"), py::arg("block_w"), py::arg("feat"), py::arg("like"), py::arg("block_rows") = 0,
      py::arg("device") = "cpu",
      "The register tile of the cuda bsrmm (SIMT blocks) for blocks of block_h x block_w values of like's dtype "
      "and feat features: rows x features outputs a thread, columns of a block a step, lanes x row_threads "
      "threads, row_slices slices of the block's rows over blockIdx.z (rows 0: one output per thread). With "
      "block_rows > 0, the rows the operator takes for that many block rows on device ('cpu' = emulated): "
      "fewer where 4 would leave the device's warps idle.");
  m.def("philox4x32", &PhiloxWords, py::arg("counter"), py::arg("key"),
        "The four 32-bit words Philox4x32-10 gives for a counter of 4 words and a key of 2: the generator of "
        "sparsetir::dropout's masks.");
  m.def("sparse_attention_runs_online", &SparseAttentionRunsOnline, py::arg("head_dim"), py::arg("value_dim"),
        py::arg("heads"), "True if sparse_attention on cuda runs its one-pass kernels at these sizes.");
  m.def(
      "cuda_features_per_thread",
      [](int64_t feat, const at::Tensor& like) { return CudaFeaturesPerThreadFor(feat, like.scalar_type()); },
      "The features a thread of the cuda spmm kernels owns at this feature width, for values of like's dtype.");
}

}  // namespace sparsetir::ops
