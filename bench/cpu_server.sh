#!/bin/bash
# cpu_server.sh - the CPU benchmark on a many-core machine, such as the GPU machine's 16-core
# CPU (issue 42: server-size CPUs). Builds aotc (scripts/gpu_suite.sh --build-only: that
# machine has g++ only), then the STEPS:
#   regions  bench/thread_pool_regions.cpp: what a parallel region costs at 2 and THREADS
#            threads (with BASE_RUNTIME: also built against the base pool);
#   ab       bench/ab_cpu.py at THREADS: AB_MODELS compiled against BASE_RUNTIME's runtime
#            (A) and against this tree's (B), in turns of runs with a pause between turns;
#   profile  scripts/op_profile.py of PROFILE_MODELS at PROFILE_THREADS threads (batch 1);
#   bench    bench/bench_cpu.py at THREADS threads, batches BATCHES, against LibTorch, ONNX
#            Runtime and OpenVINO (ExecuTorch needs another torch: not there).
#
#   scripts/carry_eigen.sh; bench/cpu_server.sh   (carry .eigen, and .whl for OpenVINO)
# Environment: OUT, BUILD, WORK, THREADS (default: the cores), BATCHES (default "1 8"),
# MODELS (bench_cpu.py's names, default all six), AB_MODELS (default mobilenet_v2 resnet50),
# AB_BATCH (the A/B's batch, default 1),
# PROFILE_MODELS (default mobilenet_v2), PROFILE_THREADS (default "1 THREADS"), ROUNDS (default 3), STEPS (default "regions bench"),
# BASE_RUNTIME (a directory holding a base version's runtime/ tree, for regions and ab),
# OPENVINO_TAR (default .whl/openvino_cpu_cp312.tar.xz: OpenVINO's Python package unpacked
# onto PYTHONPATH where the machine has none; made here by `pip download openvino==2026.4.1
# --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 --no-deps`, the
# wheel unzipped, its GPU and NPU plugins, cache.json and every frontend but ONNX and IR
# deleted, `tar -cJf` of the rest: 21 MB, under the device call's 64 MiB), SKIP_BUILD (set:
# aotc is built already).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/cpu-server-out}
BUILD=${BUILD:-/tmp/aotc-gpu-build}
WORK=${WORK:-/tmp/aotc-cpu-server}
THREADS=${THREADS:-$(nproc)}
BATCHES=${BATCHES:-1 8}
MODELS=${MODELS:-resnet18 resnet50 mobilenet_v2 efficientnet_b0 vit_b_16 bert_base}
AB_MODELS=${AB_MODELS:-mobilenet_v2 resnet50}
PROFILE_MODELS=${PROFILE_MODELS:-mobilenet_v2}
STEPS=${STEPS:-regions bench}
OPENVINO_TAR=${OPENVINO_TAR:-$ROOT/.whl/openvino_cpu_cp312.tar.xz}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
[ -d "$ROOT/.eigen/pkgconfig" ] && export PKG_CONFIG_PATH="$ROOT/.eigen/pkgconfig:${PKG_CONFIG_PATH:-}"
[ -n "${SKIP_BUILD:-}" ] || BUILD="$BUILD" OUT="$OUT" "$ROOT/scripts/gpu_suite.sh" --build-only || exit 1
[ -d /tmp/aotc-shim ] && export PATH="/tmp/aotc-shim:$PATH"
if ! python3 -c 'import openvino' 2>/dev/null && [ -f "$OPENVINO_TAR" ]; then
  mkdir -p /tmp/aotc-site && tar -xJf "$OPENVINO_TAR" -C /tmp/aotc-site &&
    export PYTHONPATH="/tmp/aotc-site${PYTHONPATH:+:$PYTHONPATH}"
fi
{
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(|L2|L3'
  echo "vector flags: $(grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
} | tee "$OUT/cpu.txt"
status=0
step() { [[ " $STEPS " == *" $1 "* ]]; }

# The base runtime library: BASE_RUNTIME's runtime/ built in this build directory, this
# tree's runtime/ put back after; an aotc beside a build-tree file that names it.
if [ -n "${BASE_RUNTIME:-}" ] && { step regions || step ab; }; then
  # cp -r, not -a: the copied sources must be newer than the objects, or ninja keeps them.
  rm -rf /tmp/aotc-runtime-current /tmp/aotc-base && cp -r "$ROOT/runtime" /tmp/aotc-runtime-current &&
    mkdir -p /tmp/aotc-base && cp -r "$BASE_RUNTIME/runtime/." "$ROOT/runtime/" &&
    ninja -C "$BUILD" runtime/libaotc_runtime.a >>"$OUT/build.log" 2>&1 &&
    cp "$BUILD/runtime/libaotc_runtime.a" /tmp/aotc-base/ && cp -r "$ROOT/runtime/include" /tmp/aotc-base/include
  base_ok=$?
  rm -rf "$ROOT/runtime" && cp -r /tmp/aotc-runtime-current "$ROOT/runtime" &&
    ninja -C "$BUILD" runtime/libaotc_runtime.a >>"$OUT/build.log" 2>&1 || exit 1
  [ $base_ok = 0 ] || { echo "cpu_server.sh: the base runtime did not build"; exit 1; }
  cp "$BUILD/compiler/aotc" /tmp/aotc-base/aotc
  sed -e "s|^RUNTIME_LIB=.*|RUNTIME_LIB=/tmp/aotc-base/libaotc_runtime.a|" \
    -e "s|^RUNTIME_INCLUDE=.*|RUNTIME_INCLUDE=/tmp/aotc-base/include|" \
    "$BUILD/compiler/aotc-build-tree.txt" >/tmp/aotc-base/aotc-build-tree.txt
fi

if step regions; then
  for which in base current; do
    lib=$BUILD/runtime/libaotc_runtime.a
    [ $which = base ] && { [ -n "${BASE_RUNTIME:-}" ] || continue; lib=/tmp/aotc-base/libaotc_runtime.a; }
    g++ -O2 -std=c++20 -I "$ROOT/runtime/include" "$ROOT/bench/thread_pool_regions.cpp" "$lib" -lpthread \
      -o "$WORK/regions_$which" && { echo "$which pool:"; "$WORK/regions_$which" 2 "$THREADS"; } |
      tee -a "$OUT/regions.txt" || status=1
  done
fi

# The TorchScript files and input shapes of bench_cpu.py's models, batch 1.
save_model() {  # name [batch] -> $WORK/name_bBATCH.pt; prints aotc's --input flags
  python3 - "$1" "$WORK" "${2:-1}" <<'PY'
import os, sys, torch
sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench"))
from bench_cpu import make_model
name, work, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
model, inputs = make_model(name, batch)
with torch.no_grad():
    torch.jit.save(torch.jit.trace(model, [t for _, t in inputs], check_trace=False), f"{work}/{name}_b{batch}.pt")
dtype = {torch.float32: "float32", torch.int64: "int64"}
print(" ".join(f"--input {n}:{'x'.join(map(str, t.shape))}:{dtype[t.dtype]}" for n, t in inputs))
PY
}
export ROOT

if step ab && [ -n "${BASE_RUNTIME:-}" ]; then
  for model in $AB_MODELS; do
    b=${AB_BATCH:-1}
    flags=$(save_model "$model" "$b") || { status=1; continue; }
    "$BUILD/compiler/aotc" "$WORK/${model}_b$b.pt" -o "$WORK/${model}_current.so" $flags --cpu-threads "$THREADS" &&
      /tmp/aotc-base/aotc "$WORK/${model}_b$b.pt" -o "$WORK/${model}_base.so" $flags --cpu-threads "$THREADS" ||
      { status=1; continue; }
    ab_inputs=$(sed -e 's/--input [a-z]*:\([0-9x]*\):float32/--input \1/g' -e 's/--input [a-z]*:\([0-9x]*\):int64/--input \1:int64/g' <<<"$flags")
    echo "== $model batch $b: A base runtime, B this tree's, $THREADS threads" | tee -a "$OUT/ab.txt"
    python3 "$ROOT/bench/ab_cpu.py" "$WORK/${model}_base.so" "$WORK/${model}_current.so" $ab_inputs \
      --threads "$THREADS" --pairs "${AB_PAIRS:-40}" --block 5 --settle-ms 5 2>&1 | tee -a "$OUT/ab.txt" || status=1
  done
fi

if step profile; then
  for model in $PROFILE_MODELS; do
    flags=$(save_model "$model") || { status=1; continue; }
    for threads in ${PROFILE_THREADS:-1 $THREADS}; do
      echo "== $model, $threads threads" | tee -a "$OUT/profile.txt"
      python3 "$ROOT/scripts/op_profile.py" --aotc "$BUILD/compiler/aotc" --aotc-run "$BUILD/tools/aotc-run/aotc-run" \
        "$WORK/${model}_b1.pt" $flags --threads "$threads" --top 25 \
        --workdir "$WORK/profile_${model}_$threads" 2>&1 | tee -a "$OUT/profile.txt" || status=1
    done
  done
fi

if step bench; then
  python3 "$ROOT/bench/bench_cpu.py" --aotc "$BUILD/compiler/aotc" --aotc-run "$BUILD/tools/aotc-run/aotc-run" \
    --models $MODELS --batches $BATCHES --threads "$THREADS" --rounds "${ROUNDS:-3}" --per-round 5 --no-rss \
    --workdir "$WORK/bench" --results "$OUT/results_cpu.md" 2>&1 | tee "$OUT/bench.txt" || status=1
fi
exit $status
