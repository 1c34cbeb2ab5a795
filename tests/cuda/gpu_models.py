"""Models of the CUDA suite (tests/cuda/check_cuda_models.py, bench/gpu_bench.py): the
torchvision classifiers of issue 5 with seeded random weights, and the small op models of
the CPU suite (tests/e2e/models.py), which cover every op kind the CUDA target has.
Each builder returns (TorchScript module, [(input name, tensor)], eager nn.Module or None)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from models import MODELS  # noqa: E402


def _torchvision(name, seed, batch, size=224, script=False):
    def build():
        import torchvision
        torch.manual_seed(seed)
        m = getattr(torchvision.models, name)().eval()
        x = torch.randn(batch, 3, size, size)
        ts = torch.jit.script(m) if script else torch.jit.trace(m, x)
        return ts, [("x", x)], m
    return build


def _small(name):
    def build():
        module, inputs = MODELS[name]()
        return module, inputs, None
    return build


GPU_MODELS = {
    "resnet18": _torchvision("resnet18", 5, 1),
    "resnet50": _torchvision("resnet50", 8, 1),
    "mobilenet_v2": _torchvision("mobilenet_v2", 6, 1, script=True),
    "resnet50_b32": _torchvision("resnet50", 8, 32),
}
for _name in ["mlp", "small_cnn", "two_inputs", "activations", "dict_out"]:
    GPU_MODELS[_name] = _small(_name)
