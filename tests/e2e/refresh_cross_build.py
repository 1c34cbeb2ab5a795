"""Brings a cross build directory (e.g. build-aarch64-linux-gnu/, configured by
scripts/setup.sh) up to date before the tests that use it, and writes what happened to a
status file that those tests read (tests/e2e/check_model.py --cross-status):
  ok           the cross build is up to date
  missing      the directory is not configured: the tests skip
  failed ...   building it failed (the tests fail and show the log)
It always exits 0, so that a broken cross build fails only the tests that need it and
not every test that `meson test` runs. Usage: refresh_cross_build.py CROSS_DIR STATUS_FILE"""
import os
import shutil
import subprocess
import sys


def main():
    cross_dir, status_file = sys.argv[1], sys.argv[2]
    if not os.path.isfile(os.path.join(cross_dir, "build.ninja")):
        status = "missing"
    else:
        ninja = shutil.which("ninja") or "ninja"
        result = subprocess.run([ninja, "-C", cross_dir], capture_output=True, text=True)
        if result.returncode == 0:
            status = "ok"
        else:
            status = "failed: ninja -C %s exited with %d\n%s" % (cross_dir, result.returncode,
                                                                 (result.stdout + result.stderr)[-6000:])
            print(status)
    with open(status_file, "w") as f:
        f.write(status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
