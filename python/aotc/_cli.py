"""The aotc and aotc-run commands of an installed package: each runs the native program of
the same name (bin/ inside the package) with the same arguments."""
import os
import sys

from . import _paths


def _exec(path, env=None):
    try:
        if env is None:
            os.execv(path, [path] + sys.argv[1:])
        os.execve(path, [path] + sys.argv[1:], env)
    except OSError as e:
        sys.stderr.write(f"{os.path.basename(path)}: error: cannot run {path}: {e.strerror}\n")
        sys.exit(127)


def _torch_version(torch_dir):
    """torch.__version__ of the torch package in torch_dir, read without importing it."""
    scope = {}
    try:
        with open(os.path.join(torch_dir, "version.py")) as f:
            exec(f.read(), scope)
    except (OSError, SyntaxError):
        return None
    return scope.get("__version__")


def _libtorch_env(path):
    """bin/aotc needs the LibTorch it was linked against (its RUNPATH, recorded in
    _build_config at build time); without it the dynamic loader stops it before main with
    only "libtorch_cpu.so: cannot open shared object file". Returns the environment to run
    it with (None: unchanged), or exits with a message that says how to fix it."""
    try:
        from . import _build_config
    except ImportError:  # imported from the source tree: build/compiler/aotc, nothing recorded
        return None
    want, want_dir = _build_config.TORCH_VERSION, _build_config.TORCH_LIB_DIR
    lib = "libtorch_cpu.so"
    dirs = [want_dir] + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    if any(os.path.isfile(os.path.join(d, lib)) for d in dirs):
        return None
    # The torch of this Python, when it is the same version (e.g. the venv was moved).
    import importlib.util
    spec = importlib.util.find_spec("torch")
    here = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
    have = _torch_version(here) if here else None
    if have == want and os.path.isfile(os.path.join(here, "lib", lib)):
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [os.path.join(here, "lib"),
                                                              env.get("LD_LIBRARY_PATH")]))
        return env
    found = f"this Python has torch {have} in {here}" if have else f"this Python ({sys.executable}) has no torch"
    sys.stderr.write(
        f"aotc: error: LibTorch is missing: {path} was built against torch {want} and looks for "
        f"{lib} in {want_dir}, which does not exist ({found}).\n"
        f"  Fix: install torch {want} into this environment "
        f"(pip install torch=={want.split('+')[0]}), or set LD_LIBRARY_PATH to the torch/lib "
        f"directory of a torch {want} install, or reinstall aotc against the torch you have "
        f"(pip install --no-build-isolation . in the aotc repository).\n")
    sys.exit(127)


def aotc():
    if sys.argv[1:2] == ["serve"]:  # aotc serve model.so ...: the Python server (_serve.py)
        from . import _serve
        sys.exit(_serve.main(sys.argv[2:]))
    path = _paths.aotc_executable()
    _exec(path, _libtorch_env(path))


def aotc_run():
    _exec(_paths.aotc_run_executable())
