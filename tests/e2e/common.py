"""What the Python test scripts share (tests/e2e, tests/cuda, tests/python): one copy of each
helper that every script used to define for itself. A script imports it with tests/e2e on
sys.path (from tests/cuda or tests/python: os.path.join(HERE, "..", "e2e")):

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import SKIP, TOLERANCE, expect, finish  # noqa: E402

What is here:
  SKIP, TOLERANCE       meson's exit status for a skipped test (77); the bound on the relative
                        L2 error of a float32 result against torch (1e-4). A script with a
                        deliberately other bound (the CUDA precisions) passes its own.
  expect, raises,       the check collector: expect(name, ok, detail) prints "ok   NAME" or
  failures, finish      "FAIL NAME: DETAIL" and records NAME in failures; raises(name, fn,
                        exception type, words) expects fn() to raise it with those words;
                        finish(message) prints the summary, "N failure(s): NAME, NAME" or
                        message, and returns the exit status (1 or 0).
  rel_l2, close_to,     comparisons: the relative L2 error in float64 (numpy arrays or torch
  same, flatten         tensors, any float dtype, any device); shape and error within a bound;
                        nested outputs compared (structure, dtype, shape, device; floats by
                        relative L2, the rest exactly); a model's nested outputs (tuples, lists,
                        dicts) as the flat list of tensors in aotc's output order.
  input_spec, aotc_command, run_aotc, save_module, compile_module, needed_libraries
                        compiling: --input NAME:DIMS:DTYPE of a tensor; the aotc command line
                        (--input, --dim, --target and more); running it; saving a module as
                        TorchScript (scripted, or traced on example inputs); both at once,
                        returning the .so and raising with aotc's message when it fails; the
                        NEEDED libraries of a .so, and GLIBC_LIBRARIES, all a CPU model may need.
  write_inputs, run_aotc_run, read_outputs
                        running: inputs saved as .npy files (the --input NAME=FILE arguments
                        returned), aotc-run (under an emulator if given), its outN.npy files.
  arg_parser            the options the scripts share: --aotc, --aotc-run, --workdir.

Only the standard library is imported here: numpy and torch are imported by the functions
that need them, so that a script can still report a skip (exit status 77) without them, and
`import aotc` can still be tested not to import torch."""
import argparse
import os
import subprocess

SKIP = 77  # meson's exit status for a skipped test
TOLERANCE = 1e-4  # relative L2 error of a float32 result against torch

# What a model .so for a CPU target may need: glibc and the loader, no LibTorch, no libstdc++.
GLIBC_LIBRARIES = frozenset({"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2",
                             "ld-linux-aarch64.so.1"})
AOTC_DTYPES = ("float32", "int64", "int32", "bool")  # what --input takes

# ---- checks ----

failures = []  # names of the failed checks, in order


def expect(name, ok, detail=""):
    """Prints "ok   NAME", or "FAIL NAME: DETAIL" (repr of detail, left out when it is "") and
    records the failure. Returns ok."""
    shown = "" if ok or (isinstance(detail, str) and not detail) else f": {detail!r}"
    print(f"{'ok  ' if ok else 'FAIL'} {name}{shown}", flush=True)
    if not ok:
        failures.append(name)
    return ok


def raises(name, fn, exc_type, *needles, status=None):
    """expect() that fn() raises exc_type with every needle in its message (and, if given,
    status as the exception's status). Returns whether it did."""
    try:
        fn()
    except exc_type as e:
        text = str(e)
        ok = all(n in text for n in needles) and (status is None or getattr(e, "status", None) == status)
        return expect(name, ok, f"{type(e).__name__}: {text}")
    except Exception as e:  # the wrong kind of error
        return expect(name, False, f"{type(e).__name__}: {e}")
    return expect(name, False, "no exception")


def finish(success):
    """The summary line: "N failure(s): NAME, ..." and 1 if any check failed, else success and 0."""
    if failures:
        print(f"{len(failures)} failure(s): {', '.join(failures)}", flush=True)
        return 1
    print(success, flush=True)
    return 0


# ---- comparisons ----

def _float64(x):
    import numpy as np
    if hasattr(x, "detach"):  # a torch tensor: on the CPU, in float64 (bfloat16 has no numpy type)
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def rel_l2(got, want):
    """||got - want|| / ||want|| in float64 (||got - want|| where want is all zeros), over the
    finite values of want: NaNs and infinities must be where want has them (infinities with
    its signs), else the error is infinite. Never NaN, so `err <= tol` decides."""
    import numpy as np
    got, want = _float64(got), _float64(want)
    if got.size != want.size:
        return float("inf")
    got = got.reshape(want.shape)
    finite = np.isfinite(want)
    same_nan = np.array_equal(np.isnan(got), np.isnan(want))
    same_inf = np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(got[np.isinf(want)],
                                                                                   want[np.isinf(want)])
    if not (same_nan and same_inf):
        return float("inf")
    diff = float(np.linalg.norm((got[finite] - want[finite]).ravel()))
    norm = float(np.linalg.norm(want[finite].ravel()))
    return diff / norm if norm > 0 else diff


def close_to(got, want, tol=TOLERANCE):
    """The same shape, and a relative L2 error of at most tol."""
    return tuple(got.shape) == tuple(want.shape) and rel_l2(got, want) <= tol


def same(got, want, tol=TOLERANCE):
    """(ok, detail) for torch outputs of any nesting (tuples, lists): the same structure, and
    tensors of the same dtype, shape and device whose floats are within a relative L2 error of
    tol and whose other elements are equal."""
    import torch
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return False, f"got {type(got).__name__} of {len(got) if hasattr(got, '__len__') else '?'}, " \
                          f"want {type(want).__name__} of {len(want)}"
        results = [same(g, w, tol) for g, w in zip(got, want)]
        return all(r[0] for r in results), [r[1] for r in results]
    if not isinstance(got, torch.Tensor):
        return False, f"got a {type(got).__name__}"
    if got.dtype != want.dtype or got.shape != want.shape or got.device != want.device:
        return False, f"got {got.dtype} {tuple(got.shape)} on {got.device}, want {want.dtype} {tuple(want.shape)} " \
                      f"on {want.device}"
    if want.is_floating_point():
        err = rel_l2(got, want)
        return err <= tol, f"relative L2 {err:.3g}"
    return bool(torch.equal(got, want)), "exact"


def flatten(value, out=None):
    """The tensors of a model's output (a tensor, or tuples, lists and dicts of them, nested),
    appended to out (a new list by default) in the order aotc numbers its outputs."""
    import torch
    out = [] if out is None else out
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            flatten(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            flatten(v, out)
    else:
        raise TypeError(f"unexpected output type {type(value)}")
    return out


# ---- compiling ----

def input_spec(name, tensor):
    """aotc's --input NAME:DIMS:DTYPE for a torch tensor or numpy array."""
    dtype = str(tensor.dtype).replace("torch.", "")
    if dtype not in AOTC_DTYPES:
        raise ValueError(f"input {name}: aotc takes {', '.join(AOTC_DTYPES)}, not {dtype}")
    return f"{name}:{'x'.join(str(d) for d in tensor.shape)}:{dtype}"


def aotc_command(aotc, pt, so, inputs=(), dims=(), target=None, extra=()):
    """aotc PT -o SO [--target TARGET] --input ... --dim ... EXTRA. inputs: (name, tensor)
    pairs or "NAME:DIMS[:DTYPE]" specs; dims: "NAME=MIN..MAX"."""
    cmd = [aotc, pt, "-o", so]
    if target:
        cmd += ["--target", target]
    for item in inputs:
        cmd += ["--input", item if isinstance(item, str) else input_spec(*item)]
    for dim in dims:
        cmd += ["--dim", dim]
    return cmd + [str(a) for a in extra]


def run_aotc(aotc, pt, so, inputs=(), dims=(), target=None, extra=(), **kwargs):
    """Runs aotc_command(...) with its output captured (text); kwargs go to subprocess.run
    (cwd, env, timeout). Returns the CompletedProcess."""
    return subprocess.run(aotc_command(aotc, pt, so, inputs, dims, target, extra), capture_output=True, text=True,
                          **kwargs)


def save_module(module, pt, example_inputs=None):
    """Saves module as the TorchScript file pt and returns pt: a ScriptModule (scripted or
    traced) as it is; else module.eval() traced on example_inputs (a tuple of tensors; with
    check_trace=False, and gradients as the caller has them) when given, scripted when not."""
    import torch
    if not isinstance(module, torch.jit.ScriptModule):
        module = module.eval()
        if example_inputs is None:
            module = torch.jit.script(module)
        else:
            module = torch.jit.trace(module, tuple(example_inputs), check_trace=False)
    torch.jit.save(module, pt)
    return pt


def compile_module(aotc, module, so, inputs=(), dims=(), target=None, extra=(), trace=False):
    """Saves module beside so (SO's name with .pt: save_module, traced on the inputs' tensors if
    trace) and compiles it to so; returns so. Raises RuntimeError with aotc's exit status and
    the end of its messages when aotc fails."""
    pt = os.path.splitext(so)[0] + ".pt"
    save_module(module, pt, tuple(t for _, t in inputs) if trace else None)
    result = run_aotc(aotc, pt, so, inputs, dims, target, extra)
    if result.returncode != 0:
        raise RuntimeError(f"aotc exited with {result.returncode}: "
                           f"{' '.join(aotc_command(aotc, pt, so, inputs, dims, target, extra))}\n"
                           f"{(result.stdout + result.stderr)[-6000:]}")
    return so


def needed_libraries(so):
    """The NEEDED entries of so's dynamic section (readelf -d)."""
    dynamic = subprocess.run(["readelf", "-d", so], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line]


# ---- running ----

def write_inputs(inputs, directory, prefix="in_"):
    """Saves each input (name, tensor or array) pairs, or a {name: array} dict, as
    DIRECTORY/PREFIXNAME.npy; returns aotc-run's arguments --input NAME=FILE ..."""
    import numpy as np
    args = []
    for name, value in (inputs.items() if isinstance(inputs, dict) else inputs):
        path = os.path.join(directory, f"{prefix}{name}.npy")
        np.save(path, value.numpy() if hasattr(value, "numpy") else value)
        args += ["--input", f"{name}={path}"]
    return args


def run_aotc_run(aotc_run, so, *args, emulator=(), **kwargs):
    """Runs EMULATOR... aotc-run SO ARGS with its output captured (text); kwargs go to
    subprocess.run. Returns the CompletedProcess."""
    return subprocess.run([*emulator, aotc_run, so, *[str(a) for a in args]], capture_output=True, text=True,
                          **kwargs)


def read_outputs(out_dir, count):
    """The arrays out0.npy ... out{count-1}.npy that aotc-run --output-dir OUT_DIR wrote."""
    import numpy as np
    return [np.load(os.path.join(out_dir, f"out{i}.npy")) for i in range(count)]


# ---- options ----

def arg_parser(aotc=True, aotc_run=False, workdir=True):
    """An ArgumentParser with the shared options, each required: --aotc (the compiler under
    test), --aotc-run (the runner) and --workdir (scratch space), as asked for."""
    ap = argparse.ArgumentParser()
    if aotc:
        ap.add_argument("--aotc", required=True)
    if aotc_run:
        ap.add_argument("--aotc-run", required=True)
    if workdir:
        ap.add_argument("--workdir", required=True)
    return ap
