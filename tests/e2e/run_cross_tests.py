"""Runs tests of a cross build directory (e.g. build-aarch64-linux-gnu/) from the host
build: `meson test -C CROSS_DIR --no-rebuild ARGS...`, where meson runs each test program
under the cross file's exe_wrapper (qemu-aarch64). Skips (exit status 77) when the cross
build is missing (see refresh_cross_build.py, which writes --cross-status) or the emulator
is not installed.
Usage: run_cross_tests.py --cross-status FILE --cross-dir DIR --emulator PROGRAM -- ARGS..."""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SKIP  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cross-status", required=True)
    ap.add_argument("--cross-dir", required=True)
    ap.add_argument("--emulator", required=True)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    try:
        status = open(args.cross_status).read()
    except OSError:
        status = "missing"
    if status.startswith("failed"):
        print(status)
        print("FAIL: the cross build failed")
        return 1
    if status != "ok":
        print(f"SKIP: {args.cross_dir} is not configured (scripts/setup.sh configures it)")
        return SKIP
    if not shutil.which(args.emulator):
        print(f"SKIP: {args.emulator} is not installed (Debian package qemu-user)")
        return SKIP
    meson = shutil.which("meson") or "meson"
    extra = args.args[1:] if args.args[:1] == ["--"] else args.args
    cmd = [meson, "test", "-C", args.cross_dir, "--no-rebuild", "--print-errorlogs"] + extra
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
