#!/usr/bin/env bash
# README command (a): set up a fresh machine, build aotc, make a sample model (torchvision
# resnet18 with seeded random weights), compile it to a .so, and run the C sample on it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p out
python3 samples/make_resnet18.py out/resnet18.pt
time build/compiler/aotc out/resnet18.pt -o out/resnet18.so --input x:1x3x224x224 -v 2>&1 | grep -E "^aotc: (arena|time|[0-9]+ ops)"
build/samples/classify out/resnet18.so --runs 20
