#!/usr/bin/env bash
# CPU benchmark: aotc vs LibTorch, ONNX Runtime, OpenVINO and (optionally) ExecuTorch. Sets up
# the machine like the README commands, adds ONNX Runtime, onnx and OpenVINO (the peers; not
# needed by aotc) to .venv, and runs bench/bench_cpu.py. Arguments go to bench_cpu.py; without
# any, the whole table is written to bench/results_cpu.md. Run it on a quiet machine: it takes
# minutes.
#
#   bench/run.sh --with-executorch [bench_cpu.py arguments]
# also times ExecuTorch with XNNPACK. Its Python bindings link libtorch 2.15 and fail against
# .venv's torch 2.11, so it gets its own venv ($EXECUTORCH_VENV, default build/venv-executorch),
# created here on first use (the pip lines of /work/shared/PEERS.md; about 3 GB, as torch 2.15's
# wheel is the CUDA one) and reused after; bench_cpu.py runs bench/executorch_peer.py with it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh > /dev/null
.venv/bin/python -c "import onnxruntime, onnx" 2>/dev/null ||
  .venv/bin/python -m pip install -q --disable-pip-version-check "onnxruntime>=1.20,<2" "onnx>=1.17,<2"
.venv/bin/python -c "import openvino" 2>/dev/null ||
  .venv/bin/python -m pip install -q --disable-pip-version-check "openvino>=2024.0"

extra=()
if [ "${1:-}" = "--with-executorch" ]; then
  shift
  et="${EXECUTORCH_VENV:-build/venv-executorch}"
  if ! "$et/bin/python" -c "import executorch, torchvision" 2>/dev/null; then
    python3 -m venv "$et"
    pip=("$et/bin/python" -m pip install -q --disable-pip-version-check)
    # --no-deps: torch 2.15's own requirements pull the whole CUDA stack; only the libraries
    # its import needs are listed (PEERS.md).
    "${pip[@]}" --no-deps torch==2.15.0
    "${pip[@]}" --no-deps nvidia-cufile nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7
    "${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec numpy pillow
    "${pip[@]}" --no-deps torchvision==0.29.2 executorch==1.5.1
    "${pip[@]}" flatbuffers ruamel.yaml pyyaml packaging tabulate "torchao>=0.18,<0.19"
  fi
  extra=(--executorch-python "$et/bin/python")
fi
if [ $# -eq 0 ]; then
  set -- --results bench/results_cpu.md
fi
exec .venv/bin/python bench/bench_cpu.py "${extra[@]}" "$@"
