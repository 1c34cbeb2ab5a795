#!/usr/bin/env bash
# Builds a Debian package of aotc (amd64) with dpkg-deb from `meson install`:
#
#   scripts/package_deb.sh [--build-dir DIR | --from-build DIR] [--out DIR]
#                          [--cross-build DIR | --no-cross] [-- MESON_SETUP_ARGS...]
#
# - configures its own build directory (default build-deb/) for /opt/aotc (libdir lib,
#   -Dpython_package=false, -Dwith_cuda=disabled unless MESON_SETUP_ARGS say otherwise) and
#   builds what it installs (the compiler, the backend library, the runtime, aotc-run; not
#   the tests): a full build, several minutes on 2 cores the first time;
#   or, with --from-build DIR, takes what DIR has built (seconds; it builds nothing there):
#   DIR is a build directory configured with -Dpython_package=true (pip install
#   --config-settings=build-dir=build . configures build/ so), whose install is the same
#   relocatable tree (bin, lib, include) inside site-packages/aotc; its Python files and the
#   CUDA runtime (libaotc_runtime_cuda.a, when DIR found nvcc) are left out, so the package
#   holds what the build-deb route gives. Build DIR first (meson compile -C DIR);
# - stages `meson install --destdir` under DIR/deb-root (with --from-build, in a temporary
#   directory, removed at the end), adds the aarch64 runtime and
#   aotc-run of the cross build directory (default build-aarch64-linux-gnu/, when it exists)
#   in /opt/aotc/lib/aarch64-linux-gnu/, where aotc --target-triple aarch64-linux-gnu finds them;
# - renames the compiler to bin/aotc-compiler and puts the LibTorch-finding wrapper
#   (below) at bin/aotc; /usr/bin/aotc and /usr/bin/aotc-run link to /opt/aotc/bin;
# - writes DEBIAN/control and builds OUT/aotc_<version>_amd64.deb (default OUT: out/).
#
# Why /opt/aotc and not /usr: the install keeps meson's relocatable layout (bin, lib,
# include under one prefix) as it is, and with /usr the cross runtime would land in
# /usr/lib/aarch64-linux-gnu, Debian's multiarch directory of arm64 packages, and the
# backend library and runtime in /usr/lib beside multiarch rules; under /opt/aotc the
# package owns every file it ships in a directory no other package uses. CMake finds it
# with -DCMAKE_PREFIX_PATH=/opt/aotc (or -Daotc_DIR=/opt/aotc/lib/cmake/aotc).
#
# LibTorch is not in the package: aotc (only the compiler; aotc-run and the models need no
# LibTorch) links the LibTorch of the torch 2.11.0 wheel it was built with, whose torch/lib
# directory it records as its RUNPATH. On another machine that directory usually does not
# exist; the wrapper bin/aotc then takes AOTC_TORCH_LIB, else the torch/lib of the torch
# package that python3 (or AOTC_PYTHON) imports, if it is the same torch version, and
# fails with `pip install torch==<version>` otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

build="build-deb"
build_given=""
from_build=""
out=out
cross="build-aarch64-linux-gnu"
prefix=/opt/aotc
setup_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; build_given=1; shift 2 ;;
    --from-build) from_build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cross-build) cross=$2; shift 2 ;;
    --no-cross) cross=""; shift ;;
    --) shift; setup_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "package_deb: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "package_deb: $*" >&2; exit 1; }
if [ -n "$from_build" ]; then
  [ -z "$build_given" ] || die "--build-dir and --from-build exclude each other"
  [ ${#setup_args[@]} -eq 0 ] || die "meson setup arguments (after --) need the build-deb route, not --from-build"
fi

# The venv of scripts/setup.sh: its meson, ninja and python3 with torch.
[ -x .venv/bin/python ] && export PATH="$root/.venv/bin:$PATH"
for tool in meson ninja python3 dpkg-deb; do
  command -v "$tool" >/dev/null || die "$tool not found (run scripts/setup.sh; dpkg-deb comes with dpkg)"
done
arch=$(dpkg --print-architecture)
[ "$arch" = amd64 ] || die "this script packages aotc for amd64; this machine is $arch"

# Reads one build option of a build directory from meson's introspection files.
option() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
for o in json.load(open(sys.argv[1] + "/meson-info/intro-buildoptions.json")):
    if o["name"] == sys.argv[2]:
        print(str(o["value"]).lower() if isinstance(o["value"], bool) else o["value"])
EOF
}
# The outputs of an install plan (paths relative to the build directory): building only
# them skips the unit tests, fuzzers and samples.
install_outputs() {
  python3 - "$1" <<'EOF'
import json, os, sys
build = os.path.realpath(sys.argv[1])
plan = json.load(open(os.path.join(build, "meson-info", "intro-install_plan.json")))
for src in plan.get("targets", {}):
    print(os.path.relpath(src, build))
EOF
}

if [ -z "$from_build" ]; then
# ---- configure and build ----
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --prefix "$prefix" --libdir lib --bindir bin --includedir include \
    --buildtype release -Dpython_package=false -Dwith_cuda=disabled "${setup_args[@]}"
elif [ ${#setup_args[@]} -gt 0 ]; then
  meson configure "$build" "${setup_args[@]}"
fi
if [ "$(option "$build" prefix)" != "$prefix" ] || [ "$(option "$build" libdir)" != lib ] ||
   [ "$(option "$build" python_package)" != false ]; then
  die "$build is configured for another layout (wanted --prefix $prefix --libdir lib -Dpython_package=false); remove it"
fi

# Regenerates build.ninja first when a meson.build changed, then the install plan is current.
ninja -C "$build" build.ninja >/dev/null
mapfile -t outputs < <(install_outputs "$build")
printf '%s\n' "${outputs[@]}" | grep -x compiler/aotc >/dev/null || die "$build builds no compiler (-Dbuild_compiler=false?)"
echo "package_deb: building ${outputs[*]} in $build"
ninja -C "$build" "${outputs[@]}"

# ---- stage ----
scratch=$build
stage=$(realpath -m "$build/deb-root")
rm -rf "$stage"
mkdir -p "$stage"
meson install -C "$build" --destdir "$stage" --no-rebuild --quiet
P=$stage$prefix
if [ ! -x "$P/bin/aotc" ] || [ ! -f "$P/lib/libaotc_runtime.a" ]; then
  die "meson install put no bin/aotc or lib/libaotc_runtime.a under $prefix"
fi

else
# ---- stage what a -Dpython_package=true build directory installs (--from-build) ----
# Nothing is built or written in it (meson install writes only its meson-logs/install-log.txt).
build=$from_build
[ -f "$build/meson-info/intro-buildoptions.json" ] || die "$build is no configured meson build directory"
[ "$(option "$build" python_package)" = true ] ||
  die "$build is not a -Dpython_package=true build directory (its install is not the relocatable aotc/ tree): use the build-deb route (no --from-build)"
install_outputs "$build" | grep -x compiler/aotc >/dev/null || die "$build builds no compiler (-Dbuild_compiler=false?)"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/aotc-deb.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
stage=$scratch/deb-root
installed=$scratch/install
echo "package_deb: staging the install of $build (meson install --no-rebuild: what it has built now)"
meson install -C "$build" --destdir "$installed" --no-rebuild --quiet
# The aotc prefix: <site-packages>/aotc, the directory that holds bin/aotc.
mapfile -t found < <(cd "$installed" && find . -path '*/bin/aotc' ! -type d | sed 's|^\./||')
[ ${#found[@]} -eq 1 ] || die "meson install -C $build installed ${#found[@]} bin/aotc (wanted one): ${found[*]}"
from=$(dirname "$(dirname "${found[0]}")")
[ "$from" != . ] || die "meson install -C $build installed bin/aotc at the top of its destdir"
[ -f "$installed/$from/lib/libaotc_runtime.a" ] || die "meson install -C $build put no lib/libaotc_runtime.a beside /$from/bin"
others=$(cd "$installed" && find . ! -type d ! -path "./$from/*")
[ -z "$others" ] || die "meson install -C $build installs files outside /$from: $others"
mkdir -p "$stage$(dirname "$prefix")"
mv "$installed/$from" "$stage$prefix"
P=$stage$prefix
# Not in the package: the Python package's files (the package has no Python module), and
# the CUDA runtime, which a build with nvcc installs (the package is the CPU build, as
# -Dwith_cuda=disabled makes it; its aotc --target cuda then says that the CUDA runtime is
# missing, where the build-deb route's says that aotc was built without CUDA).
rm -f "$P"/*.py "$P/lib/libaotc_runtime_cuda.a"
find "$P" -name __pycache__ -type d -prune -exec rm -rf {} +
extra=$(cd "$P" && find . -mindepth 1 -maxdepth 1 ! -name bin ! -name lib ! -name include)
[ -z "$extra" ] || die "the install of $build holds more than bin, lib and include: $extra"
[ -x "$P/bin/aotc" ] || die "meson install -C $build installed no executable bin/aotc"
fi  # (the build-deb route or --from-build)

triples=()
if [ -n "$cross" ] && [ -f "$cross/build.ninja" ]; then
  ninja -C "$cross" build.ninja >/dev/null
  mapfile -t cross_outputs < <(install_outputs "$cross")
  echo "package_deb: bringing ${cross_outputs[*]} in $cross up to date"
  ninja -C "$cross" "${cross_outputs[@]}"
  # A cross build installs only into <its libdir>/<triple>/ (meson.build: aotc_cross_triple).
  # Its prefix is its own, so it is installed aside and that directory moved into ours.
  cross_stage=$(realpath -m "$scratch/deb-cross-root")
  rm -rf "$cross_stage"
  meson install -C "$cross" --destdir "$cross_stage" --no-rebuild --quiet
  cross_libdir=$cross_stage$(option "$cross" prefix)/$(option "$cross" libdir)
  for dir in "$cross_libdir"/*-linux-gnu; do
    [ -f "$dir/libaotc_runtime.a" ] || continue
    triple=$(basename "$dir")
    # Anything else it installed would be a clash with the host install: refuse.
    others=$(cd "$cross_stage" && find . -type f ! -path "./${cross_libdir#"$cross_stage"/}/$triple/*")
    [ -z "$others" ] || die "$cross installs files outside <libdir>/$triple/: $others (reconfigure it: ninja -C $cross build.ninja)"
    rm -rf "${P:?}/lib/$triple"
    mv "$dir" "$P/lib/$triple"
    triples+=("$triple")
  done
  rm -rf "$cross_stage"
  [ ${#triples[@]} -gt 0 ] || die "$cross installs no runtime into <libdir>/<triple>/ (reconfigure it: ninja -C $cross build.ninja)"
elif [ -n "$cross" ]; then
  echo "package_deb: no $cross/ (scripts/setup.sh builds it): the package has no aarch64 runtime"
fi

# The LibTorch that aotc was built with: its RUNPATH and the torch version beside it.
torch_lib=$(python3 - "$build" <<'EOF'
import json, os, sys
plan = json.load(open(os.path.join(sys.argv[1], "meson-info", "intro-install_plan.json")))
print(next(t["install_rpath"] for src, t in plan["targets"].items() if src.endswith("/compiler/aotc")))
EOF
)
torch_version=$(sed -n "s/^__version__ = ['\"]\([^'\"+]*\).*/\1/p" "$torch_lib/../version.py" 2>/dev/null || true)
[ -n "$torch_version" ] || die "cannot read the torch version from $torch_lib/../version.py"

# The RUNPATHs meson install leaves: LibTorch's torch/lib in the compiler and the backend
# library, none in aotc-run (nothing of the build or source tree).
if command -v readelf >/dev/null; then
  for elf in bin/aotc lib/libaotc_torch_backend.so bin/aotc-run; do
    want=""
    [ "$elf" = bin/aotc-run ] || want="RUNPATH=$torch_lib"
    got=$(readelf -d "$P/$elf" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\1=\2/p' | paste -sd' ')
    [ "$got" = "$want" ] || die "$prefix/$elf has ${got:-no RUNPATH}, not ${want:-none}"
  done
fi

# bin/aotc becomes the wrapper that finds LibTorch (scripts/install_libtorch_wrapper.sh;
# a plain meson install, the build-deb route, has put it there already).
"$(dirname "$0")/install_libtorch_wrapper.sh" "$P/bin" "$torch_version" "$torch_lib"

# The commands on PATH.
mkdir -p "$stage/usr/bin"
ln -s "$prefix/bin/aotc" "$stage/usr/bin/aotc"
ln -s "$prefix/bin/aotc-run" "$stage/usr/bin/aotc-run"

# Documentation.
doc=$stage/usr/share/doc/aotc
mkdir -p "$doc"
cp LICENSE "$doc/copyright"
cat > "$doc/README.Debian" <<EOF
aotc for Debian
===============

aotc is installed in $prefix (bin/, lib/, include/); /usr/bin/aotc and /usr/bin/aotc-run
link to it. CMake: -DCMAKE_PREFIX_PATH=$prefix; pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig.

LibTorch is not part of this package. The compiler needs the LibTorch of torch $torch_version
(the CPU part of the torch wheel from PyPI) to load models:

    python3 -m pip install torch==$torch_version

/usr/bin/aotc finds it in the torch package of python3 (AOTC_PYTHON names another Python,
AOTC_TORCH_LIB a torch/lib directory). aotc-run and the compiled models need no LibTorch.
EOF
if [ ${#triples[@]} -gt 0 ]; then
  cat >> "$doc/README.Debian" <<EOF

Other targets: $prefix/lib/<triple>/ holds the runtime (and aotc-run, to copy to the
device) for ${triples[*]}; aotc --target-triple <triple> uses it. Compiling for aarch64
needs the arm64 C and C++ libraries for clang (libc6-dev-arm64-cross,
libstdc++-12-dev-arm64-cross); qemu-user runs the aarch64 aotc-run here.
EOF
fi
gzip -9n "$doc/README.Debian"

# ---- control ----
version=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
  "$build/meson-info/intro-projectinfo.json")
if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
  # Read-only: no index refresh (GIT_OPTIONAL_LOCKS=0), so no --dirty.
  describe=$(GIT_OPTIONAL_LOCKS=0 git describe --tags --always 2>/dev/null || true)
  # v0.1.0-12-gabc1234 (a tag of this version) -> 0.1.0+git.12.gabc1234; abc1234 (no tag)
  # -> 0.1.0+git.abc1234; .dirty with uncommitted changes.
  describe=${describe#v}
  if [ "$describe" = "$version" ]; then
    describe=""
  else
    describe=${describe#"$version"-}
  fi
  GIT_OPTIONAL_LOCKS=0 git diff --quiet HEAD -- 2>/dev/null || describe="${describe:+$describe.}dirty"
  if [ -n "$describe" ]; then
    version="$version+git.$(printf '%s' "$describe" | tr -c 'A-Za-z0-9.+~' '.')"
  fi
fi

# libc6 and libstdc++6 versions from the symbols the x86-64 binaries use (dpkg-shlibdeps);
# LibTorch, which no Debian package provides, is left out (-x none; --ignore-missing-info).
shlibs=""
if command -v dpkg-shlibdeps >/dev/null; then
  tmp=$(mktemp -d)
  mkdir -p "$tmp/debian"
  printf 'Source: aotc\n\nPackage: aotc\nArchitecture: amd64\n' > "$tmp/debian/control"
  elfs=("$P/bin/aotc-compiler" "$P/bin/aotc-run" "$P/lib/libaotc_torch_backend.so")
  shlibs=$(cd "$tmp" && dpkg-shlibdeps -O --ignore-missing-info -l"$torch_lib" "${elfs[@]}" 2>/dev/null |
           sed -n 's/^shlibs:Depends=//p') || shlibs=""
  rm -rf "$tmp"
fi
[ -n "$shlibs" ] || shlibs="libc6, libgcc-s1, libstdc++6"
depends="$shlibs, clang, lld, ninja-build"
installed_size=$(du -sk --apparent-size "$stage" | cut -f1)
maintainer=${AOTC_DEB_MAINTAINER:-aotc maintainers <aotc@localhost>}
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<EOF
Package: aotc
Version: $version
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Recommends: python3
Suggests: libc6-dev-arm64-cross, libstdc++-12-dev-arm64-cross, qemu-user, cmake, pkg-config
Section: devel
Priority: optional
Description: ahead-of-time compiler for PyTorch (TorchScript) models
 aotc compiles a TorchScript module into a shared library with a C ABI
 (aotc model.pt -o model.so --input x:1x3x224x224) that needs no LibTorch;
 aotc-run runs one. The model build uses clang++, lld and ninja.
 .
 The compiler itself needs LibTorch of torch $torch_version, which this
 package does not contain: install the torch wheel with
 "python3 -m pip install torch==$torch_version"; /usr/bin/aotc finds it
 there (see /usr/share/doc/aotc/README.Debian).
EOF
chmod -R u+rwX,go+rX,go-w "$stage"

mkdir -p "$out"
deb=$out/aotc_${version}_amd64.deb
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null

# ---- summary ----
echo
dpkg-deb --field "$deb" Package Version Depends
echo "package_deb: $deb: $(du -h --apparent-size "$deb" | cut -f1) ($(stat -c %s "$deb") bytes), installed $installed_size KiB"
# One line per file, the headers as one.
dpkg-deb --contents "$deb" | awk '
  $1 !~ /^d/ { n++; path = $6; sub(/^\.\//, "/", path)
               if ($1 ~ /^l/) path = path " -> " $8
               else if (path ~ /\/include\/aotc\//) path = "/opt/aotc/include/aotc/... (headers)"
               files[path]++; bytes[path] += $3 }
  END { for (p in files) printf "  %10d  %3d  %s\n", bytes[p], files[p], p; printf "  %d files\n", n }' |
  sort -k3
echo "package_deb: wrote $deb"
