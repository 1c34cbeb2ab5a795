"""Writes the tiny TorchScript files under tests/data/old_torch/torch-<VERSION>/ with the
torch that runs this script, plus each model's input and the output that torch computed
(.npy). Run it with an old torch (see README.md); it works with torch 1.13 through 2.11.

    python make_models.py OUTPUT_ROOT

Every model is small (a few KB) and uses only ops that aotc lowers."""
import io
import os
import sys
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(F.adaptive_avg_pool2d(x, (1, 1)).flatten(1))


class Control(nn.Module):
    """ModuleList loop, a loop over range(size), shape ifs, true division by a size."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        acc = x
        for i in range(x.size(1) // 4):
            acc = acc + x * float(i + 1)
        if x.dim() == 2 and x.size(0) > 1:
            acc = acc / 2
        else:
            acc = acc * 2
        return torch.div(acc, x.size(1)), acc.sum(1)


class TensorDiv(nn.Module):
    """aten::div on two tensors: written with a file format version below 4, LibTorch
    loads it through the div upgrader (true division for float tensors)."""

    def forward(self, x, y):
        return torch.div(x, y) + x / 3.0


class Linspace(nn.Module):
    """torch.linspace with steps: saved, then rewritten as a file from before version 8,
    when steps was optional (default 100); LibTorch loads it through its linspace upgrader."""

    def forward(self, x):
        return x * torch.linspace(0.0, 1.0, 100)


def rewrite(path, version, code_edit=None):
    """Rewrites the archive's version records (LibTorch reads .data/version where present,
    else version) and, with code_edit, its serialized code; the debug records, which hold
    offsets into the code, are dropped then."""
    with zipfile.ZipFile(path) as src:
        items = [(info, src.read(info.filename)) for info in src.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as dst:
        for info, data in items:
            name = info.filename
            if name.endswith("/version"):
                data = f"{version}\n".encode()
            if code_edit and name.endswith(".debug_pkl"):
                continue
            if code_edit and "/code/" in name and name.endswith(".py"):
                data = code_edit(data.decode()).encode()
            dst.writestr(info, data)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())


def main():
    root = sys.argv[1]
    version = torch.__version__.split("+")[0]
    out = os.path.join(root, "torch-" + version)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "mlp": (torch.jit.script(MLP().eval()), [torch.randn(2, 8)]),
        "cnn_traced": None,
        "control": (torch.jit.script(Control().eval()), [torch.randn(3, 8)]),
        "tensor_div": (torch.jit.script(TensorDiv().eval()), [torch.randn(2, 5), torch.rand(2, 5) + 0.5]),
    }
    cnn = SmallCNN().eval()
    with torch.no_grad():
        cnn.bn.running_mean.uniform_(-0.5, 0.5)
        cnn.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 8, 8)
    models["cnn_traced"] = (torch.jit.trace(cnn, (x,)), [x])
    for name, (module, inputs) in models.items():
        path = os.path.join(out, name + ".pt")
        torch.jit.save(module, path)
        with torch.no_grad():
            result = module(*inputs)
        results = list(result) if isinstance(result, tuple) else [result]
        for i, t in enumerate(inputs):
            np.save(os.path.join(out, f"{name}.in{i}.npy"), t.numpy())
        for i, t in enumerate(results):
            np.save(os.path.join(out, f"{name}.out{i}.npy"), t.numpy())
    # The same tensor_div with the version record of a file written before torch 1.8's
    # div change: the loader must replace aten::div by its upgrader.
    v3 = os.path.join(out, "tensor_div_v3.pt")
    with open(os.path.join(out, "tensor_div.pt"), "rb") as src, open(v3, "wb") as dst:
        dst.write(src.read())
    rewrite(v3, 3)
    # linspace without steps, as files before version 8 called it.
    linspace = torch.jit.script(Linspace().eval())
    x = torch.randn(2, 100)
    path = os.path.join(out, "linspace_v7.pt")
    torch.jit.save(linspace, path)
    rewrite(path, 7, lambda code: code.replace("torch.linspace(0., 1., 100", "torch.linspace(0., 1."))
    np.save(os.path.join(out, "linspace.in0.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, "linspace.out0.npy"), linspace(x).numpy())
    print("wrote", out)


if __name__ == "__main__":
    main()
