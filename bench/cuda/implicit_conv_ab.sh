#!/bin/bash
# implicit_conv_ab.sh - on the GPU machine: the NHWC convolutions that gather their input in
# the GEMM (implicit_conv_nhwc, chosen per shape by the tuning run) against im2col + GEMM
# for every convolution (AOTC_CUDA_IMPLICIT_CONV=0), both contexts of the same .so
# alternating run by run in one process (bench/gpu_bench.py --ab-env), torch.compile in the
# same run unless QUICK=1. First bench/cuda/implicit_conv_check.cu (every config on odd
# shapes against cuBLAS float32, NaNs, and the per-shape choice for resnet50's 3x3 layers),
# then the models checked against torch with the choice by timing and with the implicit
# GEMM forced (AOTC_CUDA_IMPLICIT_CONV=1) on every convolution that can take it.
#
#   STAGE=check|bench|all bench/cuda/implicit_conv_ab.sh   (after scripts/gpu_suite.sh's build)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
WORK=${WORK:-/tmp/aotc-gpu-work}
MODELS=${MODELS:-resnet18,resnet50,resnet50_b32}
FORCED=${FORCED:-conv_shapes,small_cnn,winograd_shapes}
PRECISIONS=${PRECISIONS:-tf32 fp32}
STAGE=${STAGE:-all}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
status=0
check() {  # workdir precision models [extra env]
  env ${4:-} python3 "$ROOT/tests/cuda/check_cuda_models.py" --aotc "$BUILD/compiler/aotc" \
    --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$1" --models "$3" --precision "$2"
}
if [ "$STAGE" != bench ]; then
  nvcc -std=c++20 -O3 -arch=sm_90 -I "$ROOT/runtime/include" -I "$ROOT/runtime/cuda" \
    "$ROOT/bench/cuda/implicit_conv_check.cu" "$BUILD/runtime/libaotc_runtime_cuda.a" -lcublasLt -lcublas \
    -o "$BUILD/implicit_conv_check" && "$BUILD/implicit_conv_check" 2>&1 | tee "$OUT/implicit_conv_check.txt" ||
    status=1
  for precision in $PRECISIONS; do
    check "$WORK" "$precision" "$MODELS" || status=1
    check "$WORK" "$precision" "$MODELS" AOTC_CUDA_IMPLICIT_CONV=1 || status=1
    check "$WORK-nhwc" "$precision" "$FORCED" "AOTC_CUDA_LAYOUT=nhwc AOTC_CUDA_IMPLICIT_CONV=1" || status=1
  done 2>&1 | tee "$OUT/implicit_conv_models.txt"
fi
if [ "$STAGE" != check ]; then
  for precision in $PRECISIONS; do
    extra=()
    [ "${QUICK:-}" = 1 ] && extra+=(--no-compile)
    AOTC_CUDA_TRACE=1 python3 "$ROOT/bench/gpu_bench.py" --workdir "$WORK" --ab-env AOTC_CUDA_IMPLICIT_CONV=0 \
      --models "${BENCH_MODELS:-$MODELS}" --precision "$precision" --json "$OUT/implicit_ab_$precision.json" \
      --iters "${ITERS:-100}" --profile "${PROFILE_MODELS:-resnet50_b32}" "${extra[@]}" \
      2>"$OUT/implicit_trace_$precision.txt" | tee -a "$OUT/implicit_ab.txt" || status=1
  done
fi
exit $status
