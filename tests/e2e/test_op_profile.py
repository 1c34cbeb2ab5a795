"""scripts/op_profile.py counts a model's FLOPs as the CPU benchmark does (torch's counter,
bench/bench_cpu.py's count_flops): convolutions (stride, groups, depthwise, a fused 1x1
expansion + depthwise pair, Winograd counted as direct), linear layers, batched products and
attention. The issue-4 analysis reads its GFLOP/s and its bound on the share of the sgemm
peak, so a wrong formula would mislead. (This test found that torch's counter left CPU
attention out; count_flops now adds it.)"""
import os
import re
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from bench_cpu import count_flops  # noqa: E402
from common import arg_parser, expect, finish  # noqa: E402


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)  # 3 -> 16 at 17 x 23
        self.wino = nn.Conv2d(16, 16, 3, padding=1)  # a Winograd candidate
        self.expand = nn.Conv2d(16, 48, 1)  # a 1x1 expansion and its depthwise layer
        self.dw = nn.Conv2d(48, 48, 3, padding=1, groups=48)
        self.grouped = nn.Conv2d(48, 32, 3, stride=2, padding=1, groups=4)
        self.qkv = nn.Linear(32, 96)
        self.proj = nn.Linear(32, 10)

    def forward(self, x):
        y = F.relu(self.stem(x))
        y = F.relu(self.wino(y)) + y
        y = F.relu6(self.dw(F.relu6(self.expand(y))))
        y = self.grouped(y)  # 1 x 32 x 9 x 12
        t = y.flatten(2).transpose(1, 2)  # 1 x 108 x 32 tokens
        q, k, v = self.qkv(t).reshape(1, 108, 3, 4, 8).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)  # 1 x 4 x 108 x 8
        s = torch.bmm(a[0], a[0].transpose(1, 2))  # 4 x 108 x 108
        return self.proj(a.transpose(1, 2).reshape(1, 108, 32)), s


def main():
    args = arg_parser(aotc_run=True).parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(0)
    model = Mixed().eval()
    x = torch.randn(1, 3, 33, 45)
    want = count_flops(model, [("x", x)])
    pt = os.path.join(args.workdir, "mixed.pt")
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, (x,)), pt)
    # --peak below what most ops reach: the bound must keep their own, higher rates.
    run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/op_profile.py"), pt, "--input", "x:1x3x33x45",
                          "--threads", "1", "--iters", "3", "--warmup", "1", "--top", "0", "--peak", "10",
                          "--aotc", args.aotc, "--aotc-run", args.aotc_run,
                          "--workdir", os.path.join(args.workdir, "profile")],
                         capture_output=True, text=True)
    print(run.stdout)
    if run.returncode != 0:
        print(run.stderr)
        print("FAIL op_profile exited with", run.returncode)
        return 1
    m = re.search(r"\((\d+) FLOPs\) in the ops counted", run.stdout)
    got = int(m.group(1)) if m else None
    expect(f"FLOPs counted as the benchmark counts them ({want})", got == want,
           f"op_profile {got}, the benchmark's count {want}")
    bound = re.search(r"([\d.]+)% now; at most ([\d.]+)% with every op that has FLOPs at the peak", run.stdout)
    if expect("a bound line for --peak", bound is not None, "no bound line"):
        # a bound below the measured share is no bound
        expect("the bound is at least the measured share", float(bound.group(2)) >= float(bound.group(1)),
               f"bound {bound.group(2)}% below the measured {bound.group(1)}%")
    return finish(f"op_profile counts the benchmark's FLOPs ({got}) and bounds the share of the peak")


if __name__ == "__main__":
    sys.exit(main())
