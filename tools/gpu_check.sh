#!/usr/bin/env bash
# On a machine with a CUDA GPU and torch's CUDA build: builds the extension in
# place against that machine's torch, then runs the CUDA tests, the row segment
# sweep (benchmarks/bench_cuda_segments.py) and the CUDA benchmark
# (benchmarks/bench_cuda.py) against cuSPARSE. Every log and CSV goes into
# DIR (default build/gpu-check), packed into DIR.tgz at the end unless PACK=0.
# Each step has a time limit (BUILD_LIMIT, TEST_LIMIT, SWEEP_LIMIT,
# BENCH_LIMIT, BENCH2_LIMIT, SDDMM_LIMIT seconds) so that one slow step leaves
# the others their time; a limit of 0 skips the step. TEST_K narrows the
# tests (pytest -k); BENCH2_ARGS, when set, runs bench_cuda.py a second time
# with another selection (into DIR/bench2); SDDMM_SEGMENTS, when set
# ("8 16 0"), times the sddmm once per row segment length
# $SPARSETIR_CUDA_SDDMM_SEGMENT (0: the fused loop) at the widths SDDMM_K
# (default "16 32 128"; SDDMM_ARGS adds options), each into DIR/sddmm-L;
# ATTENTION_LANES, when set ("1 2 4 0"), times the attention (forward, and
# forward + backward) once per $SPARSETIR_CUDA_ATTENTION_COLUMN_LANES (lanes
# that score a column; 0: a warp per column; ATTENTION_ARGS adds options,
# ATTENTION_LIMIT bounds each), each into DIR/attention-L; BSRMM_ROWS, when
# set ("4 0 2 8"), times bsrmm and bsr_linear once per
# $SPARSETIR_CUDA_BSRMM_ROWS (rows of a block a bsrmm thread owns; 0: one
# output per thread, in bsr_linear too; BSRMM_ARGS adds options,
# BSRMM_LIMIT bounds each), each into DIR/bsrmm-R; ATTENTION_TILE_ROWS, when
# set ("0 8 16"), times the attention forward once per
# $SPARSETIR_CUDA_ATTENTION_TILE_ROWS (rows a block of the shared-tile
# kernel; 0: the column groups; ATTENTION_ARGS adds options, ATTENTION_LIMIT
# bounds each), each into DIR/tiles-R.
#
# DEADLINE (seconds, default 0 = none) bounds the whole run: each step's limit
# is cut to what is left of it, less PACK_MARGIN (default 20) for packing, and
# a step with under 30 s left is skipped, so a run inside a call of limited
# length still hands back every log and CSV it made.
#
#     bash tools/gpu_check.sh [DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/gpu-check}"
mkdir -p "$out"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 SPARSETIR_CACHE_DIR="$PWD/build/gpu-kernel-cache"

# budget SECONDS: the step's limit, cut to what DEADLINE leaves (0: skip the step).
budget() {
  local limit="$1" left
  [ "${DEADLINE:-0}" = 0 ] || [ "$limit" = 0 ] && { echo "$limit"; return; }
  left=$(( DEADLINE - SECONDS - ${PACK_MARGIN:-20} ))
  if (( left < 30 )); then echo 0; elif (( left < limit )); then echo "$left"; else echo "$limit"; fi
}

step() {  # step NAME SECONDS COMMAND...: runs COMMAND, its output into DIR/NAME.log, the end of it shown
  local name="$1" limit="$2"
  shift 2
  [ "$limit" = 0 ] && { echo "==> $name: skipped"; return 0; }
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "==> $name: exit $rc after $((SECONDS - t0)) s"
  tail -n "${TAIL:-25}" "$out/$name.log"
  return $rc
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; "$PY" -c \
  'import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)'; } >"$out/device.txt" 2>&1
cat "$out/device.txt"
pack() { [ "${PACK:-1}" = 0 ] || tar czf "$out.tgz" -C "$out" .; }
# inner LIMIT MARGIN: a benchmark's own --time-limit inside a step of LIMIT
# seconds, less MARGIN for writing its results but at most a quarter of the
# step, so that a short step still times something (its clock starts before
# the matrices load: R-MAT 2^20 alone takes about 25 s).
inner() { local margin=$2; (( margin > $1 / 4 )) && margin=$(( $1 / 4 )); echo $(( $1 - margin )); }
lim=$(budget "${BUILD_LIMIT:-300}")
TAIL=5 step build "$lim" env MAX_JOBS="$(nproc)" "$PY" setup.py build_ext --inplace || { pack; exit 1; }
step tests "$(budget "${TEST_LIMIT:-180}")" "$PY" -m pytest tests/python/test_cuda_backend.py \
  tests/python/test_ops_errors.py tests/python/test_ops_autograd.py tests/python/test_lane_reductions.py \
  tests/python/test_tensor_cores.py tests/python/test_online_attention.py tests/python/test_shared_caches.py \
  tests/python/test_shared_buffers.py tests/python/test_launch_cuda.py tests/python/test_cuda_kernel.py \
  tests/python/test_emulator_barrier.py tests/python/test_emulator_pipeline.py tests/python/test_emulator_atomic.py \
  tests/python/test_emulator_spin.py tests/python/test_cuda_struct_params.py tests/python/test_cuda_templates.py \
  -q -rs -p no:cacheprovider -n "${TEST_WORKERS:-4}" \
  -k "${TEST_K:-gpu or mixed_device or nvrtc}"
# SWEEP_SETTINGS: bench_cuda_segments.py's L:V pairs; BENCH_ARGS: bench_cuda.py's selection.
# shellcheck disable=SC2086
TAIL=12 step segments "$(budget "${SWEEP_LIMIT:-180}")" "$PY" benchmarks/bench_cuda_segments.py \
  --out "$out/segments" ${SWEEP_SETTINGS:+--settings $SWEEP_SETTINGS}
lim=$(budget "${BENCH_LIMIT:-240}")
# shellcheck disable=SC2086
TAIL=60 step bench "$lim" "$PY" benchmarks/bench_cuda.py ${BENCH_ARGS:---ops spmm,sddmm --k 32 128} \
  --time-limit "$(inner "$lim" 40)" --out "$out/bench"
if [ -n "${BENCH2_ARGS:-}" ]; then
  lim=$(budget "${BENCH2_LIMIT:-180}")
  # shellcheck disable=SC2086
  TAIL=40 step bench2 "$lim" "$PY" benchmarks/bench_cuda.py $BENCH2_ARGS \
    --time-limit "$(inner "$lim" 30)" --out "$out/bench2"
fi
for length in ${SDDMM_SEGMENTS:-}; do
  lim=$(budget "${SDDMM_LIMIT:-90}")
  # shellcheck disable=SC2086
  TAIL=8 step "sddmm-$length" "$lim" env SPARSETIR_CUDA_SDDMM_SEGMENT="$length" "$PY" \
    benchmarks/bench_cuda.py --ops sddmm --k ${SDDMM_K:-16 32 128} ${SDDMM_ARGS:-} \
    --time-limit "$(inner "$lim" 15)" --out "$out/sddmm-$length"
done
for lanes in ${ATTENTION_LANES:-}; do
  lim=$(budget "${ATTENTION_LIMIT:-90}")
  # shellcheck disable=SC2086
  TAIL=10 step "attention-$lanes" "$lim" env SPARSETIR_CUDA_ATTENTION_COLUMN_LANES="$lanes" "$PY" \
    benchmarks/bench_cuda.py --ops attention,attention_train --no-flex ${ATTENTION_ARGS:-} \
    --time-limit "$(inner "$lim" 10)" --out "$out/attention-$lanes"
done
for rows in ${ATTENTION_TILE_ROWS:-}; do
  lim=$(budget "${ATTENTION_LIMIT:-90}")
  # shellcheck disable=SC2086
  TAIL=10 step "tiles-$rows" "$lim" env SPARSETIR_CUDA_ATTENTION_TILE_ROWS="$rows" "$PY" \
    benchmarks/bench_cuda.py --ops attention --no-flex ${ATTENTION_ARGS:-} \
    --time-limit "$(inner "$lim" 10)" --out "$out/tiles-$rows"
done
for rows in ${BSRMM_ROWS:-}; do
  lim=$(budget "${BSRMM_LIMIT:-90}")
  # shellcheck disable=SC2086
  TAIL=16 step "bsrmm-$rows" "$lim" env SPARSETIR_CUDA_BSRMM_ROWS="$rows" "$PY" \
    benchmarks/bench_cuda.py --ops bsrmm,bsr_linear ${BSRMM_ARGS:-} \
    --time-limit "$(inner "$lim" 10)" --out "$out/bsrmm-$rows"
done
pack
