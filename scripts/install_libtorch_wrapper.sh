#!/bin/sh
# Puts the LibTorch-finding wrapper (scripts/aotc-wrapper.sh.in) in front of an installed
# aotc: BINDIR/aotc becomes BINDIR/aotc-compiler (it stays in BINDIR: an installed aotc
# finds its prefix from its own directory) and BINDIR/aotc the wrapper, which says how to
# install torch where the LibTorch aotc was built against is gone, instead of the dynamic
# loader's bare "libtorch_cpu.so: cannot open shared object file".
#   install_libtorch_wrapper.sh BINDIR TORCH_VERSION TORCH_LIB
# Run by `meson install` of a plain layout (compiler/meson.build: BINDIR relative to
# $MESON_INSTALL_DESTDIR_PREFIX) and by scripts/package_deb.sh (an absolute BINDIR).
# A BINDIR that has the wrapper already is left as it is.
set -eu
bindir=$1
version=$2
lib=$3
case "$bindir" in
  /*) ;;
  *) bindir="${MESON_INSTALL_DESTDIR_PREFIX:?a relative BINDIR needs meson install}/$bindir" ;;
esac
template="$(dirname "$0")/aotc-wrapper.sh.in"
[ -f "$bindir/aotc" ] || { echo "install_libtorch_wrapper.sh: no $bindir/aotc" >&2; exit 1; }
if [ -f "$bindir/aotc-compiler" ] && [ "$(head -c 2 "$bindir/aotc")" = "#!" ]; then
  exit 0
fi
mv "$bindir/aotc" "$bindir/aotc-compiler"
sed -e "s|@TORCH_VERSION@|$version|g" -e "s|@TORCH_LIB@|$lib|g" "$template" > "$bindir/aotc"
chmod 0755 "$bindir/aotc"
