"""aotc: an ahead-of-time compiler for PyTorch models.

    m = aotc.load("model.so")                 # run a compiled library (numpy or torch)
    aotc.compile(model, (x,), "model.so")     # compile a module for example inputs
    aotc.to_backend(scripted, {"forward": ["x:1x3x224x224"]})   # TorchScript backend "aotc"
    torch.compile(model, backend="aotc")      # torch.compile backend (registered on install)

Importing aotc does not import torch: each part is imported when first used.
"""
import importlib

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "load": "._runtime",
    "Model": "._runtime",
    "TensorSpec": "._runtime",
    "AotcError": "._errors",
    "CompileError": "._errors",
    "compile": "._compile",
    "AotcFallbackWarning": "._dynamo",
    "to_backend": "._torchscript_backend",
    "torch_backend_library": "._paths",
    "aotc_executable": "._paths",
    "aotc_run_executable": "._paths",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'aotc' has no attribute '{name}'")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
