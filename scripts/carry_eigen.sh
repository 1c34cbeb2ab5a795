#!/usr/bin/env bash
# Makes .eigen/ in the repository root: Eigen's headers (the CPU kernels need them) with a
# pkg-config file, for a machine that has none, such as the lent GPU machine. Pass `.eigen`
# to the device tool's carry; scripts/gpu_*.sh and bench/cuda/host_memory.sh put it on
# PKG_CONFIG_PATH when they find it. .eigen/ is listed in .git/info/exclude, so that git
# ignores it (carry takes ignored paths only). Needs Eigen here (scripts/setup.sh installs
# libeigen3-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${EIGEN_INCLUDE:-/usr/include/eigen3}
[ -d "$src/Eigen" ] || { echo "carry_eigen.sh: no Eigen headers in $src" >&2; exit 1; }
rm -rf .eigen
mkdir -p .eigen/include/eigen3 .eigen/pkgconfig
cp -r "$src/Eigen" "$src/unsupported" .eigen/include/eigen3/
cat > .eigen/pkgconfig/eigen3.pc <<'PC'
prefix=${pcfiledir}/..
Name: Eigen3
Description: Eigen's headers, carried
Requires:
Version: 3.4.0
Libs:
Cflags: -I${prefix}/include/eigen3
PC
mkdir -p .git/info
grep -qx '/.eigen/' .git/info/exclude 2>/dev/null || echo '/.eigen/' >> .git/info/exclude
echo "carry_eigen.sh: .eigen/ ready ($(du -sh .eigen | cut -f1)); carry it with the device tool"
