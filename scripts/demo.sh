#!/usr/bin/env bash
# README command (a): set up a fresh machine, build aotc, make a sample model (torchvision
# resnet18 with seeded random weights), compile it to a .so with the installed aotc, run the
# C sample on it, and run it from Python with aotc.load.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p out
python3 samples/make_resnet18.py out/resnet18.pt
time aotc out/resnet18.pt -o out/resnet18.so --input x:1x3x224x224 -v 2>&1 | grep -E "^aotc: (arena|time|[0-9]+ ops)"
build/samples/classify out/resnet18.so --runs 20
python3 - <<'PY'
import numpy as np, aotc
m = aotc.load("out/resnet18.so", threads=2)
x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
y = m(x)
print(f"aotc.load: {m.inputs[0].name} {list(m.inputs[0].shape)} -> {m.outputs[0].name} {list(y.shape)}, top class {int(y.argmax())}")
PY
