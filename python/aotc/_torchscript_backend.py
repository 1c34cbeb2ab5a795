"""The TorchScript backend "aotc": lowering a scripted module (or some of its submodules) so
that TorchScript runs the lowered methods through aotc-compiled libraries.

The backend itself is C++ (compiler/torch_backend/, libaotc_torch_backend.so): its
preprocess runs aotc's compiler on the module and keeps the built library's bytes in the
lowered module, so torch.jit.save writes them into the archive. A saved lowered module
loads wherever the backend library is loaded first: torch.ops.load_library(
aotc.torch_backend_library()) in Python, or linking it (with --no-as-needed) in C++.
"""
from ._errors import CompileError
from ._paths import torch_backend_library

_OPTION_KEYS = ("target", "precision", "threads")


def load_torch_backend():
    """Loads the backend library into this process (once); needed before torch.jit.load of a
    module lowered to aotc, and done by to_backend itself."""
    import torch
    path = torch_backend_library()
    if path not in torch.ops.loaded_libraries:
        torch.ops.load_library(path)
    return path


def _method_spec(method, value, options):
    """One method's compile spec as the backend takes it: a dict of strings (TorchScript
    infers one value type for a dict, so every value is a string)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)):
        value = {"inputs": list(value)}
    if not isinstance(value, dict):
        raise TypeError(f"aotc.to_backend: the spec of '{method}' must be a list of 'NAME:DIMS[:DTYPE]' "
                        f"strings or a dict with 'inputs', got {type(value).__name__}")
    unknown = set(value) - {"inputs", *_OPTION_KEYS}
    if unknown:
        raise ValueError(f"aotc.to_backend: unknown key(s) {sorted(unknown)} in the spec of '{method}' "
                         f"(known: inputs, {', '.join(_OPTION_KEYS)})")
    inputs = value.get("inputs")
    if isinstance(inputs, str):
        inputs = inputs.split()
    if not inputs or not all(isinstance(i, str) for i in inputs):
        raise ValueError(f"aotc.to_backend: the spec of '{method}' needs 'inputs', a list of "
                         f"'NAME:DIMS[:DTYPE]' strings such as 'x:1x3x224x224'")
    spec = {"inputs": " ".join(inputs)}
    for key in _OPTION_KEYS:
        chosen = options.get(key) if options.get(key) is not None else value.get(key)
        if chosen is not None:
            spec[key] = str(chosen)
    return spec


def _lower(module, spec, options):
    import torch
    compile_spec = {method: _method_spec(method, value, options) for method, value in spec.items()}
    for method in compile_spec:
        if not hasattr(module, method):
            raise ValueError(f"aotc.to_backend: {type(module).__name__} has no method '{method}'")
    try:
        return torch._C._jit_to_backend("aotc", module, compile_spec)
    except RuntimeError as e:
        message = str(e)
        if "aotc:" in message:
            raise CompileError(message[message.index("aotc:"):]) from None
        raise


def to_backend(module, spec, *, submodule=None, target=None, precision=None, threads=None):
    """Lowers a TorchScript module to aotc and returns the lowered module.

    module: a torch.jit.ScriptModule (an nn.Module is scripted first).
    spec: method name -> its inputs in aotc's --input syntax, e.g.
        {"forward": ["x:1x3x224x224"]} or {"forward": ["ids:1x128:int64", "mask:1x128:bool"]},
        or a dict {"inputs": [...], "target": "cuda", "precision": "tf32", "threads": 2}.
    submodule: the dotted name of one submodule to lower ("backbone", "encoder.layers.0"):
        the rest of the module stays TorchScript (partial lowering, for a model whose other
        parts use ops aotc lacks); spec then gives that submodule's methods.
    target, precision, threads: for every method, over what spec says. threads defaults to
        torch.get_num_threads() in the process that loads the module; a CPU method whose
        threads are given is compiled for them (aotc --cpu-threads).

    Raises aotc.CompileError with aotc's message (every unsupported op, its count and
    source lines) when a method cannot be compiled.
    """
    import torch
    load_torch_backend()
    if not isinstance(module, torch.jit.ScriptModule):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"aotc.to_backend: expected a torch.jit.ScriptModule or nn.Module, got "
                            f"{type(module).__name__}")
        module = torch.jit.script(module)
    if not isinstance(spec, dict) or not spec:
        raise TypeError("aotc.to_backend: spec must be a dict of method name -> inputs, e.g. "
                        "{'forward': ['x:1x3x224x224']}")
    options = {"target": target, "precision": precision, "threads": threads}
    if submodule is None:
        return _lower(module, spec, options)
    owner = module
    for part in submodule.split("."):
        if not hasattr(owner, part) or not isinstance(getattr(owner, part), torch.jit.ScriptModule):
            raise ValueError(f"aotc.to_backend: {type(module).__name__} has no submodule '{submodule}'")
        owner = getattr(owner, part)
    return torch._C._jit_to_backend_selective(module, lambda sub: _lower(sub, spec, options), [submodule])
