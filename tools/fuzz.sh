#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, the core
# instrumented too) in build/fuzz and runs each for a bounded time on a copy
# of its seed corpus. Any crash, sanitizer report, leak, timeout or memory
# blow-up fails the run (nonzero exit); the input that caused it is kept under
# build/fuzz/artifacts/<target>/ and reproduces with `build/fuzz/<target>_fuzzer <file>`.
#
# SPARSETIR_FUZZ_SECONDS: seconds per target (default 60); 0 only replays the
# seed corpora (libFuzzer itself would take 0 as "no limit").
set -euo pipefail
SPARSETIR_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$SPARSETIR_ROOT"
SECONDS_PER_TARGET="${SPARSETIR_FUZZ_SECONDS:-60}"
case "$SECONDS_PER_TARGET" in
  '' | *[!0-9]*) echo "SPARSETIR_FUZZ_SECONDS must be a whole number of seconds" >&2; exit 2 ;;
esac
BUILD=build/fuzz
START=$(date +%s)

# Whether clang++ links a libFuzzer + sanitizer program (Debian ships the
# runtimes apart from clang, in libclang-rt-*-dev).
fuzzer_links() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local dir
  dir="$(mktemp -d)"
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$dir/t.cc"
  clang++ -fsanitize=fuzzer,address,undefined "$dir/t.cc" -o "$dir/t" >/dev/null 2>&1
  local status=$?
  rm -rf "$dir"
  return $status
}

if ! fuzzer_links; then
  echo "==> installing clang and its libFuzzer / sanitizer runtimes"
  SUDO=""
  if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends clang >/dev/null
  # libclang-rt-dev follows the default clang; older releases only name the
  # versioned package.
  major="$(clang++ -dumpversion | cut -d. -f1)"
  $SUDO apt-get install -y -q --no-install-recommends libclang-rt-dev >/dev/null 2>&1 ||
    $SUDO apt-get install -y -q --no-install-recommends "libclang-rt-$major-dev" >/dev/null
  fuzzer_links || { echo "clang++ still cannot link a libFuzzer target" >&2; exit 1; }
fi
echo "==> $(clang++ --version | head -1)"

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSPARSETIR_BUILD_TESTS=OFF -DSPARSETIR_BUILD_FUZZERS=ON >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target parser_fuzzer lower_fuzzer csr_structure_fuzzer \
  cuda_kernel_params_fuzzer
echo "==> built in $(( $(date +%s) - START )) s"

# target, longest input (bytes), dictionary (or "")
TARGETS=(
  "parser 4096 tests/fuzz/script.dict"
  "lower 4096 tests/fuzz/script.dict"
  "csr_structure 4096 "
  "cuda_kernel_params 4096 tests/fuzz/cuda.dict"
)
# Leaks are reported by libFuzzer itself (-detect_leaks defaults to 1);
# UBSan aborts on its first report (-fno-sanitize-recover), with the stack.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
# The lowering target must not write IR dumps.
unset SPARSETIR_DUMP_IR

# One target: fuzzes it, writes its summary line to $BUILD/logs/<name>.summary
# and its exit status to $BUILD/logs/<name>.status.
fuzz_target() {
  local name="$1" max_len="$2" dict="$3"
  local corpus="$BUILD/corpus/$name" artifacts="$BUILD/artifacts/$name" log="$BUILD/logs/$name.log"
  # A fresh copy each run: libFuzzer adds new inputs to its first corpus
  # folder, and the committed seeds stay as they are.
  rm -rf "$corpus" "$artifacts"
  mkdir -p "$BUILD/corpus" "$artifacts" "$BUILD/logs"
  cp -r "tests/fuzz/corpus/$name" "$corpus"
  # The script targets also start from every shipped script (the built-in
  # kernels, their formats, the RFC's scripts), read where they live.
  if [ "$name" = parser ] || [ "$name" = lower ]; then
    for script in kernels/*.py kernels/formats/*.py tests/scripts/*.py tests/scripts/*/*.py; do
      [ -f "$script" ] && cp "$script" "$corpus/seed_$(echo "$script" | tr '/' '_')"
    done
  fi
  local args=(-max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ "$SECONDS_PER_TARGET" = 0 ]; then args+=(-runs=0); else args+=(-max_total_time="$SECONDS_PER_TARGET"); fi
  if [ -n "$dict" ]; then args+=(-dict="$dict"); fi
  echo "==> fuzzing $name for ${SECONDS_PER_TARGET} s$([ "$SECONDS_PER_TARGET" = 0 ] && echo ': the seeds only') (log: $log)"
  local t0 status
  t0=$(date +%s)
  set +e
  # The outer limit only matters if libFuzzer itself stops answering.
  timeout -k 10 $((SECONDS_PER_TARGET + 300)) "$BUILD/${name}_fuzzer" "${args[@]}" "$corpus" >"$log" 2>&1
  status=$?
  set -e
  local elapsed execs units
  elapsed=$(( $(date +%s) - t0 ))
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  units="$(find "$corpus" -type f | wc -l)"
  printf '%-14s %10s execs %5s s %6s inputs in corpus  exit %s\n' "$name" "${execs:-?}" "$elapsed" "$units" "$status" \
    >"$BUILD/logs/$name.summary"
  echo "$status" >"$BUILD/logs/$name.status"
}

# libFuzzer runs one process on one core: the targets run side by side, as
# many at a time as there are cores, each for its full time.
rm -f "$BUILD"/logs/*.summary "$BUILD"/logs/*.status
running=0
for entry in "${TARGETS[@]}"; do
  read -r name max_len dict <<<"$entry"
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_target "$name" "$max_len" "$dict" &
  running=$((running + 1))
done
wait

summary=()
failed=()
for entry in "${TARGETS[@]}"; do
  read -r name _ _ <<<"$entry"
  summary+=("$(cat "$BUILD/logs/$name.summary" 2>/dev/null || echo "$name: no summary")")
  status="$(cat "$BUILD/logs/$name.status" 2>/dev/null || echo "?")"
  if [ "$status" != "0" ]; then
    failed+=("$name")
    echo "==> $name FAILED (exit $status); the end of its log:" >&2
    tail -n 60 "$BUILD/logs/$name.log" >&2
    for artifact in "$BUILD/artifacts/$name"/*; do
      if [ -e "$artifact" ]; then echo "    reproduce: $BUILD/${name}_fuzzer $artifact" >&2; fi
    done
  fi
done

echo "==> fuzzing summary (${SECONDS_PER_TARGET} s per target, $(( $(date +%s) - START )) s in all)"
printf '    %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> fuzzing found problems in: ${failed[*]}" >&2
  exit 1
fi
