#!/usr/bin/env bash
# CUDA parity with the CPU target (issue 37), for a machine with an NVIDIA GPU, nvcc and torch
# (CI has none): builds aotc (scripts/gpu_suite.sh --build-only), then
#   - the kernel table (tests/cuda/kernel_table/): each CUDA kernel against the CPU kernel on
#     odd shapes and non-finite values;
#   - tests/cuda/check_cuda_models.py on the whole model set of the CPU tests
#     (tests/e2e/models*.py) with --target cuda, at each precision of PRECISIONS, against
#     torch (relative L2 error: fp32 <= 1e-4, tf32 <= 5e-3, fp16 <= 2e-2; integer and bool
#     outputs exactly; a model that misses the 16-bit tolerance where torch's own 16-bit run
#     misses it too is skipped);
#   - bench/gpu_bench.py: a segmentation model, an LSTM model and mc3_18 against torch eager and
#     torch.compile(mode="reduce-overhead") in one process, 3 alternating rounds (--no-bench: not).
# The last line sums them: "N passed, M failed".
#   scripts/gpu_parity.sh [--no-bench]
# Environment: OUT (default ./gpu-out), BUILD, WORK, PRECISIONS (unset: "fp32 tf32 fp16"; empty: none),
# MODELS (default e2e: all), JOBS (models compiled at once, default half the cores),
# BENCH_MODELS (default fcn_resnet50,lstm_tagger,mc3_18_clip), ROUNDS (default 3), BENCH_ARGS (more
# bench/gpu_bench.py options, e.g. --profile MODEL,...).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
WORK=${WORK:-/tmp/aotc-gpu-parity}
PRECISIONS=${PRECISIONS-fp32 tf32 fp16}
MODELS=${MODELS:-e2e}
JOBS=${JOBS:-$(( $(nproc) / 2 ))}
BENCH_MODELS=${BENCH_MODELS:-fcn_resnet50,lstm_tagger,mc3_18_clip}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
# Eigen (the CPU kernels) where the machine has none: headers carried in .eigen/ with a .pc.
[ -d "$ROOT/.eigen/pkgconfig" ] && export PKG_CONFIG_PATH="$ROOT/.eigen/pkgconfig:${PKG_CONFIG_PATH:-}"
BUILD="$BUILD" OUT="$OUT" "$ROOT/scripts/gpu_suite.sh" --build-only || exit 1
[ -d /tmp/aotc-shim ] && export PATH="/tmp/aotc-shim:$PATH"
ninja -C "$BUILD" tests/cuda_kernel_table >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }

logs=()
"$BUILD/tests/cuda_kernel_table" 2>&1 | tee "$OUT/kernel_table.txt"
logs+=("$OUT/kernel_table.txt")
# Every precision in one run: each model's torch references once, its runs beside the
# compiles of the models after it.
read -r -a precisions <<<"$PRECISIONS"
if [ "${#precisions[@]}" -gt 0 ]; then
  tag=$(IFS=_; echo "${precisions[*]}")
  python3 "$ROOT/tests/cuda/check_cuda_models.py" --aotc "$BUILD/compiler/aotc" \
    --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$WORK/models" --models "$MODELS" --jobs "$JOBS" \
    --precision "$(IFS=,; echo "${precisions[*]}")" --json "$OUT/parity_$tag.json" 2>&1 |
    tee "$OUT/parity_$tag.txt"
  logs+=("$OUT/parity_$tag.txt")
fi
if [ "${1:-}" != "--no-bench" ]; then
  python3 "$ROOT/tests/cuda/check_cuda_models.py" --aotc "$BUILD/compiler/aotc" \
    --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$WORK/bench" --models "$BENCH_MODELS" --jobs "$JOBS" \
    2>&1 | tee "$OUT/parity_bench_models.txt"
  logs+=("$OUT/parity_bench_models.txt")
  read -r -a bench_args <<<"${BENCH_ARGS:-}"
  python3 "$ROOT/bench/gpu_bench.py" --workdir "$WORK/bench" --models "$BENCH_MODELS" --rounds "${ROUNDS:-3}" \
    --results "$OUT/results_gpu.md" --json "$OUT/bench_parity.json" "${bench_args[@]}" 2>&1 |
    tee "$OUT/bench_parity.txt"
fi
# The sum of every check's "N passed, M failed" line (a check that died without one counts as a failure).
passed=0
failed=0
for log in "${logs[@]}"; do
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "no summary line in $log"
    failed=$((failed + 1))
    continue
  fi
  passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
  failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
