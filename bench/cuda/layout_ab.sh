#!/bin/bash
# layout_ab.sh - on the GPU machine, after scripts/gpu_suite.sh built aotc (same BUILD and
# WORK): the CNNs in NHWC (compiler/passes/cuda/convert_to_channels_last.cpp, the default
# where it pays) against the same models compiled with AOTC_CUDA_LAYOUT=nchw, the two .so
# files alternating run by run in one process (bench/gpu_bench.py --ab-workdir),
# torch.compile in the same run unless QUICK=1. Also checks the forced NHWC layout
# (AOTC_CUDA_LAYOUT=nhwc) on FORCED, small models with odd convolution shapes that the
# default leaves in NCHW (set it empty for none). JOBS: models compiled at once.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
WORK=${WORK:-/tmp/aotc-gpu-work}
MODELS=${MODELS:-resnet50,resnet50_b32}
FORCED=${FORCED-conv_shapes,small_cnn,winograd_shapes}  # set empty: no forced check
PRECISIONS=${PRECISIONS:-fp32 tf32}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
check() {  # workdir precision models [extra env]
  env ${4:-} python3 "$ROOT/tests/cuda/check_cuda_models.py" --aotc "$BUILD/compiler/aotc" \
    --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$1" --models "$3" --precision "$2" \
    --jobs "${JOBS:-$(nproc)}"
}
status=0
for precision in $PRECISIONS; do
  [ -n "$FORCED" ] && { check "$WORK-nhwc" "$precision" "$FORCED" AOTC_CUDA_LAYOUT=nhwc || status=1; }
  check "$WORK" "$precision" "$MODELS" || status=1
  check "$WORK-nchw" "$precision" "$MODELS" AOTC_CUDA_LAYOUT=nchw || status=1
  extra=()
  [ "${QUICK:-}" = 1 ] && extra+=(--no-compile)
  python3 "$ROOT/bench/gpu_bench.py" --workdir "$WORK" --ab-workdir "$WORK-nchw" --models "$MODELS" \
    --precision "$precision" --json "$OUT/layout_ab_$precision.json" --iters "${ITERS:-100}" \
    --profile "${PROFILE_MODELS:-resnet50_b32}" "${extra[@]}" | tee -a "$OUT/layout_ab.txt" || status=1
done
exit $status
