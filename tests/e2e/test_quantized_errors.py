"""Compile-time errors of quantized models: what aotc's int8 path does not take fails at
compile time with exit status 1, one message that names the op, the Python line and the
problem, and no output file."""
import os
import sys

import torch
import torch.ao.nn.quantized as nnq
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, failures, finish, run_aotc, save_module  # noqa: E402


class ReturnsQuantized(nn.Module):
    """The output is a quantized tensor: the C ABI returns float32."""

    def forward(self, x):
        return torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)


class SignedActivations(nn.Module):
    def forward(self, x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).dequantize()


class NoQuantizedForm(nn.Module):
    """A float op given a quantized tensor (torch has a quantized sum; aotc does not)."""

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
        return torch.sum(q, dim=1).dequantize()


class QuantizedTransposed(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nnq.ConvTranspose2d(3, 4, 2, stride=2)

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
        return self.up(q).dequantize()


class AddBroadcast(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = nnq.QFunctional()

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
        return self.add.add(q, q[:, :1]).dequantize()


class MeanOverChannels(nn.Module):
    def forward(self, x):
        return torch.quantize_per_tensor(x, 0.1, 10, torch.quint8).mean(1).dequantize()


class BadScale(nn.Module):
    def forward(self, x):
        return torch.quantize_per_tensor(x, -0.5, 10, torch.quint8).dequantize()


class InPlaceThroughView(nn.Module):
    """relu_ of a slice of a quantized tensor must also change the tensor itself."""

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
        torch.relu_(q.narrow(1, 0, 2))
        return q.dequantize()


class FillQuantized(nn.Module):
    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
        q.fill_(1.0)
        return q.dequantize()


class QuantizedEmbeddingBag(nn.Module):
    """Packed parameters other than a convolution's or a linear layer's."""

    def __init__(self):
        super().__init__()
        self.bag = nnq.EmbeddingBag(10, 4, mode="sum")

    def forward(self, x):
        return self.bag(x.long().flatten()[:3], torch.tensor([0]))


CASES = [
    # (name, module, input shape, needles in the message)
    ("a quantized model output", ReturnsQuantized(), "1x3x8x8",
     ["quantized tensor", "dequantize it in the model"]),
    ("qint8 activations", SignedActivations(), "1x3x8x8",
     ["aten::quantize_per_tensor", "qint8 activations are not supported", "test_quantized_errors.py:"]),
    ("an op without a quantized form", NoQuantizedForm(), "1x3x8x8",
     ["aten::sum", "no quantized form", "dequantize its input first", "test_quantized_errors.py:"]),
    ("a quantized transposed convolution", QuantizedTransposed(), "1x3x8x8",
     ["quantized::conv_transpose2d", "unsupported"]),
    ("quantized add that broadcasts", AddBroadcast(), "1x3x8x8",
     ["quantized::add", "does not broadcast", "test_quantized_errors.py:"]),
    ("quantized mean over channels", MeanOverChannels(), "1x3x8x8",
     ["aten::mean", "spatial dims [2, 3] only"]),
    ("a negative scale", BadScale(), "1x3x8x8",
     ["aten::quantize_per_tensor", "scale must be positive"]),
    ("an in-place op through a view of a quantized tensor", InPlaceThroughView(), "1x3x8x8",
     ["aten::relu_", "quantized tensor that is a view", "test_quantized_errors.py:"]),
    ("fill_ of a quantized tensor", FillQuantized(), "1x3x8x8",
     ["quantized", "q.fill_(1.0)"]),  # TorchScript may have made it aten::full_like
    ("a quantized embedding bag", QuantizedEmbeddingBag(), "1x3x8x8",
     ["quantized::embedding_bag", "unsupported"]),
]


def main():
    args = arg_parser().parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.backends.quantized.engine = "fbgemm"
    for i, (name, module, shape, needles) in enumerate(CASES):
        try:
            pt = save_module(module, os.path.join(args.workdir, f"case{i}.pt"))
        except Exception as e:  # the case itself no longer builds in this torch
            failures.append(name)
            print(f"FAIL {name}: torch could not script it: {e}")
            continue
        so = os.path.join(args.workdir, f"case{i}.so")
        if os.path.exists(so):
            os.remove(so)
        result = run_aotc(args.aotc, pt, so, [f"x:{shape}"])
        problems = []
        if result.returncode != 1:
            problems.append(f"exit status {result.returncode}, want 1")
        problems += [f"message lacks {n!r}" for n in needles if n not in result.stderr]
        if os.path.exists(so):
            problems.append("an output file was left behind")
        first = result.stderr.strip().splitlines()[0] if result.stderr.strip() else ""
        print(f"{'FAIL' if problems else 'ok':4} {name}: {first}")
        if problems:
            failures.append(name)
            print("     " + "; ".join(problems) + "\n     stderr: " + result.stderr.strip()[:1200])
    return finish(f"all {len(CASES)} quantized-model errors are reported at compile time")


if __name__ == "__main__":
    sys.exit(main())
