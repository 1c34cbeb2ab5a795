"""Compile-time errors of the vision ops: argument combinations that aotc does
not support, or that torch would reject only when the model runs, fail at compile time
with exit status 1 and one message that names the op, the Python line and the problem."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import arg_parser, failures, finish, run_aotc, save_module  # noqa: E402


class SameStrided(nn.Module):
    """padding='same' with a stride: torch refuses it only when the model runs."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 3, 3, 3))

    def forward(self, x):
        return torch.ops.aten.conv2d(x, self.w, None, [2, 1], "same", [1, 1], 1)


class SameStrided3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 3, 3, 2, 3))

    def forward(self, x):
        return torch.ops.aten.conv3d(x, self.w, None, [1, 1, 2], "same", [1, 1, 1], 1)


class BadGroups(nn.Module):
    def forward(self, x):
        return torch.ops.aten.group_norm(x, 2, None, None, 1e-5, False)  # 3 channels


class WidePadding(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 2, 1, 2)  # padding 2 > kernel 2 / 2


class Antialias(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)


class WrongChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 4, 2, 2))  # c_in 3 for a 4-channel input

    def forward(self, x):
        return F.conv_transpose2d(x, self.w, None, 2)


CASES = [
    # (name, module, input shape, needles in the message)
    ("conv2d padding='same' with a stride", SameStrided(), "1x3x8x8",
     ["aten::conv2d", "not supported for strided convolutions", "test_vision_errors.py:"]),
    ("conv3d padding='same' with a stride", SameStrided3d(), "1x3x4x8x8",
     ["aten::conv3d", "not supported for strided convolutions"]),
    ("group_norm groups do not divide channels", BadGroups(), "1x3x8x8",
     ["aten::group_norm", "3 channels cannot be split into 2 groups", "test_vision_errors.py:"]),
    ("max_pool2d padding above half the kernel", WidePadding(), "1x3x8x8",
     ["aten::max_pool2d", "padding must be at most half of the kernel size"]),
    ("antialiased bilinear is listed as unsupported", Antialias(), "1x3x8x8",
     ["aten::_upsample_bilinear2d_aa", "unsupported"]),
    ("conv_transpose2d weight for other channels", WrongChannels(), "1x4x5x5",
     ["aten::conv_transpose2d", "input channels 4", "do not agree"]),
]


def main():
    args = arg_parser().parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for i, (name, module, shape, needles) in enumerate(CASES):
        pt = save_module(module, os.path.join(args.workdir, f"case{i}.pt"))
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
        print(f"{'FAIL' if problems else 'ok':4} {name}: {result.stderr.strip().splitlines()[0] if result.stderr.strip() else ''}")
        if problems:
            failures.append(name)
            print("     " + "; ".join(problems) + "\n     stderr: " + result.stderr.strip()[:1200])
    return finish(f"all {len(CASES)} vision errors are reported at compile time")


if __name__ == "__main__":
    sys.exit(main())
