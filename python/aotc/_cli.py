"""The aotc and aotc-run commands of an installed package: each runs the native program of
the same name (bin/ inside the package) with the same arguments."""
import os
import sys

from . import _paths


def _exec(path):
    try:
        os.execv(path, [path] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"{os.path.basename(path)}: error: cannot run {path}: {e.strerror}\n")
        sys.exit(127)


def aotc():
    _exec(_paths.aotc_executable())


def aotc_run():
    _exec(_paths.aotc_run_executable())
