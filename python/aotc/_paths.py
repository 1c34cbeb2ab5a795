"""Where the package's native parts are.

Installed (pip install .), the package directory holds the compiler and its runtime in the
layout of any aotc install: bin/aotc, bin/aotc-run, lib/ (the runtime the models link, the
TorchScript backend library) and include/aotc/. Imported from the source tree
(PYTHONPATH=python), it uses the meson build directory build/ beside python/ instead.
AOTC_HOME names another install prefix with the same layout.
"""
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_SOURCE_BUILD = PACKAGE_DIR.parent.parent / "build"

# name -> (path in an install prefix, path in the meson build directory)
_FILES = {
    "aotc": ("bin/aotc", "compiler/aotc"),
    "aotc-run": ("bin/aotc-run", "tools/aotc-run/aotc-run"),
    "torch_backend": ("lib/libaotc_torch_backend.so", "compiler/libaotc_torch_backend.so"),
}


def _find(name):
    installed, in_build = _FILES[name]
    candidates = []
    if os.environ.get("AOTC_HOME"):
        candidates.append(Path(os.environ["AOTC_HOME"]) / installed)
    candidates += [PACKAGE_DIR / installed, _SOURCE_BUILD / in_build]
    for path in candidates:
        if path.is_file():
            return str(path)
    raise FileNotFoundError(
        f"aotc: cannot find {name} (looked in {', '.join(str(c) for c in candidates)}); "
        "install the package with 'pip install .' from the aotc repository, or build it with meson")


def aotc_executable():
    """Path of the aotc compiler."""
    return _find("aotc")


def aotc_run_executable():
    """Path of the aotc-run tool."""
    return _find("aotc-run")


def torch_backend_library():
    """Path of the TorchScript backend library, for torch.ops.load_library."""
    return _find("torch_backend")


def compiler_fingerprint():
    """Identifies the compiler build (version, size and time of the executable): part of
    every cache key, so that a rebuilt or upgraded aotc never reuses another's libraries."""
    from . import __version__
    path = aotc_executable()
    st = os.stat(path)
    return f"{__version__}:{st.st_size}:{st.st_mtime_ns}"
