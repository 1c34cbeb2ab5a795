#!/bin/bash
# host_memory.sh - on the GPU machine: models from device memory and from host memory
# (host to host: inputs from and outputs to host memory, as a user with host buffers runs).
# Builds aotc (scripts/gpu_suite.sh --build-only), then the STEPS:
#   copies  bench/cuda/host_copy_bench.cu: the ways of moving a caller's host buffer, alone;
#   abi     tests/cuda/test_cuda_abi.py (host memory: odd sizes, pageable and pinned, a device
#           pointer marked as host refused);
#   table   the CUDA kernel table (tests/cuda/kernel_table/);
#   check   tests/cuda/check_cuda_models.py on MODELS at each precision of PRECISIONS (host
#           runs, pageable and pinned, among the ways checked);
#   bench   bench/gpu_bench.py --host on BENCH_MODELS: device memory and host to host against
#           torch.compile in one process (AB_ENV: also a second context created with that
#           variable, alternating run by run).
#
#   bench/cuda/host_memory.sh     (carry .eigen where the machine has no Eigen)
# Environment: OUT, BUILD, WORK, MODELS (default resnet50,efficientnet_b0,convnext_tiny,swin_t),
# BENCH_MODELS (default MODELS),
# PRECISIONS (default fp32), ROUNDS (default 3), PROFILE_MODELS, JOBS, AB_ENV, STEPS (default
# "copies abi check bench"), SKIP_BUILD (set: aotc is built already), NO_COMPILE (set: no
# torch.compile peer, for profiles alone).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
WORK=${WORK:-/tmp/aotc-gpu-work}
MODELS=${MODELS:-resnet50,efficientnet_b0,convnext_tiny,swin_t}
PRECISIONS=${PRECISIONS:-fp32}
STEPS=${STEPS:-copies abi check bench}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
[ -d "$ROOT/.eigen/pkgconfig" ] && export PKG_CONFIG_PATH="$ROOT/.eigen/pkgconfig:${PKG_CONFIG_PATH:-}"
[ -n "${SKIP_BUILD:-}" ] || BUILD="$BUILD" OUT="$OUT" "$ROOT/scripts/gpu_suite.sh" --build-only || exit 1
[ -d /tmp/aotc-shim ] && export PATH="/tmp/aotc-shim:$PATH"
status=0
step() { [[ " $STEPS " == *" $1 "* ]]; }
if step copies; then
  nvcc -std=c++20 -O3 -arch=sm_90 "$ROOT/bench/cuda/host_copy_bench.cu" -o "$BUILD/host_copy_bench" &&
    "$BUILD/host_copy_bench" | tee "$OUT/host_copy.txt" || status=1
fi
if step abi; then
  ninja -C "$BUILD" tests/abi/fixture_model.so >>"$OUT/build.log" 2>&1 &&
    python3 "$ROOT/tests/cuda/test_cuda_abi.py" "$BUILD/tests/abi/fixture_model.so" "$BUILD/compiler/aotc" \
      /tmp/aotc-cuda-abi 2>&1 | tee "$OUT/cuda_abi.txt" || status=1
fi
if step table; then
  ninja -C "$BUILD" tests/cuda_kernel_table >>"$OUT/build.log" 2>&1 &&
    "$BUILD/tests/cuda_kernel_table" >"$OUT/kernel_table.txt" 2>&1 || status=1
  tail -3 "$OUT/kernel_table.txt"
fi
for precision in $PRECISIONS; do
  if step check; then
    python3 "$ROOT/tests/cuda/check_cuda_models.py" --aotc "$BUILD/compiler/aotc" \
      --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$WORK" --models "$MODELS" --precision "$precision" \
      --jobs "${JOBS:-$(nproc)}" --json "$OUT/check_$precision.json" 2>&1 | tee -a "$OUT/check.txt" || status=1
  fi
  if step bench; then
    python3 "$ROOT/bench/gpu_bench.py" --workdir "$WORK" --models "${BENCH_MODELS:-$MODELS}" --precision "$precision" --host \
      ${AB_ENV:+--ab-env "$AB_ENV"} ${NO_COMPILE:+--no-compile} --rounds "${ROUNDS:-3}" --profile "${PROFILE_MODELS:-}" \
      --results "$OUT/results_gpu.md" --json "$OUT/bench_$precision.json" 2>&1 | tee -a "$OUT/bench.txt" || status=1
  fi
done
exit $status
