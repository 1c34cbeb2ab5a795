#!/usr/bin/env bash
# The Python routes on a machine with an NVIDIA GPU (CI has none: there these tests skip):
# builds aotc and the TorchScript backend library into build/ against that machine's torch
# (scripts/gpu_suite.sh --build-only), then runs aotc.load, aotc.compile, the TorchScript
# backend and torch.compile(backend="aotc") with --target cuda libraries on CUDA tensors,
# each compared with torch on the same GPU. The package is used from the source tree
# (PYTHONPATH=python), which finds build/'s binaries.
#   scripts/gpu_python.sh           # OUT: where the logs go (default ./gpu-out)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
WORK=${WORK:-/tmp/aotc-gpu-python}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 PYTHONPATH="$ROOT/python"
# Eigen (the CPU kernels) where the machine has none: headers carried in .eigen/ with a .pc.
[ -d "$ROOT/.eigen/pkgconfig" ] && export PKG_CONFIG_PATH="$ROOT/.eigen/pkgconfig:${PKG_CONFIG_PATH:-}"
BUILD="$ROOT/build" OUT="$OUT" "$ROOT/scripts/gpu_suite.sh" --build-only || exit 1
# gpu_suite.sh's stand-ins for clang++ and ld.lld where the machine lacks them (CPU models).
[ -d /tmp/aotc-shim ] && export PATH="/tmp/aotc-shim:$PATH"
status=0
for test in ${TESTS:-test_load test_cuda_routes test_dynamo_cuda}; do
  echo "== $test"
  python3 "$ROOT/tests/python/$test.py" --workdir "$WORK/$test" 2>&1 | tee "$OUT/$test.txt"
  code=${PIPESTATUS[0]}
  [ "$code" -eq 0 ] || { echo "$test: exit $code"; status=1; }
done
exit $status
