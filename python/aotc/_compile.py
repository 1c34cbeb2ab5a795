"""aotc.compile: compile a PyTorch module for example inputs into a model library (.so).

    import aotc, torch
    aotc.compile(model, (torch.randn(1, 3, 224, 224),), "model.so")
    m = aotc.load("model.so")

The module is saved as TorchScript into a private temporary directory and given to the aotc
executable (aotc._paths.aotc_executable()), one --input NAME:DIMS:DTYPE per example input.
"""
import copy
import io
import itertools
import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ._errors import CompileError

# torch dtype name -> aotc's dtype name (the only dtypes an aotc input may have)
_DTYPE_NAMES = {
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "int32": "int32",
    "bool": "bool",
}
_TARGETS = ("cpu", "cuda")
_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
_WEIGHTS = ("embed", "file")


def dtype_name(dtype):
    """aotc's name of a torch dtype ("float32", ...), or None where aotc has no such input dtype."""
    return _DTYPE_NAMES.get(str(dtype).replace("torch.", ""))


def check_options(target, precision, weights):
    if target not in _TARGETS:
        raise ValueError(f"aotc: target must be one of {', '.join(_TARGETS)}, not {target!r}")
    if precision is not None and precision not in _PRECISIONS:
        raise ValueError(f"aotc: precision must be one of {', '.join(_PRECISIONS)} or None, not {precision!r}")
    if weights not in _WEIGHTS:
        raise ValueError(f"aotc: weights must be one of {', '.join(_WEIGHTS)}, not {weights!r}")
    if precision is not None and target != "cuda":
        raise ValueError(f"aotc: precision={precision!r} needs target='cuda' (it sets cuda's matrix products)")


def _safe_file_stem(name):
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name or "model").strip(".") or "model"
    return stem[:100]


def run_aotc(script_module, specs, output, *, display_name, method="forward", target="cpu", precision=None,
             weights="embed", verbose=False, extra_args=()):
    """Save script_module into a private temporary directory and compile it with aotc into output.

    specs: (name, shape tuple, aotc dtype name) per input, in argument order. aotc writes output
    atomically. On failure raises CompileError with aotc's message, in which the temporary file's
    path reads display_name. The temporary directory is always removed."""
    import torch

    from ._paths import aotc_executable

    exe = aotc_executable()
    tmp = tempfile.mkdtemp(prefix="aotc-compile-")
    try:
        pt = os.path.join(tmp, _safe_file_stem(display_name) + ".pt")
        torch.jit.save(script_module, pt)
        cmd = [exe, pt, "-o", os.fspath(output)]
        for name, shape, dtype in specs:
            cmd += ["--input", f"{name}:{'x'.join(str(int(d)) for d in shape)}:{dtype}"]
        if method != "forward":
            cmd += ["--method", method]
        if target != "cpu":
            cmd += ["--target", target]
        if precision is not None:
            cmd += ["--precision", precision]
        if weights != "embed":
            cmd += ["--weights", weights]
        if verbose:
            cmd.append("-v")
        cmd += list(extra_args)
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")

        def clean(text):
            # the temporary file means nothing to the caller: name the module instead
            return text.replace(pt, display_name).replace(tmp + os.sep, "").replace(tmp, "<tmp>")

        if verbose:
            if proc.stdout:
                sys.stdout.write(clean(proc.stdout))
            if proc.stderr and proc.returncode == 0:
                sys.stderr.write(clean(proc.stderr))
        if proc.returncode != 0:
            message = clean(proc.stderr.strip() or proc.stdout.strip() or
                            f"aotc exited with status {proc.returncode}")
            raise CompileError(message)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return os.fspath(output)


def unsupported_ops(message):
    """The op names ("aten::linalg_inv", ...) that an aotc error message lists as unsupported."""
    return re.findall(r"^\s+([A-Za-z_][\w.]*::[\w.]+)\s+x\d+\s*$", message, flags=re.M)


def _schema_names(script_module, method):
    fn = getattr(script_module, method)
    args = fn.schema.arguments[1:]  # [0] is self
    return [re.sub(r"\.\d+$", "", a.name) for a in args]


def _wrap_scalar_inputs(script_module, method, names, inputs, torch):
    """aotc's inputs have at least one dimension: a module taking 0-d inputs is wrapped in one that
    takes them with shape (1,) and hands the module a 0-d view. Returns (script, inputs)."""
    params = [n if n.isidentifier() and not keyword.iskeyword(n) and n != "self" else f"input{i}"
              for i, n in enumerate(names)]
    if len(set(params)) != len(params):
        params = [f"input{i}" for i in range(len(names))]
    body = ", ".join(f"{p}.reshape(())" if t.dim() == 0 else p for p, t in zip(params, inputs))
    source = (f"def forward(self, {', '.join(params)}):\n"
              f"    return self.inner.{method}({body})\n")
    namespace = {}
    exec(source, namespace)  # noqa: S102 (the names are checked identifiers)

    class ScalarInputs(torch.nn.Module):
        forward = namespace["forward"]

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

    wrapper = ScalarInputs(script_module).eval()
    lifted = tuple(t.reshape(1) if t.dim() == 0 else t for t in inputs)
    with torch.no_grad():
        traced = torch.jit.trace(wrapper, lifted, check_trace=False)
    return traced, lifted


def compile(model, example_inputs, output, *, input_names=None, target="cpu", precision=None, weights="embed",
            method="forward", verbose=False, cpu_threads=None):
    """Compile model for example_inputs into the model library output (a .so); returns its path.

    model: a torch.jit.ScriptModule (scripted or traced) or a plain torch.nn.Module, which is
      traced here (torch.jit.trace under torch.no_grad(), in eval mode; the module's and its
      submodules' training flags are restored afterwards).
    example_inputs: a tensor or a tuple of tensors, one per argument of the method, of dtype
      float32, float16, bfloat16, int64, int32 or bool. The library is specialised to their
      shapes and dtypes; their values do not matter. A module or inputs on a GPU are traced
      and saved from CPU copies (aotc reads TorchScript on the CPU); the module is not moved.
      A 0-d tensor becomes an input of shape (1,) in the library (aotc's inputs have at least
      one dimension); the model still sees a 0-d tensor.
    input_names: the library's input names; by default the method's argument names.
    target: "cpu" or "cuda". precision: None or "fp32", "tf32", "fp16", "bf16" (cuda's matrix
      products). weights: "embed" (inside the .so) or "file" (model.weights beside it).
    method: the method to compile. verbose: print aotc's graph, passes and timings.
    cpu_threads: None, or the threads the library will run on (aotc --cpu-threads), for the
      kernel choices that depend on them (docs/USAGE.md). Any thread count runs any library
      correctly.

    Raises CompileError with aotc's message (every unsupported op, with its source lines) when
    aotc cannot compile the model; nothing is then written at output.
    """
    import torch

    check_options(target, precision, weights)
    if cpu_threads is not None and (isinstance(cpu_threads, bool) or not isinstance(cpu_threads, int)
                                    or not 1 <= cpu_threads <= 1024):
        raise ValueError(f"aotc.compile: cpu_threads must be None or an int from 1 to 1024, not {cpu_threads!r}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise TypeError("aotc.compile: example_inputs must be a tensor or a tuple of tensors, "
                        f"not {type(example_inputs).__name__}")
    inputs = tuple(example_inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"aotc.compile: example input {i} is a {type(t).__name__}, not a tensor")
        if dtype_name(t.dtype) is None:
            raise ValueError(f"aotc.compile: example input {i} has dtype {t.dtype}; aotc's inputs are "
                             "float32, float16, bfloat16, int64, int32 or bool")
        if any(d == 0 for d in t.shape):
            raise ValueError(f"aotc.compile: example input {i} has shape {tuple(t.shape)}; "
                             "aotc's input sizes must be positive")
        if t.dim() > 8:
            raise ValueError(f"aotc.compile: example input {i} has {t.dim()} dimensions; aotc takes at most 8")

    def off_cpu(module):
        return any(t.device.type != "cpu" for t in itertools.chain(module.parameters(), module.buffers()))

    if isinstance(model, torch.jit.ScriptModule):
        script = model
        display_name = getattr(model, "original_name", None) or type(model).__name__
        if off_cpu(script):
            # aotc reads TorchScript with a CPU-only LibTorch: a copy with its tensors on the CPU
            buffer = io.BytesIO()
            torch.jit.save(script, buffer)
            buffer.seek(0)
            script = torch.jit.load(buffer, map_location="cpu")
    elif isinstance(model, torch.nn.Module):
        display_name = type(model).__name__
        flags = [(m, m.training) for m in model.modules()]
        traced_model, trace_inputs = model, inputs
        if off_cpu(model) or any(t.device.type != "cpu" for t in inputs):
            # traced on the CPU (aotc reads TorchScript with a CPU-only LibTorch): a CPU copy
            traced_model = copy.deepcopy(model).cpu()
            trace_inputs = tuple(t.detach().cpu() for t in inputs)
        try:
            traced_model.eval()
            with torch.no_grad():
                if method == "forward":
                    script = torch.jit.trace(traced_model, trace_inputs, check_trace=False)
                else:
                    script = torch.jit.trace_module(traced_model, {method: trace_inputs}, check_trace=False)
        finally:
            for m, training in flags:
                m.training = training
    else:
        raise TypeError("aotc.compile: model must be a torch.nn.Module or a torch.jit.ScriptModule, "
                        f"not {type(model).__name__}")
    if not hasattr(script, method):
        raise ValueError(f"aotc.compile: {display_name} has no method {method!r}")

    names = _schema_names(script, method)[:len(inputs)]
    if input_names is not None:
        input_names = [str(n) for n in input_names]
        if len(input_names) != len(inputs):
            raise ValueError(f"aotc.compile: {len(input_names)} input name(s) for {len(inputs)} example input(s)")
    inputs = tuple(t.detach().cpu() for t in inputs)  # only their shapes and dtypes matter now
    if any(t.dim() == 0 for t in inputs):
        script, inputs = _wrap_scalar_inputs(script, method, names, inputs, torch)
        names = _schema_names(script, "forward")[:len(inputs)]
        method = "forward"
    if input_names is not None:
        # aotc matches --input names to the argument names: rename them in a wrapper when they differ
        if input_names != names:
            script = _renamed(script, method, input_names, inputs, torch)
            names, method = list(input_names), "forward"

    specs = [(n, tuple(t.shape), dtype_name(t.dtype)) for n, t in zip(names, inputs)]
    return run_aotc(script, specs, output, display_name=display_name, method=method, target=target,
                    precision=precision, weights=weights, verbose=verbose,
                    extra_args=() if cpu_threads is None else ("--cpu-threads", str(cpu_threads)))


def _renamed(script_module, method, new_names, inputs, torch):
    """A traced wrapper whose forward takes the arguments under new_names and calls the module."""
    for n in new_names:
        if not n.isidentifier() or keyword.iskeyword(n) or n == "self":
            raise ValueError(f"aotc.compile: input name {n!r} is not a Python identifier")
    if len(set(new_names)) != len(new_names):
        raise ValueError(f"aotc.compile: input names repeat: {new_names}")
    params = ", ".join(new_names)
    source = f"def forward(self, {params}):\n    return self.inner.{method}({params})\n"
    namespace = {}
    exec(source, namespace)  # noqa: S102 (the names are checked identifiers)

    class Renamed(torch.nn.Module):
        forward = namespace["forward"]

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

    with torch.no_grad():
        return torch.jit.trace(Renamed(script_module).eval(), tuple(inputs), check_trace=False)
