#!/usr/bin/env bash
# The GPU suite, for a machine with an NVIDIA GPU, nvcc and torch: builds aotc
# against that machine's own torch, compiles the CUDA model set with --target cuda,
# compares each with torch on the same GPU (tests/cuda/check_cuda_models.py), then runs the
# benchmark (bench/gpu_bench.py); bench/cuda/attention_fused_bench.cu checks the one-launch
# attention kernel on its own, bench/cuda/sgemm_3xtf32_bench.cu the 3xTF32 float32 GEMM,
# bench/cuda/implicit_conv_check.cu the implicit-GEMM NHWC convolution. CI has no GPU: there
# the same check only compiles.
#
#   scripts/gpu_suite.sh [--quick]        # --quick: no torch.compile, fewer models
#   scripts/gpu_suite.sh --build-only     # the build alone (for bench/cuda/*.sh)
# Environment: OUT (results, default ./gpu-out), BUILD (default /tmp/aotc-gpu-build), WORK (the
# compiled models, default /tmp/aotc-gpu-work),
# MODELS, BENCH_MODELS, BENCH_MODELS_TF32 (default BENCH_MODELS), PRECISIONS (default "fp32 tf32"),
# PROFILE_MODELS (aotc's kernels profiled), BENCH_ARGS (more gpu_bench.py options).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
MODELS=${MODELS:-mlp,mlp_gelu,long_sorts,graph_conv,encoder_pre_gelu,small_cnn,conv_shapes,two_inputs,activations,dict_out,einsum_ops,pw_composite_float,pw_arith,pw_activations,pw_activations_traced,pw_masks,maxvit_t,layer_norm_ops,sdpa_ops,embedding_ops,transformer_encoder,multihead_attention,multihead_attention_const_masks,bert_encoder,views_slicing_traced,views_permutes_traced,views_splits_traced,views_pads_traced,views_channel_shuffle_traced,vit_b_16_64,resnet18,resnet50,mobilenet_v2,vit_b_16,bert_base}
BENCH_MODELS=${BENCH_MODELS:-resnet18,resnet50,mobilenet_v2,vit_b_16,bert_base}
BENCH_MODELS_TF32=${BENCH_MODELS_TF32:-$BENCH_MODELS}
PRECISIONS=${PRECISIONS:-fp32 tf32 fp16 bf16}
WORK=${WORK:-/tmp/aotc-gpu-work}
QUICK=${1:-}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

# The project wants clang++ and lld for CPU models; a GPU image may have only g++. The CUDA
# target needs neither (nvcc and any C++ linker do), so stand-ins keep meson happy there.
if ! command -v clang++ >/dev/null || ! command -v ld.lld >/dev/null; then
  mkdir -p /tmp/aotc-shim
  printf '#!/bin/sh\nexec g++ "$@"\n' >/tmp/aotc-shim/clang++
  printf '#!/bin/sh\nexec ld "$@"\n' >/tmp/aotc-shim/ld.lld
  chmod +x /tmp/aotc-shim/clang++ /tmp/aotc-shim/ld.lld
  export PATH=/tmp/aotc-shim:$PATH
  # g++ 13 at -O3 reports a false array-bounds error in compiler/ops/recurrent.cpp (it
  # assumes a shape that is never empty may be); keep it a warning there.
  export CXXFLAGS="${CXXFLAGS:-} -Wno-error=array-bounds"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
TORCH_DIR=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
start=$(date +%s)
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" "$ROOT" --buildtype=release -Dtorch_dir="$TORCH_DIR" -Dwith_cuda=enabled \
    -Dnvcc_archs=90 >"$OUT/meson-setup.log" 2>&1 || { tail -30 "$OUT/meson-setup.log"; exit 1; }
fi
AOTC_NVCC_JOBS=$(nproc) ninja -C "$BUILD" -j"$(nproc)" compiler/aotc compiler/libaotc_torch_backend.so tools/aotc-run/aotc-run runtime/libaotc_runtime.a \
  runtime/libaotc_runtime_cuda.a >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
[ "$QUICK" = "--build-only" ] && exit 0

status=0
# The one-launch attention kernels against float64 on odd shapes (every mask kind, causal,
# fully masked rows, strides that forbid 16-byte copies, the fallback past shared memory).
nvcc -std=c++20 -O3 -arch=sm_90 -I "$ROOT/runtime/include" "$ROOT/bench/cuda/attention_fused_bench.cu" \
  "$BUILD/runtime/libaotc_runtime_cuda.a" -lcublasLt -lcublas -o "$BUILD/attention_fused_bench" &&
  "$BUILD/attention_fused_bench" | tee "$OUT/attention_fused${TAG:-}.txt" || status=1
# The same checks with each block size forced (the choice above takes one per shape), and
# with attention_short.cu's kernel on every short sequence (above: only on large grids).
for forced in AOTC_CUDA_ATTENTION_ROWS={8,16,20,24} AOTC_CUDA_ATTENTION_SHORT=1; do
  echo "attention_fused_bench, $forced: $(env "$forced" \
    "$BUILD/attention_fused_bench" | grep -E 'FAIL|failed' | tr '\n' ' ')" | tee -a "$OUT/attention_fused${TAG:-}.txt"
  grep -q "^attention_fused_bench, $forced: 0 failed" "$OUT/attention_fused${TAG:-}.txt" || status=1
done
# At --precision tf32 (short key sequences on attention_short_tf32.cu's tensor-core kernel:
# on large grids, then on every short case).
"$BUILD/attention_fused_bench" tf32 | tee "$OUT/attention_fused_tf32${TAG:-}.txt" | grep -E 'FAIL|failed' || status=1
grep -q "^0 failed" "$OUT/attention_fused_tf32${TAG:-}.txt" || status=1
echo "attention_fused_bench tf32, AOTC_CUDA_ATTENTION_TF32=1: $(AOTC_CUDA_ATTENTION_TF32=1 \
  "$BUILD/attention_fused_bench" tf32 | grep -E 'FAIL|failed' | tr '\n' ' ')" | tee -a "$OUT/attention_fused_tf32${TAG:-}.txt"
grep -q "AOTC_CUDA_ATTENTION_TF32=1: 0 failed" "$OUT/attention_fused_tf32${TAG:-}.txt" || status=1
# The 3xTF32 float32 GEMM against float64 on odd shapes (every config, the whole epilogue),
# then timed against cuBLAS over transformer linear layers.
nvcc -std=c++20 -O3 -arch=sm_90 -I "$ROOT/runtime/include" -I "$ROOT/runtime/cuda" \
  "$ROOT/bench/cuda/sgemm_3xtf32_bench.cu" "$BUILD/runtime/libaotc_runtime_cuda.a" -lcublasLt -lcublas \
  -o "$BUILD/sgemm_3xtf32_bench" &&
  "$BUILD/sgemm_3xtf32_bench" 197 | grep -v " ms / 12" | tee "$OUT/sgemm_3xtf32${TAG:-}.txt" || status=1
# The implicit-GEMM NHWC convolution against im2col + cuBLAS (every config, odd shapes,
# NaNs), then the per-shape choice for resnet50's 3x3 layers.
nvcc -std=c++20 -O3 -arch=sm_90 -I "$ROOT/runtime/include" -I "$ROOT/runtime/cuda" \
  "$ROOT/bench/cuda/implicit_conv_check.cu" "$BUILD/runtime/libaotc_runtime_cuda.a" -lcublasLt -lcublas \
  -o "$BUILD/implicit_conv_check" &&
  "$BUILD/implicit_conv_check" 2>&1 | tee "$OUT/implicit_conv_check${TAG:-}.txt" || status=1
for precision in $PRECISIONS; do
  python3 "$ROOT/tests/cuda/check_cuda_models.py" --aotc "$BUILD/compiler/aotc" \
    --aotc-run "$BUILD/tools/aotc-run/aotc-run" --workdir "$WORK" --models "$MODELS" \
    --precision "$precision" --json "$OUT/check_$precision${TAG:-}.json" || status=1
done

bench_args=()
[ "$QUICK" = "--quick" ] && bench_args+=(--no-compile --iters 50)
# BENCH_ARGS: more options for bench/gpu_bench.py (e.g. --ab-env AOTC_CUDA_AUTOTUNE=0)
read -r -a extra <<<"${BENCH_ARGS:-}"
bench_args+=("${extra[@]}")
for precision in $PRECISIONS; do
  models=$BENCH_MODELS
  [ "$precision" = tf32 ] && models=$BENCH_MODELS_TF32
  python3 "$ROOT/bench/gpu_bench.py" --workdir "$WORK" --models "$models" \
    --precision "$precision" --results "$OUT/results_gpu.md" --json "$OUT/bench_$precision${TAG:-}.json" \
    --profile "${PROFILE_MODELS:-resnet50,mobilenet_v2}" "${bench_args[@]}" || status=1
done
exit $status
