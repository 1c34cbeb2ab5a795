#!/usr/bin/env bash
# CPU benchmark: aotc vs LibTorch vs ONNX Runtime. Sets up the machine like the
# README commands, adds ONNX Runtime and onnx (the peers; not needed by aotc) to .venv,
# and runs bench/bench_cpu.py. Arguments go to bench_cpu.py; without any, the whole
# table is written to bench/results_cpu.md. Run it on a quiet machine: it takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh > /dev/null
.venv/bin/python -c "import onnxruntime, onnx" 2>/dev/null ||
  .venv/bin/python -m pip install -q --disable-pip-version-check "onnxruntime>=1.20,<2" "onnx>=1.17,<2"
if [ $# -eq 0 ]; then
  set -- --results bench/results_cpu.md
fi
exec .venv/bin/python bench/bench_cpu.py "$@"
