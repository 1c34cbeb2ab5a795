#!/usr/bin/env bash
# Named dims on the GPU, for a machine with an NVIDIA GPU, nvcc and torch (CI has
# none): builds aotc (scripts/gpu_suite.sh --build-only), then
#   - tests/e2e/test_dynamic_shapes.py --target cuda: the BERT-style encoder, resnet18,
#     mobilenet_v2 and the view that needs a step, compiled once for their ranges with
#     --target cuda, run by aotc-run at many sizes and compared with torch;
#   - tests/cuda/check_dynamic_cuda.py: shapes that come and go in one process (a CUDA graph
#     captured per shape, the cache of aotc_context_options.cuda_graph_cache, refusals);
#   - bench/bench_dynamic.py --target cuda: the dynamic library against the static one
#     compiled for the shape, alternating rounds (skipped with --no-bench).
#   scripts/gpu_dynamic.sh [--no-bench]     # OUT: logs (default ./gpu-out); BUILD, WORK
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
WORK=${WORK:-/tmp/aotc-gpu-dynamic}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
# Eigen (the CPU kernels) where the machine has none: headers carried in .eigen/ with a .pc.
[ -d "$ROOT/.eigen/pkgconfig" ] && export PKG_CONFIG_PATH="$ROOT/.eigen/pkgconfig:${PKG_CONFIG_PATH:-}"
BUILD="$BUILD" OUT="$OUT" "$ROOT/scripts/gpu_suite.sh" --build-only || exit 1
[ -d /tmp/aotc-shim ] && export PATH="/tmp/aotc-shim:$PATH"
status=0
python3 "$ROOT/tests/e2e/test_dynamic_shapes.py" --target cuda --aotc "$BUILD/compiler/aotc" \
  --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$WORK/shapes" 2>&1 | tee "$OUT/dynamic_shapes_cuda.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
python3 "$ROOT/tests/cuda/check_dynamic_cuda.py" --aotc "$BUILD/compiler/aotc" --workdir "$WORK/graphs" 2>&1 |
  tee "$OUT/dynamic_graphs_cuda.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if [ "${1:-}" != "--no-bench" ]; then
  python3 "$ROOT/bench/bench_dynamic.py" --target cuda --iters "${ITERS:-200}" --rounds "${ROUNDS:-3}" \
    --aotc "$BUILD/compiler/aotc" --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$WORK/bench" 2>&1 |
    tee "$OUT/bench_dynamic_cuda.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
exit $status
