#!/usr/bin/env bash
# Footprint of a model .so on each target: resnet18 (traced) and mobilenet_v2 (scripted),
# both 1x3x224x224, compiled by aotc for the host (x86-64) and for aarch64-linux-gnu,
# stripped, and split into the weights blob and everything else (code + data: the model
# code, the runtime kernels it calls, the statically linked C++ runtime pieces, tables).
# Prints a markdown table (docs/FOOTPRINT.md holds a measured one). The budget for
# everything but the weights is 500 KB (500 * 1024 bytes) stripped, on every target.
#
#   scripts/footprint.sh [WORKDIR]      # after scripts/setup.sh; WORKDIR: build/footprint
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
work=${1:-build/footprint}
aotc=build/compiler/aotc
budget=$((500 * 1024))
mkdir -p "$work"
[ -x "$aotc" ] || { echo "footprint: $aotc is not built (run scripts/setup.sh)" >&2; exit 1; }

# The two models, saved as TorchScript (the builders of the e2e tests).
python3 - "$work" <<'PY'
import os, sys
import torch
sys.path.insert(0, "tests/e2e")
from models import resnet18, mobilenet_v2
for name, build in [("resnet18", resnet18), ("mobilenet_v2", mobilenet_v2)]:
    module, inputs = build()
    torch.jit.save(module, os.path.join(sys.argv[1], name + ".pt"))
PY

# target name | --target-triple | strip program
targets=("x86-64||strip" "aarch64|aarch64-linux-gnu|aarch64-linux-gnu-strip")

echo "| model | target | stripped .so | weights | everything else (code + data) | within 500 KB |"
echo "| --- | --- | ---: | ---: | ---: | --- |"
status=0
for model in resnet18 mobilenet_v2; do
  for t in "${targets[@]}"; do
    IFS='|' read -r tname triple strip_prog <<<"$t"
    out="$work/$model-$tname"
    flags=()
    [ -n "$triple" ] && flags=(--target-triple "$triple")
    if ! "$aotc" "$work/$model.pt" -o "$out.so" --input x:1x3x224x224 --emit-source "$out.src" "${flags[@]}" \
         2> "$out.log"; then
      echo "| $model | $tname | (aotc failed: see $out.log) | | | |"
      status=1
      continue
    fi
    "$strip_prog" --strip-all -o "$out.stripped.so" "$out.so"
    total=$(stat -c %s "$out.stripped.so")
    weights=$(stat -c %s "$out.src/weights.bin")
    rest=$((total - weights))
    ok=yes
    [ "$rest" -le "$budget" ] || { ok=NO; status=1; }
    awk -v m="$model" -v t="$tname" -v total="$total" -v w="$weights" -v rest="$rest" -v ok="$ok" 'BEGIN {
      printf "| %s | %s | %d B (%.2f MiB) | %d B | %d B (%.1f KB) | %s |\n", m, t, total, total / 1048576, w, rest,
             rest / 1024, ok }'
  done
done
exit $status
